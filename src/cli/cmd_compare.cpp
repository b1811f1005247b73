// jarvis compare REF TARGET --out DIR [options]
//
// TraceLens report comparison of two traces (or report directories), plus
// the hardware-expected ratios of the matched ops. REF is the reference,
// TARGET the platform to improve.
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "analysis/compare_traces.h"
#include "cli/commands.h"

namespace jarvis::cli {
namespace {

constexpr const char* kUsage =
    "usage: jarvis compare REF TARGET --out DIR [options]\n"
    "REF / TARGET: a trace (.json/.json.gz) or a report directory of <sheet>.csv files.\n"
    "Writes DIR/<sheet>.csv for every comparison sheet (TraceLens compare_perf_reports),\n"
    "and DIR/hardware_gap_analysis.{csv,json} when both GPU archs are known.\n"
    "options:\n"
    "  --names REF_TAG TARGET_TAG   column tags (default: reference target)\n"
    "  --arch-ref NAME|FILE         reference GPU arch (default: detected from the trace; 'none')\n"
    "  --arch-target NAME|FILE      target GPU arch (same)\n"
    "  --sheets G[,G...]            gpu_timeline, ops_summary, kernel_summary, ops_all, roofline,\n"
    "                               all (default all)\n"
    "  --merge-order ORDER          first-appearance (pandas < 2.2, default) or lexicographic\n"
    "  --gap-threshold X            flag ops whose measured/expected ratio exceeds X (default "
    "1.2)\n"
    "  --min-share-pct P            ...and whose target time is >= P% of the target (default 1)\n"
    "  --top N                      flagged ops printed (default 10)\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

double parse_double(const std::string& text, const std::string& flag) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !(v >= 0))
    throw UsageError(flag + " expects a non-negative number, got '" + text + "'");
  return v;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct Parsed {
  std::string reference, target;
  CompareTracesOptions options;
  size_t top = 10;
};

Parsed parse(const Args& args) {
  Parsed p;
  std::vector<std::string> pos;
  auto value = [&](size_t& k) -> const std::string& {
    if (k + 1 >= args.size()) throw UsageError(args[k] + " needs a value");
    return args[++k];
  };
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a == "--out") {
      p.options.output_dir = value(k);
    } else if (a == "--names") {
      p.options.reference_tag = value(k);
      p.options.target_tag = value(k);
    } else if (a == "--arch-ref") {
      p.options.arch_reference = value(k);
    } else if (a == "--arch-target") {
      p.options.arch_target = value(k);
    } else if (a == "--sheets") {
      p.options.compare.sheet_groups = split_commas(value(k));
    } else if (a == "--merge-order") {
      const std::string& order = value(k);
      if (order == "first-appearance")
        p.options.compare.merge_order = frame::MergeOrder::FirstAppearance;
      else if (order == "lexicographic")
        p.options.compare.merge_order = frame::MergeOrder::Lexicographic;
      else
        throw UsageError("--merge-order is first-appearance or lexicographic, not '" + order + "'");
    } else if (a == "--gap-threshold") {
      p.options.gaps.gap_threshold = parse_double(value(k), a);
    } else if (a == "--min-share-pct") {
      p.options.gaps.min_target_share = parse_double(value(k), a) / 100.0;
    } else if (a == "--top") {
      p.top = static_cast<size_t>(parse_double(value(k), a));
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option " + a);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) throw UsageError("expected REF and TARGET");
  if (p.options.output_dir.empty()) throw UsageError("--out DIR is required");
  if (p.options.compare.sheet_groups.empty()) throw UsageError("--sheets needs a sheet group");
  p.reference = pos[0];
  p.target = pos[1];
  return p;
}

void print_timeline(const nlohmann::json& summary) {
  if (!summary["gpu_timeline"].is_array()) return;
  fmt::print("\ngpu_timeline (ms)        {:>12} {:>12} {:>9}\n",
             summary["reference"]["tag"].get<std::string>(),
             summary["target"]["tag"].get<std::string>(), "diff %");
  for (const auto& row : summary["gpu_timeline"]) {
    auto num = [](const nlohmann::json& j) { return j.is_number() ? j.get<double>() : NAN; };
    fmt::print("  {:<22} {:>12.4f} {:>12.4f} {:>9.2f}\n", row["type"].get<std::string>(),
               num(row["reference_ms"]), num(row["target_ms"]), num(row["diff_pct"]));
  }
}

void print_gaps(const nlohmann::json& summary) {
  const auto& gaps = summary["hardware_gaps"];
  if (!gaps.is_object()) return;
  fmt::print(
      "\nhardware-expected ratios ({} -> {}): HBM time ratio {:.3f}; {} matched ops, {} to "
      "investigate on the target (measured/expected > {}, >= {}% of target time)\n",
      gaps["reference"]["arch"]["name"].get<std::string>(),
      gaps["target"]["arch"]["name"].get<std::string>(),
      gaps["hbm_time_ratio"].is_number() ? gaps["hbm_time_ratio"].get<double>() : NAN,
      gaps["matched_ops"].get<size_t>(), gaps["flagged_count"].get<size_t>(),
      gaps["thresholds"]["gap_threshold"].get<double>(),
      gaps["thresholds"]["min_target_share_pct"].get<double>());
  for (const auto& op : gaps["flagged"])
    fmt::print("  {:5.1f}% of target  {} {}\n      {}\n", op["target_share_pct"].get<double>(),
               op["name"].get<std::string>(), op["input_dims"].get<std::string>(),
               op["why"].get<std::string>());
}

}  // namespace

int cmd_compare(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Parsed p;
  try {
    p = parse(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "jarvis compare: %s\n%s", e.what(), kUsage);
    return 2;
  }
  TraceComparison c = compare_traces(p.reference, p.target, p.options);
  for (const auto& f : c.files) fmt::print("{}\n", f);
  for (const auto& n : c.notes) fmt::print("note: {}\n", n);
  auto summary = c.summary(p.top);
  print_timeline(summary);
  print_gaps(summary);
  return 0;
}

}  // namespace jarvis::cli
