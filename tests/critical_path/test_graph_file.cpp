// The step model's graph kept beside the trace's snapshot
// (src/critical_path/graph_file.h; issue 75): on real traces of ../shared the
// graph read back is the graph build_graph made, field for field, used in
// place (views of the mapped file), and its analyses give the same figures;
// a file made from another state of the trace, by another cache, with
// another calibration, truncated, damaged or holding an index out of range is
// ignored with its reason; a loaded trace's step model reads the file its
// first load wrote. Every test uses its own cache directory and its own copy
// of the trace.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ab/calibrate.h"
#include "critical_path/critical_path.h"
#include "critical_path/graph_file.h"
#include "explore/trace_store.h"
#include "golden.h"
#include "insights/insights.h"
#include "session/trace_cache.h"
#include "test_loader_support.h"
#include "trace/cache_file.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;
using namespace jarvis;
using jarvis::loader_test::EnvGuard;
using jarvis::loader_test::TempDir;

// A copy of a trace of ../shared in `dir` (this test's own file to touch).
std::string copy_of(const TempDir& dir, const std::string& rel) {
  const fs::path to = dir.path / fs::path(rel).filename();
  fs::copy_file(golden::shared_dir() + "/" + rel, to, fs::copy_options::overwrite_existing);
  return to.string();
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void check_same_iterations(const std::vector<cp::Iteration>& a,
                           const std::vector<cp::Iteration>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].name == b[k].name);
    CHECK(same_bits(a[k].start, b[k].start));
    CHECK(same_bits(a[k].end, b[k].end));
    CHECK(a[k].start_nodes == b[k].start_nodes);
    CHECK(a[k].host_ends == b[k].host_ends);
    CHECK(a[k].gpu_ends == b[k].gpu_ends);
    CHECK(a[k].sink == b[k].sink);
  }
}

template <class V>
bool same_array(const V& a, const V& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](const auto& x, const auto& y) { return x == y; });
}

void check_same_graph(const cp::Graph& a, const cp::Graph& b) {
  REQUIRE(a.nodes.size() == b.nodes.size());
  size_t node_diffs = 0, edge_diffs = 0;
  for (size_t k = 0; k < a.nodes.size(); ++k) {
    const cp::Node &x = a.nodes[k], &y = b.nodes[k];
    node_diffs += !(x.rank == y.rank && same_bits(x.start, y.start) && same_bits(x.dur, y.dur) &&
                    same_bits(x.profiler_us, y.profiler_us) && x.uid == y.uid &&
                    x.label == y.label && x.thread == y.thread && x.kind == y.kind);
  }
  CHECK(node_diffs == 0);
  REQUIRE(a.edges.size() == b.edges.size());
  for (size_t k = 0; k < a.edges.size(); ++k) {
    const cp::Edge &x = a.edges[k], &y = b.edges[k];
    edge_diffs += !(x.from == y.from && x.to == y.to && same_bits(x.intrinsic, y.intrinsic) &&
                    same_bits(x.lag, y.lag) && same_bits(x.profiler_us, y.profiler_us) &&
                    x.label == y.label && x.thread == y.thread && x.kind == y.kind &&
                    x.from_start == y.from_start);
  }
  CHECK(edge_diffs == 0);
  CHECK(same_array(a.in_off, b.in_off));
  CHECK(same_array(a.in_edges, b.in_edges));
  CHECK(same_array(a.in_from, b.in_from));
  CHECK(same_array(a.in_kind, b.in_kind));
  CHECK(same_array(a.order, b.order));
  REQUIRE(a.labels.size() == b.labels.size());
  for (size_t k = 0; k < a.labels.size(); ++k) {
    CHECK(a.labels[k].rank == b.labels[k].rank);
    CHECK(a.labels[k].op == b.labels[k].op);
    CHECK(a.labels[k].kernel == b.labels[k].kernel);
    CHECK(a.labels[k].category == b.labels[k].category);
  }
  check_same_iterations(a.iterations, b.iterations);
  check_same_iterations(a.profiler_steps, b.profiler_steps);
  REQUIRE(a.joins.size() == b.joins.size());
  for (size_t k = 0; k < a.joins.size(); ++k) {
    CHECK(a.joins[k].node == b.joins[k].node);
    CHECK(a.joins[k].collective == b.joins[k].collective);
    CHECK(a.joins[k].ranks == b.joins[k].ranks);
    CHECK(a.joins[k].arrivals == b.joins[k].arrivals);
  }
  CHECK(a.ranks == b.ranks);
  CHECK(a.clock_offset_us == b.clock_offset_us);
  CHECK(a.launch_latency_us == b.launch_latency_us);
  CHECK(a.gpu_spans == b.gpu_spans);
  CHECK(a.notes == b.notes);
  CHECK(a.iterations_source == b.iterations_source);
  CHECK(a.recorded_waits == b.recorded_waits);
  REQUIRE(a.profiler_cost.size() == b.profiler_cost.size());
  for (const auto& [rank, x] : a.profiler_cost) {
    REQUIRE(b.profiler_cost.count(rank));
    const cp::ProfilerCost& y = b.profiler_cost.at(rank);
    CHECK(x.record_shapes == y.record_shapes);
    CHECK(x.with_stack == y.with_stack);
    CHECK(x.profile_memory == y.profile_memory);
    CHECK(same_bits(x.op_gap_us, y.op_gap_us));
    CHECK(x.gaps_measured == y.gaps_measured);
    CHECK(same_bits(x.per_op_us, y.per_op_us));
    CHECK(same_bits(x.per_runtime_call_us, y.per_runtime_call_us));
    CHECK(same_bits(x.per_python_frame_us, y.per_python_frame_us));
    CHECK(same_bits(x.per_memory_event_us, y.per_memory_event_us));
    CHECK(same_bits(x.per_input_us, y.per_input_us));
    CHECK(x.inputs == y.inputs);
    CHECK(x.calibration == y.calibration);
    CHECK(x.ops == y.ops);
    CHECK(x.runtime_calls == y.runtime_calls);
    CHECK(x.python_frames == y.python_frames);
    CHECK(x.memory_events == y.memory_events);
    CHECK(same_bits(x.total_us, y.total_us));
  }
  CHECK(a.input_ranks == b.input_ranks);
  CHECK(same_array(a.backlog_nodes, b.backlog_nodes));
  CHECK(a.backlog_us == b.backlog_us);
}

// The plan of `trace_path`'s graph file in `cache`, its log kept in `lines`.
CacheFilePlan plan_in(const TempDir& cache, const std::string& trace_path,
                      std::vector<std::string>& lines) {
  SnapshotOptions options;
  options.cache_dir = cache.path.string();
  options.log = [&lines](std::string_view line) { lines.emplace_back(line); };
  std::optional<CacheFilePlan> plan = plan_cache_file(trace_path, cp::kGraphFileExtension, options);
  REQUIRE(plan);
  return *plan;
}

bool logged(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& line : lines)
    if (line.find(what) != std::string::npos) return true;
  return false;
}

struct Built {
  Trace trace;
  std::unique_ptr<CallTree> tree;
  cp::Graph graph;
  explicit Built(const std::string& path) : trace(load_trace(path)) {
    tree = std::make_unique<CallTree>(trace);
    graph = cp::build_graph({{&trace, tree.get(), -1}});
  }
};

TEST_CASE("graph file: the graph read back is the graph built, used in place, same analyses") {
  EnvGuard env;
  env.set("JARVIS_NO_SNAPSHOT", nullptr);
  for (const char* rel :
       {"hw_pairs/gpt2_train/h100.json.gz", "ab_pairs/s_adam_A_foreach.json.gz",
        "ab_pairs/s_generate_A_gpt2.json.gz", "nccl/hta_allreduce_2ranks_rank0/trace.json.gz"}) {
    if (!fs::exists(golden::shared_dir() + "/" + rel)) continue;
    INFO(rel);
    TempDir dir, cache;
    const std::string path = copy_of(dir, rel);
    Built b(path);
    std::vector<std::string> lines;
    const CacheFilePlan plan = plan_in(cache, path, lines);
    CHECK(!cp::read_graph_file(plan, b.trace));  // none yet
    cp::write_graph_file(plan, b.trace, b.graph);
    REQUIRE(fs::exists(plan.file));
    CHECK(fs::path(plan.file).extension() == ".jgraph");
    const fs::perms owner_rw = fs::perms::owner_read | fs::perms::owner_write;
    CHECK((fs::status(plan.file).permissions() & fs::perms::all) == owner_rw);
    std::optional<cp::Graph> read = cp::read_graph_file(plan, b.trace);
    INFO(fmt::format("{}", fmt::join(lines, "\n")));
    REQUIRE(read);
    CHECK(read->nodes.is_view());
    CHECK(read->edges.is_view());
    CHECK(read->order.is_view());
    check_same_graph(b.graph, *read);
    // The analyses of either graph: the same figures to the bit.
    const cp::Analysis built = cp::analyse(b.graph), again = cp::analyse(*read);
    CHECK(same_bits(built.step_time_us, again.step_time_us));
    REQUIRE(built.iterations.size() == again.iterations.size());
    for (size_t k = 0; k < built.iterations.size(); ++k) {
      CHECK(same_bits(built.iterations[k].length_us, again.iterations[k].length_us));
      CHECK(built.iterations[k].path.size() == again.iterations[k].path.size());
    }
    const cp::Analysis unprofiled = cp::analyse_unprofiled(b.graph),
                       unprofiled_again = cp::analyse_unprofiled(*read);
    CHECK(same_bits(unprofiled.step_time_us, unprofiled_again.step_time_us));
    CHECK(lines.empty());
  }
}

TEST_CASE(
    "graph file: another state of the trace, cache, calibration or a damaged file is ignored") {
  EnvGuard env;
  env.set("JARVIS_NO_SNAPSHOT", nullptr);
  env.set("JARVIS_CALIBRATION", nullptr);
  TempDir dir, cache, other_cache, config;
  env.set("JARVIS_CONFIG_DIR", config.path.string().c_str());
  const std::string path = copy_of(dir, "hw_pairs/gpt2_train/h100.json.gz");
  Built b(path);
  std::vector<std::string> lines;
  const CacheFilePlan plan = plan_in(cache, path, lines);
  cp::write_graph_file(plan, b.trace, b.graph);
  REQUIRE(cp::read_graph_file(plan, b.trace));
  const std::string good = loader_test::read_file(plan.file);

  SUBCASE("the trace's file changed since") {
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
    const CacheFilePlan now = plan_in(cache, path, lines);
    CHECK(now.file == plan.file);
    CHECK(!cp::read_graph_file(now, b.trace));
    CHECK(logged(lines, "stale: made from another state of the trace"));
  }
  SUBCASE("another cache's file (another MAC key)") {
    std::vector<std::string> other_lines;
    const CacheFilePlan other = plan_in(other_cache, path, other_lines);
    fs::create_directories(fs::path(other.file).parent_path());
    fs::copy_file(plan.file, other.file, fs::copy_options::overwrite_existing);
    CHECK(!cp::read_graph_file(other, b.trace));
    CHECK(logged(other_lines, "not trusted: its MAC does not match"));
  }
  SUBCASE("another calibration of the profiler's cost") {
    ab::Calibration c;
    c.host = {"testhost", "Test CPU", "9.9"};
    c.date = "2026-12-02T00:00:00Z";
    c.model.op_gaps = 7.0;
    const std::string file = (config.path / "forced.json").string();
    std::ofstream(file) << ab::calibration_json(c).dump(1);
    env.set("JARVIS_CALIBRATION", file.c_str());
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "stale: made with another profiler-cost model"));
  }
  SUBCASE("truncated, or a byte changed") {
    loader_test::write_file(plan.file, good.substr(0, good.size() - 100));
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "truncated"));
    std::string edited = good;
    edited[edited.size() / 2] = static_cast<char>(edited[edited.size() / 2] ^ 0x40);
    loader_test::write_file(plan.file, edited);
    fs::permissions(plan.file, fs::perms::owner_read | fs::perms::owner_write);
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "corrupt: checksum mismatch"));
  }
  SUBCASE("an index out of range, under a valid MAC") {
    cp::Graph bad = b.graph;
    bad.edges[bad.edges.size() / 2].from = static_cast<uint32_t>(bad.nodes.size() + 7);
    cp::write_graph_file(plan, b.trace, bad);
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "corrupt: an edge's node out of range"));
    bad = b.graph;
    bad.order[0] = bad.order[1];
    cp::write_graph_file(plan, b.trace, bad);
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "corrupt: the topological order out of range"));
    // Every index in range, but an edge's ends swapped in the order: a walk
    // could go round.
    bad = b.graph;
    const cp::Edge& e = bad.edges[bad.edges.size() / 3];
    const auto at_from = std::find(bad.order.begin(), bad.order.end(), e.from);
    const auto at_to = std::find(bad.order.begin(), bad.order.end(), e.to);
    REQUIRE(at_from < at_to);
    std::iter_swap(at_from, at_to);
    lines.clear();
    cp::write_graph_file(plan, b.trace, bad);
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "corrupt: the topological order out of range"));
    // An in-edge naming another source than its edge's.
    bad = b.graph;
    bad.in_from[bad.in_from.size() / 2] ^= 1;
    lines.clear();
    cp::write_graph_file(plan, b.trace, bad);
    CHECK(!cp::read_graph_file(plan, b.trace));
    CHECK(logged(lines, "corrupt: an in-edge out of range"));
  }
  SUBCASE("snapshots off: no file is planned") {
    env.set("JARVIS_NO_SNAPSHOT", "1");
    SnapshotOptions options;
    options.cache_dir = cache.path.string();
    CHECK(!plan_cache_file(path, cp::kGraphFileExtension, options));
  }
}

TEST_CASE("graph file: a loaded trace's step model reads the graph its first load wrote") {
  EnvGuard env;
  env.set("JARVIS_NO_SNAPSHOT", nullptr);
  env.set("JARVIS_CALIBRATION", nullptr);
  TempDir dir, cache;
  env.set("JARVIS_CACHE_DIR", cache.path.string().c_str());
  const std::string path = copy_of(dir, "hw_pairs/gpt2_train/h100.json.gz");
  std::shared_ptr<const insights::InsightContext::StepModel> first, second;
  {
    TraceCache traces;
    TraceStore store{traces};
    auto entry = store.load(path).entry;
    first = trace_step_model(*entry)->model;
  }
  REQUIRE(first);
  CHECK(!first->graph.nodes.is_view());  // built
  bool written = false;
  for (const auto& f : fs::directory_iterator(cache.path / "snapshots"))
    written = written || f.path().extension() == ".jgraph";
  CHECK(written);
  {
    TraceCache traces;
    TraceStore store{traces};
    auto entry = store.load(path).entry;
    second = trace_step_model(*entry)->model;
  }
  REQUIRE(second);
  CHECK(second->graph.nodes.is_view());  // read from the file
  check_same_graph(first->graph, second->graph);
  CHECK(same_bits(first->measured.step_time_us, second->measured.step_time_us));
  CHECK(same_bits(first->recorded.step_time_us, second->recorded.step_time_us));
  CHECK(first->measured.summary == second->measured.summary);
}

TEST_CASE(
    "graph file: the CLI's insights write it once, insights and critical-path read it after") {
  EnvGuard env;
  env.set("JARVIS_NO_SNAPSHOT", nullptr);
  env.set("JARVIS_CALIBRATION", nullptr);
  TempDir dir, cache;
  env.set("JARVIS_CACHE_DIR", cache.path.string().c_str());
  const std::string path = copy_of(dir, "hw_pairs/gpt2_train/h100.json.gz");
  const auto insights_json = [&](const std::string& name) {
    const fs::path out = dir.path / name;
    const loader_test::CliResult r =
        loader_test::run_jarvis("insights " + loader_test::shell_quote(path) + " --json " +
                                loader_test::shell_quote(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("ignored") == std::string::npos);
    return loader_test::read_file(out.string());
  };
  const std::string first = insights_json("first.json");
  fs::path graph_file;
  for (const auto& f : fs::directory_iterator(cache.path / "snapshots"))
    if (f.path().extension() == ".jgraph") graph_file = f.path();
  REQUIRE(!graph_file.empty());
  // Dated back: a read marks the file used (now), as a snapshot's does.
  const auto long_ago = fs::last_write_time(graph_file) - std::chrono::hours(48);
  fs::last_write_time(graph_file, long_ago);
  const std::string second = insights_json("second.json");
  CHECK(fs::last_write_time(graph_file) > long_ago + std::chrono::hours(47));
  CHECK(first == second);
  CHECK(first.size() > 100);

  // critical-path reads the same file; its summary is the one of a graph
  // built without the cache.
  const auto summary = [&](const std::string& name, bool cache) {
    const fs::path out = dir.path / name;
    const loader_test::CliResult r = loader_test::run_jarvis(
        std::string(cache ? "" : "--no-cache ") + "critical-path " +
        loader_test::shell_quote(path) + " --out " + loader_test::shell_quote(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("ignored") == std::string::npos);
    return loader_test::read_file((out / "critical_path_summary.json").string());
  };
  fs::last_write_time(graph_file, long_ago);
  const std::string read_back = summary("cp_read", true);
  CHECK(fs::last_write_time(graph_file) > long_ago + std::chrono::hours(47));
  const std::string built = summary("cp_built", false);
  CHECK(read_back == built);
  CHECK(read_back.find("\"iterations\"") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
