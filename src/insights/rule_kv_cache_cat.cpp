// A KV cache grown with torch.cat every decode step (HF's DynamicCache,
// hand-written generation loops): each step copies the whole cache to
// append one token, so the copies grow with the sequence and the decode
// loop does O(L^2) memory traffic where a preallocated (static / paged)
// cache writes only the new token. Recognised from the recorded shapes: a
// series of aten::cat of a tensor and a short one along one axis, with the
// same shape apart from that axis, whose long side grows from call to call.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr size_t kMinCalls = 8;        // a decode loop, not one concatenation
constexpr size_t kMinDistinctLen = 4;  // the cache grows over several steps

struct CatCall {
  Uid op = kNoUid;
  int64_t cache_len = 0, new_len = 0;
};

// The two shapes of a two-input cat, when they differ along exactly one
// axis (the one concatenated).
std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>> two_inputs(const Trace& t,
                                                                                Uid cat) {
  const PyValue* dims = t.arg(cat, "Input Dims");
  if (!dims || !dims->is_seq() || dims->size() == 0 || !(*dims)[0].is_seq()) return std::nullopt;
  const PyValue& parts = (*dims)[0];
  if (parts.size() != 2) return std::nullopt;
  std::vector<int64_t> shapes[2];
  for (size_t k = 0; k < 2; ++k) {
    if (!parts[k].is_seq()) return std::nullopt;
    for (const PyValue& d : parts[k].list) {
      if (d.kind != PyValue::Kind::Int) return std::nullopt;
      shapes[k].push_back(d.i);
    }
  }
  if (shapes[0].size() != shapes[1].size() || shapes[0].empty()) return std::nullopt;
  return std::make_pair(shapes[0], shapes[1]);
}

}  // namespace

void rule_kv_cache_cat(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  // Series key: the axis, the shape with that axis blanked, the new part's
  // length along it, and the dtype.
  using Key = std::tuple<size_t, std::vector<int64_t>, int64_t, std::string>;
  std::map<Key, std::vector<CatCall>> series;
  for (Uid u : detail::events_named(c, {"aten::cat"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    auto shapes = two_inputs(t, u);
    if (!shapes) continue;
    const auto& [cache, fresh] = *shapes;
    std::optional<size_t> axis;
    size_t differing = 0;
    for (size_t k = 0; k < cache.size(); ++k)
      if (cache[k] != fresh[k]) ++differing, axis = k;
    if (differing != 1 || cache[*axis] <= fresh[*axis] || fresh[*axis] <= 0) continue;
    std::vector<int64_t> blank = cache;
    blank[*axis] = -1;
    series[{*axis, blank, fresh[*axis], detail::first_input_type(t, u)}].push_back(
        {u, cache[*axis], fresh[*axis]});
  }
  std::vector<Uid> ops, kernels;
  double time_us = 0, copied_us_avoidable = 0;
  int64_t min_len = 0, max_len = 0;
  size_t growing_series = 0;
  std::vector<int64_t> shape;
  double largest_series = 0;
  for (auto& [key, calls] : series) {
    std::set<int64_t> lengths;
    for (const CatCall& call : calls) lengths.insert(call.cache_len);
    if (calls.size() < kMinCalls || lengths.size() < kMinDistinctLen) continue;
    ++growing_series;
    // The title names the series that moves the most bytes (the KV cache's
    // [B, H, L, D], not an attention mask's [B, L] grown beside it).
    double series_elems = 0;
    for (const CatCall& call : calls) series_elems += static_cast<double>(call.cache_len);
    for (int64_t d : std::get<1>(key)) series_elems *= d > 0 ? static_cast<double>(d) : 1.0;
    if (series_elems > largest_series) {
      largest_series = series_elems;
      shape = std::get<1>(key);
    }
    min_len = min_len == 0 ? *lengths.begin() : std::min(min_len, *lengths.begin());
    max_len = std::max(max_len, *lengths.rbegin());
    for (const CatCall& call : calls) {
      double us = 0;
      for (Uid k : c.tree.gpu_events(call.op))
        if (t.events[k].has_dur()) {
          kernels.push_back(k);
          us += t.events[k].dur();
        }
      ops.push_back(call.op);
      time_us += us;
      // A preallocated cache writes only the new part: the copy of the
      // old cache (its share of the bytes) is what the cat adds.
      copied_us_avoidable += us * static_cast<double>(call.cache_len) /
                             static_cast<double>(call.cache_len + call.new_len);
    }
  }
  if (ops.empty() || !(time_us > 0)) return;
  Insight i = detail::kernels_insight(c, "kv_cache_cat", "concat", kernels, time_us);

  i.gain_upper_bound_us = copied_us_avoidable;
  std::vector<std::string> dims;
  for (int64_t d : shape) dims.push_back(d < 0 ? "L" : std::to_string(d));
  i.title = fmt::format(
      "KV cache grown by torch.cat every step: {} aten::cat calls in {} series on [{}] with L "
      "{} -> {}, {:.2f} ms of kernel time; each call copies the whole cache to append a token",
      ops.size(), growing_series, fmt::join(dims, ", "), min_len, max_len, time_us / 1e3);
  i.detail =
      "Appending with torch.cat re-allocates and copies the cache at every step, so the copies "
      "grow with the sequence (quadratic traffic over a generation); a preallocated cache writes "
      "only the new token.";
  i.evidence = {{"calls", ops.size()},       {"series", growing_series},
                {"cache_len_min", min_len},  {"cache_len_max", max_len},
                {"kernel_time_us", time_us}, {"avoidable_copy_us", copied_us_avoidable}};
  i.action_model =
      "Use a preallocated KV cache (transformers' StaticCache / cache_implementation=\"static\", "
      "or a serving engine's paged cache) and write the new keys and values in place "
      "(index_copy_ / slice assignment) instead of torch.cat.";
  i.action_kernel =
      "None for the copy kernel: it runs at bandwidth; removing the copy of the old cache is "
      "the fix.";
  i.verify =
      "The cats' first input grows by the new part's length from one call to the next, and "
      "parent_chain on a UID shows the attention layer's cache update.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
