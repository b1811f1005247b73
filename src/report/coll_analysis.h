// Collective kernels of one trace and TraceLens's `coll_analysis` sheet
// (NcclAnalyser.build_df_summary_long on a single trace).
//
// A collective kernel is a `kernel` event whose name contains nccl / rccl /
// cross_device_reduce (case-insensitive) and that carries a correlation or an
// External id. PyTorch copies the collective's metadata (process group,
// collective name, dtype, message element counts, split sizes) onto it.
// The higher-level collective analyses (src/collectives) build on this list;
// it lives here because the report itself writes the sheet.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"

namespace jarvis {

struct CollectiveKernel {
  Uid uid = kNoUid;
  double ts = 0;
  double dur = 0;
  int64_t stream = kNoInt;  // args["stream"], kNoInt when absent
  // Metadata args as the trace holds them (PyValue::none() when absent).
  PyValue process_group_name;   // "Process Group Name"
  PyValue process_group_ranks;  // "Process Group Ranks", e.g. "[0, 1]"
  PyValue collective_name;      // "Collective name" (inferred for custom kernels)
  PyValue group_size;           // "Group size"
  PyValue dtype;                // "dtype", e.g. "Float"
  PyValue in_msg_nelems;        // "In msg nelems"
  PyValue out_msg_nelems;       // "Out msg nelems"
  PyValue in_split_size;        // "In split size"
  PyValue out_split_size;       // "Out split size"

  // Message sizes in MiB from nelems x dtype size; NaN when either is unknown.
  double in_msg_mb() const;
  double out_msg_mb() const;
};

// Bytes per element of a PyTorch record_param_comms dtype name (Float, Half,
// BFloat16, ...); 0 when unknown.
int dtype_bytes(std::string_view dtype);

// True for a kernel event that TraceLens counts as a collective kernel.
bool is_collective_kernel(const Trace& trace, Uid uid);

// Every collective kernel of the trace, in file order.
std::vector<CollectiveKernel> collective_kernels(const Trace& trace);
// The same among `candidates` (UIDs in file order, e.g. a call tree's GPU
// events): the events outside them are not looked at.
std::vector<CollectiveKernel> collective_kernels(const Trace& trace,
                                                 std::span<const Uid> candidates);

// The coll_analysis sheet: one row per (rank, process group, collective,
// dtype, message sizes, split sizes, stream) with duration statistics,
// sorted by total duration. `rank` is the trace's position in TraceLens's
// file list (0 for a single-trace report). Kernels missing any grouping
// field are left out, as pandas drops groups with a missing key. Returns a
// table without rows when the trace has no such kernel.
Table coll_analysis_table(const std::vector<CollectiveKernel>& kernels, int64_t rank = 0);

}  // namespace jarvis
