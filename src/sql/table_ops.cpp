// ops: the cpu_op events with their place in the call tree, the nn.Module
// path and Python frame enclosing them, their input args as text, and the
// perf model's numbers. The tree position is cheap and built with the table;
// the module paths and the perf numbers are built on the first read of one
// of their columns (a query that does not read them does not pay for them),
// and all three are cached on the loaded trace for the next query.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <iterator>

#include "explore/trace_store.h"
#include "perf/categories.h"
#include "perf/gpu_arch.h"
#include "report/perf_tables.h"
#include "sql/table_source.h"
#include "trace/module_path.h"
#include "tree/call_tree.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace ops_columns {

enum Col {
  kUid,
  kName,
  kTs,
  kDur,
  kEnd,
  kPid,
  kTid,
  kParentUid,
  kDepth,
  kModule,
  kPythonFrame,
  kInputDims,
  kInputTypes,
  kInputStrides,
  kConcreteInputs,
  kCategory,
  kKernelCount,
  kGpuBusy,
  kPerfSheet,
  kGflops,
  kBytes,
  kTflopsPerS,
  kTbPerS,
  kRooflineBound,
  kRooflinePct,
};

// The leading columns, read off the event (table_source.h).
constexpr EventField kEventColumns[] = {EventField::Uid, EventField::Name, EventField::Ts,
                                        EventField::Dur, EventField::End,  EventField::Pid,
                                        EventField::Tid};
static_assert(std::size(kEventColumns) == kParentUid, "the event columns lead the table");

// Tree position of every cpu_op: uids ascending, depth = number of ancestors.
struct OpsIndex {
  std::vector<Uid> uids;
  std::vector<int32_t> depth;
};

OpsIndex build_index(const Trace& trace, const CallTree& tree) {
  OpsIndex ix;
  for (Uid u = 0; u < trace.events.size(); ++u)
    if (trace.events[u].cat == Cat::CpuOp) ix.uids.push_back(u);
  ix.depth.reserve(ix.uids.size());
  // Depth of every event on demand, memoised: a chain is walked once.
  std::vector<int32_t> memo(trace.events.size(), -1);
  std::vector<Uid> chain;
  for (Uid u : ix.uids) {
    chain.clear();
    Uid v = u;
    while (v != kNoUid && memo[v] < 0) {
      chain.push_back(v);
      v = tree.parent(v);
    }
    int32_t d = v == kNoUid ? -1 : memo[v];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) memo[*it] = ++d;
    ix.depth.push_back(memo[u]);
  }
  return ix;
}

// Per op row: the nn.Module frames enclosing it on its thread, outermost
// first, joined by '/', and the innermost other Python frame (traces
// recorded with with_stack / with_modules; empty otherwise).
struct OpsContext {
  std::vector<std::string> paths;    // distinct module paths
  std::vector<int32_t> module_path;  // per op row: index into paths, -1 none
  std::vector<Uid> python_frame;     // per op row: innermost python_function, kNoUid none
};

constexpr std::string_view kModulePrefix = "nn.Module: ";

OpsContext build_context(const Trace& trace, const std::vector<Uid>& ops) {
  OpsContext c;
  c.module_path.assign(ops.size(), -1);
  c.python_frame.assign(ops.size(), kNoUid);
  // Events of interest by thread: python frames and the ops (by row, tagged).
  struct Item {
    int64_t ts, end;
    Uid uid;
    int64_t row;  // op row, -1 for a python frame
  };
  std::unordered_map<uint32_t, std::vector<Item>> by_thread;
  bool any_frame = false;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::PythonFunction && e.has_ts() && e.has_dur()) {
      by_thread[e.thread].push_back({e.ts_ns, e.ts_ns + e.dur_ns, u, -1});
      any_frame = true;
    }
  }
  if (!any_frame) return c;
  for (size_t r = 0; r < ops.size(); ++r) {
    const Event& e = trace.events[ops[r]];
    if (e.has_ts())
      by_thread[e.thread].push_back(
          {e.ts_ns, e.ts_ns + (e.has_dur() ? e.dur_ns : 0), ops[r], static_cast<int64_t>(r)});
  }
  std::unordered_map<std::string, int32_t> path_ids;
  for (auto& [thread, items] : by_thread) {
    // Enclosing first: earlier start, then longer, then frames before ops.
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.end != b.end) return a.end > b.end;
      return a.row < b.row;
    });
    std::vector<const Item*> modules, frames;
    std::string path;
    for (const Item& it : items) {
      while (!modules.empty() && modules.back()->end <= it.ts) modules.pop_back();
      while (!frames.empty() && frames.back()->end <= it.ts) frames.pop_back();
      if (it.row < 0) {
        std::string_view name = trace.name(it.uid);
        (name.starts_with(kModulePrefix) ? modules : frames).push_back(&it);
        continue;
      }
      if (!frames.empty()) c.python_frame[it.row] = frames.back()->uid;
      if (modules.empty()) continue;
      path = join_module_path(modules.size(), [&](size_t k) {
        return trace.name(modules[k]->uid).substr(kModulePrefix.size());
      });
      auto [pos, added] = path_ids.try_emplace(path, static_cast<int32_t>(c.paths.size()));
      if (added) c.paths.push_back(path);
      c.module_path[it.row] = pos->second;
    }
  }
  return c;
}

// Perf-model numbers per op uid (unified_perf_summary's rows: the outermost
// modeled op of each launch subtree), with the trace's detected GPU arch.
struct OpsPerf {
  std::unordered_map<Uid, report::PerfOpRow> by_uid;
};

OpsPerf build_perf(const LoadedTrace& entry, const CallTree& tree) {
  OpsPerf p;
  std::string arch_name = detect_arch_name(entry.trace());
  std::optional<GpuArch> arch;
  if (!arch_name.empty()) arch = perf::load_gpu_arch(arch_name);
  for (auto& row : report::unified_perf_rows(entry.trace(), tree, arch ? &*arch : nullptr))
    if (row.event_uid != kNoUid && row.event_uid == row.uid)
      p.by_uid.emplace(row.uid, std::move(row));
  return p;
}

void input_arg(const Trace& trace, Uid uid, std::string_view key, CellSink& out) {
  if (const PyValue* v = trace.arg(uid, key)) {
    std::string text = v->repr();
    out.text(text, false);
  } else {
    out.null();
  }
}

TableSource bind_ops(const QueryContext& ctx) {
  const LoadedTrace& entry = ctx.entry();
  const Trace& trace = ctx.trace();
  const CallTree& tree = ctx.tree();
  auto index = entry.cached<OpsIndex>("sql:ops_index", [&] { return build_index(trace, tree); });
  struct Lazy {
    std::shared_ptr<const OpsContext> context;
    std::shared_ptr<const OpsPerf> perf;
  };
  auto lazy = std::make_shared<Lazy>();
  auto uids = std::shared_ptr<const std::vector<Uid>>(index, &index->uids);
  return uid_rows(
      uids, kUid,
      [&entry, &trace, &tree, index, lazy](size_t row, Uid uid, int column, CellSink& out) {
        auto context = [&]() -> const OpsContext& {
          if (!lazy->context)
            lazy->context = entry.cached<OpsContext>(
                "sql:ops_context", [&] { return build_context(trace, index->uids); });
          return *lazy->context;
        };
        auto perf_row = [&]() -> const report::PerfOpRow* {
          if (!lazy->perf)
            lazy->perf =
                entry.cached<OpsPerf>("sql:ops_perf", [&] { return build_perf(entry, tree); });
          auto it = lazy->perf->by_uid.find(uid);
          return it == lazy->perf->by_uid.end() ? nullptr : &it->second;
        };
        auto metrics = [&]() -> const perf::PerfMetrics* {
          const report::PerfOpRow* r = perf_row();
          return r && r->metrics ? &*r->metrics : nullptr;
        };
        if (column >= 0 && static_cast<size_t>(column) < std::size(kEventColumns))
          return event_cell(trace, uid, kEventColumns[column], out);
        switch (column) {
          case kParentUid:
            out.maybe_uid(tree.parent(uid));
            break;
          case kDepth:
            out.integer(index->depth[row]);
            break;
          case kModule: {
            int32_t p = context().module_path[row];
            if (p < 0)
              out.null();
            else
              out.text(context().paths[p], true);
            break;
          }
          case kPythonFrame: {
            Uid f = context().python_frame[row];
            if (f == kNoUid)
              out.null();
            else
              out.text(trace.name(f), true);
            break;
          }
          case kInputDims:
            input_arg(trace, uid, "Input Dims", out);
            break;
          case kInputTypes:
            input_arg(trace, uid, "Input type", out);
            break;
          case kInputStrides:
            input_arg(trace, uid, "Input Strides", out);
            break;
          case kConcreteInputs:
            input_arg(trace, uid, "Concrete Inputs", out);
            break;
          case kCategory: {
            auto kernels = tree.gpu_events(uid);
            std::string_view first =
                kernels.empty() ? std::string_view() : trace.name(kernels.front());
            out.text(perf::op_category(trace.name(uid), first), false);
            break;
          }
          case kKernelCount:
            out.integer(static_cast<int64_t>(tree.gpu_events(uid).size()));
            break;
          case kGpuBusy: {
            auto kernels = tree.gpu_events(uid);
            if (kernels.empty())
              out.null();
            else
              out.integer(std::llround(tree.busy_time(kernels) * 1000.0));
            break;
          }
          case kPerfSheet: {
            const report::PerfOpRow* r = perf_row();
            if (r && !r->sheet.empty())
              out.text(r->sheet, false);
            else
              out.null();
            break;
          }
          case kGflops: {
            const perf::PerfMetrics* m = metrics();
            if (m)
              out.real(m->gflops);
            else
              out.null();
            break;
          }
          case kBytes: {
            const perf::PerfMetrics* m = metrics();
            if (m && m->bytes)
              out.real(*m->bytes);
            else
              out.null();
            break;
          }
          case kTflopsPerS: {
            const perf::PerfMetrics* m = metrics();
            if (m)
              out.maybe_real(m->tflops_per_s);
            else
              out.null();
            break;
          }
          case kTbPerS: {
            const perf::PerfMetrics* m = metrics();
            if (m)
              out.maybe_real(m->tb_per_s);
            else
              out.null();
            break;
          }
          case kRooflineBound: {
            const perf::PerfMetrics* m = metrics();
            if (m && m->roofline)
              out.text(m->roofline->bound, false);
            else
              out.null();
            break;
          }
          case kRooflinePct: {
            const perf::PerfMetrics* m = metrics();
            if (m && m->roofline)
              out.maybe_real(m->roofline->pct);
            else
              out.null();
            break;
          }
          default:
            out.null();
        }
      });
}

}  // namespace ops_columns
}  // namespace

const TableDef& ops_table() {
  static const TableDef def{
      "ops",
      "cpu_op events with call-tree position, nn.Module path, input args and perf-model numbers",
      {{"uid", ColType::Integer, "event uid"},
       {"name", ColType::Text, "op name, e.g. aten::mm"},
       {"ts", ColType::Integer, "start, ns"},
       {"dur", ColType::Integer, "CPU duration, ns"},
       {"end", ColType::Integer, "ts + dur, ns"},
       {"pid", ColType::Integer, "process id"},
       {"tid", ColType::Integer, "thread id"},
       {"parent_uid", ColType::Integer, "uid of the parent in the call tree (NULL at a root)"},
       {"depth", ColType::Integer, "ancestors in the call tree (0 at a root)"},
       {"module", ColType::Text,
        "enclosing nn.Module frames, outermost first, '/'-joined (e.g. BertModel_0/BertLayer_3); "
        "NULL without module frames"},
       {"python_frame", ColType::Text,
        "innermost enclosing Python frame other than a module (with_stack traces)"},
       {"input_dims", ColType::Text, "args['Input Dims'] as Python repr"},
       {"input_types", ColType::Text, "args['Input type'] as Python repr"},
       {"input_strides", ColType::Text, "args['Input Strides'] as Python repr"},
       {"concrete_inputs", ColType::Text, "args['Concrete Inputs'] as Python repr"},
       {"category", ColType::Text,
        "perf-model op category (GEMM, SDPA, elementwise, ...; as ops_summary_by_category)"},
       {"kernel_count", ColType::Integer, "GPU events launched in the op's subtree"},
       {"gpu_busy", ColType::Integer, "busy time (union) of those GPU events, ns; NULL when none"},
       {"perf_sheet", ColType::Text,
        "perf-model family (GEMM, SDPA_fwd, ...) of the op's unified_perf_summary row"},
       {"gflops", ColType::Real, "GFLOP of the op (perf model; NULL without a model)"},
       {"bytes", ColType::Real, "bytes moved (perf model)"},
       {"tflops_per_s", ColType::Real, "achieved TFLOP/s over the op's kernel time"},
       {"tb_per_s", ColType::Real, "achieved TB/s over the op's kernel time"},
       {"roofline_bound", ColType::Text, "COMPUTE_BOUND or MEMORY_BOUND (detected GPU arch only)"},
       {"roofline_pct", ColType::Real, "roofline time / kernel time, %"}},
      ops_columns::bind_ops};
  return def;
}

}  // namespace jarvis::sql
