// One run reduced to RunData: from a trace (call tree, GEMM sheet rows with
// their op instances, comm/compute overlap, collective kernels) or from a
// TraceLens report directory (the same sheets read back from CSV). Both go
// through gemm_rows_from_table so that a report made by jarvis and one made
// by TraceLens give the same GEMM rows.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "categories/kernel_details_text.h"
#include "collectives/collectives.h"
#include "critical_path/critical_path.h"
#include "explore/input_format.h"
#include "insights/trace_health.h"
#include "report/gpu_timeline.h"
#include "report/perf_tables.h"
#include "report/xlsx_read.h"
#include "rocprof/profile.h"
#include "rocprof/report.h"
#include "sweep/sweep.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;

std::string cell_text(const Cell& c) {
  if (c.missing()) return "";
  if (c.is_text()) return c.text();
  return c.to_csv_text(c.is_double());
}

double cell_number(const Table& t, size_t row, std::string_view column) {
  int c = t.col(column);
  if (c < 0) return NAN;
  const Cell& cell = t.rows[row][c];
  if (cell.is_number()) return cell.number();
  if (!cell.is_text()) return NAN;
  try {
    return std::stod(cell.text());
  } catch (...) {
    return NAN;
  }
}

// The GEMM kernel of a kernel_details__summarize_kernel_stats cell (a Python
// list of dicts, one per kernel the op launched): the one with the largest
// mean duration, so that a memset launched by the same op is not taken for
// the GEMM (the seed's first-entry rule would). The cell holds trace text, so
// it is read with the RE2-based scanner of categories/kernel_details_text.h.
std::string main_kernel_name(const std::string& details) {
  std::string best;
  double best_us = -1;
  for (const auto& k : analysis::kernel_detail_means(details))
    if (k.mean_us > best_us) {
      best_us = k.mean_us;
      best = k.name;
    }
  if (!best.empty()) return best;
  auto names = analysis::kernel_detail_names(details);
  return names.empty() ? std::string() : names.front();
}

std::vector<std::string> param_columns(const Table& t) {
  std::vector<std::string> cols;
  for (const std::string& c : t.columns)
    if (c.rfind("param: ", 0) == 0) cols.push_back(c);
  return cols;
}

std::string shape_text(const Table& t, size_t row, const std::vector<std::string>& params) {
  std::string out;
  for (const std::string& p : params) {
    std::string v = cell_text(t.rows[row][t.col(p)]);
    if (v.empty() || v == "nan") continue;
    if (!out.empty()) out += ' ';
    out += p.substr(7) + "=" + v;
  }
  return out;
}

std::vector<GemmRow> gemm_rows_from_table(const Table& t) {
  std::vector<GemmRow> rows;
  if (t.col("name") < 0 || t.col("Kernel Time (µs)_min") < 0) return rows;
  auto params = param_columns(t);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    GemmRow g;
    g.op = cell_text(t.rows[r][t.col("name")]);
    g.shape = shape_text(t, r, params);
    int kd = t.col("kernel_details__summarize_kernel_stats");
    if (kd >= 0) g.kernel_name = main_kernel_name(cell_text(t.rows[r][kd]));
    g.count = static_cast<int64_t>(cell_number(t, r, "name_count"));
    g.min_us = cell_number(t, r, "Kernel Time (µs)_min");
    g.max_us = cell_number(t, r, "Kernel Time (µs)_max");
    g.mean_us = cell_number(t, r, "Kernel Time (µs)_mean");
    g.std_us = cell_number(t, r, "Kernel Time (µs)_std");
    g.sum_us = cell_number(t, r, "Kernel Time (µs)_sum");
    if (std::isnan(g.min_us) || std::isnan(g.max_us)) continue;  // no kernels at all
    rows.push_back(std::move(g));
  }
  return rows;
}

std::vector<TimelineRow> timeline_from_table(const Table& t) {
  std::vector<TimelineRow> rows;
  if (t.col("type") < 0) return rows;
  for (size_t r = 0; r < t.rows.size(); ++r)
    rows.push_back({cell_text(t.rows[r][t.col("type")]), cell_number(t, r, "time ms"),
                    cell_number(t, r, "percent")});
  return rows;
}

int64_t trace_rank(const Trace& trace) {
  for (const auto& [key, text] : trace.top_level_json) {
    if (key != "distributedInfo") continue;
    auto info = nlohmann::json::parse(text, nullptr, false);
    if (info.is_object() && info.contains("rank") && info["rank"].is_number_integer())
      return info["rank"].get<int64_t>();
  }
  return -1;
}

// The key perf_sheet_summary_table groups op instances by: name + str(param)
// per param column ("nan" when the op lacks it).
std::string group_key(const std::string& name, const std::vector<std::string>& values) {
  std::string key = name;
  for (const std::string& v : values) key += '\x1f' + v;
  return key;
}

struct OverlapIndex {
  std::unordered_map<Uid, const collectives::KernelOverlap*> by_uid;
  std::vector<collectives::KernelOverlap> overlaps;
};

GemmInstance make_instance(const Trace& trace, const report::PerfOpRow& op,
                           const OverlapIndex& ov) {
  GemmInstance inst;
  inst.op_uid = static_cast<int64_t>(op.uid);
  inst.kernel_time_us = op.kernel_time_us;
  inst.start_us = inst.end_us = NAN;
  std::map<std::string, double> per_collective;
  double longest = -1;
  for (Uid k : op.kernels) {
    const Event& e = trace.events[k];
    // The longest kernel names the instance (a memset before a GEMM does not).
    if (e.dur() > longest) {
      longest = e.dur();
      inst.kernel_name = trace.name(k);
      inst.start_us = e.ts();
      inst.end_us = e.end();
    }
    auto it = ov.by_uid.find(k);
    if (it == ov.by_uid.end()) continue;
    inst.overlap_us += it->second->overlapped_us;
    for (Uid c : it->second->collectives) {
      const Event& ce = trace.events[c];
      double o = std::min(e.end(), ce.end()) - std::max(e.ts(), ce.ts());
      if (o > 0) per_collective[std::string(trace.name(c))] += o;
    }
  }
  for (auto& [name, us] : per_collective) inst.collectives.push_back({name, us});
  return inst;
}

void attach_instances(const Trace& trace, const std::vector<report::PerfOpRow>& ops,
                      const Table& table, std::vector<GemmRow>& gemms) {
  auto params = param_columns(table);
  std::unordered_map<std::string, size_t> row_of;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    std::vector<std::string> vals;
    for (const std::string& p : params) vals.push_back(cell_text(table.rows[r][table.col(p)]));
    row_of[group_key(cell_text(table.rows[r][table.col("name")]), vals)] = r;
  }
  // gemm_rows_from_table skips kernel-less rows, so map table rows to gemms by order.
  std::vector<int> gemm_of(table.rows.size(), -1);
  size_t g = 0;
  for (size_t r = 0; r < table.rows.size() && g < gemms.size(); ++r)
    if (!std::isnan(cell_number(table, r, "Kernel Time (µs)_min")))
      gemm_of[r] = static_cast<int>(g++);
  OverlapIndex ov;
  ov.overlaps = collectives::kernel_overlap(trace);
  for (const auto& o : ov.overlaps) ov.by_uid[o.uid] = &o;
  for (const report::PerfOpRow& op : ops) {
    std::vector<std::string> vals;
    for (const std::string& p : params) {
      const perf::Param* prm = perf::find_param(op.metrics->params(), p.substr(7));
      vals.push_back(prm ? prm->str() : std::string("nan"));
    }
    auto it = row_of.find(group_key(op.name, vals));
    if (it == row_of.end() || gemm_of[it->second] < 0) continue;
    gemms[gemm_of[it->second]].instances.push_back(make_instance(trace, op, ov));
  }
}

void add_collectives(const Trace& trace, RunData& d) {
  std::map<std::tuple<std::string, std::string, std::string, double, int64_t>, CollectiveGroup>
      groups;
  for (const auto& inst : collectives::collective_instances(trace)) {
    CollectiveRecord r;
    r.process_group = inst.process_group;
    r.collective = inst.collective.empty() ? inst.kernel_name : inst.collective;
    r.dtype = inst.dtype;
    r.kernel_name = inst.kernel_name;
    r.group_ranks = inst.group_ranks;
    r.in_msg_nelems = inst.in_msg_nelems;
    r.group_size = inst.group_size;
    r.seq = inst.seq;
    r.msg_size_mb = inst.msg_size_mb;
    r.ts = inst.kernel.ts;
    r.dur = inst.kernel.dur;
    r.algbw = inst.bw.algbw_gbps;
    r.busbw = inst.bw.busbw_gbps;
    auto& g = groups[{r.process_group, r.collective, r.dtype, r.msg_size_mb, r.group_size}];
    if (g.count == 0) {
      g = {r.process_group, r.collective, r.dtype, r.group_size, r.msg_size_mb, 0, 0, r.dur, r.dur};
    }
    g.count++;
    g.dur_sum += r.dur;
    g.dur_min = std::min(g.dur_min, r.dur);
    g.dur_max = std::max(g.dur_max, r.dur);
    d.collectives.push_back(std::move(r));
  }
  for (auto& [key, g] : groups) d.collective_groups.push_back(g);
}

void add_kernel_names(const Trace& trace, RunData& d) {
  std::map<std::string_view, double> names;
  for (Uid u = 0; u < trace.events.size(); ++u)
    if (trace.events[u].cat == Cat::Kernel) names[trace.name(u)] += trace.events[u].dur();
  for (const auto& [name, us] : names) {
    d.kernel_names.emplace_back(name);
    d.kernel_time_us.emplace_back(std::string(name), us);
  }
}

// One iteration: its duration and the host window whose launches belong to it.
struct StepWindow {
  double ms = 0;
  double launch_from = 0, launch_to = 0;  // [from, to) in trace time
};

// Host-side ProfilerStep#N annotations, in start order; without two of them
// the iterations found as repeats of the launch sequence (the same detection
// trace_health and critical_path use), each from its first launch to the next
// iteration's (the last one to the launch after it, or to the end of the
// last GPU op when none follows).
std::vector<StepWindow> step_windows(const Trace& trace, const CallTree& tree, RunData& d) {
  std::vector<StepWindow> steps;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.is_gpu() || !e.has_ts() || !trace.name(u).starts_with("ProfilerStep#")) continue;
    steps.push_back({e.dur() / 1e3, e.ts(), e.ts() + e.dur()});
  }
  std::sort(steps.begin(), steps.end(),
            [](const StepWindow& a, const StepWindow& b) { return a.launch_from < b.launch_from; });
  if (steps.size() >= 2) {
    d.step_source = "profiler_step";
    return steps;
  }
  steps.clear();
  auto repeats = critical_path::detect_repeats(trace, tree);
  if (!repeats || repeats->starts.size() < 2) return steps;
  d.step_source = "detected_repeats";
  const auto& st = repeats->starts;
  // The last iteration, with no launch after it, ends when the GPU work ends.
  double gpu_end = -INFINITY;
  for (const Event& e : trace.events)
    if (e.is_gpu() && e.has_ts()) gpu_end = std::max(gpu_end, e.end());
  for (size_t i = 0; i < st.size(); ++i) {
    Uid next = i + 1 < st.size() ? st[i + 1] : repeats->after;
    double from = trace.events[st[i]].ts();
    double end = next == kNoUid ? gpu_end : trace.events[next].ts();
    if (!std::isfinite(end) || end <= from) continue;
    // With no launch after the last iteration, every later launch is its own.
    steps.push_back({(end - from) / 1e3, from, next == kNoUid ? INFINITY : end});
  }
  return steps;
}

// kernel_step_us: each linked kernel's time added to the step whose window
// holds its launch call (the kernel's parent in the tree).
void add_kernel_steps(const Trace& trace, const CallTree& tree,
                      const std::vector<StepWindow>& steps, RunData& d) {
  std::map<std::string_view, std::vector<double>> per;
  for (Uid u : tree.gpu_event_uids()) {
    const Event& k = trace.events[u];
    Uid launch = tree.parent(u);
    if (k.cat != Cat::Kernel || launch == kNoUid || !trace.events[launch].has_ts()) continue;
    double at = trace.events[launch].ts();
    auto it = std::upper_bound(steps.begin(), steps.end(), at,
                               [](double t, const StepWindow& s) { return t < s.launch_from; });
    if (it == steps.begin() || at >= std::prev(it)->launch_to) continue;
    auto& v = per[trace.name(u)];
    v.resize(steps.size(), 0.0);
    v[static_cast<size_t>(std::prev(it) - steps.begin())] += k.dur();
  }
  for (auto& [name, v] : per) d.kernel_step_us.emplace_back(std::string(name), std::move(v));
}

// The work of one iteration from the trace's shapes (RunData::work_*): the
// aten::embedding call with the most indices, whose indices input is
// [batch, seq] (a token embedding; a position embedding's [1, seq] has
// fewer); else the first convolution's input batch N of [N, C, ...].
void add_work_shape(const Trace& trace, RunData& d) {
  auto dims_of = [&](Uid u, size_t input) -> std::vector<int64_t> {
    const PyValue* dims = trace.arg(u, "Input Dims");
    if (!dims || !dims->is_seq() || dims->size() <= input || !(*dims)[input].is_seq()) return {};
    std::vector<int64_t> out;
    for (const PyValue& v : (*dims)[input].list) {
      if (v.kind != PyValue::Kind::Int || v.i <= 0) return {};
      out.push_back(v.i);
    }
    return out;
  };
  int64_t best = 0;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp || trace.name(u) != "aten::embedding") continue;
    std::vector<int64_t> idx = dims_of(u, 1);
    if (idx.size() != 2 || idx[0] * idx[1] <= best) continue;
    best = idx[0] * idx[1];
    d.work_samples = static_cast<double>(idx[0]);
    d.work_tokens = static_cast<double>(best);
    d.work_shape = fmt::format("aten::embedding indices [{}, {}]", idx[0], idx[1]);
  }
  if (best > 0) return;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp) continue;
    std::string_view name = trace.name(u);
    if (name != "aten::convolution" && name != "aten::conv1d" && name != "aten::conv2d" &&
        name != "aten::conv3d" && name != "aten::cudnn_convolution")
      continue;
    std::vector<int64_t> in = dims_of(u, 0);
    if (in.size() < 3) continue;
    d.work_samples = static_cast<double>(in[0]);
    d.work_shape = fmt::format("{} input batch {}", name, in[0]);
    return;
  }
}

void add_steps(const Trace& trace, const CallTree& tree, RunData& d) {
  std::vector<StepWindow> steps = step_windows(trace, tree, d);
  for (const auto& s : steps) d.step_ms.push_back(s.ms);
  if (!steps.empty()) add_kernel_steps(trace, tree, steps, d);
}

double first_gpu_ts(const Trace& trace) {
  double first = INFINITY;
  for (const Event& e : trace.events)
    if (e.is_gpu() && e.has_ts()) first = std::min(first, e.ts());
  return std::isfinite(first) ? first : 0.0;
}

}  // namespace

const char* run_kind_name(RunKind kind) {
  switch (kind) {
    case RunKind::Trace:
      return "trace";
    case RunKind::ReportDir:
      return "report";
    case RunKind::ReportXlsx:
      return "xlsx";
    case RunKind::Rocprof:
      return "rocprof";
  }
  return "trace";
}

RunData analyse_trace(const std::string& path) {
  Trace trace = load_any_trace(path);
  CallTree tree(trace);
  RunData d;
  d.kind = RunKind::Trace;
  d.rank = trace_rank(trace);
  d.first_gpu_ts = first_gpu_ts(trace);
  const GpuTimeline timeline = compute_gpu_timeline(trace, tree);
  d.timeline = timeline_from_table(gpu_timeline_table(timeline));
  insights::TraceHealth health = insights::trace_health(trace, tree, &timeline);
  d.health_confidence = health.confidence;
  d.health_warnings = std::move(health.warnings);
  auto ops = report::perf_sheet_rows(trace, tree, "GEMM", false, nullptr);
  if (!ops.empty()) {
    Table table = report::perf_sheet_summary_table(trace, ops, "GEMM");
    d.gemms = gemm_rows_from_table(table);
    attach_instances(trace, ops, table, d.gemms);
  }
  add_collectives(trace, d);
  add_kernel_names(trace, d);
  add_steps(trace, tree, d);
  add_work_shape(trace, d);
  return d;
}

namespace {

// A report's sheets by name, from CSV files or workbook sheets.
using SheetGetter = std::function<std::optional<Table>(const std::string&)>;

RunData run_data_from_sheets(const SheetGetter& sheet) {
  RunData d;
  if (auto t = sheet("gpu_timeline")) d.timeline = timeline_from_table(*t);
  if (auto t = sheet("GEMM")) d.gemms = gemm_rows_from_table(*t);
  if (auto t = sheet("coll_analysis")) {
    for (size_t r = 0; r < t->rows.size(); ++r) {
      CollectiveGroup g;
      auto text = [&](const char* c) {
        return t->col(c) >= 0 ? cell_text(t->rows[r][t->col(c)]) : std::string();
      };
      g.process_group = text("Process Group Name");
      g.collective = text("Collective name");
      g.dtype = text("dtype");
      g.group_size = static_cast<int64_t>(cell_number(*t, r, "Group size"));
      g.msg_size_mb = cell_number(*t, r, "In msg size (MB)_first");
      g.count = static_cast<int64_t>(cell_number(*t, r, "operation_count"));
      g.dur_sum = cell_number(*t, r, "dur_sum");
      g.dur_min = cell_number(*t, r, "dur_min");
      g.dur_max = cell_number(*t, r, "dur_max");
      d.collective_groups.push_back(g);
    }
  }
  if (auto t = sheet("kernel_summary")) {
    // PyTorch reports name the column "Kernel name", rocprof ones "name".
    int c = t->col("Kernel name") >= 0 ? t->col("Kernel name") : t->col("name");
    std::set<std::string> names;
    for (const auto& row : t->rows)
      if (c >= 0 && row[c].is_text()) names.insert(row[c].text());
    d.kernel_names.assign(names.begin(), names.end());
  }
  return d;
}

}  // namespace

RunData read_report_dir(const std::string& dir) {
  RunData d = run_data_from_sheets([&dir](const std::string& name) -> std::optional<Table> {
    fs::path p = fs::path(dir) / (name + ".csv");
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    return read_csv_file(p.string());
  });
  d.kind = RunKind::ReportDir;
  return d;
}

RunData read_rocprof(const std::string& path) {
  rocprof::Profile profile = rocprof::load_profile(path);
  Table timeline = rocprof::gpu_timeline_table(profile);
  Table kernels = rocprof::kernel_summary_table(profile);
  RunData d = run_data_from_sheets([&](const std::string& name) -> std::optional<Table> {
    if (name == "gpu_timeline") return timeline;
    if (name == "kernel_summary") return kernels;
    return std::nullopt;
  });
  d.kind = RunKind::Rocprof;
  return d;
}

RunData read_report_xlsx(const std::string& path) {
  auto sheets = read_xlsx_sheets(path, {"gpu_timeline", "GEMM", "coll_analysis", "kernel_summary"});
  if (sheets.empty())
    throw std::runtime_error(path +
                             ": no gpu_timeline, GEMM, coll_analysis or kernel_summary sheet");
  RunData d = run_data_from_sheets([&sheets](const std::string& name) -> std::optional<Table> {
    auto it = sheets.find(name);
    if (it == sheets.end()) return std::nullopt;
    return it->second;
  });
  d.kind = RunKind::ReportXlsx;
  return d;
}

}  // namespace jarvis::sweep
