// Decode steps inside ProfilerSteps from the raw JSON events of a Kineto trace
// (nlohmann::json, no loader): the launch calls (runtime calls whose
// correlation id a GPU op carries) with their GPU ops' first name and last
// end, the ProfilerStep annotations, the token table's embeddings, and the
// copies of a launch period that run to a step's end (its decode steps).
// Shared by the tests of issue 73 point 10.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_loader_support.h"

namespace jarvis::testing::raw_decode {

using nlohmann::json;

struct RawLaunch {
  double ts = 0;
  std::string thread, kernel;  // the first GPU op of its correlation (file order)
  double gpu_end = 0;          // the latest end of its GPU ops
};

struct RawStep {
  std::string name;
  double ts = 0, end = 0;
};

struct RawTrace {
  std::vector<RawStep> steps;       // by start
  std::vector<RawLaunch> launches;  // by start
  std::vector<double>
      embedding_positions;  // per aten::embedding of the largest table: its ids' dim 1
  std::vector<double> embedding_ts;
};

inline RawTrace read_raw(const std::string& path) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(path));
  RawTrace out;
  std::map<int64_t, std::pair<std::string, double>> gpu;  // correlation -> first name, last end
  std::vector<std::pair<int64_t, RawLaunch>> calls;
  int64_t vocab = 0;
  std::vector<std::tuple<double, int64_t, int64_t>> embeddings;  // ts, table rows, positions
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("dur") || !e.contains("ts")) continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    static const json kNoArgs = json::object();
    const json& args = e.contains("args") ? e["args"] : kNoArgs;  // no copy per event
    const int64_t corr = args.contains("correlation") && args["correlation"].is_number_integer()
                             ? args["correlation"].get<int64_t>()
                             : -1;
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      auto [it, fresh] = gpu.emplace(corr, std::make_pair(name, end));
      if (!fresh) it->second.second = std::max(it->second.second, end);
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      calls.push_back({corr, {ts, e["pid"].dump() + "/" + e["tid"].dump(), "", 0}});
    } else if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) {
      out.steps.push_back({name, ts, end});
    } else if (cat == "cpu_op" && name == "aten::embedding" && args.contains("Input Dims")) {
      const json& dims = args["Input Dims"];
      if (dims.size() >= 2 && dims[0].size() == 2 && dims[1].size() == 2) {
        vocab = std::max(vocab, dims[0][0].get<int64_t>());
        embeddings.emplace_back(ts, dims[0][0].get<int64_t>(), dims[1][1].get<int64_t>());
      }
    }
  }
  for (auto& [corr, call] : calls)
    if (auto g = gpu.find(corr); corr >= 0 && g != gpu.end()) {
      call.kernel = g->second.first;
      call.gpu_end = g->second.second;
      out.launches.push_back(call);
    }
  std::stable_sort(out.launches.begin(), out.launches.end(),
                   [](const RawLaunch& a, const RawLaunch& b) { return a.ts < b.ts; });
  std::sort(out.steps.begin(), out.steps.end(),
            [](const RawStep& a, const RawStep& b) { return a.ts < b.ts; });
  std::sort(embeddings.begin(), embeddings.end());
  for (const auto& [ts, rows, positions] : embeddings)
    if (rows == vocab) {
      out.embedding_ts.push_back(ts);
      out.embedding_positions.push_back(static_cast<double>(positions));
    }
  return out;
}

// The launches of the busiest launching thread inside [from, to).
inline std::vector<const RawLaunch*> step_launches(const RawTrace& t, double from, double to) {
  std::map<std::string, std::vector<const RawLaunch*>> by_thread;
  for (const RawLaunch& l : t.launches)
    if (l.ts >= from && l.ts < to) by_thread[l.thread].push_back(&l);
  const std::vector<const RawLaunch*>* busiest = nullptr;
  for (const auto& entry : by_thread)
    if (!busiest || entry.second.size() > busiest->size()) busiest = &entry.second;
  return busiest ? *busiest : std::vector<const RawLaunch*>{};
}

// The copies of a period that run to the end of the sequence: the smallest
// period whose last three copies repeat exactly, and the first position from
// which the sequence repeats with it to its end.
struct RawDecode {
  size_t period = 0, first = 0, copies = 0;
};
inline RawDecode trailing_copies(const std::vector<const RawLaunch*>& seq) {
  const size_t n = seq.size();
  RawDecode d;
  for (size_t p = 2; 3 * p <= n && d.period == 0; ++p) {
    bool periodic = true;
    for (size_t i = n - 3 * p; i + p < n && periodic; ++i)
      periodic = seq[i]->kernel == seq[i + p]->kernel;
    if (periodic) d.period = p;
  }
  if (d.period == 0) return d;
  size_t i = n - d.period;
  while (i > 0 && seq[i - 1]->kernel == seq[i - 1 + d.period]->kernel) --i;
  d.first = i;
  d.copies = (n - i) / d.period;
  return d;
}

// The recorded length of consecutive windows as the critical path counts
// them: each ends when its host window ended and the GPU ops launched inside
// it ran, and begins no earlier than the one before it ended.
inline std::vector<double> window_lengths(const RawTrace& t,
                                          const std::vector<std::pair<double, double>>& windows) {
  std::vector<double> out;
  double previous_end = -1e300;
  for (const auto& [from, to] : windows) {
    double end = to;
    for (const RawLaunch& l : t.launches)
      if (l.ts >= from && l.ts < to) end = std::max(end, l.gpu_end);
    const double start = std::min(std::max(from, previous_end), end);
    out.push_back(end - start);
    previous_end = end;
  }
  return out;
}

// The decode steps of every ProfilerStep of a trace as host windows [first
// launch of a copy, where the next begins / the launch after the last copy /
// the step's end), in trace order; empty when some step has fewer than three
// copies.
inline std::vector<std::pair<double, double>> decode_windows(const RawTrace& t) {
  std::vector<std::pair<double, double>> out;
  for (const RawStep& s : t.steps) {
    const auto seq = step_launches(t, s.ts, s.end);
    const RawDecode d = trailing_copies(seq);
    if (d.copies < 3) return {};
    for (size_t k = 0; k < d.copies; ++k) {
      const size_t at = d.first + k * d.period, next = at + d.period;
      out.emplace_back(seq[at]->ts, next < seq.size() ? seq[next]->ts : s.end);
    }
  }
  return out;
}

}  // namespace jarvis::testing::raw_decode
