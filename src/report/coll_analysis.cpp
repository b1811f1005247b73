#include "report/coll_analysis.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>

#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "report/stats.h"
#include "tree/call_tree.h"

namespace jarvis {
namespace {

PyValue arg_or_none(const Trace& trace, Uid uid, std::string_view key) {
  const PyValue* v = trace.arg(uid, key);
  return v ? *v : PyValue::none();
}

double msg_mb(const PyValue& nelems, const PyValue& dtype) {
  if (!nelems.is_number() || !dtype.is_string()) return stats::kNaN;
  int bytes = dtype_bytes(dtype.s);
  if (bytes == 0) return stats::kNaN;
  return nelems.as_double() * bytes / (1024.0 * 1024.0);
}

// Python-style ordering of group keys: numbers numerically, strings
// lexicographically; only breaks ties of equal total duration.
int compare_values(const PyValue& a, const PyValue& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  std::string sa = a.is_string() ? a.s : a.repr_tuple();
  std::string sb = b.is_string() ? b.s : b.repr_tuple();
  return sa.compare(sb) < 0 ? -1 : (sa == sb ? 0 : 1);
}

Cell value_cell(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::None:
      return Cell();
    case PyValue::Kind::Bool:
      return Cell(v.b);
    case PyValue::Kind::Int:
      return Cell(v.i);
    case PyValue::Kind::Float:
      return Cell(v.f);
    case PyValue::Kind::String:
      return Cell(v.s);
    case PyValue::Kind::List:
    case PyValue::Kind::Tuple:
    case PyValue::Kind::Dict:
      return Cell(v.repr_tuple());
  }
  return Cell();
}

constexpr size_t kKeyFields = 10;
using GroupKey = std::array<PyValue, kKeyFields>;

GroupKey group_key(const CollectiveKernel& k) {
  PyValue stream = k.stream == kNoInt ? PyValue::none() : PyValue::integer(k.stream);
  return {k.process_group_name, k.process_group_ranks, k.collective_name, k.group_size,     k.dtype,
          k.in_msg_nelems,      k.out_msg_nelems,      k.in_split_size,   k.out_split_size, stream};
}

struct KeyLess {
  bool operator()(const GroupKey& a, const GroupKey& b) const {
    for (size_t f = 0; f < kKeyFields; ++f)
      if (int c = compare_values(a[f], b[f]); c != 0) return c < 0;
    return false;
  }
};

struct Group {
  std::vector<double> durs;
  double in_mb = stats::kNaN;  // "first" skips missing values
  double out_mb = stats::kNaN;
};

// TraceLens names the group "Unknown_Group" when the metadata is missing, or
// "all" when no kernel has a group and each rank uses a single stream.
void fill_missing_group_names(std::vector<CollectiveKernel>& kernels) {
  bool all_missing = true;
  int64_t first_stream = kNoInt;
  bool single_stream = true;
  for (const auto& k : kernels) {
    if (!k.process_group_name.is_none() &&
        !(k.process_group_name.is_string() && k.process_group_name.s == "Unknown_Group"))
      all_missing = false;
    if (first_stream == kNoInt) first_stream = k.stream;
    if (k.stream != kNoInt && k.stream != first_stream) single_stream = false;
  }
  const bool simplified = all_missing && single_stream;
  for (auto& k : kernels) {
    if (simplified)
      k.process_group_name = PyValue::string("all");
    else if (k.process_group_name.is_none())
      k.process_group_name = PyValue::string("Unknown_Group");
  }
}

}  // namespace

int dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int> sizes = {{"Float", 4},
                                                        {"Int", 4},
                                                        {"Long", 8},
                                                        {"BFloat16", 2},
                                                        {"Bool", 1},
                                                        {"Byte", 1},
                                                        {"Char", 1},
                                                        {"Double", 8},
                                                        {"Half", 2},
                                                        {"Short", 2},
                                                        {"Float8_e5m2", 1},
                                                        {"Float8_e4m3fn", 1},
                                                        {"Float8_e5m2fnuz", 1},
                                                        {"Float8_e4m3fnuz", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

double CollectiveKernel::in_msg_mb() const {
  return msg_mb(in_msg_nelems, dtype);
}
double CollectiveKernel::out_msg_mb() const {
  return msg_mb(out_msg_nelems, dtype);
}

bool is_collective_kernel(const Trace& trace, Uid uid) {
  const Event& e = trace.events[uid];
  if (e.cat != Cat::Kernel) return false;
  if (trace.correlation(e) == kNoInt && trace.external_id(e) == kNoInt) return false;
  return trace.is_communication(uid);
}

namespace {

// A collective kernel's row (its args as TraceLens reads them).
CollectiveKernel collective_kernel(const Trace& trace, Uid uid) {
  const Event& e = trace.events[uid];
  CollectiveKernel k;
  k.uid = uid;
  k.ts = e.ts();
  k.dur = e.dur();
  k.stream = trace.stream(e);
  k.process_group_name = arg_or_none(trace, uid, "Process Group Name");
  k.process_group_ranks = arg_or_none(trace, uid, "Process Group Ranks");
  k.collective_name = arg_or_none(trace, uid, "Collective name");
  if (k.collective_name.is_none() &&
      pycompat::ascii_icontains(trace.name(uid), "cross_device_reduce"))
    k.collective_name = PyValue::string("allreduce");
  k.group_size = arg_or_none(trace, uid, "Group size");
  k.dtype = arg_or_none(trace, uid, "dtype");
  k.in_msg_nelems = arg_or_none(trace, uid, "In msg nelems");
  k.out_msg_nelems = arg_or_none(trace, uid, "Out msg nelems");
  k.in_split_size = arg_or_none(trace, uid, "In split size");
  k.out_split_size = arg_or_none(trace, uid, "Out split size");
  return k;
}

}  // namespace

std::vector<CollectiveKernel> collective_kernels(const Trace& trace) {
  std::vector<CollectiveKernel> out;
  for (Uid uid = 0; uid < trace.events.size(); ++uid)
    if (is_collective_kernel(trace, uid)) out.push_back(collective_kernel(trace, uid));
  fill_missing_group_names(out);
  return out;
}

std::vector<CollectiveKernel> collective_kernels(const Trace& trace,
                                                 std::span<const Uid> candidates) {
  std::vector<CollectiveKernel> out;
  for (Uid uid : candidates)
    if (is_collective_kernel(trace, uid)) out.push_back(collective_kernel(trace, uid));
  fill_missing_group_names(out);
  return out;
}

Table coll_analysis_table(const std::vector<CollectiveKernel>& kernels, int64_t rank) {
  Table table("coll_analysis",
              {"rank", "Process Group Name", "Process Group Ranks", "Collective name", "Group size",
               "dtype", "In msg nelems", "Out msg nelems", "In split size", "Out split size",
               "stream", "In msg size (MB)_first", "Out msg size (MB)_first", "dur_sum", "dur_mean",
               "dur_std", "dur_min", "dur_max", "operation_count"});
  std::map<GroupKey, Group, KeyLess> groups;
  for (const auto& k : kernels) {
    GroupKey key = group_key(k);
    if (std::any_of(key.begin(), key.end(), [](const PyValue& v) { return v.is_none(); })) continue;
    Group& g = groups[key];
    g.durs.push_back(k.dur);
    if (std::isnan(g.in_mb)) g.in_mb = k.in_msg_mb();
    if (std::isnan(g.out_mb)) g.out_mb = k.out_msg_mb();
  }
  std::vector<std::pair<double, const std::pair<const GroupKey, Group>*>> order;
  for (const auto& entry : groups)
    order.emplace_back(pycompat::pandas_groupby_sum(entry.second.durs), &entry);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [sum, entry] : order) {
    const auto& [key, g] = *entry;
    auto& row = table.add_row();
    row[0] = Cell(rank);
    for (size_t f = 0; f < kKeyFields; ++f) row[1 + f] = value_cell(key[f]);
    row[11] = std::isnan(g.in_mb) ? Cell() : Cell(g.in_mb);
    row[12] = std::isnan(g.out_mb) ? Cell() : Cell(g.out_mb);
    row[13] = Cell(sum);
    row[14] = Cell(pycompat::pandas_groupby_mean(g.durs));
    const double sd = pycompat::pandas_groupby_std(g.durs);
    row[15] = std::isnan(sd) ? Cell() : Cell(sd);
    row[16] = Cell(stats::min(g.durs));
    row[17] = Cell(stats::max(g.durs));
    row[18] = Cell(g.durs.size());
  }
  return table;
}

}  // namespace jarvis
