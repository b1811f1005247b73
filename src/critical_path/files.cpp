// Loading rank traces into a graph, and the JSON / CSV views of the results.
#include <cmath>
#include <filesystem>
#include <future>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/two_threads.h"
#include "critical_path/critical_path.h"
#include "critical_path/graph_file.h"
#include "critical_path/internal.h"
#include "critical_path/what_if_request.h"
#include "explore/input_format.h"
#include "explore/trace_store.h"
#include "pycompat/repr.h"
#include "report/table.h"
#include "trace/loader.h"

namespace jarvis::critical_path {

namespace detail {

void PathCsvFields::add(const IterationResult& it) {
  for (const Segment& seg : it.path) {
    if (auto [kind, added] = kinds.try_emplace(seg.kind_name); added) {
      kind->second += ',';
      append_csv_field(kind->second, seg.kind());
    }
    if (auto [label, added] = labels.try_emplace(seg.of); added)
      for (std::string_view f : {seg.category(), seg.op(), seg.kernel()}) {
        label->second += ',';
        append_csv_field(label->second, f);
      }
  }
}

std::string path_csv(const IterationResult& it, const PathCsvFields& fields) {
  const auto time_field = [](std::string& out, double us) {
    if (!std::isnan(us)) out += pycompat::py_float_repr(us);
  };
  std::string name;
  append_csv_field(name, it.name);
  std::string out = "iteration,start_us,dur_us,rank,kind,category,op,kernel\n";
  out.reserve(out.size() + it.path.size() * 160);
  for (const Segment& seg : it.path) {
    out += name;
    out += ',';
    time_field(out, seg.start_us);
    out += ',';
    time_field(out, seg.dur_us);
    out += ',';
    out += std::to_string(seg.rank);
    out += fields.kinds.at(seg.kind_name);
    out += fields.labels.at(seg.of);
    out += '\n';
  }
  return out;
}

std::string path_csv(const IterationResult& it) {
  PathCsvFields fields;
  fields.add(it);
  return path_csv(it, fields);
}

}  // namespace detail

namespace {

using nlohmann::json;

json rank_map(const std::map<int64_t, double>& m) {
  json out = json::object();
  for (const auto& [rank, v] : m) out[std::to_string(rank)] = v;
  return out;
}

json finite_or_null(double v) {
  return std::isfinite(v) ? json(v) : json();
}

json iteration_json(const IterationResult& it) {
  json shares = json::object();
  for (const auto& [rank, idle] : it.idle_host_us)
    shares[std::to_string(rank)] = it.length_us > 0 ? idle / it.length_us : 0.0;
  return {{"name", it.name},
          {"start_us", it.start_us},
          {"end_us", it.end_us},
          {"length_us", it.length_us},
          {"path_length_us", it.path_length_us},
          {"path_segments", it.path.size()},
          {"differs", it.differs},
          {"bound_by", it.bound_by},
          {"bound_reason", it.bound_reason},
          {"host_end_us", finite_or_null(it.host_end_us)},
          {"gpu_end_us", finite_or_null(it.gpu_end_us)},
          {"gpu_idle_us", rank_map(it.gpu_idle_us)},
          {"idle_host_us", rank_map(it.idle_host_us)},
          {"idle_host_share", shares}};
}

// One CSV per iteration, after the files in `first` (the summary), written
// in batches (write_files_atomic: their fsyncs at once; one after another, a
// 64-iteration trace waited longer for the disk than it took to analyse,
// issue 75) of at most kBatchSegments rows, so that a trace of many
// iterations holds two batches of text (half as long as when one was held:
// the same memory), not all of it; a batch's tables are
// made on two threads while the batch before is written and synced (a
// 256-iteration trace's 220 MB of paths waited 0.2-0.6 s for the disk after
// its tables were made). A batch is written only after those before it were.
std::vector<std::string> write_with_paths(std::vector<std::pair<std::string, std::string>> first,
                                          const Analysis& a, const std::string& dir,
                                          const std::string& prefix) {
  constexpr size_t kBatchSegments = size_t{1} << 14;
  std::vector<std::string> files;
  for (const auto& f : first) files.push_back(f.first);
  std::vector<std::pair<std::string, std::string>> batch = std::move(first);
  detail::PathCsvFields fields;  // each label's text, for every iteration's file
  for (const IterationResult& it : a.iterations) fields.add(it);
  std::future<void> writing;  // the batch before
  size_t k = 0;
  do {
    std::vector<std::function<void()>> tables;
    for (size_t segments = 0; k < a.iterations.size() && segments < kBatchSegments; ++k) {
      segments += a.iterations[k].path.size();
      files.push_back(fmt::format("{}/{}path_iteration{}.csv", dir, prefix, k));
      batch.emplace_back(files.back(), std::string());
      tables.push_back([&a, &batch, &fields, k, slot = batch.size() - 1] {
        batch[slot].second = detail::path_csv(a.iterations[k], fields);
      });
    }
    run_on_two_threads(tables);
    if (writing.valid()) writing.get();  // its failure stops the writes here
    writing = std::async(std::launch::async,
                         [written = std::move(batch)] { write_files_atomic(written); });
    batch.clear();
  } while (k < a.iterations.size());
  writing.get();
  return files;
}

}  // namespace

Loaded load_graph(const std::vector<std::string>& paths,
                  const std::function<bool(size_t, size_t)>& progress) {
  Loaded out;
  std::vector<RankInput> inputs;
  // One Kineto trace: the graph the step model keeps beside its snapshot
  // (graph_file.h: the same build of the same one-rank input), read when the
  // file was not changed by the time it was loaded, else built and written.
  const std::optional<CacheFilePlan> graph_file_before =
      paths.size() == 1 ? graph_file_of_path(paths[0]) : std::nullopt;
  for (size_t k = 0; k < paths.size(); ++k) {
    // A multi-process Nsight Systems capture gives one trace per rank.
    for (Trace& t : load_rank_traces(paths[k])) {
      out.traces.push_back(std::make_unique<Trace>(std::move(t)));
      out.trees.push_back(std::make_unique<CallTree>(*out.traces.back()));
      inputs.push_back({out.traces.back().get(), out.trees.back().get(), -1});
    }
    if (progress && !progress(k + 1, paths.size())) throw CriticalPathError("cancelled");
  }
  if (graph_file_before && out.traces.size() == 1) {
    const std::optional<CacheFilePlan> graph_file = graph_file_of_path(paths[0]);
    if (same_trace_state(graph_file_before, graph_file)) {
      if (std::optional<Graph> kept = read_graph_file(*graph_file, *out.traces[0])) {
        out.graph = std::move(*kept);
      } else {
        out.graph = build_graph(inputs);
        write_graph_file(*graph_file, *out.traces[0], out.graph);
      }
      return out;
    }
  }
  out.graph = build_graph(inputs);
  return out;
}

std::shared_ptr<const Graph> trace_graph(const LoadedTrace& entry) {
  return entry.cached<Graph>("critical_path:graph", [&entry] {
    const auto tree = trace_call_tree(entry);
    return build_graph({{&entry.trace(), tree.get(), -1}});
  });
}

nlohmann::json analysis_json(const Analysis& a, size_t top_n) {
  json iterations = json::array(), differing = json::array();
  for (const IterationResult& it : a.iterations) {
    iterations.push_back(iteration_json(it));
    if (it.differs) differing.push_back(it.name);
  }
  json contributors = json::array();
  for (const Contributor& c : a.contributors) {
    if (contributors.size() >= top_n) break;
    contributors.push_back({{"rank", c.rank},
                            {"op", c.op},
                            {"kernel", c.kernel},
                            {"category", c.category},
                            {"time_us", c.time_us},
                            {"share", c.share}});
  }
  json waits = json::array();
  for (const Wait& w : a.waits)
    waits.push_back({{"rank", w.rank},
                     {"waiting_for_rank", w.waiting_for_rank},
                     {"time_us", w.time_us},
                     {"instances", w.instances}});
  json costs = json::object();
  for (const auto& [rank, c] : a.profiler_cost)
    costs[std::to_string(rank)] = {{"record_shapes", c.record_shapes},
                                   {"with_stack", c.with_stack},
                                   {"profile_memory", c.profile_memory},
                                   {"op_gap_us", c.op_gap_us},
                                   {"gaps_measured", c.gaps_measured},
                                   {"per_op_us", c.per_op_us},
                                   {"per_runtime_call_us", c.per_runtime_call_us},
                                   {"per_python_frame_us", c.per_python_frame_us},
                                   {"per_memory_event_us", c.per_memory_event_us},
                                   {"ops", c.ops},
                                   {"runtime_calls", c.runtime_calls},
                                   {"python_frames", c.python_frames},
                                   {"memory_events", c.memory_events},
                                   {"trace_total_us", c.total_us},
                                   {"calibration", c.calibration}};
  json out = {{"summary", a.summary},
              {"model", a.model},
              {"step_time_us", a.step_time_us},
              {"recorded_step_time_us", a.recorded_step_time_us},
              {"estimated_unprofiled_step_us",
               a.estimated_unprofiled_step_us ? json(*a.estimated_unprofiled_step_us) : json()},
              {"profiler_host_us_per_step", a.profiler_host_us_per_step},
              {"profiler_cost", costs},
              {"gpu_backlog_left_out_us_total", a.gpu_backlog_left_out_us},
              {"ranks", a.ranks},
              {"clock_offset_us", rank_map(a.clock_offset_us)},
              {"iterations_source", a.iterations_source},
              {"iterations", iterations},
              {"differing_iterations", differing},
              {"contributors", contributors},
              {"contributor_count", a.contributors.size()},
              {"waits", waits},
              {"notes", a.notes}};
  if (!a.profiler_steps.empty()) {  // decode steps inside generate() calls
    json steps = json::array();
    for (const ProfilerStepResult& s : a.profiler_steps)
      steps.push_back({{"name", s.name},
                       {"length_us", s.length_us},
                       {"iterations", s.iterations},
                       {"before_iterations_us", s.before_us},
                       {"after_iterations_us", s.after_us}});
    out["per_profiler_step"] = {
        {"what",
         "per ProfilerStep#N (one generate() call each: set-up and prefill, then the decode "
         "steps that are the iterations, then a tail), mean over the steps, under this model"},
        {"step_us", a.profiler_step_us},
        {"recorded_step_us", a.recorded_profiler_step_us},
        {"before_iterations_us", a.profiler_step_before_us},
        {"after_iterations_us", a.profiler_step_after_us},
        {"steps", steps}};
  }
  return out;
}

namespace {

std::vector<Uid> request_uids(const json& list) {
  std::vector<Uid> uids;
  for (const json& u : list) {
    const auto uid = u.get<uint64_t>();
    if (uid >= kNoUid)
      throw CriticalPathError(fmt::format("uid {} is not an event of the trace", uid));
    uids.push_back(static_cast<Uid>(uid));
  }
  return uids;
}

}  // namespace

WhatIfRequest parse_what_if_request(const json& args) {
  WhatIfRequest req;
  Scenario& sc = req.scenario;
  std::optional<int64_t> rank;
  if (args.contains("rank") && !args.at("rank").is_null()) rank = args.at("rank").get<int64_t>();
  sc.select.rank = rank;
  sc.select.category = args.value("category", "");
  sc.select.op = args.value("op", "");
  sc.select.kernel = args.value("kernel", "");
  if (args.contains("kernel_uids")) sc.select.gpu_uids = request_uids(args.at("kernel_uids"));
  sc.factor = args.value("factor", 1.0);
  sc.median_rank = args.value("median_rank", false);
  if (sc.median_rank && args.contains("factor"))
    throw CriticalPathError("give either factor or median_rank, not both");
  sc.remove_launch_gaps = args.value("remove_launch_gaps", false);
  sc.overlap_collective = args.value("overlap_collective", "");
  sc.recorded_host = args.value("recorded_host", false);

  HostRemoval& rm = req.removal;
  rm.rank = rank;
  if (args.contains("remove_ops")) rm.ops = args.at("remove_ops").get<std::vector<std::string>>();
  if (args.contains("remove_uids")) rm.uids = request_uids(args.at("remove_uids"));
  rm.python_frame = args.value("remove_python_frame", "");
  rm.waits_only = args.value("remove_waits_only", false);
  if (rm.waits_only && rm.empty())
    throw CriticalPathError(
        "remove_waits_only needs remove_ops, remove_uids or remove_python_frame");

  if (args.contains("remove_host_gaps")) {
    const json& g = args.at("remove_host_gaps");
    HostGapSelector sel;
    sel.rank = rank;
    sel.after = g.value("after", "");
    sel.before = g.value("before", "");
    sel.min_us = g.value("min_us", sel.min_us);
    req.host_gaps = sel;
  }
  return req;
}

void join_gpu_change(const WhatIfRequest& req, Scenario& joint) {
  const Scenario& sc = req.scenario;
  if (sc.median_rank || !sc.overlap_collective.empty())
    throw CriticalPathError(
        "median_rank and overlap_collective change the whole step: they cannot join another "
        "change's replay");
  const Selector& s = sc.select;
  if (!s.category.empty() || !s.op.empty() || !s.kernel.empty() || !s.gpu_uids.empty())
    joint.also_scale.emplace_back(s, sc.factor);
  joint.remove_launch_gaps = joint.remove_launch_gaps || sc.remove_launch_gaps;
}

nlohmann::json what_if_json(const WhatIfResult& r, const Scenario& sc, size_t top_n) {
  json scenario = {{"factor", sc.factor},
                   {"median_rank", sc.median_rank},
                   {"remove_launch_gaps", sc.remove_launch_gaps},
                   {"overlap_collective", sc.overlap_collective},
                   {"category", sc.select.category},
                   {"op", sc.select.op},
                   {"kernel", sc.select.kernel},
                   {"recorded_host", sc.recorded_host}};
  scenario["rank"] = sc.select.rank ? json(*sc.select.rank) : json();
  const double saved = r.measured_step_time_us - r.predicted_step_time_us;
  constexpr size_t kMatchedShown = 20;
  json matched = json::array();
  for (size_t k = 0; k < r.matched_kernels.size() && k < kMatchedShown; ++k)
    matched.push_back({{"name", r.matched_kernels[k].name},
                       {"launches", r.matched_kernels[k].launches},
                       {"time_us", r.matched_kernels[k].time_us}});
  return {{"summary", r.summary},
          {"matched_kernels", matched},
          {"matched_kernel_count", r.matched_kernels.size()},
          {"model", r.model},
          {"measured_step_time_us", r.measured_step_time_us},
          {"predicted_step_time_us", r.predicted_step_time_us},
          {"recorded_step_time_us", r.recorded_step_time_us},
          {"predicted_profiled_step_time_us", r.predicted_profiled_step_time_us},
          {"saved_us", saved},
          {"saved_share", r.measured_step_time_us > 0 ? saved / r.measured_step_time_us : 0.0},
          {"removed_us", r.removed_us},
          {"selected_nodes", r.selected_nodes},
          {"factor_by_rank", rank_map(r.factor_by_rank)},
          {"changes", r.changes},
          {"scenario", scenario},
          {"predicted", analysis_json(r.predicted, top_n)}};
}

std::vector<std::string> write_analysis(const Analysis& a, const std::string& dir) {
  std::filesystem::create_directories(dir);
  return write_with_paths({{dir + "/critical_path_summary.json",
                            analysis_json(a, a.contributors.size()).dump(1) + "\n"}},
                          a, dir, "");
}

std::vector<std::string> write_what_if(const WhatIfResult& r, const Scenario& sc,
                                       const std::string& dir) {
  std::filesystem::create_directories(dir);
  return write_with_paths({{dir + "/what_if.json",
                            what_if_json(r, sc, r.predicted.contributors.size()).dump(1) + "\n"}},
                          r.predicted, dir, "predicted_");
}

}  // namespace jarvis::critical_path
