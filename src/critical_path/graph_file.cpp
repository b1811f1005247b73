// The step model's graph in its cache file (graph_file.h).
#include "critical_path/graph_file.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/phase_timer.h"
#include "critical_path/calibration.h"

namespace jarvis::critical_path {
namespace {

// 1: the first layout.
constexpr CacheFileKind kGraphFile{{'J', 'R', 'V', 'G', 'R', 'A', 'P', 'H'},
                                   1,
                                   static_cast<uint32_t>(sizeof(Node) << 16 | sizeof(Edge))};

// The file holding this code, the jarvis executable or the Python module
// (_jarvis.so, whose process is python3's): any rebuild or reinstall changes
// one of these.
struct ExecutableId {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
};

// The path of the object this function is in: a shared object's own path
// (its link map's name) when it is one, else the process's executable (the
// main program's link map has no name).
std::string code_file() {
  Dl_info info{};
  struct link_map* map = nullptr;
  if (::dladdr1(reinterpret_cast<const void*>(&code_file), &info, reinterpret_cast<void**>(&map),
                RTLD_DL_LINKMAP) != 0 &&
      map && map->l_name && map->l_name[0] == '/')
    return map->l_name;
  return "/proc/self/exe";
}

ExecutableId executable_id() {
  static const ExecutableId id = [] {
    ExecutableId e;
    struct stat st {};
    if (::stat(code_file().c_str(), &st) == 0) {
      e.device = st.st_dev;
      e.inode = st.st_ino;
      e.size = static_cast<uint64_t>(st.st_size);
      e.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    }
    return e;
  }();
  return id;
}

// What the graph was built from, as written first in the file.
struct Provenance {
  SnapshotKey trace;
  ExecutableId executable;
  std::vector<double> cost_model;  // ProfilerCostModel's numbers, in declaration order
  std::string cost_source;
  uint64_t events = 0, threads = 0;
};

Provenance provenance_of(const CacheFilePlan& plan, const Trace& trace) {
  const ProfilerCostModel m = profiler_cost_model_for(trace);
  return {plan.key,
          executable_id(),
          {m.op_gaps, m.shapes_op_gaps, m.shapes_input_gaps, m.runtime_call_gaps,
           m.python_frame_gaps, m.xla_python_frame_gaps, m.memory_event_gaps, m.fallback_op_gap_us},
          m.source,
          trace.events.size(),
          trace.threads.size()};
}

void put(CacheFileWriter& w, const Provenance& p) {
  w.str(p.trace.canonical_path);
  w.u64(p.trace.device);
  w.u64(p.trace.size);
  w.pod(p.trace.mtime_ns);
  w.u64(p.trace.inode);
  w.pod(p.trace.edge_crc);
  w.pod(p.executable);
  w.array(p.cost_model);
  w.str(p.cost_source);
  w.u64(p.events);
  w.u64(p.threads);
}

// Refuses the file unless it was built from what `want` describes.
void check(CacheFileReader& r, const Provenance& want) {
  SnapshotKey key;
  key.canonical_path = r.str();
  key.device = r.u64();
  key.size = r.u64();
  key.mtime_ns = r.pod<int64_t>();
  key.inode = r.u64();
  key.edge_crc = r.pod<uint32_t>();
  if (!(key == want.trace)) CacheFileReader::refuse("stale: made from another state of the trace");
  const auto exe = r.pod<ExecutableId>();
  if (std::memcmp(&exe, &want.executable, sizeof exe) != 0)
    CacheFileReader::refuse("stale: made by another build of jarvis");
  std::vector<double> model;
  r.array(model);
  const std::string source = r.str();
  if (model.size() != want.cost_model.size() ||
      std::memcmp(model.data(), want.cost_model.data(), model.size() * sizeof(double)) != 0 ||
      source != want.cost_source)
    CacheFileReader::refuse("stale: made with another profiler-cost model (calibration)");
  if (r.u64() != want.events || r.u64() != want.threads)
    CacheFileReader::refuse("stale: made from another trace");
}

template <class K, class V>
void put_map(CacheFileWriter& w, const std::map<K, V>& m) {
  w.u64(m.size());
  for (const auto& [k, v] : m) {
    w.pod(k);
    w.pod(v);
  }
}

template <class K, class V>
void get_map(CacheFileReader& r, std::map<K, V>& m) {
  const uint64_t n = r.count(sizeof(K) + sizeof(V));
  for (uint64_t i = 0; i < n; ++i) {
    const K k = r.pod<K>();
    m[k] = r.pod<V>();
  }
}

void put_iterations(CacheFileWriter& w, const std::vector<Iteration>& its) {
  w.u64(its.size());
  for (const Iteration& it : its) {
    w.str(it.name);
    w.pod(it.start);
    w.pod(it.end);
    w.array(it.start_nodes);
    w.array(it.host_ends);
    w.array(it.gpu_ends);
    w.pod(it.sink);
  }
}

void get_iterations(CacheFileReader& r, std::vector<Iteration>& its) {
  its.resize(r.count(8 * 5));
  for (Iteration& it : its) {
    it.name = r.str();
    it.start = r.pod<double>();
    it.end = r.pod<double>();
    r.array(it.start_nodes);
    r.array(it.host_ends);
    r.array(it.gpu_ends);
    it.sink = r.pod<uint32_t>();
  }
}

void put_cost(CacheFileWriter& w, const ProfilerCost& c) {
  w.pod(static_cast<uint8_t>(c.record_shapes));
  w.pod(static_cast<uint8_t>(c.with_stack));
  w.pod(static_cast<uint8_t>(c.profile_memory));
  for (double v : {c.op_gap_us, c.per_op_us, c.per_runtime_call_us, c.per_python_frame_us,
                   c.per_memory_event_us, c.per_input_us, c.total_us})
    w.pod(v);
  for (size_t v :
       {c.gaps_measured, c.inputs, c.ops, c.runtime_calls, c.python_frames, c.memory_events})
    w.u64(v);
  w.str(c.calibration);
}

bool get_flag(CacheFileReader& r) {
  const auto b = r.pod<uint8_t>();
  if (b > 1) CacheFileReader::refuse("corrupt: a flag");
  return b != 0;
}

ProfilerCost get_cost(CacheFileReader& r) {
  ProfilerCost c;
  c.record_shapes = get_flag(r);
  c.with_stack = get_flag(r);
  c.profile_memory = get_flag(r);
  for (double* v : {&c.op_gap_us, &c.per_op_us, &c.per_runtime_call_us, &c.per_python_frame_us,
                    &c.per_memory_event_us, &c.per_input_us, &c.total_us})
    *v = r.pod<double>();
  for (size_t* v :
       {&c.gaps_measured, &c.inputs, &c.ops, &c.runtime_calls, &c.python_frames, &c.memory_events})
    *v = r.u64();
  c.calibration = r.str();
  return c;
}

void put_graph(CacheFileWriter& w, const Graph& g) {
  w.array(g.nodes);
  w.array(g.edges);
  w.array(g.in_off);
  w.array(g.in_edges);
  w.array(g.in_from);
  w.array(g.in_kind);
  w.array(g.order);
  w.u64(g.labels.size());
  for (const Label& l : g.labels) {
    w.pod(l.rank);
    w.str(l.op);
    w.str(l.kernel);
    w.str(l.category);
  }
  put_iterations(w, g.iterations);
  w.u64(g.joins.size());
  for (const Join& j : g.joins) {
    w.pod(j.node);
    w.str(j.collective);
    w.array(j.ranks);
    w.array(j.arrivals);
  }
  w.array(g.ranks);
  put_map(w, g.clock_offset_us);
  put_map(w, g.launch_latency_us);
  w.u64(g.gpu_spans.size());
  for (const auto& [start, end] : g.gpu_spans) {
    w.pod(start);
    w.pod(end);
  }
  w.u64(g.notes.size());
  for (const std::string& note : g.notes) w.str(note);
  w.str(g.iterations_source);
  put_iterations(w, g.profiler_steps);
  w.u64(g.recorded_waits);
  w.u64(g.profiler_cost.size());
  for (const auto& [rank, cost] : g.profiler_cost) {
    w.pod(rank);
    put_cost(w, cost);
  }
  w.array(g.input_ranks);
  w.array(g.backlog_nodes);
  put_map(w, g.backlog_us);
}

void get_graph(CacheFileReader& r, Graph& g) {
  r.array(g.nodes);
  r.array(g.edges);
  r.array(g.in_off);
  r.array(g.in_edges);
  r.array(g.in_from);
  r.array(g.in_kind);
  r.array(g.order);
  g.labels.resize(r.count(8 + 3 * 8));
  for (Label& l : g.labels) {
    l.rank = r.pod<int64_t>();
    l.op = r.str();
    l.kernel = r.str();
    l.category = r.str();
  }
  get_iterations(r, g.iterations);
  g.joins.resize(r.count(4 + 3 * 8));
  for (Join& j : g.joins) {
    j.node = r.pod<uint32_t>();
    j.collective = r.str();
    r.array(j.ranks);
    r.array(j.arrivals);
  }
  r.array(g.ranks);
  get_map(r, g.clock_offset_us);
  get_map(r, g.launch_latency_us);
  g.gpu_spans.resize(r.count(8));
  for (auto& [start, end] : g.gpu_spans) {
    start = r.pod<uint32_t>();
    end = r.pod<uint32_t>();
  }
  g.notes.resize(r.count(8));
  for (std::string& note : g.notes) note = r.str();
  g.iterations_source = r.str();
  get_iterations(r, g.profiler_steps);
  g.recorded_waits = r.u64();
  const uint64_t costs = r.count(8 + 3);
  for (uint64_t i = 0; i < costs; ++i) {
    const auto rank = r.pod<int64_t>();
    g.profiler_cost[rank] = get_cost(r);
  }
  r.array(g.input_ranks);
  r.array(g.backlog_nodes);
  get_map(r, g.backlog_us);
  if (r.left() != 0) CacheFileReader::refuse("corrupt: bytes after the graph");
}

// Every index of the graph in range (graph_file.h): what the analyses index
// with, checked once here.
void check_indices(const Graph& g, const Trace& trace) {
  const size_t n = g.nodes.size(), m = g.edges.size(), labels = g.labels.size();
  const auto bad = [](const char* what) {
    CacheFileReader::refuse(fmt::format("corrupt: {} out of range", what));
  };
  const auto thread_ok = [&](uint32_t t) { return t == UINT32_MAX || t < trace.threads.size(); };
  for (const Node& node : g.nodes) {
    if (node.label >= labels) bad("a node's label");
    if (node.uid != kNoUid && node.uid >= trace.events.size()) bad("a node's event");
    if (!thread_ok(node.thread)) bad("a node's thread");
    if (static_cast<uint8_t>(node.kind) > static_cast<uint8_t>(NodeKind::IterEnd))
      bad("a node's kind");
  }
  for (const Edge& e : g.edges) {
    if (e.from >= n || e.to >= n) bad("an edge's node");
    if (e.label >= labels) bad("an edge's label");
    if (!thread_ok(e.thread)) bad("an edge's thread");
    if (static_cast<uint8_t>(e.kind) > static_cast<uint8_t>(EdgeKind::IterEnd))
      bad("an edge's kind");
    uint8_t flag = 0;
    std::memcpy(&flag, &e.from_start, 1);
    if (flag > 1) bad("an edge's anchor flag");
  }
  if (g.in_off.size() != n + 1 || g.in_off.front() != 0 || g.in_off.back() != g.in_edges.size() ||
      g.in_from.size() != g.in_edges.size() || g.in_kind.size() != g.in_edges.size())
    bad("the in-edge lists");
  // The in-edge lists are the edges into each node, with their sources and
  // kinds as compact_in_edges makes them, and the order is topological over
  // every edge: a walk over either cannot leave the graph or go round.
  if (g.in_edges.size() != m) bad("the in-edge lists");
  for (size_t node = 0; node < n; ++node) {
    if (g.in_off[node] > g.in_off[node + 1]) bad("the in-edge offsets");
    for (uint32_t k = g.in_off[node]; k < g.in_off[node + 1]; ++k) {
      if (g.in_edges[k] >= m) bad("an in-edge");
      const Edge& e = g.edges[g.in_edges[k]];
      const auto kind = static_cast<uint8_t>(static_cast<uint8_t>(e.kind) |
                                             (e.from_start ? Graph::kInFromStart : 0));
      if (e.to != node || g.in_from[k] != e.from || g.in_kind[k] != kind) bad("an in-edge");
    }
  }
  if (g.order.size() != n) bad("the topological order");
  std::vector<uint32_t> position(n, UINT32_MAX);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t node = g.order[k];
    if (node >= n || position[node] != UINT32_MAX) bad("the topological order");
    position[node] = k;
  }
  for (const Edge& e : g.edges)
    if (position[e.from] >= position[e.to]) bad("the topological order");
  const auto nodes_ok = [&](const std::vector<uint32_t>& v, const char* what) {
    for (uint32_t node : v)
      if (node >= n) bad(what);
  };
  for (const auto* its : {&g.iterations, &g.profiler_steps})
    for (const Iteration& it : *its) {
      nodes_ok(it.start_nodes, "an iteration's node");
      nodes_ok(it.host_ends, "an iteration's node");
      nodes_ok(it.gpu_ends, "an iteration's node");
      if (it.sink >= n) bad("an iteration's sink");
    }
  for (const Join& j : g.joins) {
    if (j.node >= n) bad("a join's node");
    nodes_ok(j.arrivals, "a join's arrival");
  }
  for (const auto& [start, end] : g.gpu_spans)
    if (start >= n || end >= n) bad("a GPU span");
  nodes_ok(g.backlog_nodes, "a backlog node");
}

}  // namespace

std::optional<Graph> read_graph_file(const CacheFilePlan& plan, const Trace& trace) {
  PhaseTimer t("critical_path/graph_file/read");
  Provenance want;
  try {
    want = provenance_of(plan, trace);
  } catch (const CalibrationError&) {
    return std::nullopt;  // the build meets the error itself
  }
  Graph g;
  const bool read = read_cache_file(plan, kGraphFile, [&](CacheFileReader& r) {
    check(r, want);
    get_graph(r, g);
    check_indices(g, trace);
  });
  if (!read) return std::nullopt;
  return g;
}

void write_graph_file(const CacheFilePlan& plan, const Trace& trace, const Graph& g) {
  PhaseTimer t("critical_path/graph_file/write");
  Provenance made;
  try {
    made = provenance_of(plan, trace);
  } catch (const CalibrationError&) {
    return;
  }
  write_cache_file(plan, kGraphFile, [&](CacheFileWriter& w) {
    put(w, made);
    put_graph(w, g);
  });
}

}  // namespace jarvis::critical_path
