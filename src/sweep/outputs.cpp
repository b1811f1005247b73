// All outputs of a sweep as tables, written as CSV files and optionally as
// the sheets of one workbook.
#include <filesystem>

#include "base/atomic_file.h"
#include "report/xlsx.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {

std::vector<Table> sweep_tables(const Sweep& sweep, size_t top_k,
                                const KernelChangeOptions& kernel_changes) {
  std::vector<Table> tables = {gemm_variance_table(sweep, top_k), gemm_kernel_spread_table(sweep),
                               gemm_timestamps_table(sweep, top_k),
                               gemm_overlap_table(sweep, top_k)};
  for (Table& t : gpu_timeline_tables(sweep)) {
    t.name = "gpu_timeline_" + t.name;
    tables.push_back(std::move(t));
  }
  tables.push_back(what_changed_table(sweep, kernel_changes));
  tables.push_back(what_changed_kernels_table(sweep, kernel_changes));
  tables.push_back(nccl_table(sweep));
  if (Table counters = gemm_counters_table(sweep, top_k); !counters.rows.empty())
    tables.push_back(std::move(counters));
  tables.push_back(run_health_table(sweep));
  Table failures("failed_runs", {"path", "reason"});
  for (const auto& f : sweep.failures) failures.rows.push_back({Cell(f.path), Cell(f.reason)});
  tables.push_back(std::move(failures));
  return tables;
}

std::vector<std::string> write_sweep_outputs(const std::vector<Table>& tables,
                                             const std::string& out_dir,
                                             const std::string& xlsx_path) {
  // Render everything first so that a failure leaves no half-written set.
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : tables)
    files.push_back({(std::filesystem::path(out_dir) / (t.name + ".csv")).string(), t.to_csv()});
  // Concurrent writers of one directory (two MCP sessions) take turns, so the
  // set on disk is always one writer's.
  auto lock = lock_output_dir(std::filesystem::path(out_dir));
  write_files_atomic(files);
  std::vector<std::string> written;
  for (const auto& file : files) written.push_back(file.first);
  if (!xlsx_path.empty()) {
    write_xlsx(tables, xlsx_path);
    written.push_back(xlsx_path);
  }
  return written;
}

}  // namespace jarvis::sweep
