#include "report/core_tables.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "base/hash_mix.h"
#include "perf/categories.h"
#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "pycompat/value.h"
#include "report/numpy_sort.h"
#include "report/stats.h"

namespace jarvis::report {

namespace {

constexpr std::string_view kArgColumns[] = {"Input Dims", "Input type", "Input Strides",
                                            "Concrete Inputs"};

// Groups in order of first occurrence (pandas groupby sort=False).
template <typename Key>
class OrderedGroups {
 public:
  // Appends a row to group g (an index add returned).
  void add_to(size_t g, size_t row) { groups_[g].push_back(row); }
  size_t add(const Key& key, size_t row) {
    auto [it, fresh] = index_.emplace(key, groups_.size());
    if (fresh) groups_.emplace_back();
    groups_[it->second].push_back(row);
    return it->second;
  }
  const std::vector<std::vector<size_t>>& groups() const { return groups_; }

 private:
  std::map<Key, size_t> index_;
  std::vector<std::vector<size_t>> groups_;
};

std::vector<double> pick(const std::vector<LauncherRow>& rows, const std::vector<size_t>& idx,
                         double LauncherRow::*field) {
  std::vector<double> out;
  out.reserve(idx.size());
  for (size_t k : idx) out.push_back(rows[k].*field);
  return out;
}

// DataFrame.sort_values(by=<one column>, ascending=False): NumPy's unstable
// introsort, so tied rows come out in the order TraceLens's sheets show them.
template <typename T, typename Key>
void sort_descending_like_pandas(std::vector<T>& items, Key key) {
  std::vector<double> values;
  values.reserve(items.size());
  for (const T& item : items) values.push_back(key(item));
  std::vector<T> sorted;
  sorted.reserve(items.size());
  for (size_t i : numpy::argsort_descending(values)) sorted.push_back(std::move(items[i]));
  items = std::move(sorted);
}

void drop_column(Table& table, std::string_view column) {
  int c = table.col(column);
  if (c < 0) return;
  auto at = static_cast<std::ptrdiff_t>(c);
  table.columns.erase(table.columns.begin() + at);
  for (auto& row : table.rows) row.erase(row.begin() + at);
}

// Percentage and cumulative percentage of `values` (already in output order).
void add_percentages(Table& table, const std::vector<double>& values) {
  double total = pycompat::numpy_sum(values);
  std::vector<double> pct(values.size());
  for (size_t k = 0; k < values.size(); ++k) pct[k] = values[k] / total * 100;
  auto cum = stats::cumsum(pct);
  int p = table.col("Percentage (%)"), c = table.col("Cumulative Percentage (%)");
  for (size_t k = 0; k < values.size(); ++k) {
    table.rows[k][static_cast<size_t>(p)] = Cell(pct[k]);
    table.rows[k][static_cast<size_t>(c)] = Cell(cum[k]);
  }
}

// First direct kernel by ts of a launcher ("" when uid launches nothing).
std::string_view first_kernel_name(const Trace& trace, const CallTree& tree, Uid uid) {
  auto kernels = tree.direct_kernels(uid);
  Uid best = kNoUid;
  double best_ts = 0;
  for (Uid k : kernels) {
    double ts = trace.events[k].has_ts() ? trace.events[k].ts() : 0.0;
    if (best == kNoUid || ts < best_ts) {
      best = k;
      best_ts = ts;
    }
  }
  return best == kNoUid ? std::string_view{} : trace.name(best);
}

}  // namespace

bool is_gpu_only(const Trace& trace) {
  for (const Event& e : trace.events)
    if (e.cat == Cat::CpuOp) return false;
  return true;
}

std::string_view op_category_of(const Trace& trace, const CallTree& tree, Uid uid) {
  // The registry answers most names; the first kernel (a walk over the
  // op's kernels) only feeds perf::op_category's fallback.
  std::string_view name = trace.name(uid);
  if (std::string_view registered = perf::op_category_by_name(name); !registered.empty())
    return registered;
  return perf::op_category(name, first_kernel_name(trace, tree, uid));
}

std::string_view OpCategories::registered(Uid uid) {
  auto [it, fresh] = by_name_.try_emplace(trace_.events[uid].name);
  if (fresh) it->second = perf::op_category_by_name(trace_.name(uid));
  return it->second;
}

std::string_view OpCategories::of(Uid uid) {
  std::string_view r = registered(uid);
  return r.empty() ? op_category_of(trace_, tree_, uid) : r;
}

std::vector<LauncherRow> kernel_launcher_rows(const Trace& trace, const CallTree& tree) {
  std::vector<LauncherRow> rows;
  rows.reserve(tree.launchers().size());
  for (Uid l : tree.launchers()) {
    LauncherRow row;
    row.uid = l;
    row.name = trace.name(l);
    auto direct = tree.direct_kernels(l);
    row.direct_time = tree.busy_time(direct);
    row.subtree_time = tree.busy_time(tree.gpu_events(l));
    row.kernel_details = kernel_details_by_ts(trace, direct);
    row.category = perf::op_category(
        row.name, row.kernel_details.empty() ? std::string_view{} : row.kernel_details[0].name);
    rows.push_back(std::move(row));
  }
  return rows;
}

Cell arg_cell(const Trace& trace, Uid uid, std::string_view key) {
  const PyValue* v = trace.arg(uid, key);
  if (!v || v->is_none()) return Cell();
  if (v->is_string()) return Cell(v->s);
  return Cell(v->repr_tuple());
}

std::string arg_key(const Trace& trace, Uid uid, std::string_view key) {
  const PyValue* v = trace.arg(uid, key);
  if (!v) return "None";
  if (v->is_string()) return v->s;
  return v->repr_tuple();
}

Table ops_summary_by_category_table(const std::vector<LauncherRow>& launchers) {
  // pandas groupby (sorted keys), then a descending sort on the sum.
  std::map<std::string_view, std::vector<size_t>> groups;
  for (size_t k = 0; k < launchers.size(); ++k) groups[launchers[k].category].push_back(k);
  struct Agg {
    std::string_view category;
    double sum;
    size_t count;
  };
  std::vector<Agg> aggs;
  for (const auto& [cat, idx] : groups)
    aggs.push_back({cat,
                    pycompat::pandas_groupby_sum(pick(launchers, idx, &LauncherRow::direct_time)),
                    idx.size()});
  sort_descending_like_pandas(aggs, [](const Agg& a) { return a.sum; });
  Table table("ops_summary_by_category", {"op category", "Count", "total_direct_kernel_time_ms",
                                          "Percentage (%)", "Cumulative Percentage (%)"});
  std::vector<double> ms;
  for (const Agg& a : aggs) {
    auto& row = table.add_row();
    row[0] = Cell(std::string(a.category));
    row[1] = Cell(a.count);
    row[2] = Cell(a.sum / 1000);
    ms.push_back(a.sum / 1000);
  }
  add_percentages(table, ms);
  return table;
}

Table ops_summary_table(const std::vector<LauncherRow>& launchers) {
  std::map<std::string_view, std::vector<size_t>> groups;
  for (size_t k = 0; k < launchers.size(); ++k) groups[launchers[k].name].push_back(k);
  struct Agg {
    std::string_view name;
    double direct, subtree;
    size_t count;
    std::string categories;
  };
  std::vector<Agg> aggs;
  for (const auto& [name, idx] : groups) {
    std::vector<std::string_view> cats;
    for (size_t k : idx) cats.push_back(launchers[k].category);
    std::sort(cats.begin(), cats.end());
    cats.erase(std::unique(cats.begin(), cats.end()), cats.end());
    std::vector<PyValue> items;
    for (auto c : cats) items.push_back(PyValue::string(std::string(c)));
    aggs.push_back({name,
                    pycompat::pandas_groupby_sum(pick(launchers, idx, &LauncherRow::direct_time)),
                    pycompat::pandas_groupby_sum(pick(launchers, idx, &LauncherRow::subtree_time)),
                    idx.size(), PyValue::make_list(std::move(items)).repr_list()});
  }
  sort_descending_like_pandas(aggs, [](const Agg& a) { return a.direct; });
  Table table("ops_summary",
              {"name", "total_direct_kernel_time_sum", "total_subtree_kernel_time_sum",
               "total_direct_kernel_time_ms", "total_subtree_kernel_time_ms", "Count", "Categories",
               "Percentage (%)", "Cumulative Percentage (%)"});
  std::vector<double> ms;
  for (const Agg& a : aggs) {
    auto& row = table.add_row();
    row[0] = Cell(std::string(a.name));
    row[1] = Cell(a.direct);
    row[2] = Cell(a.subtree);
    row[3] = Cell(a.direct / 1000);
    row[4] = Cell(a.subtree / 1000);
    row[5] = Cell(a.count);
    row[6] = Cell(a.categories);
    ms.push_back(a.direct / 1000);
  }
  add_percentages(table, ms);
  return table;
}

namespace {

// ops_unique_args's group key: ids of equal texts (name, op category, the
// three process/thread cells joined, the four arg cells joined).
struct UniqueArgsKey {
  uint32_t name, category, thread, args;
  auto operator<=>(const UniqueArgsKey&) const = default;
};

// Equal texts get equal ids. The views must outlive the ids (launcher names
// and categories point into the trace; joined texts are kept here).
class TextIds {
 public:
  uint32_t of(std::string_view text) {
    auto [it, fresh] = ids_.try_emplace(text, static_cast<uint32_t>(ids_.size()));
    return it->second;
  }
  uint32_t of_owned(std::string text) {
    auto found = ids_.find(text);
    if (found != ids_.end()) return found->second;
    return of(kept_.emplace_back(std::move(text)));
  }

 private:
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::deque<std::string> kept_;
};

// The key cells of ops_unique_args, rendered once per distinct (pid, tid)
// pair and per distinct arg list.
struct ArgCellsMemo {
  std::vector<std::array<Cell, 3>> thread_cells;  // per distinct Event::thread
  std::vector<std::array<Cell, 4>> arg_cells;     // per distinct Event::args
  std::vector<uint32_t> thread_slot, args_slot;   // per launcher
  std::vector<UniqueArgsKey> keys;                // per launcher
  std::vector<Cell> text_cells;                   // name and category cells, by text id

  const Cell& cell(size_t k, size_t column) const {
    if (column == 0) return text_cells[keys[k].name];
    if (column == 1) return text_cells[keys[k].category];
    if (column < 5) return thread_cells[thread_slot[k]][column - 2];
    return arg_cells[args_slot[k]][column - 5];
  }
};

ArgCellsMemo memo_key_cells(const Trace& trace, const std::vector<LauncherRow>& launchers) {
  ArgCellsMemo memo;
  TextIds ids;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> by_thread;  // slot, text id
  std::unordered_map<int32_t, std::pair<uint32_t, uint32_t>> by_args;     // slot, text id
  for (const LauncherRow& l : launchers) {
    const Event& e = trace.events[l.uid];
    auto thread = by_thread.find(e.thread);
    if (thread == by_thread.end()) {
      const ProcId& pid = trace.pid(e);
      std::array<Cell, 3> cells{Cell(trace.process_name(pid)), Cell(trace.process_label(pid)),
                                Cell(trace.thread_name(pid, trace.tid(e)))};
      std::string text;
      for (const Cell& c : cells) text += c.text() + '\x1f';
      auto slot = static_cast<uint32_t>(memo.thread_cells.size());
      memo.thread_cells.push_back(std::move(cells));
      thread = by_thread.emplace(e.thread, std::pair{slot, ids.of_owned(std::move(text))}).first;
    }
    auto args = by_args.find(e.args);
    if (args == by_args.end()) {
      std::array<Cell, 4> cells;
      std::string text;
      for (size_t a = 0; a < 4; ++a) {
        cells[a] = arg_cell(trace, l.uid, kArgColumns[a]);
        text += arg_key(trace, l.uid, kArgColumns[a]) + '\x1f';
      }
      auto slot = static_cast<uint32_t>(memo.arg_cells.size());
      memo.arg_cells.push_back(std::move(cells));
      args = by_args.emplace(e.args, std::pair{slot, ids.of_owned(std::move(text))}).first;
    }
    memo.thread_slot.push_back(thread->second.first);
    memo.args_slot.push_back(args->second.first);
    uint32_t name = ids.of(l.name), category = ids.of(l.category);
    memo.text_cells.resize(std::max<size_t>(memo.text_cells.size(), std::max(name, category) + 1));
    if (memo.text_cells[name].missing()) memo.text_cells[name] = Cell(std::string(l.name));
    if (memo.text_cells[category].missing())
      memo.text_cells[category] = Cell(std::string(l.category));
    memo.keys.push_back({name, category, thread->second.second, args->second.second});
  }
  return memo;
}

}  // namespace

Table ops_unique_args_table(const Trace& trace, const std::vector<LauncherRow>& launchers) {
  // Key cells per launcher: name, op category, process/thread names, args.
  // TraceLens groups on the text of these cells. The thread cells depend only
  // on the event's (pid, tid) pair and the arg cells only on its arg list
  // (equal lists are stored once), so each is rendered once per distinct
  // pair or list, and launchers are grouped on ids of equal texts.
  constexpr size_t kKeys = 9;
  const ArgCellsMemo memo = memo_key_cells(trace, launchers);
  OrderedGroups<UniqueArgsKey> groups;
  for (size_t k = 0; k < launchers.size(); ++k) groups.add(memo.keys[k], k);

  struct Agg {
    std::vector<size_t> rows;
    double direct_sum;
    Uid ex_uid;
  };
  std::vector<Agg> aggs;
  for (const auto& idx : groups.groups())
    aggs.push_back({idx,
                    pycompat::pandas_groupby_sum(pick(launchers, idx, &LauncherRow::direct_time)),
                    launchers[idx[0]].uid});
  std::stable_sort(aggs.begin(), aggs.end(), [](const Agg& a, const Agg& b) {
    if (a.direct_sum != b.direct_sum) return a.direct_sum > b.direct_sum;
    return a.ex_uid < b.ex_uid;
  });

  Table table("ops_unique_args", {"name",
                                  "op category",
                                  "process_name",
                                  "process_label",
                                  "thread_name",
                                  "Input Dims",
                                  "Input type",
                                  "Input Strides",
                                  "Concrete Inputs",
                                  "operation_count",
                                  "total_direct_kernel_time_mean",
                                  "total_subtree_kernel_time_mean",
                                  "total_direct_kernel_time_median",
                                  "total_subtree_kernel_time_median",
                                  "total_direct_kernel_time_std",
                                  "total_subtree_kernel_time_std",
                                  "total_direct_kernel_time_min",
                                  "total_subtree_kernel_time_min",
                                  "total_direct_kernel_time_max",
                                  "total_subtree_kernel_time_max",
                                  "total_direct_kernel_time_sum",
                                  "total_subtree_kernel_time_sum",
                                  "ex_UID",
                                  "kernel_details_summary",
                                  "trunc_kernel_details",
                                  "Percentage (%)",
                                  "Cumulative Percentage (%)"});
  std::vector<double> sums;
  for (const Agg& a : aggs) {
    auto& row = table.add_row();
    // Key columns: first non-null value of the group.
    for (size_t c = 0; c < kKeys; ++c)
      for (size_t k : a.rows)
        if (const Cell& cell = memo.cell(k, c); !cell.missing()) {
          row[c] = cell;
          break;
        }
    row[9] = Cell(a.rows.size());
    auto direct = pick(launchers, a.rows, &LauncherRow::direct_time);
    auto subtree = pick(launchers, a.rows, &LauncherRow::subtree_time);
    size_t c = 10;
    for (auto fn : {pycompat::pandas_groupby_mean, stats::median, pycompat::pandas_groupby_std,
                    stats::min, stats::max, pycompat::pandas_groupby_sum}) {
      double d = fn(direct), s = fn(subtree);
      row[c++] = std::isnan(d) ? Cell() : Cell(d);
      row[c++] = std::isnan(s) ? Cell() : Cell(s);
    }
    row[22] = Cell(a.ex_uid);
    std::vector<const KernelDetailList*> lists;
    for (size_t k : a.rows) lists.push_back(&launchers[k].kernel_details);
    auto summary = summarize_kernel_details(lists);
    row[23] = Cell(kernel_stats_repr(summary));
    row[24] = trunc_kernel_details_cell(summary);
    sums.push_back(a.direct_sum);
  }
  add_percentages(table, sums);
  return table;
}

namespace {

// Per-kernel facts shared by kernel_summary and the short-kernel sheets
// (TraceLens get_kernel_details).
struct KernelFacts {
  Uid uid;
  Uid launcher;  // parent runtime call, kNoUid when unlinked
  Uid cpu_op;    // nearest cpu_op above the launcher (execute not skipped)
};

std::vector<KernelFacts> kernel_facts(const Trace& trace, const CallTree& tree) {
  std::vector<KernelFacts> out;
  for (Uid u : tree.gpu_event_uids()) {
    if (trace.events[u].cat != Cat::Kernel) continue;
    Uid launcher = tree.parent(u);
    Uid cpu_op = kNoUid;
    for (Uid p = launcher; p != kNoUid; p = tree.parent(p))
      if (tree.cat(p) == Cat::CpuOp) {
        cpu_op = p;
        break;
      }
    out.push_back({u, launcher, cpu_op});
  }
  return out;
}

// A grouping key cell: text plus a "missing" flag (pandas NaN).
struct KeyCell {
  bool missing = true;
  std::string text;
  int64_t number = 0;
  bool is_number = false;
  Cell cell() const {
    if (missing) return Cell();
    return is_number ? Cell(number) : Cell(text);
  }
  auto order() const { return std::tuple(missing, is_number, number, text); }
  bool operator<(const KeyCell& o) const { return order() < o.order(); }
};

KeyCell text_key(std::string_view s) {
  return {false, std::string(s), 0, false};
}
KeyCell arg_key_cell(const Trace& trace, Uid cpu_op, std::string_view arg) {
  if (cpu_op == kNoUid) return {};
  Cell c = arg_cell(trace, cpu_op, arg);
  if (c.missing()) return {};
  return text_key(c.text());
}

}  // namespace

namespace {

// Small ids for category texts (0: missing), with the key cell of each.
class CategoryIds {
 public:
  uint32_t of(std::string_view text) {
    auto [it, fresh] = ids_.try_emplace(text, static_cast<uint32_t>(texts_.size() + 1));
    if (fresh) texts_.push_back(text);
    return it->second;
  }
  KeyCell cell(uint32_t id) const { return id == 0 ? KeyCell{} : text_key(texts_[id - 1]); }

 private:
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> texts_;
};

// A kernel_summary group key as ids: equal ids, equal texts, so grouping on
// them is grouping on the texts without building four strings per kernel.
struct KernelSummaryIds {
  uint32_t category = 0;  // CategoryIds id
  uint32_t cpu_op = 0;    // interned name id + 1, 0: missing
  uint32_t kernel = 0;    // interned name id
  int64_t stream = kNoInt;
  bool operator==(const KernelSummaryIds&) const = default;
};
struct KernelSummaryIdsHash {
  size_t operator()(const KernelSummaryIds& k) const noexcept {
    return hash_of(k.category, k.cpu_op, k.kernel, k.stream);
  }
};

// The launcher-only category: "graph" for a graph launch, "runtime" for
// another named launcher, missing for an empty or "nan" name.
std::string_view launcher_category(std::string_view launcher) {
  std::string l = pycompat::ascii_lower(launcher);
  if (l.find("cudagraph") != std::string::npos || l.find("graphlaunch") != std::string::npos)
    return "graph";
  if (!l.empty() && l != "nan") return "runtime";
  return {};
}

// kernel_summary's groups in first-appearance order: their id keys, the
// durations of each, and every kernel's duration.
struct KernelSummaryGroups {
  CategoryIds categories;
  std::vector<KernelSummaryIds> ids;
  std::vector<std::vector<double>> durations;
  std::vector<double> all_durations;
};

// The category of a kernel's group: §9 on its cpu_op, else its launcher's
// kind; each computed once per cpu_op or launcher name.
class KernelCategories {
 public:
  KernelCategories(const Trace& trace, const CallTree& tree, CategoryIds& ids)
      : trace_(trace), op_categories_(trace, tree), ids_(ids) {}
  uint32_t of_cpu_op(Uid cpu_op) {
    auto [it, fresh] = by_op_.try_emplace(cpu_op, 0);
    if (fresh) it->second = ids_.of(op_categories_.of(cpu_op));
    return it->second;
  }
  uint32_t of_launcher_name(uint32_t name) {
    auto [it, fresh] = by_name_.try_emplace(name, 0);
    if (fresh) {
      std::string_view category = launcher_category(trace_.str(name));
      if (!category.empty()) it->second = ids_.of(category);
    }
    return it->second;
  }

 private:
  const Trace& trace_;
  OpCategories op_categories_;
  CategoryIds& ids_;
  std::unordered_map<Uid, uint32_t> by_op_;
  std::unordered_map<uint32_t, uint32_t> by_name_;
};

KernelSummaryGroups group_kernels(const Trace& trace, const CallTree& tree,
                                  const std::vector<KernelFacts>& facts, bool cpu_op_column) {
  KernelSummaryGroups g;
  KernelCategories categories(trace, tree, g.categories);
  std::unordered_map<KernelSummaryIds, size_t, KernelSummaryIdsHash> group_of;
  g.all_durations.reserve(facts.size());
  for (const KernelFacts& f : facts) {
    const Event& k = trace.events[f.uid];
    KernelSummaryIds ids;
    if (f.cpu_op != kNoUid) {
      ids.category = categories.of_cpu_op(f.cpu_op);
      ids.cpu_op = trace.events[f.cpu_op].name + 1;
    } else if (f.launcher != kNoUid) {
      uint32_t name = trace.events[f.launcher].name;
      if (cpu_op_column) ids.cpu_op = name + 1;
      ids.category = categories.of_launcher_name(name);
    }
    ids.kernel = k.name;
    ids.stream = trace.stream(k);
    auto [it, fresh] = group_of.try_emplace(ids, g.ids.size());
    if (fresh) {
      g.ids.push_back(ids);
      g.durations.emplace_back();
    }
    g.durations[it->second].push_back(k.dur());
    g.all_durations.push_back(k.dur());
  }
  return g;
}

using KernelSummaryKey = std::array<KeyCell, 4>;  // category, cpu_op, kernel name, stream

// The groups' key cells, and the group indices in the order pandas's groupby
// sorts those keys (NaN kept).
std::vector<KernelSummaryKey> kernel_summary_keys(const Trace& trace, const KernelSummaryGroups& g,
                                                  std::vector<size_t>& order) {
  std::vector<KernelSummaryKey> keys;
  keys.reserve(g.ids.size());
  for (const KernelSummaryIds& ids : g.ids) {
    KernelSummaryKey key;
    key[0] = g.categories.cell(ids.category);
    if (ids.cpu_op != 0) key[1] = text_key(trace.str(ids.cpu_op - 1));
    key[2] = text_key(trace.str(ids.kernel));
    if (ids.stream != kNoInt) key[3] = {false, "", ids.stream, true};
    keys.push_back(std::move(key));
  }
  order.resize(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  return keys;
}

}  // namespace

Table kernel_summary_table(const Trace& trace, const CallTree& tree, double total_time_ms) {
  auto facts = kernel_facts(trace, tree);
  // TraceLens's kernel frame has a "Parent cpu_op" column only when some
  // kernel has a cpu_op above it; a GPU-only or runtime-only trace has none,
  // and then the launcher name is not put in its place either.
  bool cpu_op_column = std::any_of(facts.begin(), facts.end(),
                                   [](const KernelFacts& f) { return f.cpu_op != kNoUid; });
  KernelSummaryGroups groups = group_kernels(trace, tree, facts, cpu_op_column);
  std::vector<size_t> order;
  using Key = KernelSummaryKey;
  std::vector<Key> keys = kernel_summary_keys(trace, groups, order);
  struct Agg {
    const Key* key;
    double sum, mean, min, max;
    size_t count;
  };
  std::vector<Agg> aggs;
  for (size_t g : order) {
    const std::vector<double>& durs = groups.durations[g];
    aggs.push_back({&keys[g], pycompat::pandas_groupby_sum(durs),
                    pycompat::pandas_groupby_mean(durs), stats::min(durs), stats::max(durs),
                    durs.size()});
  }
  sort_descending_like_pandas(aggs, [](const Agg& a) { return a.sum; });

  Table table("kernel_summary",
              {"Parent op category", "Parent cpu_op", "Kernel name", "Kernel stream",
               "Kernel duration (µs)_sum", "Kernel duration (µs)_count",
               "Kernel duration (µs)_mean", "Kernel duration (µs)_min", "Kernel duration (µs)_max",
               "Percent of kernels time (%)", "Percent of total time (%)"});
  double total_kernels_us = pycompat::numpy_sum(groups.all_durations);
  double total_us = total_time_ms * 1e3;
  for (const Agg& a : aggs) {
    auto& row = table.add_row();
    for (size_t c = 0; c < 4; ++c) row[c] = (*a.key)[c].cell();
    row[4] = Cell(a.sum);
    row[5] = Cell(a.count);
    row[6] = Cell(a.mean);
    row[7] = Cell(a.min);
    row[8] = Cell(a.max);
    row[9] = total_kernels_us > 0 ? Cell(a.sum / total_kernels_us * 100) : Cell();
    row[10] = total_us != 0 ? Cell(a.sum / total_us * 100) : Cell();
  }
  if (!cpu_op_column) drop_column(table, "Parent cpu_op");
  return table;
}

namespace {

std::vector<double> short_durations(const Trace& trace, const CallTree& tree, double threshold_us) {
  std::vector<double> out;
  for (Uid u : tree.gpu_event_uids()) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::Kernel && e.dur() < threshold_us) out.push_back(e.dur());
  }
  return out;
}

}  // namespace

Table numpy_histogram_table(const std::vector<double>& values, int bins) {
  Table table("short_kernel_histogram", {"bin_start", "bin_end", "count"});
  if (values.empty() || bins <= 0) return table;
  double lo = stats::min(values), hi = stats::max(values);
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  // np.linspace(lo, hi, bins + 1)
  std::vector<double> edges(static_cast<size_t>(bins) + 1);
  double step = (hi - lo) / bins;
  for (int i = 0; i <= bins; ++i) edges[static_cast<size_t>(i)] = i * step + lo;
  edges.back() = hi;
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  for (double x : values) {
    if (x < lo || x > hi) continue;
    // Guess the bin like NumPy, then correct against the edges.
    auto i = static_cast<int64_t>((x - lo) / (hi - lo) * bins);
    if (i >= bins) i = bins - 1;
    if (i > 0 && x < edges[static_cast<size_t>(i)]) --i;
    if (i < bins - 1 && x >= edges[static_cast<size_t>(i) + 1]) ++i;
    ++counts[static_cast<size_t>(i)];
  }
  for (int i = 0; i < bins; ++i) {
    auto& row = table.add_row();
    row[0] = Cell(edges[static_cast<size_t>(i)]);
    row[1] = Cell(edges[static_cast<size_t>(i) + 1]);
    row[2] = Cell(counts[static_cast<size_t>(i)]);
  }
  return table;
}

Table short_kernel_histogram_table(const Trace& trace, const CallTree& tree, double threshold_us,
                                   int bins) {
  return numpy_histogram_table(short_durations(trace, tree, threshold_us), bins);
}

namespace {

// What TraceLens returns when no group is left. Without short kernels it is a
// bare DataFrame() (the CSV is one empty line); with short kernels whose every
// group key has a missing part (dropna), it is the aggregation's empty result
// with its two-level column header, which TraceLens returns before flattening.
Table empty_short_kernels_summary(bool had_short_kernels) {
  Table t("short_kernels_summary", {});
  if (!had_short_kernels) return t;
  for (const char* agg : {"sum", "count", "mean"}) {
    t.columns.emplace_back("Kernel duration (µs)");
    t.column_level2.emplace_back(agg);
  }
  return t;
}

}  // namespace

namespace {
constexpr size_t kDropped = static_cast<size_t>(-1);  // a key with a missing cell
constexpr std::string_view kShortKernelArgs[] = {"Input Dims", "Input Strides", "Concrete Inputs"};
}  // namespace

Table short_kernels_summary_table(const Trace& trace, const CallTree& tree, double threshold_us,
                                  double total_time_ms) {
  bool gpu_only = is_gpu_only(trace);
  auto facts = kernel_facts(trace, tree);
  using Key = std::vector<std::string>;
  OrderedGroups<Key> groups;
  std::vector<std::vector<Cell>> key_cells;  // per group
  std::vector<double> durations;             // per fact row
  bool any_short = false;
  // The argument cells depend only on the cpu_op's arg list: rendered once
  // per list. A (cpu_op name, arg list, kernel name) triple names one text
  // key, so its group is looked up by the texts once.
  std::unordered_map<int32_t, std::array<KeyCell, 3>> arg_cells_of_list;
  std::map<std::tuple<uint32_t, int32_t, uint32_t>, size_t> group_of_ids;
  for (const KernelFacts& f : facts) {
    const Event& k = trace.events[f.uid];
    if (!(k.dur() < threshold_us)) continue;
    any_short = true;
    // pandas drops groups with any NaN key (dropna=True).
    if (!gpu_only && f.cpu_op == kNoUid) continue;
    std::tuple<uint32_t, int32_t, uint32_t> ids{0, -1, k.name};
    if (!gpu_only) ids = {trace.events[f.cpu_op].name, trace.events[f.cpu_op].args, k.name};
    if (auto known = group_of_ids.find(ids); known != group_of_ids.end()) {
      if (known->second != kDropped) {
        groups.add_to(known->second, durations.size());
        durations.push_back(k.dur());
      }
      continue;
    }
    std::vector<KeyCell> cells;
    if (!gpu_only) {
      cells.push_back(text_key(trace.name(f.cpu_op)));
      auto [args, fresh] = arg_cells_of_list.try_emplace(trace.events[f.cpu_op].args);
      if (fresh)
        for (size_t a = 0; a < 3; ++a)
          args->second[a] = arg_key_cell(trace, f.cpu_op, kShortKernelArgs[a]);
      cells.insert(cells.end(), args->second.begin(), args->second.end());
    }
    cells.push_back(text_key(trace.name(f.uid)));
    if (std::any_of(cells.begin(), cells.end(), [](const KeyCell& c) { return c.missing; })) {
      group_of_ids.emplace(ids, kDropped);
      continue;
    }
    Key key;
    for (const auto& c : cells) key.push_back(c.text);
    size_t g = groups.add(key, durations.size());
    group_of_ids.emplace(ids, g);
    if (g == key_cells.size()) {
      std::vector<Cell> row;
      for (const auto& c : cells) row.push_back(c.cell());
      key_cells.push_back(std::move(row));
    }
    durations.push_back(k.dur());
  }
  if (groups.groups().empty()) return empty_short_kernels_summary(any_short);

  struct Agg {
    size_t group;
    double sum, mean, pct;
    size_t count;
  };
  std::vector<Agg> aggs;
  double total_us = total_time_ms * 1e3;
  for (size_t g = 0; g < groups.groups().size(); ++g) {
    std::vector<double> d;
    for (size_t r : groups.groups()[g]) d.push_back(durations[r]);
    double sum = pycompat::pandas_groupby_sum(d);
    aggs.push_back({g, sum, pycompat::pandas_groupby_mean(d), sum / total_us * 100, d.size()});
  }
  std::stable_sort(aggs.begin(), aggs.end(), [](const Agg& a, const Agg& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    if (a.count != b.count) return a.count < b.count;
    if (a.mean != b.mean) return a.mean < b.mean;
    return a.pct < b.pct;
  });
  std::vector<std::string> columns;
  if (!gpu_only) columns = {"Parent cpu_op", "Input dims", "Input strides", "Concrete Inputs"};
  columns.push_back("Kernel name");
  for (const char* c :
       {"Short Kernel duration (µs) sum", "Short Kernel count", "Short Kernel duration (µs) mean",
        "Short Kernel duration (µs) percent of total time"})
    columns.push_back(c);
  Table table("short_kernels_summary", columns);
  for (const Agg& a : aggs) {
    auto& row = table.add_row();
    size_t c = 0;
    for (const Cell& k : key_cells[a.group]) row[c++] = k;
    row[c++] = Cell(a.sum);
    row[c++] = Cell(a.count);
    row[c++] = Cell(a.mean);
    row[c++] = Cell(a.pct);
  }
  return table;
}

}  // namespace jarvis::report
