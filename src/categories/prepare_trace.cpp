#include "categories/prepare_trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/text_match.h"
#include "categories/category_analysis_common.h"
#include "categories/fusion_candidates.h"
#include "collectives/collectives.h"
#include "explore/parent_chain.h"
#include "explore/trace_store.h"
#include "insights/idle_gaps.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "perf/gpu_arch.h"
#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "report/gpu_timeline.h"
#include "report/report.h"
#include "report/table.h"
#include "xplane/report.h"
#include "xplane/space.h"

namespace jarvis::analysis {

namespace {

std::string memcpy_direction(std::string_view name) {
  std::string n = pycompat::ascii_lower(name);
  if (contains(n, "dtoh") || contains(n, "device -> host") || contains(n, "devicetohost"))
    return "D2H";
  if (contains(n, "htod") || contains(n, "host -> device") || contains(n, "hosttodevice"))
    return "H2D";
  if (contains(n, "dtod") || contains(n, "device -> device") || contains(n, "devicetodevice"))
    return "D2D";
  return "other";
}

// A sum of JSON durations keeps Python's int-ness only when every term was an
// int; Kineto durations are read as doubles here, so integral sums of an empty
// list are the only ints (TraceLens writes 0 then).
ojson us_total(double sum, bool any) {
  return any ? ojson(pycompat::python_round(sum, 2)) : ojson(0);
}

}  // namespace

Report perf_report(const Trace& trace, const CallTree& tree, const std::string& platform) {
  GpuArch arch;
  try {
    arch = perf::load_gpu_arch(platform);
  } catch (const perf::GpuArchError& e) {
    throw std::invalid_argument(e.what());
  }
  ReportOptions options;
  options.arch = &arch;
  return build_report(trace, tree, options);
}

std::map<std::string, Table> perf_report_tables(const Trace& trace, const CallTree& tree,
                                                const std::string& platform) {
  Report report = perf_report(trace, tree, platform);
  std::map<std::string, Table> tables;
  for (auto& t : report.tables) {
    std::string name = t.name;
    tables[name] = std::move(t);
  }
  return tables;
}

namespace {

// `linked`: compute_gpu_timeline(trace, tree) when the caller has it. The
// overlap analysis wants every GPU event, linked or not; when every GPU event
// is linked the two timelines are the same, and `linked` is reused.
ojson multi_kernel_data_with(const Trace& trace, const CallTree& tree, const GpuTimeline* linked) {
  struct Dir {
    std::vector<double> durs;
    std::vector<int64_t> bytes;
  };
  std::map<std::string, Dir> dirs;
  std::vector<Uid> comm;
  size_t memcpy_count = 0;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.is_gpu() || !e.has_ts() || !e.has_dur()) continue;
    std::string_view name = trace.name(u);
    bool memcpy =
        e.cat == Cat::GpuMemcpy || (e.cat == Cat::Kernel && trace.is_rocm_legacy_memcpy(u));
    if (memcpy) {
      ++memcpy_count;
      Dir& d = dirs[memcpy_direction(name)];
      d.durs.push_back(e.dur());
      const PyValue* b = trace.arg(u, "bytes");
      d.bytes.push_back(b && b->kind == PyValue::Kind::Int ? b->i : 0);
    } else if (!(e.cat == Cat::Kernel && trace.is_rocm_legacy_memset(u)) &&
               trace.is_communication(u)) {
      comm.push_back(u);
    }
  }

  ojson by_dir = ojson::object();
  double memcpy_total = 0;
  for (const char* key : {"D2H", "H2D", "D2D", "other"}) {
    auto it = dirs.find(key);
    if (it == dirs.end() || it->second.durs.empty()) continue;
    const Dir& d = it->second;
    double sum = 0, mx = d.durs[0];
    for (double x : d.durs) {
      sum += x;
      mx = std::max(mx, x);
    }
    int64_t total_bytes = 0;
    bool any_bytes = false;
    for (int64_t b : d.bytes) {
      total_bytes += b;
      any_bytes = any_bytes || b != 0;
    }
    double n = static_cast<double>(d.durs.size());
    ojson s = ojson::object();
    s["count"] = d.durs.size();
    s["total_time_us"] = pycompat::python_round(sum, 2);
    s["avg_time_us"] = pycompat::python_round(sum / n, 2);
    s["max_time_us"] = pycompat::python_round(mx, 2);
    s["total_bytes"] = total_bytes;
    s["avg_bytes"] = any_bytes
                         ? ojson(pycompat::python_round(static_cast<double>(total_bytes) / n, 2))
                         : ojson(0);
    memcpy_total += s["total_time_us"].get<double>();
    by_dir[key] = s;
  }
  ojson memcpy = ojson::object();
  memcpy["total_count"] = memcpy_count;
  memcpy["total_time_us"] = us_total(memcpy_total, memcpy_count > 0);
  memcpy["by_direction"] = by_dir;

  ojson nccl = ojson::object();
  nccl["total_count"] = comm.size();
  nccl["total_time_us"] = 0;
  if (!comm.empty()) {
    double sum = 0, mx = trace.events[comm[0]].dur();
    for (Uid u : comm) {
      sum += trace.events[u].dur();
      mx = std::max(mx, trace.events[u].dur());
    }
    nccl["total_time_us"] = pycompat::python_round(sum, 2);
    nccl["avg_time_us"] = pycompat::python_round(sum / static_cast<double>(comm.size()), 2);
    nccl["max_time_us"] = pycompat::python_round(mx, 2);
    std::vector<Uid> sorted = comm;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](Uid a, Uid b) { return trace.events[a].dur() > trace.events[b].dur(); });
    ojson top = ojson::array();
    for (size_t k = 0; k < sorted.size() && k < 10; ++k) {
      const Event& e = trace.events[sorted[k]];
      top.push_back(
          {{"name", std::string(trace.name(sorted[k]))},
           {"duration_us", pycompat::python_round(e.dur(), 2)},
           {"stream", trace.stream(e) == kNoInt ? ojson(nullptr) : ojson(trace.stream(e))}});
    }
    nccl["top_ops"] = top;
  }

  ojson overlap = ojson::object();
  try {
    bool all_linked = linked != nullptr;
    for (Uid u = 0; all_linked && u < trace.events.size(); ++u) {
      const Event& e = trace.events[u];
      if (e.is_gpu() && e.has_ts() && e.has_dur() && !tree.in_tree(u)) all_linked = false;
    }
    GpuTimeline t =
        all_linked ? *linked : compute_gpu_timeline(trace, tree, /*include_unlinked=*/true);
    bool has_comm = !comm.empty(), has_memcpy = memcpy_count > 0;
    overlap["total_time_us"] = pycompat::python_round(t.total_time, 2);
    overlap["computation_time_us"] = pycompat::python_round(t.computation_time, 2);
    overlap["total_comm_time_us"] = us_total(t.total_comm_time, has_comm);
    overlap["exposed_comm_time_us"] = us_total(t.exposed_comm_time, has_comm);
    overlap["total_memcpy_time_us"] = us_total(t.total_memcpy_time, has_memcpy);
    overlap["exposed_memcpy_time_us"] = us_total(t.exposed_memcpy_time, has_memcpy);
    overlap["comm_overlap_ratio"] =
        t.total_comm_time > 0
            ? ojson(pycompat::python_round(1 - t.exposed_comm_time / t.total_comm_time, 4))
            : ojson(nullptr);
    overlap["memcpy_overlap_ratio"] =
        t.total_memcpy_time > 0
            ? ojson(pycompat::python_round(1 - t.exposed_memcpy_time / t.total_memcpy_time, 4))
            : ojson(nullptr);
    overlap["comm_percent_of_total"] =
        t.total_time > 0
            ? ojson(pycompat::python_round(t.exposed_comm_time / t.total_time * 100, 2))
            : ojson(0);
    overlap["memcpy_percent_of_total"] =
        t.total_time > 0
            ? ojson(pycompat::python_round(t.exposed_memcpy_time / t.total_time * 100, 2))
            : ojson(0);
  } catch (const std::runtime_error&) {
    // No GPU events: TraceLens leaves overlap_analysis empty.
  }
  return {{"memcpy_summary", memcpy}, {"nccl_summary", nccl}, {"overlap_analysis", overlap}};
}

}  // namespace

ojson multi_kernel_data(const Trace& trace, const CallTree& tree) {
  return multi_kernel_data_with(trace, tree, nullptr);
}

std::map<std::string, ojson> category_tree_data(const Trace& trace, const CallTree& tree,
                                                const Table& unified_in, int subtree_depth) {
  Table unified = pandas_roundtrip(unified_in);
  std::map<std::string, std::vector<size_t>> rows_by_cat;
  std::vector<std::string> order;
  for (size_t r = 0; r < unified.rows.size(); ++r) {
    std::string key = normalize_category(cell_at(unified, r, "op category")).first;
    if (!rows_by_cat.count(key)) order.push_back(key);
    rows_by_cat[key].push_back(r);
  }
  std::map<std::string, ojson> out;
  for (const auto& key : order) {
    const auto& rows = rows_by_cat[key];
    std::vector<double> times;
    for (size_t r : rows) times.push_back(cell_number(cell_at(unified, r, kKernelSum)));
    double total = pycompat::pandas_series_sum(times);
    std::vector<size_t> picked;
    for (size_t k = 0; k < rows.size(); ++k)
      if (total > 0 && times[k] / total * 100 > 10) picked.push_back(k);
    std::string rule = "operations above 10% of the category's kernel time";
    if (picked.empty()) {
      std::vector<size_t> idx(rows.size());
      for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return times[a] > times[b]; });
      idx.resize(std::min<size_t>(5, idx.size()));
      picked = idx;
      rule = "top 5 operations by kernel time (none above 10%)";
    }
    ojson data = ojson::object();
    for (size_t k : picked) {
      size_t r = rows[k];
      double uid_d = cell_number(cell_at(unified, r, "ex_UID"));
      ojson entry = ojson::object();
      entry["name"] = cell_text(cell_at(unified, r, "name"));
      entry["uid"] = std::isnan(uid_d) ? ojson(nullptr) : ojson(static_cast<int64_t>(uid_d));
      entry["selection"] = rule;
      entry["time_ms"] = pycompat::python_round(times[k] / 1000, 3);
      entry["percent_of_category"] =
          total > 0 ? ojson(pycompat::python_round(times[k] / total * 100, 2)) : ojson(0);
      const Cell* count = cell_at(unified, r, "operation_count");
      entry["operation_count"] = count ? cell_to_json(*count) : ojson(nullptr);
      for (const char* f : {"Input Dims", "Input type"}) {
        const Cell* c = cell_at(unified, r, f);
        entry[f] = c && !is_na(*c) ? cell_to_json(*c) : ojson(nullptr);
      }
      entry["parent_chain"] = ojson::array();
      entry["subtree"] = nullptr;
      if (!std::isnan(uid_d) && uid_d >= 0 && uid_d < static_cast<double>(trace.events.size())) {
        ParentChainQuery q;
        q.uid = static_cast<Uid>(uid_d);
        q.subtree_depth = subtree_depth;
        ParentChainResult pc = parent_chain(trace, tree, q);
        entry["parent_chain"] = pc.json["parent_chain"];
        entry["subtree"] = pc.json["subtree"];
        entry["text"] = pc.text;
      }
      std::string id = entry["uid"].is_null() ? "row" + std::to_string(r) : entry["uid"].dump();
      data[id] = entry;
    }
    out[key] = data;
  }
  return out;
}

namespace {

// category_data/insights.json: the rule engine's insights (beyond
// TraceLens), read by analyze_category for its category and the drafts.
std::string insights_json(const Trace& trace, const CallTree& tree, const std::string& platform,
                          const GpuTimeline* timeline, const insights::StepModelRef* step) {
  GpuArch arch = perf::load_gpu_arch(platform);
  const insights::InsightContext context =
      insights::make_context(trace, tree, &arch, timeline, step);
  auto found = insights::run_insights(context);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& i : found) all.push_back(insights::to_json(i));
  // The trace's health travels with the prepared directory, so analyses that
  // read only the directory (analyze_category, final_report) can say when the
  // trace cannot support their conclusions.
  nlohmann::json doc = {{"rules", insights::rule_ids()},
                        {"insights", all},
                        // The findings' step model and timeline: one model for both.
                        {"trace_health", insights::to_json(insights::trace_health(context))},
                        // Where and why the GPU idled, for the cpu_idle analysis
                        // (the gaps the findings read, not a second scan).
                        {"idle", insights::idle_gaps_json(trace, insights::idle_gaps(context))}};
  return doc.dump(2) + "\n";
}

void require_platform(const TracePrepareOptions& o) {
  if (o.platform.empty()) throw std::invalid_argument("--platform is required (e.g. MI300X, H100)");
  load_arch_json(o.platform);  // fails early with a specific message
}

TableRefs table_refs(const std::vector<Table>& tables) {
  TableRefs refs;
  for (const auto& t : tables) refs[t.name] = &t;  // later sheets of one name win, as before
  return refs;
}

}  // namespace

PreparedTraceData prepared_trace_data(const Trace& trace, const CallTree& tree,
                                      const CallTree* python_frames_tree, const TableRefs& tables,
                                      const TracePrepareOptions& o, const GpuTimeline* timeline,
                                      const insights::StepModelRef* step) {
  PreparedTraceData d;
  d.multi_kernel_data = multi_kernel_data_with(trace, tree, timeline);
  auto unified = tables.find("unified_perf_summary");
  const Table* unified_table = unified != tables.end() ? unified->second : nullptr;
  if (o.tree_data && unified_table)
    d.tree_data = category_tree_data(trace, tree, *unified_table, o.tree_subtree_depth);
  d.fusion_candidates = python_frames_tree
                            ? fusion_candidates(trace, *python_frames_tree, unified_table)
                            : fusion_candidates(trace, unified_table);
  d.insights_json = insights_json(trace, tree, o.platform, timeline, step);
  return d;
}

std::vector<Table> xplane_report_tables(const Trace& trace) {
  std::vector<Table> out = xplane::jax_report_tables(trace);
  auto instances = collectives::collective_instances(trace);
  if (!instances.empty()) out.push_back(collectives::rank_collectives_table(instances));
  return out;
}

namespace {

// An XPlane trace's TraceLens JAX report sheets (what `jarvis report` writes
// for it) into OUT/jax_perf_report_csvs/, beside the workflow's
// perf_report_csvs/ (whose sheets the category analyses read in Kineto's
// shape: one gpu_timeline, aten-op launchers).
void write_jax_report_csvs(const Trace& trace, const std::string& output_dir,
                           PrepareResult& result) {
  const std::filesystem::path dir = std::filesystem::path(output_dir) / kJaxReportCsvDir;
  std::filesystem::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> names;
  for (const Table& t : xplane_report_tables(trace)) {
    names.push_back(t.name + ".csv");
    files.emplace_back((dir / names.back()).string(), t.to_csv());
  }
  write_files_atomic(files);
  record_report_files(dir.string(), names);
  for (const auto& f : files) result.files.push_back(f.first);
}

}  // namespace

PrepareResult prepare_with_data(const Trace& trace, const TableRefs& tables,
                                const PreparedTraceData& data, const TracePrepareOptions& o) {
  require_platform(o);
  PrepareOptions p;
  p.arch = load_arch_json(o.platform);
  p.platform = o.platform.find('/') != std::string::npos || o.platform.ends_with(".json")
                   ? p.arch.value("name", o.platform)
                   : o.platform;
  p.trace_path = o.trace_path.empty() ? trace.path : o.trace_path;
  p.output_dir = o.output_dir;
  p.category = o.category;
  PrepareInputs inputs;
  inputs.multi_kernel_data = data.multi_kernel_data;
  inputs.tree_data = data.tree_data;
  inputs.fusion_candidates = data.fusion_candidates;
  PrepareResult result = prepare_category_data(tables, p, inputs);
  if (xplane::is_xplane_trace(trace)) write_jax_report_csvs(trace, o.output_dir, result);
  std::string path =
      (std::filesystem::path(o.output_dir) / "category_data" / "insights.json").string();
  write_file_atomic(path, data.insights_json);
  result.files.push_back(path);
  return result;
}

PrepareResult prepare_from_loaded_trace(const LoadedTrace& entry, const TracePrepareOptions& o) {
  require_platform(o);
  const std::string arch_id = canonical_arch_id(o.platform);
  auto report = trace_report(entry, o.platform);
  auto tree = trace_call_tree(entry);
  TableRefs tables = table_refs(report->tables);
  std::string key = "prepare:" + arch_id + ":" +
                    (o.tree_data ? std::to_string(o.tree_subtree_depth) : std::string("-"));
  auto data = entry.cached<PreparedTraceData>(key, [&] {
    auto python_tree = entry.cached<CallTree>("tree:python_frames", [&] {
      return CallTree(entry.trace(), TreeOptions{.include_python_frames = true});
    });
    return prepared_trace_data(entry.trace(), *tree, python_tree.get(), tables, o,
                               &report->timeline, trace_step_model(entry).get());
  });
  return prepare_with_data(entry.trace(), tables, *data, o);
}

PrepareResult prepare_from_report(const Trace& trace, const CallTree& tree,
                                  const std::vector<Table>& report_tables,
                                  const TracePrepareOptions& o) {
  require_platform(o);
  TableRefs tables = table_refs(report_tables);
  return prepare_with_data(trace, tables, prepared_trace_data(trace, tree, nullptr, tables, o), o);
}

PrepareResult prepare_from_trace(const Trace& trace, const TracePrepareOptions& o) {
  require_platform(o);
  CallTree tree(trace);
  Report report = perf_report(trace, tree, o.platform);
  TableRefs tables = table_refs(report.tables);
  return prepare_with_data(
      trace, tables, prepared_trace_data(trace, tree, nullptr, tables, o, &report.timeline), o);
}

}  // namespace jarvis::analysis
