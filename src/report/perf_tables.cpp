// unified_perf_summary and the per-family perf sheets, reproducing
// TraceLens's build_df_perf_metrics / summarize_df_perf_metrics /
// collect_unified_perf_events / build_df_unified_perf_table /
// summarize_df_unified_perf_table (spec tree-and-timeline.md §15,
// perf-models.md §4 and §6).
#include "report/perf_tables.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "base/hash_mix.h"
#include "base/sort_runs.h"
#include "base/text_hash.h"
#include "perf/annotations.h"
#include "perf/categories.h"
#include "perf/perf_model.h"
#include "pycompat/numeric.h"
#include "report/core_tables.h"
#include "report/kernel_details.h"
#include "report/stats.h"

namespace jarvis {
namespace report {
namespace {

using perf::PerfMetrics;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Cell num(double v) {
  return std::isnan(v) ? Cell() : Cell(v);
}

// TraceLens agg_kernels_in_subtree: GPU events reached through `children`,
// depth-first in children order (a GPU event ends its branch).
void collect_subtree_kernels(const Trace& trace, const CallTree& tree, Uid uid,
                             std::vector<Uid>& out) {
  if (trace.events[uid].is_gpu()) {
    out.push_back(uid);
    return;
  }
  for (Uid c : tree.children(uid)) collect_subtree_kernels(trace, tree, c, out);
}

std::vector<Uid> sorted_by_ts(const Trace& trace, std::vector<Uid> uids) {
  stable_sort_runs(uids, [&](Uid a, Uid b) {
    double ta = trace.events[a].has_ts() ? trace.events[a].ts() : 0.0;
    double tb = trace.events[b].has_ts() ? trace.events[b].ts() : 0.0;
    return ta < tb;
  });
  return uids;
}

// The op a metric computation works on: the event itself, or for a synthetic
// unified row, a copy of its parent under another name.
struct OpRef {
  Uid uid;   // row UID
  Uid base;  // event providing args / structure
  std::string_view name;
};

// Perf models shared between events with the same name, arg list and kernel
// names: a model is a function of these (except where
// perf::model_reads_event_context says otherwise), and so is its failure,
// which is kept and rethrown for every such event. Large traces repeat a few
// thousand op shapes; building the models (param tuples, dtype lookups) was
// the largest share of the perf sheets' time.
class ModelCache {
  struct Entry;

 public:
  // A model served by the cache; `entry` is null when it is not kept.
  struct Served {
    std::shared_ptr<const perf::PerfModel> model;
    Entry* entry = nullptr;
  };

  // The model of op `name` on event `base` with its sorted `kernels`, built
  // from make_input() (the op's perf::OpInput) once per key; a null model
  // when no model class resolves. The input is made only when a model is
  // built.
  template <class MakeInput>
  Served get(const Trace& trace, Uid base, std::string_view name, const std::vector<Uid>& kernels,
             const MakeInput& make_input) {
    std::string_view own_name = trace.name(base);
    // Only the event's own name is keyed (by its interned id); a synthetic
    // row's name is not interned.
    if (name.data() != own_name.data() || name.size() != own_name.size() ||
        perf::model_reads_event_context(name))
      return {perf::make_perf_model(make_input()), nullptr};
    probe_.name = trace.events[base].name;
    probe_.args = trace.events[base].args;
    probe_.kernel_names.clear();
    for (Uid k : kernels) probe_.kernel_names.push_back(trace.events[k].name);
    if (auto it = entries_.find(probe_); it != entries_.end()) {
      if (it->second.error) std::rethrow_exception(it->second.error);
      return {it->second.model, &it->second};
    }
    Entry entry;
    try {
      entry.model = perf::make_perf_model(make_input());
    } catch (const std::bad_alloc&) {
      throw;  // no property of the op
    } catch (...) {
      entry.error = std::current_exception();
    }
    if (entry.error) {
      if (entries_.size() < kMaxEntries) entries_.emplace(probe_, entry);
      std::rethrow_exception(entry.error);
    }
    if (entries_.size() >= kMaxEntries) return {entry.model, nullptr};
    Entry& kept = entries_.emplace(probe_, std::move(entry)).first->second;
    return {kept.model, &kept};
  }

  // compute_perf_metrics of a served model: everything but the kernel time
  // and what follows from it is the model's, so it is computed once per
  // model and direction and copied (the model's work, bytes, compute spec
  // and roofline times were a tenth of the sheets' time).
  static perf::PerfMetrics metrics(const Served& served, bool backward, double kernel_time_us,
                                   const GpuArch* arch) {
    if (!served.entry)
      return perf::compute_perf_metrics(served.model, backward, kernel_time_us, arch);
    auto& [for_arch, kept] = served.entry->metrics[backward ? 1 : 0];
    if (!kept || for_arch != arch) {
      kept = perf::compute_perf_metrics(served.model, backward, kernel_time_us, arch);
      for_arch = arch;
      return *kept;
    }
    perf::PerfMetrics m = *kept;
    perf::set_kernel_time(m, kernel_time_us);
    return m;
  }

 private:
  // Bounds the cache on traces where every op has a shape of its own.
  static constexpr size_t kMaxEntries = 4096;
  struct Key {
    uint32_t name = 0;
    int32_t args = -1;
    std::vector<uint32_t> kernel_names;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      uint64_t h = hash_mix(hash_mix(kHashMixStart, k.name), static_cast<uint64_t>(k.args));
      for (uint32_t n : k.kernel_names) h = hash_mix(h, n);
      return hash_finish(h);
    }
  };
  struct Entry {
    std::shared_ptr<const perf::PerfModel> model;
    std::exception_ptr error;
    // The metrics of one op per direction (forward, backward), and the arch
    // they were computed for.
    std::pair<const GpuArch*, std::optional<perf::PerfMetrics>> metrics[2];
  };
  std::unordered_map<Key, Entry, KeyHash> entries_;
  Key probe_;
};

// TraceLens compute_perf_metrics for one op and direction. Throws what the
// model throws; returns nullopt when no model class resolves.
struct Computed {
  PerfMetrics metrics;
  std::vector<Uid> kernels;  // sorted by ts
};

// The kernels of the op's subtree (or of its backward events' subtrees) in
// TraceLens's depth-first order.
std::vector<Uid> subtree_kernels_dfs(const Trace& trace, const CallTree& tree, const OpRef& op,
                                     bool bwd) {
  std::vector<Uid> kernels;
  if (bwd) {
    for (Uid b : tree.subtree_bwd_events(op.base)) collect_subtree_kernels(trace, tree, b, kernels);
  } else {
    collect_subtree_kernels(trace, tree, op.base, kernels);
  }
  return kernels;
}

// The same kernels from the tree's per-node GPU event lists (launch order),
// without walking the subtree: the same set, so after the stable sort by ts
// the same order unless two kernels share a ts (then the walk is redone).
std::vector<Uid> subtree_kernels_listed(const Trace& trace, const CallTree& tree, const OpRef& op,
                                        bool bwd) {
  std::vector<Uid> kernels;
  auto add = [&](Uid u) {
    if (trace.events[u].is_gpu()) {
      kernels.push_back(u);
      return;
    }
    auto listed = tree.gpu_events(u);
    kernels.insert(kernels.end(), listed.begin(), listed.end());
  };
  if (bwd) {
    for (Uid b : tree.subtree_bwd_events(op.base)) add(b);
  } else {
    add(op.base);
  }
  return kernels;
}

bool has_equal_ts(const Trace& trace, const std::vector<Uid>& by_ts) {
  auto ts = [&](Uid u) { return trace.events[u].has_ts() ? trace.events[u].ts() : 0.0; };
  for (size_t k = 1; k < by_ts.size(); ++k)
    if (ts(by_ts[k]) == ts(by_ts[k - 1])) return true;
  return false;
}

std::optional<Computed> compute_metrics(const Trace& trace, const CallTree& tree, const OpRef& op,
                                        bool bwd, const GpuArch* arch,
                                        const perf::TraceAnnotations& annotations,
                                        ModelCache& models) {
  std::vector<Uid> kernels = subtree_kernels_listed(trace, tree, op, bwd);
  double busy = kernels.empty() ? 0.0 : tree.busy_time(kernels);
  Computed c;
  c.kernels = sorted_by_ts(trace, std::move(kernels));
  if (has_equal_ts(trace, c.kernels))
    c.kernels = sorted_by_ts(trace, subtree_kernels_dfs(trace, tree, op, bwd));
  auto make_input = [&] {
    perf::OpInput in = perf::op_input_from_event(trace, op.base);
    in.name = op.name;
    in.annotations = &annotations;
    for (Uid k : c.kernels) in.kernel_names.push_back(trace.name(k));
    return in;
  };
  ModelCache::Served served = models.get(trace, op.base, op.name, c.kernels, make_input);
  if (!served.model) return std::nullopt;
  c.metrics = ModelCache::metrics(served, bwd, busy, arch);
  return c;
}

// ---------------------------------------------------------------------------
// Generic pandas-like aggregation helpers.

struct NumAgg {
  double mean = kNaN, median = kNaN, std = kNaN, min = kNaN, max = kNaN, sum = 0, first = kNaN;
};

NumAgg aggregate(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values)
    if (!std::isnan(x)) v.push_back(x);
  NumAgg a;
  a.sum = pycompat::pandas_groupby_sum(v);
  if (v.empty()) return a;
  a.first = v.front();
  a.mean = pycompat::pandas_groupby_mean(v);
  a.median = stats::median(v);
  a.std = pycompat::pandas_groupby_std(v);
  a.min = stats::min(v);
  a.max = stats::max(v);
  return a;
}

void put_aggs(std::vector<Cell>& row, Table& t, const std::string& base, const NumAgg& a,
              std::initializer_list<const char*> which) {
  for (const char* w : which) {
    std::string s = w;
    double v = s == "mean"     ? a.mean
               : s == "median" ? a.median
               : s == "std"    ? a.std
               : s == "min"    ? a.min
               : s == "max"    ? a.max
               : s == "sum"    ? a.sum
                               : a.first;
    int c = t.col(base + "_" + s);
    if (c >= 0) row[c] = s == "sum" ? Cell(v) : num(v);
  }
}

Cell raw_arg_list_cell(const Trace& trace, Uid uid, std::string_view key) {
  const PyValue* v = trace.arg(uid, key);
  if (!v || v->is_none()) return Cell();
  if (v->is_string()) return Cell(v->s);
  return Cell(v->repr_list());
}

Cell kernel_summary_cell(const std::vector<KernelStat>& stats) {
  return Cell(kernel_stats_repr(stats));
}

// ---------------------------------------------------------------------------
// Perf sheets (summarize_df_perf_metrics).

struct SheetRow {
  const PerfOpRow* row;
  KernelDetailList kernels;
};

struct ParamsNameHash {
  size_t operator()(const std::pair<const perf::Params*, std::string_view>& k) const noexcept {
    return hash_of(reinterpret_cast<uintptr_t>(k.first), text_hash(k.second));
  }
};

// pandas "first" of a column over a group's rows: the first non-NaN value.
template <class Get>
double first_valid(const std::vector<PerfOpRow>& rows, const std::vector<size_t>& idx, Get get) {
  for (size_t k : idx) {
    double v = get(rows[k]);
    if (!std::isnan(v)) return v;
  }
  return kNaN;
}

// The kernel summary of a group's rows.
std::vector<KernelStat> group_kernel_stats(const Trace& trace, const std::vector<PerfOpRow>& rows,
                                           const std::vector<size_t>& idx) {
  std::vector<std::span<const Uid>> lists;
  lists.reserve(idx.size());
  for (size_t k : idx) lists.emplace_back(rows[k].kernels);
  return summarize_kernels(trace, lists);
}

std::string param_str_or_nan(const perf::Params& params, const std::string& name) {
  const perf::Param* p = perf::find_param(params, name);
  return p ? p->str() : std::string("nan");
}

}  // namespace

Table perf_sheet_summary_table(const Trace& trace, const std::vector<PerfOpRow>& rows,
                               std::string name) {
  // Param columns in order of first appearance across the rows.
  std::vector<std::string> param_names;
  bool has_roofline = false;
  for (const PerfOpRow& r : rows) {
    for (const perf::Param& p : r.metrics->params())
      if (std::find(param_names.begin(), param_names.end(), p.name) == param_names.end())
        param_names.push_back(p.name);
    has_roofline = has_roofline || r.metrics->roofline.has_value();
  }
  // Group by name + str(params) (pandas sorts group keys; the final sort
  // below makes that order irrelevant). Rows the model cache served share
  // one params object, so a key is rendered once per (params, name).
  std::map<std::vector<std::string>, std::vector<size_t>> groups;
  std::unordered_map<std::pair<const perf::Params*, std::string_view>, std::vector<size_t>*,
                     ParamsNameHash>
      group_of;
  for (size_t k = 0; k < rows.size(); ++k) {
    const perf::Params& params = rows[k].metrics->params();
    auto [known, fresh] = group_of.try_emplace({&params, rows[k].name}, nullptr);
    if (fresh) {
      std::vector<std::string> key{rows[k].name};
      for (const std::string& p : param_names) key.push_back(param_str_or_nan(params, p));
      known->second = &groups[std::move(key)];
    }
    known->second->push_back(k);
  }

  std::vector<std::string> cols{"name"};
  for (const std::string& p : param_names) cols.push_back("param: " + p);
  const char* aggs5[] = {"mean", "median", "std", "min", "max"};
  auto add_aggs = [&](const std::string& base) {
    for (const char* a : aggs5) cols.push_back(base + "_" + a);
  };
  cols.insert(cols.end(), {"GFLOPS_first", "Data Moved (MB)_first", "FLOPS/Byte_first"});
  add_aggs("TB/s");
  add_aggs("TFLOPS/s");
  cols.insert(cols.end(),
              {"process_name_first", "process_label_first", "thread_name_first", "Compute Spec"});
  if (has_roofline) {
    cols.insert(cols.end(), {"Roofline Time (µs)_first", "Roofline Bound_first"});
    add_aggs("Pct Roofline");
  }
  cols.insert(cols.end(),
              {"kernel_details__summarize_kernel_stats", "trunc_kernel_details", "Input Dims_first",
               "Input type_first", "Input Strides_first", "Concrete Inputs_first"});
  add_aggs("Kernel Time (µs)");
  cols.insert(cols.end(), {"Kernel Time (µs)_sum", "name_count", "UID_first"});
  Table t(std::move(name), cols);

  struct Out {
    double kt_sum;
    int64_t uid_first;
    std::vector<Cell> cells;
  };
  std::vector<Out> outs;
  // TraceLens sums each op's kernel durations with Python's sum(): an op
  // without kernels gets the int 0, so when no op of the sheet launched a
  // kernel (a graph-captured trace) the column is int64, not float64.
  bool kernel_time_is_int =
      std::all_of(rows.begin(), rows.end(), [](const PerfOpRow& r) { return r.kernels.empty(); });
  for (const auto& [key, idx] : groups) {
    std::vector<Cell> row(cols.size());
    row[0] = Cell(key[0]);
    for (size_t p = 0; p < param_names.size(); ++p) row[1 + p] = Cell(key[1 + p]);
    // idx by init-capture: clang 14 cannot capture a structured binding.
    auto collect = [&, &idx = idx](auto get) {
      std::vector<double> v;
      for (size_t k : idx) v.push_back(get(rows[k]));
      return aggregate(v);
    };
    const PerfOpRow& first = rows[idx.front()];
    row[t.col("GFLOPS_first")] =
        num(first_valid(rows, idx, [](const PerfOpRow& r) { return r.metrics->gflops; }));
    row[t.col("Data Moved (MB)_first")] =
        num(first_valid(rows, idx, [](const PerfOpRow& r) { return r.metrics->data_moved_mb; }));
    row[t.col("FLOPS/Byte_first")] =
        num(first_valid(rows, idx, [](const PerfOpRow& r) { return r.metrics->flops_per_byte; }));
    put_aggs(row, t, "TB/s", collect([](const PerfOpRow& r) { return r.metrics->tb_per_s; }),
             {"mean", "median", "std", "min", "max"});
    put_aggs(row, t, "TFLOPS/s",
             collect([](const PerfOpRow& r) { return r.metrics->tflops_per_s; }),
             {"mean", "median", "std", "min", "max"});
    const Event& fe = trace.events[first.event_uid];
    row[t.col("process_name_first")] = Cell(trace.process_name(trace.pid(fe)));
    row[t.col("process_label_first")] = Cell(trace.process_label(trace.pid(fe)));
    row[t.col("thread_name_first")] = Cell(trace.thread_name(trace.pid(fe), trace.tid(fe)));
    row[t.col("Compute Spec")] = Cell(first.metrics->compute_spec);
    if (has_roofline) {
      row[t.col("Roofline Time (µs)_first")] = num(first_valid(rows, idx, [](const PerfOpRow& r) {
        return r.metrics->roofline ? r.metrics->roofline->time_us : kNaN;
      }));
      for (size_t k : idx)
        if (rows[k].metrics->roofline) {
          row[t.col("Roofline Bound_first")] = Cell(rows[k].metrics->roofline->bound);
          break;
        }
      put_aggs(row, t, "Pct Roofline", collect([](const PerfOpRow& r) {
                 return r.metrics->roofline ? r.metrics->roofline->pct : kNaN;
               }),
               {"mean", "median", "std", "min", "max"});
    }
    auto ks = group_kernel_stats(trace, rows, idx);
    row[t.col("kernel_details__summarize_kernel_stats")] = kernel_summary_cell(ks);
    row[t.col("trunc_kernel_details")] = trunc_kernel_details_cell(ks);
    for (const char* arg : {"Input Dims", "Input type", "Input Strides", "Concrete Inputs"}) {
      for (size_t k : idx) {
        Cell c = raw_arg_list_cell(trace, rows[k].event_uid, arg);
        if (!c.missing()) {
          row[t.col(std::string(arg) + "_first")] = c;
          break;
        }
      }
    }
    NumAgg kt = collect([](const PerfOpRow& r) { return r.metrics->kernel_time_us; });
    put_aggs(row, t, "Kernel Time (µs)", kt, {"mean", "median", "std", "min", "max", "sum"});
    if (kernel_time_is_int) {
      // pandas keeps an int column's dtype through min / max / sum.
      for (const char* agg : {"_min", "_max", "_sum"}) {
        int c = t.col(std::string("Kernel Time (µs)") + agg);
        double v = agg == std::string("_min")   ? kt.min
                   : agg == std::string("_max") ? kt.max
                                                : kt.sum;
        row[static_cast<size_t>(c)] = Cell(static_cast<int64_t>(v));
      }
    }
    row[t.col("name_count")] = Cell(static_cast<int64_t>(idx.size()));
    row[t.col("UID_first")] = Cell(static_cast<int64_t>(first.uid));
    outs.push_back({kt.sum, static_cast<int64_t>(first.uid), std::move(row)});
  }
  std::sort(outs.begin(), outs.end(), [](const Out& a, const Out& b) {
    if (a.kt_sum != b.kt_sum) return a.kt_sum > b.kt_sum;
    return a.uid_first < b.uid_first;
  });
  for (Out& o : outs) t.rows.push_back(std::move(o.cells));
  return t;
}

// Events of each sheet family, array order, in one pass over the trace.
FamilyIndex events_by_family(const Trace& trace) {
  std::unordered_map<uint32_t, std::string_view> family_of_name;  // interned name id -> family
  std::unordered_set<uint32_t> unmodeled;
  std::unordered_map<std::string_view, std::vector<Uid>> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    uint32_t id = trace.events[u].name;
    if (unmodeled.count(id)) continue;
    auto it = family_of_name.find(id);
    if (it == family_of_name.end()) {
      std::string_view fam = perf::sheet_family_by_name(trace.str(id));
      if (fam.empty()) {
        unmodeled.insert(id);
        continue;
      }
      it = family_of_name.emplace(id, fam).first;
    }
    out[it->second].push_back(u);
  }
  return out;
}

namespace {

// The registry's own view of a sheet family's name (a row keeps the view).
std::string_view registry_family(std::string_view family) {
  for (std::string_view f : perf::sheet_families())
    if (f == family) return f;
  throw std::logic_error("not a sheet family of the perf registry: " + std::string(family));
}

// `family`: the perf registry's view of the name (registry_family), which
// each row keeps.
std::vector<PerfOpRow> sheet_rows_for(const Trace& trace, const CallTree& tree,
                                      const std::vector<Uid>& events, std::string_view family,
                                      bool backward, const GpuArch* arch,
                                      ModelFailureCounts* failures, ModelCache& models) {
  std::vector<PerfOpRow> rows;
  // At most one row per event: no regrowth copies of these large rows (the
  // capacity no row fills is never touched).
  rows.reserve(events.size());
  perf::TraceAnnotations annotations(trace);  // indexed when a model first asks
  OpCategories categories(trace, tree);
  for (Uid u : events) {
    if (backward && trace.name(u) == "vllm::unified_attention_with_output") continue;
    // TraceLens drops backward rows without linked backward events after
    // computing them; checking first gives the same rows.
    if (backward && tree.bwd_events(u).empty()) continue;
    OpRef op{u, u, trace.name(u)};
    std::optional<Computed> c;
    try {
      c = compute_metrics(trace, tree, op, backward, arch, annotations, models);
    } catch (const perf::PerfNotImplemented&) {
      continue;  // no model for this direction: silent in TraceLens too
    } catch (const std::bad_alloc&) {
      throw;  // out of memory is no property of the op
    } catch (const std::exception& e) {
      // TraceLens prints a warning and skips the op; the sheets stay equal
      // and the reason is kept for the report's warnings.
      if (failures) ++(*failures)[{std::string(trace.name(u)), e.what()}];
      continue;
    }
    if (!c) continue;
    PerfOpRow r;
    r.uid = r.event_uid = u;
    r.name = std::string(trace.name(u));
    r.category = categories.registered(u);
    r.sheet = family;
    r.backward = backward;
    r.has_perf_model = true;
    r.kernel_time_us = c->metrics.kernel_time_us;
    r.duration_us = trace.events[u].dur();
    r.kernels = std::move(c->kernels);
    r.metrics = std::move(c->metrics);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<PerfOpRow> sheet_rows(const Trace& trace, const CallTree& tree,
                                  const FamilyIndex& by_family, std::string_view family,
                                  bool backward, const GpuArch* arch, ModelFailureCounts* failures,
                                  ModelCache& models) {
  auto it = by_family.find(family);
  if (it == by_family.end()) return {};
  // The rows keep a view of the family's name: the registry's own, looked up
  // once per family.
  return sheet_rows_for(trace, tree, it->second, registry_family(family), backward, arch, failures,
                        models);
}

}  // namespace

std::vector<PerfOpRow> perf_sheet_rows(const Trace& trace, const CallTree& tree,
                                       std::string_view family, bool backward, const GpuArch* arch,
                                       ModelFailureCounts* failures) {
  return perf_sheet_rows(trace, tree, events_by_family(trace), family, backward, arch, failures);
}

std::vector<PerfOpRow> perf_sheet_rows(const Trace& trace, const CallTree& tree,
                                       const FamilyIndex& by_family, std::string_view family,
                                       bool backward, const GpuArch* arch,
                                       ModelFailureCounts* failures) {
  ModelCache models;
  return sheet_rows(trace, tree, by_family, family, backward, arch, failures, models);
}

namespace {

// pd.concat of two summaries: union of columns (first table's order, then
// the second's new ones), rows stacked.
Table concat_tables(Table a, const Table& b) {
  if (a.columns.empty()) {
    Table out = b;
    out.name = a.name;
    return out;
  }
  for (const std::string& c : b.columns)
    if (a.col(c) < 0) {
      a.columns.push_back(c);
      for (auto& r : a.rows) r.emplace_back();
    }
  for (const auto& br : b.rows) {
    std::vector<Cell> row(a.columns.size());
    for (size_t c = 0; c < b.columns.size(); ++c) row[a.col(b.columns[c])] = br[c];
    a.rows.push_back(std::move(row));
  }
  return a;
}

Table filter_rows(const Table& t, const std::function<bool(const std::string&)>& keep_name) {
  Table out(t.name, t.columns);
  int c = t.col("name");
  for (const auto& r : t.rows)
    if (keep_name(r[c].is_text() ? r[c].text() : std::string())) out.rows.push_back(r);
  return out;
}

bool in_list(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// The sheets of one family in file order: one for the families without a
// direction, else _fwd then _bwd (each only when it has rows).
std::vector<Table> family_sheets(const Trace& trace, const CallTree& tree,
                                 const FamilyIndex& by_family, std::string_view fam,
                                 const GpuArch* arch, ModelFailureCounts& failures,
                                 ModelCache& models) {
  std::vector<Table> tables;
  std::string family(fam);
  if (in_list(family, {"GEMM", "UnaryElementwise", "BinaryElementwise", "Normalization"})) {
    auto rows = sheet_rows(trace, tree, by_family, fam, false, arch, &failures, models);
    if (rows.empty()) return tables;
    tables.push_back(perf_sheet_summary_table(trace, rows, family));
    return tables;
  }
  auto fwd_rows = sheet_rows(trace, tree, by_family, fam, false, arch, &failures, models);
  Table fwd = fwd_rows.empty() ? Table(family + "_fwd", {})
                               : perf_sheet_summary_table(trace, fwd_rows, family + "_fwd");
  auto is_moved = [](const std::string& n) {
    return in_list(n, {"flash_attn::_flash_attn_varlen_backward", "aten::convolution_backward",
                       "ConvBias_Backward", "ConvBiasReLU_Backward"});
  };
  Table moved = filter_rows(fwd, is_moved);
  fwd = filter_rows(fwd, [&](const std::string& n) { return !is_moved(n); });
  auto bwd_rows = sheet_rows(trace, tree, by_family, fam, true, arch, &failures, models);
  Table bwd = bwd_rows.empty() ? Table(family + "_bwd", {})
                               : perf_sheet_summary_table(trace, bwd_rows, family + "_bwd");
  if (!fwd_rows.empty()) bwd = concat_tables(std::move(bwd), moved);
  bwd.name = family + "_bwd";
  bwd = filter_rows(bwd, [](const std::string& n) {
    return !in_list(n, {"aten::convolution", "aten::miopen_convolution", "aten::cudnn_convolution",
                        "ConvBias_", "ConvBiasReLU_"});
  });
  if (!fwd.rows.empty()) tables.push_back(std::move(fwd));
  if (!bwd.rows.empty()) tables.push_back(std::move(bwd));
  return tables;
}

}  // namespace

PerfSheets perf_model_sheets(const Trace& trace, const CallTree& tree, const GpuArch* arch) {
  // One family's rows at a time: spreading the families over two threads
  // made the report's peak RSS 20 % higher for 0.03 s (bench/RESULTS.md, 2026-11-25).
  const FamilyIndex by_family = events_by_family(trace);  // once for every family
  ModelCache models;                                      // shared by every family
  ModelFailureCounts failures;
  PerfSheets out;
  for (std::string_view family : perf::sheet_families())
    for (Table& t : family_sheets(trace, tree, by_family, family, arch, failures, models))
      out.tables.push_back(std::move(t));
  for (auto& [key, count] : failures) out.model_failures.push_back({key.first, key.second, count});
  return out;
}

namespace {

// ---------------------------------------------------------------------------
// Unified perf table.

// unified_perf_summary groups rows by these columns (groupby sort=False).
const std::vector<std::string> kUnifiedKeys{"name",          "op category",   "process_name",
                                            "process_label", "thread_name",   "Input Dims",
                                            "Input type",    "Input Strides", "Concrete Inputs"};

std::string unified_key_text(const Trace& trace, const PerfOpRow& r, size_t k) {
  const Event& e = trace.events[r.event_uid];
  switch (k) {
    case 0:
      return r.name;
    case 1:
      return std::string(r.category);
    case 2:
      return trace.process_name(trace.pid(e));
    case 3:
      return trace.process_label(trace.pid(e));
    case 4:
      return trace.thread_name(trace.pid(e), trace.tid(e));
    default:
      return arg_key(trace, r.event_uid, kUnifiedKeys[k]);
  }
}

// Ids of a row's group-key texts (equal texts, equal ids), so that grouping
// on them is grouping on the texts. The process/thread texts depend only on
// the event's (pid, tid) pair and the arg texts only on its arg list (equal
// lists are stored once), so each is rendered once per distinct pair or list.
class UnifiedKeyIds {
 public:
  using Key = std::array<uint32_t, 9>;  // one id per kUnifiedKeys column
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      uint64_t h = kHashMixStart;
      for (uint32_t id : k) h = hash_mix(h, id);
      return hash_finish(h);
    }
  };

  // The per-thread, per-arg-list and per-name ids are kept in arrays indexed
  // by Event::thread, Event::args and the interned name: one array read per
  // row instead of a hash lookup.
  explicit UnifiedKeyIds(const Trace& trace)
      : trace_(trace),
        by_name_(trace.strings.size(), kUnknown),
        by_thread_(trace.threads.size(), {kUnknown, 0, 0}),
        by_args_(trace.arg_lists.size() + 1, {kUnknown, 0, 0, 0}) {}

  Key of(const PerfOpRow& r) {
    const Event& e = trace_.events[r.event_uid];
    Key key{name_id(r), category_id(r.category)};
    std::array<uint32_t, 3>& thread = by_thread_[e.thread];
    if (thread[0] == kUnknown)
      for (size_t k = 2; k < 5; ++k) thread[k - 2] = intern(unified_key_text(trace_, r, k));
    std::array<uint32_t, 4>& args = by_args_[static_cast<size_t>(e.args + 1)];  // -1: none
    if (args[0] == kUnknown)
      for (size_t k = 5; k < 9; ++k) args[k - 5] = intern(unified_key_text(trace_, r, k));
    std::copy(thread.begin(), thread.end(), key.begin() + 2);
    std::copy(args.begin(), args.end(), key.begin() + 5);
    return key;
  }

 private:
  static constexpr uint32_t kUnknown = std::numeric_limits<uint32_t>::max();

  uint32_t intern(const std::string& text) {
    return ids_.try_emplace(text, static_cast<uint32_t>(ids_.size())).first->second;
  }
  // A row named as its event is keyed by the interned name: the text is
  // hashed once per name, not once per row.
  uint32_t name_id(const PerfOpRow& r) {
    if (r.uid >= trace_.events.size()) return intern(r.name);  // a synthetic row
    uint32_t own = trace_.events[r.uid].name;
    if (trace_.str(own) != r.name) return intern(r.name);
    uint32_t& id = by_name_[own];
    if (id == kUnknown) id = intern(r.name);
    return id;
  }
  // A trace has a handful of categories: a scan beats hashing the text.
  uint32_t category_id(std::string_view category) {
    for (const auto& [text, id] : categories_)
      if (text == category) return id;
    categories_.emplace_back(category, intern(std::string(category)));
    return categories_.back().second;
  }

  const Trace& trace_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<uint32_t> by_name_;  // by interned event name
  std::vector<std::pair<std::string, uint32_t>> categories_;
  std::vector<std::array<uint32_t, 3>> by_thread_;  // by Event::thread
  std::vector<std::array<uint32_t, 4>> by_args_;    // by Event::args + 1
};

// summarize_df_unified_perf_table, one row at a time: rows are added in
// collection order and grouped on their key ids (groupby sort=False: a
// group's place is its first row's). A group keeps what its cells need (the
// values that are aggregated, the first valid of the others, its rows'
// kernel lists), not the rows, so the report streams the unified rows
// through one reused row instead of holding tens of thousands of them.
class UnifiedSummary {
 public:
  explicit UnifiedSummary(const Trace& trace) : trace_(trace), key_ids_(trace) {}

  // `kernels` (the row's kernel list) must outlive table().
  void add(const PerfOpRow& r, std::span<const Uid> kernels) {
    auto [it, fresh] = index_.try_emplace(key_ids_.of(r), groups_.size());
    if (fresh) start_group(r);
    Group& g = groups_[it->second];
    for (size_t k = 0; k < g.args.size(); ++k)
      if (g.args[k].missing()) g.args[k] = arg_cell(trace_, r.event_uid, kUnifiedKeys[k + 5]);
    g.duration.push_back(r.duration_us);
    g.kernel_time.push_back(r.kernel_time_us);
    g.kernels.push_back(kernels);
    const std::optional<PerfMetrics>& m = r.metrics;
    any_model_ = any_model_ || m.has_value();
    any_roofline_ = any_roofline_ || (m && m->roofline);
    g.tb_per_s.push_back(m ? m->tb_per_s : kNaN);
    g.tflops_per_s.push_back(m ? m->tflops_per_s : kNaN);
    g.pct_roofline.push_back(m && m->roofline ? m->roofline->pct : kNaN);
    if (!m) return;
    keep_first_valid(g.gflops, m->gflops);
    keep_first_valid(g.data_moved_mb, m->data_moved_mb);
    keep_first_valid(g.flops_per_byte, m->flops_per_byte);
    if (!g.compute_spec) g.compute_spec = m->compute_spec;
    if (m->roofline) {
      keep_first_valid(g.roofline_time_us, m->roofline->time_us);
      if (!g.roofline_bound) g.roofline_bound = m->roofline->bound;
    }
    if (!g.params && !m->params().empty()) g.params = perf::params_dict_repr(m->params());
  }

  bool empty() const { return groups_.empty(); }
  Table table() const;

 private:
  struct Group {
    int64_t ex_uid = 0;
    bool has_perf_model = false;
    std::array<std::string, 5> key_texts;  // name, category, process and thread names
    std::array<Cell, 4> args;              // the first present of each arg key column
    std::vector<double> duration, kernel_time, tb_per_s, tflops_per_s, pct_roofline;
    double gflops = kNaN, data_moved_mb = kNaN, flops_per_byte = kNaN, roofline_time_us = kNaN;
    std::optional<std::string> compute_spec, roofline_bound, params;
    std::vector<std::span<const Uid>> kernels;
  };

  void start_group(const PerfOpRow& first) {
    Group& g = groups_.emplace_back();
    g.ex_uid = static_cast<int64_t>(first.uid);
    g.has_perf_model = first.has_perf_model;
    for (size_t k = 0; k < g.key_texts.size(); ++k)
      g.key_texts[k] = unified_key_text(trace_, first, k);
  }
  // pandas "first": the first non-NaN value of the group's rows.
  static void keep_first_valid(double& kept, double v) {
    if (std::isnan(kept)) kept = v;
  }
  std::vector<std::string> columns() const;

  const Trace& trace_;
  UnifiedKeyIds key_ids_;
  std::unordered_map<UnifiedKeyIds::Key, size_t, UnifiedKeyIds::KeyHash> index_;
  std::vector<Group> groups_;
  bool any_model_ = false, any_roofline_ = false;
};

std::vector<std::string> UnifiedSummary::columns() const {
  std::vector<std::string> cols(kUnifiedKeys);
  cols.insert(cols.end(), {"ex_UID", "operation_count", "total_duration_us", "mean_duration_us",
                           "std_duration_us"});
  if (any_model_) {
    cols.insert(cols.end(), {"GFLOPS", "Data Moved (MB)", "FLOPS/Byte", "Compute Spec"});
    if (any_roofline_) cols.push_back("Roofline Bound");
    cols.insert(cols.end(), {"TB/s_mean", "TB/s_std", "TFLOPS/s_mean", "TFLOPS/s_std"});
  }
  cols.insert(cols.end(), {"Kernel Time (µs)_mean", "Kernel Time (µs)_std", "Kernel Time (µs)_sum",
                           "duration_us_median", "duration_us_min", "duration_us_max"});
  if (any_model_)
    cols.insert(cols.end(), {"TB/s_median", "TB/s_min", "TB/s_max", "TFLOPS/s_median",
                             "TFLOPS/s_min", "TFLOPS/s_max"});
  if (any_roofline_)
    cols.insert(cols.end(), {"Roofline Time (µs)_first", "Pct Roofline_mean", "Pct Roofline_median",
                             "Pct Roofline_std", "Pct Roofline_min", "Pct Roofline_max"});
  cols.insert(cols.end(),
              {"Kernel Time (µs)_median", "Kernel Time (µs)_min", "Kernel Time (µs)_max",
               "kernel_details_summary", "trunc_kernel_details", "perf_params", "has_perf_model",
               "Percentage (%)", "Cumulative Percentage (%)"});
  return cols;
}

Table UnifiedSummary::table() const {
  Table t("unified_perf_summary", columns());
  struct Out {
    double kt_sum;
    int64_t ex_uid;
    std::vector<Cell> cells;
  };
  std::vector<Out> outs;
  for (const Group& g : groups_) {
    std::vector<Cell> row(t.columns.size());
    auto set = [&](const std::string& c, Cell v) {
      int i = t.col(c);
      if (i >= 0) row[i] = std::move(v);
    };
    for (size_t k = 0; k < g.key_texts.size(); ++k) set(kUnifiedKeys[k], Cell(g.key_texts[k]));
    for (size_t k = 0; k < g.args.size(); ++k)
      if (!g.args[k].missing()) set(kUnifiedKeys[k + 5], g.args[k]);
    set("ex_UID", Cell(g.ex_uid));
    set("operation_count", Cell(static_cast<int64_t>(g.duration.size())));
    NumAgg dur = aggregate(g.duration);
    set("total_duration_us", Cell(dur.sum));
    set("mean_duration_us", num(dur.mean));
    set("std_duration_us", num(dur.std));
    set("duration_us_median", num(dur.median));
    set("duration_us_min", num(dur.min));
    set("duration_us_max", num(dur.max));
    if (any_model_) {
      set("GFLOPS", num(g.gflops));
      set("Data Moved (MB)", num(g.data_moved_mb));
      set("FLOPS/Byte", num(g.flops_per_byte));
      if (g.compute_spec) set("Compute Spec", Cell(*g.compute_spec));
      put_aggs(row, t, "TB/s", aggregate(g.tb_per_s), {"mean", "median", "std", "min", "max"});
      put_aggs(row, t, "TFLOPS/s", aggregate(g.tflops_per_s),
               {"mean", "median", "std", "min", "max"});
    }
    if (any_roofline_) {
      if (g.roofline_bound) set("Roofline Bound", Cell(*g.roofline_bound));
      set("Roofline Time (µs)_first", num(g.roofline_time_us));
      put_aggs(row, t, "Pct Roofline", aggregate(g.pct_roofline),
               {"mean", "median", "std", "min", "max"});
    }
    NumAgg kt = aggregate(g.kernel_time);
    put_aggs(row, t, "Kernel Time (µs)", kt, {"mean", "median", "std", "min", "max", "sum"});
    std::vector<KernelStat> ks = summarize_kernels(trace_, g.kernels);
    set("kernel_details_summary", kernel_summary_cell(ks));
    set("trunc_kernel_details", trunc_kernel_details_cell(ks));
    if (g.params) set("perf_params", Cell(*g.params));
    set("has_perf_model", Cell(g.has_perf_model));
    outs.push_back({kt.sum, g.ex_uid, std::move(row)});
  }
  std::sort(outs.begin(), outs.end(), [](const Out& a, const Out& b) {
    if (a.kt_sum != b.kt_sum) return a.kt_sum > b.kt_sum;
    return a.ex_uid < b.ex_uid;
  });
  std::vector<double> sums;
  for (const Out& o : outs) sums.push_back(o.kt_sum);
  double total = pycompat::numpy_sum(sums);
  double cum = 0;
  int pc = t.col("Percentage (%)"), cc = t.col("Cumulative Percentage (%)");
  for (Out& o : outs) {
    double pct = o.kt_sum / total * 100;
    cum += pct;
    o.cells[pc] = num(pct);
    o.cells[cc] = num(cum);
    t.rows.push_back(std::move(o.cells));
  }
  return t;
}

class UnifiedCollector {
 public:
  UnifiedCollector(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                   bool python_frames)
      : trace_(trace),
        tree_(tree),
        arch_(arch),
        python_frames_(python_frames),
        annotations_(trace),
        op_categories_(trace, tree) {}

  // Every row, each with its kernel list and its metrics' params
  // (unified_perf_rows: the tools that read single rows).
  std::vector<PerfOpRow> rows() {
    std::vector<OpRef> collected = collect();
    std::vector<PerfOpRow> rows;
    // At most one row per collected op: reserving avoids the regrowth copies
    // (old and new buffers live at once) of these large rows.
    rows.reserve(collected.size());
    for (const OpRef& op : collected) {
      PerfOpRow& r = rows.emplace_back();  // built in place: no copy of the large row
      if (!build_row(op, r)) {
        rows.pop_back();
        continue;
      }
      std::span<const Uid> kernels = kernels_of(op);
      r.kernels.assign(kernels.begin(), kernels.end());
    }
    return rows;
  }

  // Each row folded into the summary as it is built, through one reused
  // row: the summary keeps only what its cells need, so the rows (376 bytes
  // each, a kernel list and the metrics' params) are never all held at once.
  void stream_to(UnifiedSummary& summary) {
    std::vector<OpRef> collected = collect();
    PerfOpRow r;
    for (const OpRef& op : collected) {
      r = PerfOpRow{};
      if (build_row(op, r)) summary.add(r, kernels_of(op));
    }
  }

 private:
  bool launches_gpu(Uid u) const { return !tree_.gpu_events(u).empty(); }

  bool has_model(Uid base, std::string_view name) const {
    // Only a Triton-compiled name's model depends on the event (its kernel
    // metadata); for any other name the registry answers alone.
    if (!perf::is_triton_compiled_name(name)) return perf::has_registered_model(name);
    perf::OpInput in = perf::op_input_from_event(trace_, base);
    in.name = name;
    return perf::has_perf_model(in);
  }
  bool has_model(Uid u) const {
    if (model_cache_.empty()) model_cache_.assign(trace_.events.size(), -1);
    int8_t& c = model_cache_[u];
    if (c < 0) {
      // Decided once per name (the registry hashes the text), except for
      // Triton-compiled names, whose model depends on the event.
      if (name_has_model_.empty()) name_has_model_.assign(trace_.strings.size(), kNameUnknown);
      NameModel& known = name_has_model_[trace_.events[u].name];
      if (known == kNameUnknown) {
        std::string_view name = trace_.name(u);
        known = perf::is_triton_compiled_name(name) ? kNameAsksEvent
                : perf::has_registered_model(name)  ? kNameHasModel
                                                    : kNameNoModel;
      }
      c = known == kNameAsksEvent ? (has_model(u, trace_.name(u)) ? 1 : 0)
                                  : (known == kNameHasModel ? 1 : 0);
    }
    return c == 1;
  }

  // The registry entry of event u's name, looked up once per name (the
  // registry hashes the text).
  const perf::ModelEntry* model_entry(Uid u) const {
    uint32_t name = trace_.events[u].name;
    auto [it, fresh] = entry_by_name_.try_emplace(name, nullptr);
    if (fresh) it->second = perf::find_model_entry(trace_.str(name));
    return it->second;
  }

  bool is_leaf_cpu_op(Uid u) const {
    if (tree_.cat(u) != Cat::CpuOp) return false;
    return has_kernel_descendant(u, 10);
  }
  bool has_kernel_descendant(Uid u, int depth) const {
    if (depth <= 0) return false;
    for (Uid c : tree_.children(u)) {
      const Cat cat = tree_.cat(c);
      if (is_gpu_cat(cat)) return true;
      if ((cat == Cat::CudaRuntime || cat == Cat::PythonFunction) &&
          has_kernel_descendant(c, depth - 1))
        return true;
    }
    return false;
  }

  // TraceLens _get_linked_fwd_event: (forward event, is the only main backward op).
  std::pair<Uid, bool> linked_fwd(Uid base) const {
    Uid cur = base, wrapper = kNoUid, fwd = kNoUid;
    for (int k = 0; k < 5; ++k) {
      Uid p = tree_.parent(cur);
      if (p == kNoUid) break;
      Uid f = tree_.fwd_event(p);
      if (f != kNoUid && f != 0) {  // Python `if fwd_uid:` (UID 0 is falsy)
        wrapper = p;
        fwd = f;
        break;
      }
      cur = p;
    }
    if (wrapper == kNoUid || !has_model(fwd)) return {kNoUid, false};
    std::string_view wname = trace_.name(wrapper);
    size_t sep = wname.find(": ");
    std::optional<std::string_view> main_name;
    if (sep != std::string_view::npos) main_name = wname.substr(sep + 2);
    size_t count = 0;
    count_main_bwd_ops(wrapper, main_name, count);
    return {fwd, count == 1};
  }
  // cpu_op descendants reached through cpu_ops only (iterative: deep stacks).
  void count_main_bwd_ops(Uid root, const std::optional<std::string_view>& main_name,
                          size_t& count) const {
    std::vector<Uid> stack(tree_.children(root).begin(), tree_.children(root).end());
    while (!stack.empty()) {
      Uid c = stack.back();
      stack.pop_back();
      if (tree_.cat(c) != Cat::CpuOp) continue;
      if (launches_gpu(c) && (!main_name || trace_.name(c) == *main_name)) ++count;
      stack.insert(stack.end(), tree_.children(c).begin(), tree_.children(c).end());
    }
  }

  // Cached: it runs a backward metric computation, whose result (and the
  // linked forward op) the op's row then takes instead of running it again.
  bool sole_bwd(Uid base) {
    if (sole_cache_.empty()) sole_cache_.assign(trace_.events.size(), -1);
    if (sole_cache_[base] >= 0) return sole_cache_[base] == 1;
    bool result = false;
    auto [fwd, sole] = linked_fwd(base);
    if (fwd != kNoUid && sole) {
      const perf::ModelEntry* e = model_entry(fwd);
      if (e && !e->bwd_category.empty()) {
        try {
          std::optional<Computed> c = compute_metrics(trace_, tree_, {fwd, fwd, trace_.name(fwd)},
                                                      true, arch_, annotations_, models_);
          if (c) {
            result = true;
            sole_fwd_.emplace(base, SoleBwd{fwd, std::move(*c)});
          }
        } catch (const std::bad_alloc&) {
          throw;
        } catch (const std::exception&) {
          result = false;  // a failing backward model: not a sole backward op
        }
      }
    }
    sole_cache_[base] = result ? 1 : 0;
    return result;
  }

  // Whether a cpu_op with a perf model that launches GPU work lies below u,
  // reached through Python frames and cpu_ops. Computed bottom-up for the whole
  // subtree at once and cached: a walk per node was quadratic in the depth.
  bool desc_with_model(Uid u) const {
    if (desc_cache_.empty()) desc_cache_.assign(trace_.events.size(), -1);
    if (desc_cache_[u] >= 0) return desc_cache_[u] == 1;
    // Iterative post-order: a node is decided once all its children are.
    std::vector<std::pair<Uid, bool>> stack{{u, false}};
    while (!stack.empty()) {
      auto [n, expanded] = stack.back();
      if (desc_cache_[n] >= 0) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (Uid c : tree_.children(n))
          if (walks_into(c) && desc_cache_[c] < 0) stack.push_back({c, false});
        continue;
      }
      stack.pop_back();
      bool found = false;
      for (Uid c : tree_.children(n)) {
        if (!walks_into(c)) continue;
        if (tree_.cat(c) != Cat::PythonFunction && has_model(c) && launches_gpu(c)) found = true;
        if (desc_cache_[c] == 1) found = true;
        if (found) break;
      }
      desc_cache_[n] = found ? 1 : 0;
    }
    return desc_cache_[u] == 1;
  }
  bool walks_into(Uid c) const {
    const Cat cat = tree_.cat(c);
    return cat == Cat::PythonFunction || cat == Cat::CpuOp;
  }

  bool launches_comm_kernel(Uid u) const {
    for (Uid g : tree_.gpu_events(u))
      if (trace_.is_communication(g)) return true;
    return false;
  }

  // Pre-order walk with an explicit stack (children pushed in reverse, so the
  // order is the recursive one): crafted traces nest tens of thousands of
  // frames, which recursion turned into a stack overflow.
  void traverse(Uid root) {
    std::vector<Uid> stack{root};
    auto push_children = [&](auto&& kids) {
      stack.insert(stack.end(), kids.rbegin(), kids.rend());
    };
    while (!stack.empty()) {
      Uid u = stack.back();
      stack.pop_back();
      if (visited_.empty()) visited_.assign(trace_.events.size(), 0);
      if (visited_[u]) continue;
      visited_[u] = 1;
      if (!python_frames_ && tree_.cat(u) != Cat::CpuOp) continue;
      if (!launches_gpu(u)) continue;
      if (has_model(u)) {
        collected_.push_back({u, u, trace_.name(u)});
        continue;
      }
      if (sole_bwd(u)) {
        if (desc_with_model(u))
          push_children(tree_.children(u));
        else
          collected_.push_back({u, u, trace_.name(u)});
        continue;
      }
      if (desc_with_model(u)) {
        push_children(tree_.children(u));
        continue;
      }
      if (is_leaf_cpu_op(u)) {
        std::vector<Uid> modeled;
        for (Uid c : tree_.children(u))
          if (tree_.cat(c) == Cat::CpuOp && has_model(c) && launches_gpu(c)) modeled.push_back(c);
        if (!modeled.empty())
          push_children(modeled);
        else if (!launches_comm_kernel(u))
          collected_.push_back({u, u, trace_.name(u)});
        continue;
      }
      push_children(tree_.children(u));
    }
  }

  std::vector<OpRef> collect() {
    if (python_frames_) {
      for (Uid u = 0; u < trace_.events.size(); ++u)
        if (tree_.cat(u) == Cat::PythonFunction && tree_.parent(u) == kNoUid && launches_gpu(u))
          traverse(u);
    }
    for (Uid r : tree_.cpu_root_nodes()) traverse(r);
    add_leftover_kernels();
    return collected_;
  }

  // Synthetic rows for GPU events no collected op covers.
  void add_leftover_kernels() {
    std::vector<uint8_t> covered(trace_.events.size(), 0);  // by UID
    for (const OpRef& op : collected_) {
      if (is_synthetic(op)) continue;  // none yet: they are added below
      for (Uid g : tree_.gpu_events(op.uid)) covered[g] = 1;
    }
    std::vector<std::pair<Uid, Uid>> with_cpu_op;  // (kernel, cpu_op)
    std::vector<Uid> parent_order;
    std::unordered_map<Uid, std::vector<Uid>> orphans;  // runtime parent -> kernels
    for (Uid u : tree_.gpu_event_uids()) {
      if (covered[u]) continue;
      if (trace_.is_communication(u)) continue;
      Uid cpu = kNoUid;
      for (Uid p = tree_.parent(u); p != kNoUid; p = tree_.parent(p))
        if (tree_.cat(p) == Cat::CpuOp) {
          cpu = p;
          break;
        }
      if (cpu != kNoUid) {
        with_cpu_op.emplace_back(u, cpu);
        continue;
      }
      Uid parent = tree_.parent(u);
      if (parent == kNoUid) continue;
      if (!orphans.count(parent)) parent_order.push_back(parent);
      orphans[parent].push_back(u);
    }
    Uid next = static_cast<Uid>(trace_.events.size());
    auto add = [&](Uid parent, Uid kernel) {
      synthetic_names_.push_back(std::string(trace_.name(parent)) + "->" +
                                 std::string(trace_.name(kernel)) + " (Synthetic Op)");
      synthetic_kernel_[next] = kernel;
      collected_.push_back({next, parent, {}});
      synthetic_index_[next] = synthetic_names_.size() - 1;
      ++next;
    };
    for (Uid p : parent_order)
      for (Uid k : orphans[p]) add(p, k);
    for (auto [k, p] : with_cpu_op) add(p, k);
    for (OpRef& op : collected_)
      if (synthetic_index_.count(op.uid)) op.name = synthetic_names_[synthetic_index_[op.uid]];
  }

  bool is_synthetic(const OpRef& op) const { return op.uid != op.base; }
  // The op's kernels: its launches' GPU events, or a synthetic row's one
  // kernel (a span into the collector's map, whose nodes do not move).
  std::span<const Uid> kernels_of(const OpRef& op) const {
    if (is_synthetic(op)) return {&synthetic_kernel_.at(op.uid), 1};
    return tree_.gpu_events(op.uid);
  }

  std::string_view category_of(const OpRef& op) const {
    if (!is_synthetic(op)) return op_categories_.of(op.uid);
    // A synthetic row is a copy of its parent: the parent's stored kernel
    // details (its direct kernels by ts) drive the kernel-name fallback.
    auto direct = tree_.direct_kernels(op.base);
    std::vector<Uid> sorted = sorted_by_ts(trace_, {direct.begin(), direct.end()});
    return perf::op_category(op.name, sorted.empty() ? std::string_view{} : trace_.name(sorted[0]));
  }

  // Fills `r` with the row of `op` (its kernel list is kernels_of(op), left
  // to the caller); false when TraceLens drops the row.
  bool build_row(const OpRef& op, PerfOpRow& r) {
    r.uid = op.uid;
    r.event_uid = op.base;
    r.name = std::string(op.name);
    r.duration_us = trace_.events[op.base].dur();
    // A collected event's row has the event's own name: its answer is cached.
    bool own = is_synthetic(op) ? has_model(op.base, op.name) : has_model(op.base);
    // Whether the op is a sole backward op matters only without a model of
    // its own (its category and metrics then come from the forward op).
    bool sole = !own && sole_bwd(op.base);
    const SoleBwd* linked = sole ? &sole_fwd_.at(op.base) : nullptr;
    r.category = category_of(op);
    if (linked)
      if (const perf::ModelEntry* e = model_entry(linked->fwd); e && !e->bwd_category.empty())
        r.category = e->bwd_category;
    r.has_perf_model = own || sole;
    if (linked) {
      // sole_bwd computed these metrics (the forward op's backward).
      r.backward = true;
      r.kernel_time_us = linked->computed.metrics.kernel_time_us;
      if (const perf::ModelEntry* e = model_entry(linked->fwd)) r.sheet = e->sheet;
      r.metrics = linked->computed.metrics;
      return true;
    }
    if (own) {
      try {
        auto c = compute_metrics(trace_, tree_, op, false, arch_, annotations_, models_);
        if (c) {
          r.kernel_time_us = c->metrics.kernel_time_us;
          if (const perf::ModelEntry* e =
                  is_synthetic(op) ? perf::find_model_entry(op.name) : model_entry(op.base))
            r.sheet = e->sheet;
          r.metrics = std::move(c->metrics);
          return true;
        }
      } catch (const perf::PerfNotImplemented&) {
        return false;  // TraceLens drops the row
      } catch (const std::exception&) {
        // A failing model: the row without metrics, its kernels' busy time
        // (perf_model_sheets counts the failures by op and reason).
      }
    }
    std::span<const Uid> kernels = kernels_of(op);
    r.kernel_time_us = kernels.empty() ? 0.0 : tree_.busy_time(kernels);
    return true;
  }

  const Trace& trace_;
  const CallTree& tree_;
  const GpuArch* arch_;
  bool python_frames_;
  perf::TraceAnnotations annotations_;  // indexed when a model first asks
  ModelCache models_;
  // Per-event state, indexed by UID (sized on first use): -1 not yet known.
  std::vector<uint8_t> visited_;
  std::vector<OpRef> collected_;
  std::vector<int8_t> sole_cache_;
  // A sole backward op's linked forward op and that op's backward metrics.
  struct SoleBwd {
    Uid fwd;
    Computed computed;
  };
  std::unordered_map<Uid, SoleBwd> sole_fwd_;  // by the backward op's UID
  mutable std::vector<int8_t> model_cache_;
  enum NameModel : uint8_t { kNameUnknown, kNameNoModel, kNameHasModel, kNameAsksEvent };
  mutable std::vector<NameModel> name_has_model_;  // by interned name (sized on first use)
  mutable std::vector<int8_t> desc_cache_;
  mutable std::unordered_map<uint32_t, const perf::ModelEntry*> entry_by_name_;
  mutable OpCategories op_categories_;
  std::vector<std::string> synthetic_names_;
  std::unordered_map<Uid, size_t> synthetic_index_;
  std::unordered_map<Uid, Uid> synthetic_kernel_;
};

}  // namespace

std::vector<PerfOpRow> unified_perf_rows(const Trace& trace, const CallTree& tree,
                                         const GpuArch* arch, bool include_python_frames) {
  UnifiedCollector collector(trace, tree, arch, include_python_frames);
  return collector.rows();
}

Table unified_perf_summary_table(const Trace& trace, const std::vector<PerfOpRow>& rows) {
  UnifiedSummary summary(trace);
  for (const PerfOpRow& r : rows) summary.add(r, r.kernels);
  return summary.table();
}

}  // namespace report

std::optional<Table> unified_perf_summary(const Trace& trace, const CallTree& tree,
                                          const ReportOptions& options) {
  report::UnifiedCollector collector(trace, tree, options.arch, options.include_python_frames);
  report::UnifiedSummary summary(trace);
  collector.stream_to(summary);  // the kernel spans it keeps live in the collector and the tree
  if (summary.empty()) return std::nullopt;
  return summary.table();
}

void add_perf_tables(Report& report, const Trace& trace, const CallTree& tree,
                     const ReportOptions& options) {
  // TraceLens writes the perf sheets after unified_perf_summary but computes
  // them first; the computations here have no side effects, so order is free.
  // The unified rows (metrics, params, kernel lists of every op) are freed
  // before the sheet rows are built, so the two sets never coexist in memory.
  if (auto unified = unified_perf_summary(trace, tree, options))
    report.tables.push_back(std::move(*unified));
  report::PerfSheets sheets = report::perf_model_sheets(trace, tree, options.arch);
  for (Table& t : sheets.tables) report.tables.push_back(std::move(t));
  report.model_failures = std::move(sheets.model_failures);
}

}  // namespace jarvis
