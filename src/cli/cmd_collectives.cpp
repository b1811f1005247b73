// jarvis collectives RANK_TRACE... --out DIR [--xlsx FILE] [--align end|none] [--overlap]
//
// Matches the collective kernels of one trace per rank and writes
// DIR/collective_instances.csv, collective_summary.csv and
// collective_ranks.csv (plus per-rank overlap tables with --overlap).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.h"
#include "collectives/collectives.h"
#include "report/xlsx.h"

namespace jarvis::cli {
namespace {

constexpr const char* kUsage =
    "usage: jarvis collectives RANK_TRACE... --out DIR [options]\n"
    "matches collective instances across ranks (rank from distributedInfo, else the order "
    "given)\n"
    "writes DIR/collective_instances.csv, collective_summary.csv, collective_ranks.csv\n"
    "with a single trace: DIR/rank_collectives.csv (per-kernel bandwidths) and the overlap "
    "tables\n"
    "options:\n"
    "  --align end|none   clock alignment: synchronising collectives end together (default)\n"
    "                     or trust the timestamps (ranks sharing one clock)\n"
    "  --overlap          also DIR/rank<R>_collective_overlap_by_op.csv / _by_category.csv\n"
    "  --xlsx FILE        also write the tables to an Excel workbook\n";

const std::vector<std::string> kValueFlags = {"--out", "--xlsx", "--align"};
const std::vector<std::string> kSwitches = {"--overlap"};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_flags(const Args& args) {
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a.rfind("--", 0) != 0) continue;
    if (std::find(kValueFlags.begin(), kValueFlags.end(), a) != kValueFlags.end()) {
      if (k + 1 >= args.size()) throw UsageError(a + " needs a value");
      ++k;
      continue;
    }
    if (std::find(kSwitches.begin(), kSwitches.end(), a) == kSwitches.end())
      throw UsageError("unknown option " + a);
  }
}

collectives::TimeAlignment parse_alignment(const std::string& text) {
  if (text.empty() || text == "end") return collectives::TimeAlignment::CollectiveEnd;
  if (text == "none") return collectives::TimeAlignment::None;
  throw UsageError("--align expects end or none, got '" + text + "'");
}

}  // namespace

int cmd_collectives(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::vector<std::string> traces;
  std::string out;
  collectives::CollectiveReportOptions options;
  try {
    check_flags(args);
    traces = positionals(args, kValueFlags);
    if (traces.empty()) throw UsageError("expected one RANK_TRACE per rank");
    out = flag_value(args, "--out");
    if (out.empty()) throw UsageError("--out DIR is required");
    options.alignment = parse_alignment(flag_value(args, "--align"));
    options.overlap = has_flag(args, "--overlap");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "jarvis collectives: %s\n%s", e.what(), kUsage);
    return 2;
  }
  auto result = collectives::collective_report(traces, options);
  for (const std::string& path : collectives::write_collective_tables(result.tables, out))
    fmt::print("{}\n", path);
  if (has_flag(args, "--xlsx")) write_xlsx(result.tables, flag_value(args, "--xlsx"));
  if (!result.single_rank)
    fmt::print("{} ranks, {} matched collective instances\n", result.report.ranks.size(),
               result.report.instances.size());
  return 0;
}

}  // namespace jarvis::cli
