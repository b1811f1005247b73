// Cross-rank critical path and what-if (docs/critical-path.md).
//
// One dependency graph over all ranks of a job: host runtime calls chained per
// thread, GPU operations chained per stream, launch edges (runtime call ->
// GPU op), host synchronisations (the call returns after the GPU work it
// waits for), cross-stream waits (recorded stream waits where the trace has
// Kineto's cuda_sync records, else inferred around collectives), and each
// collective instance as a join of its process group's ranks (it completes
// once the last rank arrived and the data moved). Every edge carries a lag
// calibrated on the measured trace so that replaying the graph reproduces the
// measured times; a what-if changes durations or lags and replays.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "report/table.h"
#include "trace/mappable_vector.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {
class LoadedTrace;
}

namespace jarvis::critical_path {

// The input cannot give a graph (no GPU work, ranks that cannot be joined,
// bad what-if selector); what() says what is missing.
class CriticalPathError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

enum class NodeKind : uint8_t {
  HostCall,    // a runtime / driver call (or the entry of a synchronising one)
  SyncReturn,  // the return of a synchronising call
  StepStart,   // ProfilerStep#N begins (or the trace window)
  StepEnd,
  Gpu,         // kernel / memcpy / memset
  CollArrive,  // a collective kernel starts on one rank
  CollJoin,    // the instance moves its data once every rank arrived
  CollDone,    // the collective kernel ends on one rank
  IterEnd,     // the iteration is over on every rank
};

enum class EdgeKind : uint8_t {
  HostSeq,       // next call on the same host thread
  HostHandover,  // launching moved to another host thread (autograd's engine thread)
  Launch,        // runtime call start -> GPU op start
  Stream,        // previous op on the same stream
  Sync,          // GPU op end -> return of a synchronising call
  CrossStream,   // inferred wait of one stream on another
  EventWait,     // recorded wait (cudaStreamWaitEvent on a cudaEventRecord)
  CollArrive,    // rank's arrival -> instance join
  CollDone,      // join -> rank's kernel end
  IterEnd,       // a rank's step end -> the iteration's end
};

// What a node's time (or an edge's lag) is charged to.
struct Label {
  int64_t rank = -1;
  std::string op, kernel, category;
};

struct Node {
  // Members widest first: a graph holds two nodes per GPU op and runtime
  // call (48 bytes each, not 56 in declaration order by meaning).
  int64_t rank = -1;
  double start = 0;  // measured, aligned time base (us)
  double dur = 0;
  // The profiler's estimated share of `dur` (a runtime call's CUPTI
  // callbacks); 0 elsewhere. See ProfilerCost.
  double profiler_us = 0;
  Uid uid = kNoUid;  // source event, kNoUid for synthetic nodes
  uint32_t label = 0;
  uint32_t thread = UINT32_MAX;  // host nodes: the rank's Event::thread
  NodeKind kind = NodeKind::HostCall;
  double end() const { return start + dur; }
};

struct Edge {
  // Widest first, as Node (48 bytes, not 56).
  uint32_t from = 0, to = 0;
  double intrinsic = 0;  // the lag the edge has when it does not bind
  double lag = 0;        // calibrated on the measured times
  // The profiler's estimated share of a host gap (the recorded ops, Python
  // frames and memory events inside it); 0 on other edges. See ProfilerCost.
  double profiler_us = 0;
  uint32_t label = 0;            // what the lag is charged to when on the path
  uint32_t thread = UINT32_MAX;  // HostSeq: the host thread (the rank's Event::thread)
  EdgeKind kind = EdgeKind::HostSeq;
  bool from_start = false;  // anchored at the predecessor's start, not its end
};
static_assert(sizeof(Node) <= 48 && sizeof(Edge) <= 48, "a graph's two largest arrays");

// What the profiler adds to the host, per recorded event, for one trace
// (docs/critical-path.md, "Profiler overhead"). The trace measures its own
// per-op cost: consecutive children of one C++ op (aten::linear's aten::t and
// aten::addmm) are called back to back by the dispatcher, so the gap between
// them is the profiler's exit record of one and enter record (with shapes,
// when recorded) of the next. Each event's cost is a multiple of that gap,
// calibrated on ../shared/ab_pairs/s_overhead_* against steps timed without
// the profiler.
struct ProfilerCost {
  bool record_shapes = false, with_stack = false, profile_memory = false;
  double op_gap_us = 0;      // median gap between consecutive child ops of a C++ op
  size_t gaps_measured = 0;  // gaps the median stands on (0: the default gap)
  double per_op_us = 0, per_runtime_call_us = 0, per_python_frame_us = 0, per_memory_event_us = 0;
  double per_input_us = 0;  // per recorded input ("Input Dims" entry), record_shapes only
  size_t inputs = 0;        // recorded inputs over the trace
  // The cost model used: "built-in" or a host's calibration
  // (critical_path/calibration.h, `jarvis calibrate`).
  std::string calibration = "built-in";
  // Recorded host events (all threads) and their estimated cost, over the trace.
  size_t ops = 0, runtime_calls = 0, python_frames = 0, memory_events = 0;
  double total_us = 0;
};

// Profiler cost of one trace (a rank), from its own events, with the cost
// model of its host (profiler_cost_model_for) or the one given.
ProfilerCost measure_profiler_cost(const Trace& trace, const CallTree& tree);
struct ProfilerCostModel;
ProfilerCost measure_profiler_cost(const Trace& trace, const CallTree& tree,
                                   const ProfilerCostModel& model);

// How the iterations were found: ProfilerStep#N annotations, the optimizer's
// `Optimizer.step#` annotations or a repeating launch sequence (when no rank
// has ProfilerStep), or none (the whole trace).
inline constexpr const char* kFromProfilerStep = "profiler_step";
inline constexpr const char* kFromOptimizerStep = "optimizer_step";
inline constexpr const char* kFromDetectedRepeats = "detected_repeats";
// Each ProfilerStep#N holds one generate() call (a prefill, then decode steps
// that repeat one launch sequence): the decode steps are the iterations, the
// ProfilerSteps are kept beside them (Graph::profiler_steps).
inline constexpr const char* kFromDecodeStepsInProfilerStep = "decode_steps_in_profiler_step";
inline constexpr const char* kFromWholeTrace = "whole_trace";

struct Iteration {
  std::string name;  // "ProfilerStep#4", "iteration#0" (detected), or "trace" for the whole trace
  double start = 0, end = 0;
  std::vector<uint32_t> start_nodes;  // per rank
  // The iteration ends once every rank's host left the step (host_ends) and
  // the GPU work launched inside it ran (gpu_ends: per rank and stream, the
  // last op launched in the step). A host that runs ahead ends its step
  // before its GPU work does: then the GPU bounds the iteration.
  std::vector<uint32_t> host_ends, gpu_ends;
  uint32_t sink = 0;
};

// A collective instance: its join node and each rank's arrival.
struct Join {
  uint32_t node = 0;
  std::string collective;
  std::vector<int64_t> ranks;
  std::vector<uint32_t> arrivals;
};

struct WhatIfBase;

struct Graph {
  // The large arrays are MappableVectors: owned while build_graph fills
  // them, views of the mapped file when the graph was read from its cache
  // file (graph_file.h: used in place, no fresh pages).
  MappableVector<Node> nodes;
  MappableVector<Edge> edges;
  MappableVector<uint32_t> in_off, in_edges;  // CSR of incoming edges per node
  // Per entry of in_edges: the edge's source node and its kind (EdgeKind,
  // kInFromStart set when from_start): what propagate reads of an edge, 5
  // bytes where the Edge is 48 (a replay reads every edge: the whole Edge
  // was most of its memory traffic). Made by order_nodes with in_edges.
  MappableVector<uint32_t> in_from;
  MappableVector<uint8_t> in_kind;
  static constexpr uint8_t kInFromStart = 0x80;
  MappableVector<uint32_t> order;  // topological order
  std::vector<Label> labels;
  std::vector<Iteration> iterations;
  std::vector<Join> joins;
  std::vector<int64_t> ranks;
  std::map<int64_t, double> clock_offset_us;
  std::map<int64_t, double> launch_latency_us;  // per rank, the launch edges' intrinsic lag
  // Every GPU op as (start node, end node): the busy time under any schedule.
  std::vector<std::pair<uint32_t, uint32_t>> gpu_spans;
  std::vector<std::string> notes;  // what the trace lacked, what was assumed
  std::string iterations_source = kFromWholeTrace;
  // kFromDecodeStepsInProfilerStep: the ProfilerStep#N that hold the
  // iterations (one generate() call each: its set-up and prefill, its decode
  // steps, its tail), with their own sinks; times only, no path of their
  // own. Empty otherwise.
  std::vector<Iteration> profiler_steps;
  size_t recorded_waits = 0;                      // EventWait edges (recorded cross-stream waits)
  std::map<int64_t, ProfilerCost> profiler_cost;  // per rank
  std::vector<int64_t> input_ranks;               // per RankInput, in order: its rank
  // GPU work queued before the first iteration that ran inside it (launched
  // before it, or before the profiler started): the backlog of the steps
  // before profiling. The recorded schedule keeps it (the trace's own
  // times); the un-profiled one, and so every what-if baseline, gives its
  // nodes no time. backlog_us: its GPU time inside the first iteration, per rank.
  std::vector<uint32_t> backlog_nodes;
  std::map<int64_t, double> backlog_us;
  // The what-if base of this graph (what_if_base), attached by its owner
  // once the graph is final (insights' step model, a loaded trace's cached
  // graph): every un-profiled what_if on the graph starts from it instead of
  // recomputing it. Null: each what_if computes its own. Whoever changes a
  // graph's nodes or edges after attaching one resets it.
  std::shared_ptr<const WhatIfBase> attached_base;
};

// Iterations found as repeats of the launch sequence of one host thread: the
// sequence of launched GPU op names, its smallest period that tiles (nearly)
// the whole sequence in at least two exact copies.
struct Repeats {
  size_t period = 0;        // launches per iteration
  size_t count = 0;         // iterations
  double coverage = 0;      // share of the thread's launches inside them
  std::vector<Uid> starts;  // the launch call that begins each iteration
  Uid after = kNoUid;       // the launch call after the last one (kNoUid: trace end)
  size_t launches = 0;      // launches of the thread
  size_t first = 0;         // launches of the thread before the first iteration
};

// The repeats of the busiest launching thread of a trace, or nullopt when the
// sequence does not repeat (fewer than two copies, or copies that cover less
// than 90% of it, or launches outside them that never occur inside one).
std::optional<Repeats> detect_repeats(const Trace& trace, const CallTree& tree);

// Repeats after a prefix that differs from them: an inference trace's decode
// steps after its prefill (or steps after a warm-up). At least three copies
// of a period running to the end of the busiest thread's launch sequence
// (its last launches may be a piece of one), covering at least a third of it,
// and holding the prefix's first launch (a step begins as the prefix did:
// embedding, input copies), which tells steps from the layers of one forward
// pass. nullopt when there are none.
// With `window` (trace time [from, to)), only the launches whose call starts
// inside it: the decode steps of one ProfilerStep of a generate() trace.
std::optional<Repeats> detect_trailing_repeats(
    const Trace& trace, const CallTree& tree,
    const std::optional<std::pair<double, double>>& window = std::nullopt);

// Iteration bounds found without ProfilerStep#N: where each iteration begins
// (a time on a host thread) and where the last one ends (none: with the trace).
struct StepMark {
  double ts = 0;
  ProcId pid, tid;
};
struct StepBounds {
  std::vector<StepMark> starts;
  std::optional<StepMark> end;
  // Where each iteration ends, when not where the next begins (decode steps
  // of separate ProfilerSteps: a prefill lies between them); empty: the next
  // start, the last one at `end`. Names: "iteration#k" when empty.
  std::vector<StepMark> ends;
  std::vector<std::string> names;
  // kFromOptimizerStep, kFromDetectedRepeats or kFromDecodeStepsInProfilerStep
  std::string source;
};

// A training loop's steps from torch.optim's `Optimizer.step#<Class>.step`
// annotations (written for every optimizer step the profiler records): an
// iteration ends where a step's host annotation ends and the next begins
// there; the first begins at the first cpu_op of the step's thread. nullopt
// when the trace has no such annotation or they are spread over threads.
std::optional<StepBounds> optimizer_step_bounds(const Trace& trace);
// The same bounds from launch-sequence repeats: each copy's first launch call
// begins an iteration, the launch after the last copy ends it.
StepBounds repeat_bounds(const Trace& trace, const Repeats& repeats);

struct RankInput {
  const Trace* trace = nullptr;
  const CallTree* tree = nullptr;
  int64_t rank = -1;  // -1: from distributedInfo, else the position
};

// Builds and calibrates the graph. Throws CriticalPathError (and the
// collectives' CollectiveError when the ranks' collectives do not match).
Graph build_graph(const std::vector<RankInput>& ranks);

// ---- replay and path ----------------------------------------------------------

struct Schedule {
  std::vector<double> start;      // per node
  std::vector<uint32_t> binding;  // per node: the in-edge that set its start, or kNone
  static constexpr uint32_t kNone = UINT32_MAX;
};

// Replays the graph with the given node durations and edge lags.
Schedule propagate(const Graph& graph, const std::vector<double>& dur,
                   const std::vector<double>& lag);

// A piece of an iteration's path: a node's time or an edge's lag, read
// through its graph label (Graph::labels: rank, op, kernel, category), or
// untraced time on a rank. The names are views: kind() of a static name, the
// others of the label, so an analysis is read while the graph it was computed
// on lives. 48 bytes: a path holds 10,000s of segments a step and a step
// model keeps two analyses for the session (views of the four names in each
// segment made it 104 bytes: 118 MB of an x256 tile's 628 MB server).
struct Segment {
  static constexpr uint32_t kNoLabel = UINT32_MAX;
  const Label* of = nullptr;           // the graph's label; null for untraced time
  const char* kind_name = "untraced";  // node / edge kind ("gpu", "host_call", "launch", ...)
  double start_us = 0, dur_us = 0;
  int64_t rank = -1;
  uint32_t iteration = 0;
  uint32_t label = kNoLabel;  // index into Graph::labels; kNoLabel for untraced time

  std::string_view kind() const { return kind_name; }
  std::string_view op() const { return of ? std::string_view(of->op) : std::string_view(); }
  std::string_view kernel() const { return of ? std::string_view(of->kernel) : std::string_view(); }
  std::string_view category() const {
    return of ? std::string_view(of->category) : std::string_view("untraced");
  }
};

struct Contributor {
  int64_t rank = -1;
  std::string op, kernel, category;
  double time_us = 0;  // mean per iteration on the path
  double share = 0;    // of the mean step time
};

struct Wait {
  int64_t rank = -1, waiting_for_rank = -1;
  double time_us = 0;  // mean per iteration
  size_t instances = 0;
};

struct IterationResult {
  std::string name;
  double start_us = 0, end_us = 0;
  double length_us = 0;       // end - start
  double path_length_us = 0;  // sum of the path's segments
  bool differs = false;       // length more than 5% from the median
  // Per rank: GPU idle time in the window and the part of it the path spends
  // on the host (host calls, host gaps, launch latency) of that rank.
  std::map<int64_t, double> gpu_idle_us, idle_host_us;
  std::vector<Segment> path;  // in time order
  // When the hosts left the step and when the GPU work launched in it ended
  // (-inf when none was launched); an iteration after the first starts where
  // the one before it ended, so a GPU-bound loop's length is its GPU period.
  double host_end_us = 0, gpu_end_us = 0;
  // What bounds the iteration: kBoundByGpu / kBoundByHost / kBoundByCommunication,
  // from the path's time (GPU ops; host calls, gaps, launch latency, syncs;
  // collectives' transfers), and why in words.
  std::string bound_by, bound_reason;
};

inline constexpr const char* kBoundByGpu = "gpu";
inline constexpr const char* kBoundByHost = "host";
inline constexpr const char* kBoundByCommunication = "communication";

// A ProfilerStep#N that holds several iterations (Graph::profiler_steps:
// one generate() call), under the analysis's schedule.
struct ProfilerStepResult {
  std::string name;
  double start_us = 0, end_us = 0, length_us = 0;
  size_t iterations = 0;  // the iterations (decode steps) inside it
  // Before its first iteration (the call's set-up and prefill) and after its
  // last one (the tail: a partial decode step, the call's return); outside
  // every iteration.
  double before_us = 0, after_us = 0;
};

struct Analysis {
  std::vector<int64_t> ranks;
  std::map<int64_t, double> clock_offset_us;
  std::string iterations_source = kFromWholeTrace;
  double step_time_us = 0;  // mean iteration length
  std::vector<IterationResult> iterations;
  // kFromDecodeStepsInProfilerStep: the ProfilerSteps holding the iterations
  // (one generate() call each), their mean length, and the means of their
  // parts outside the iterations (set-up + prefill before, tail after).
  // profiler_step_us is 0 when there are none.
  std::vector<ProfilerStepResult> profiler_steps;
  double profiler_step_us = 0, profiler_step_before_us = 0, profiler_step_after_us = 0;
  // The same mean as recorded (the un-profiled analysis sets it; the
  // recorded one sets it to its own).
  double recorded_profiler_step_us = 0;
  std::vector<Contributor> contributors;  // by share, largest first
  std::vector<Wait> waits;                // by time, largest first
  std::vector<std::string> notes;
  std::string summary;  // one line: the step, what bounds it, the path's top categories
  // Which host the schedule replays: kModelUnprofiled (the recorded host
  // less the profiler's estimated cost, the default everywhere) or
  // kModelRecorded (the trace's own times).
  std::string model = "recorded";
  // The mean iteration as recorded and as estimated without the profiler
  // (both set by analyse_unprofiled; the recorded one alone by analyse).
  double recorded_step_time_us = 0;
  std::optional<double> estimated_unprofiled_step_us;
  double profiler_host_us_per_step = 0;  // the estimated profiler time removed per iteration
  std::map<int64_t, ProfilerCost> profiler_cost;  // per rank (analyse_unprofiled)
  // GPU work queued before profiling that ran inside the first iteration
  // (Graph::backlog_us), summed over ranks: once per trace, not per step. The
  // un-profiled analysis leaves it out of its steps; the recorded one keeps it.
  double gpu_backlog_left_out_us = 0;
};

inline constexpr const char* kModelRecorded = "recorded";
inline constexpr const char* kModelUnprofiled = "unprofiled";
// How a note of analyse_unprofiled about host interference begins (an
// iteration whose host gaps ran longer than the fastest one's for the same
// calls): the health block lists these notes among its warnings.
inline constexpr const char* kInterferenceNote = "host interference:";

// The critical path of each iteration under a schedule (the measured one when
// dur/lag are the graph's own).
Analysis analyse(const Graph& graph, const std::vector<double>& dur,
                 const std::vector<double>& lag);
Analysis analyse(const Graph& graph);
// How much of an analysis analyse_steps gives.
enum class StepDetail : uint8_t {
  Times,   // the iterations' times and the mean step: no path walked
  Bounds,  // also each iteration's bound_by (its path walked, no segments kept)
};
// The same iterations' times and mean step alone: what analyse gives as
// step_time_us and each iteration's name, start, end, length, host and GPU
// ends and `differs` (with StepDetail::Bounds also its bound_by), without the
// path's segments (no path, idle times, bound_reason, contributors, waits or
// summary). One replay: what a what-if sized by its step time needs
// (what_if_step). `bounds_when`, with StepDetail::Times: the bounds too where
// it says so of the times (a caller that asks what bounds the step only when
// the step time falls short: one replay, not a second one for the bounds).
using BoundsWhen = std::function<bool(const Analysis& times)>;
Analysis analyse_steps(const Graph& graph, const std::vector<double>& dur,
                       const std::vector<double>& lag, StepDetail detail = StepDetail::Times,
                       const BoundsWhen& bounds_when = {});

// Node durations and edge lags without the profiler's estimated host cost:
// each host gap less the cost of the events recorded inside it, each
// runtime call less its callbacks' cost (never below 10% of the recorded
// time: the un-profiled host still runs the Python and the dispatcher).
void unprofiled_times(const Graph& graph, std::vector<double>& dur, std::vector<double>& lag);
// The critical path of the un-profiled schedule (model kModelUnprofiled),
// with the recorded step beside it: what bounds the step once the profiler
// is gone. The default analysis of every tool.
Analysis analyse_unprofiled(const Graph& graph);
// The same, also filling `base` with the graph's what-if base (what_if_base
// gives the same) from the schedule and the analyses it computes anyway.
Analysis analyse_unprofiled(const Graph& graph, WhatIfBase& base);
// The same from the graph's recorded analysis (analyse(graph)) when the
// caller has it already.
Analysis analyse_unprofiled(const Graph& graph, WhatIfBase& base, const Analysis& recorded);
// What a step model is made of: the recorded analysis (analyse), the
// un-profiled one with `base` filled (analyse_unprofiled) and the base
// indexed for replays (index_for_replays), the parts that do not read each
// other side by side; each the same as made alone.
struct BothAnalyses {
  Analysis recorded, unprofiled;
};
BothAnalyses analyse_and_index(const Graph& graph, WhatIfBase& base);

// ---- what-if --------------------------------------------------------------------

struct Selector {
  std::optional<int64_t> rank;
  std::string category;  // perf category ("gemm" names GEMM), or communication / host
  // The launching op's and the kernel's name, case-insensitive: a whole name
  // of the graph selects that name only, any other text is a substring.
  std::string op;
  std::string kernel;
  // These GPU events only (their UIDs in the rank's trace), when not empty.
  std::vector<Uid> gpu_uids;
  bool empty() const {
    return !rank && category.empty() && op.empty() && kernel.empty() && gpu_uids.empty();
  }
};

// Host work taken out of a step: a time range of one host thread of a rank
// (trace time, before clock alignment), e.g. a DataLoader's __next__ or an
// op's calls.
struct HostSpan {
  int64_t rank = -1;
  uint32_t thread = 0;  // Event::thread of the rank's trace
  double from_us = 0, to_us = 0;
};

struct Scenario {
  Selector select;
  // Host work removed: the gaps and calls inside these spans take no time.
  std::vector<HostSpan> remove_host;
  // Host time no event records, taken out whole (add_host_gap_removal,
  // critical_path/host_gaps.h): each host gap or hand-over into a span's
  // thread loses the span's time inside it, never more than its lag.
  std::vector<HostSpan> remove_unrecorded;
  // Synchronising runtime calls (rank, uid) that no longer wait for the GPU.
  std::vector<std::pair<int64_t, Uid>> remove_syncs;
  // GPU events (rank, uid) that no longer run (take no time on their stream).
  std::vector<std::pair<int64_t, Uid>> remove_gpu;
  // What add_host_removal matched, in words (the first line of the changes).
  std::string host_removal;
  double factor = 1.0;  // duration multiplier of the selected GPU ops
  // Further selections, each at its own factor, applied after `select`: the
  // changes of several findings in one replay (their joint saving). Each
  // scales the durations as they were before any selection; a GPU op that
  // two of them (or `select` and one) take keeps the shorter result.
  std::vector<std::pair<Selector, double>> also_scale;
  bool median_rank = false;  // instead: each selected rank as fast as the median rank
  // A CUDA / HIP graph of each iteration's launches: launch calls and the
  // host gaps between them take no time (one graph launch per iteration),
  // kernels keep their durations, streams and syncs, and follow each other
  // with a graph's per-kernel gap.
  bool remove_launch_gaps = false;
  std::string overlap_collective;  // "" none, "all", or a collective name substring
  // Replay the trace's own host (kModelRecorded) instead of the un-profiled
  // one (the default).
  bool recorded_host = false;
};

// A kernel name a selection took: its launches and their time (all
// iterations, before the change).
struct MatchedKernel {
  std::string name;
  size_t launches = 0;
  double time_us = 0;
};

struct WhatIfResult {
  // The step the change starts from: the un-profiled estimate by default
  // (the recorded step with Scenario::recorded_host), and after the change.
  double measured_step_time_us = 0;
  double predicted_step_time_us = 0;
  // Beside them: the trace's recorded step and the prediction on the
  // recorded (profiled) host.
  double recorded_step_time_us = 0;
  double predicted_profiled_step_time_us = 0;
  std::string model = "unprofiled";
  size_t selected_nodes = 0;
  // The distinct kernel names the selected GPU ops run, most time first: a
  // name text that is not a whole name is a substring and may take more
  // kernels than meant.
  std::vector<MatchedKernel> matched_kernels;
  std::map<int64_t, double> factor_by_rank;  // the factors applied
  Analysis predicted;                        // the new critical path
  std::vector<std::string> changes;          // what the scenario changed, in words
  // Time the change took out per iteration, on the schedule it starts from,
  // inside the iterations: scaled or removed GPU ops, overlapped transfers,
  // removed runtime calls, the host gaps it shortened (removed spans,
  // unrecorded stretches, launch gaps) and the waits of the syncs that no
  // longer wait (their waits on that schedule). A removed sync can save more
  // than this: the host then runs ahead and its later work overlaps the GPU's.
  double removed_us = 0;
  std::string summary;  // one line: the change, the step before / after, what bounds it
};

WhatIfResult what_if(const Graph& graph, const Scenario& scenario);

// What every what-if on one graph starts from, computed once (what_if_base)
// and reused by each scenario on it: the un-profiled schedule
// (unprofiled_times) with its step and its bounds, and the recorded step.
// A what-if on a base gives what what_if(graph, scenario) gives; insights
// sizes each of its findings on the one base of its step model.
struct WhatIfBase {
  std::vector<double> dur, lag;  // unprofiled_times (empty: a recorded-host base)
  double step_time_us = 0;       // analyse(graph, dur, lag)
  std::string bounds;            // what bounds its iterations ("gpu", "host x3/gpu")
  double recorded_step_time_us = 0;
  std::string recorded_bounds;
  // What a base that serves many what-ifs (attached_base: the insights step
  // model's) keeps for their replays (index_for_replays); empty otherwise.
  // (UID, node) of every GPU node, sorted: a selector of GPU events by UID
  // looks up their nodes instead of scanning the graph.
  std::vector<std::pair<Uid, uint32_t>> gpu_nodes_by_uid;
  // Each synchronising call's wait on this base's schedule (its return's
  // start less the start of its call, a call inside an iteration), in node
  // order: what removing the sync takes off (WhatIfResult::removed_us),
  // without a replay of the base for every scenario that removes syncs.
  struct SyncWait {
    int64_t rank = 0;
    Uid uid = kNoUid;
    double wait_us = 0;
  };
  std::vector<SyncWait> sync_waits;
  // The graph's Sync edges (a call's return waiting for the GPU), in edge
  // order: a scenario that removes syncs looks at these, not every edge.
  std::vector<uint32_t> sync_edges;
  // The host's edges (HostSeq, HostHandover) and runtime-call nodes
  // (HostCall), in order: what a scenario that takes host time out reads.
  std::vector<uint32_t> host_edges, host_calls;
  // (rank, UID) of every synchronising call the graph split (a SyncReturn
  // node), sorted, once: what add_host_removal looks a call up in.
  std::vector<std::pair<int64_t, Uid>> sync_returns;
  // The host edges and calls of each thread, in runs in time order, made
  // once by the first replay that takes host spans out (what_if.cpp): each
  // span finds the few gaps and calls it reaches instead of every scenario
  // passing over all of them (x256: 400,000 edges, 2.5-4.3 ms a replay).
  struct HostRuns;
  std::shared_ptr<HostRuns> host_runs;  // set by index_for_replays
  // Copies of dur and lag that replays write their scenario into and put
  // back after (what_if.cpp): a replay neither copies the base's 15 MB (x256)
  // nor compares every value to find what its scenario changed.
  struct ReplayScratch;
  std::shared_ptr<ReplayScratch> replay_scratch;  // set by index_for_replays
  bool indexed_for_replays = false;
};
// `unprofiled` false: the recorded step alone (enough for Scenario::recorded_host).
WhatIfBase what_if_base(const Graph& graph, bool unprofiled = true);
// Fills the base's gpu_nodes_by_uid, sync_waits, sync_edges, host_edges,
// host_calls and sync_returns from the graph and the
// base's un-profiled times (base.dur, base.lag; a recorded-host base is left
// as it is).
void index_for_replays(const Graph& graph, WhatIfBase& base);
// What bounds an analysis's iterations, as WhatIfBase::bounds says it.
std::string iteration_bounds(const Analysis& analysis);
// `profiled_prediction` false: the prediction on the recorded host is not
// replayed (recorded_step_time_us and predicted_profiled_step_time_us stay
// 0 and the summary omits them): one replay of the graph per scenario.
WhatIfResult what_if(const Graph& graph, const Scenario& scenario, const WhatIfBase& base,
                     bool profiled_prediction = true);
// The step alone: what what_if(graph, scenario, base, false) gives as the
// step before and after, removed_us, selected_nodes, matched_kernels,
// factor_by_rank, changes and model, with `predicted` from analyse_steps (the
// iterations' times, no path, bounds or contributors) and no summary: one
// replay without the path walk, for a caller that reads the step time only
// (insights sizes its findings so). Scenario::recorded_host replays the
// recorded host from the base's recorded step. StepDetail::Bounds: each
// predicted iteration's bound_by too. RemovedUs::Skip: removed_us is left NaN
// (its sum reads every duration and lag of the graph twice, a sixth of a
// replay's time, for the callers that read the step time alone).
enum class RemovedUs : uint8_t { Sum, Skip };
WhatIfResult what_if_step(const Graph& graph, const Scenario& scenario, const WhatIfBase& base,
                          StepDetail detail = StepDetail::Times, const BoundsWhen& bounds_when = {},
                          RemovedUs removed = RemovedUs::Sum);

// Host work an agent proposes to take out ("drop these .item() calls", "no
// tokenizer in the loop"): host events named exactly (cpu_op, user
// annotation, python frame, runtime call), given by uid, or python frames
// whose name contains a text. They go whole: their host time, the waits of
// the synchronising calls inside them and the GPU work those calls launched.
struct HostRemoval {
  std::vector<std::string> ops;  // exact event names, as ops_summary prints them
  std::vector<Uid> uids;         // host events of `rank`'s trace (or of the only trace)
  std::string python_frame;      // python_function names containing this (case-insensitive)
  std::optional<int64_t> rank;   // only this rank
  // Keep the events' host time and GPU work: only the synchronising calls
  // inside them stop waiting (the value stays on the GPU: no .item()).
  bool waits_only = false;
  bool empty() const { return ops.empty() && uids.empty() && python_frame.empty(); }
};

struct HostRemovalMatch {
  size_t events = 0;   // host events matched (nested ones each)
  double host_us = 0;  // their time, nested spans once
  size_t syncs = 0;    // synchronising calls inside that no longer wait
  size_t gpu_ops = 0;  // GPU ops those calls launched, removed
  double gpu_us = 0;
};

// Adds the removal to the scenario (remove_host spans merged per thread,
// remove_syncs, remove_gpu, host_removal). Throws CriticalPathError when no
// event matches, a uid is not a host event, or uids come without a rank on a
// multi-rank graph.
HostRemovalMatch add_host_removal(const std::vector<RankInput>& inputs, const Graph& graph,
                                  const HostRemoval& removal, Scenario& scenario);

// ---- files ----------------------------------------------------------------------

struct Loaded {
  std::vector<std::unique_ptr<Trace>> traces;
  std::vector<std::unique_ptr<CallTree>> trees;
  Graph graph;
};

HostRemovalMatch add_host_removal(const Loaded& loaded, const HostRemoval& removal,
                                  Scenario& scenario);

// Loads the traces (rank from distributedInfo, else the order given) and
// builds the graph. progress(done, total) after each load; false cancels.
Loaded load_graph(const std::vector<std::string>& paths,
                  const std::function<bool(size_t, size_t)>& progress = {});

// The graph of a loaded trace (a one-trace job), built on first use from its
// cached call tree and cached on the entry for the calls after it. Throws as
// build_graph.
std::shared_ptr<const Graph> trace_graph(const LoadedTrace& entry);

nlohmann::json analysis_json(const Analysis& analysis, size_t top_n);
nlohmann::json what_if_json(const WhatIfResult& result, const Scenario& scenario, size_t top_n);

// critical_path_summary.json and path_iteration<K>.csv; returns the files.
std::vector<std::string> write_analysis(const Analysis& analysis, const std::string& dir);
// what_if.json (+ the predicted path CSVs); returns the files.
std::vector<std::string> write_what_if(const WhatIfResult& result, const Scenario& scenario,
                                       const std::string& dir);

}  // namespace jarvis::critical_path
