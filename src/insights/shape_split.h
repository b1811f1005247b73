// The calls of a finding split by the shape they run on (issue 73 point 9):
// a rule that names one shape names the one holding most of its kernel time,
// with the split beside it, so "289 calls on [4, 1024, 1024]" cannot stand
// for 272 decode calls on [4, 1, 1024] and 17 prefill ones. Header-only: the
// rules that name a shape (unfused_rmsnorm, unfused_rope, unfused_gelu) add
// each call's shape, dtype and kernel time, then read `dominant()`, `text()`
// and `json()`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace jarvis::insights::detail {

class ShapeSplit {
 public:
  struct Shape {
    std::vector<int64_t> dims;
    std::string type;
    size_t calls = 0;
    double time_us = 0;  // kernel time of its calls
  };

  void add(const std::vector<int64_t>& dims, const std::string& type, double time_us) {
    Shape& s = shapes_[{dims, type}];
    s.dims = dims;
    s.type = type;
    ++s.calls;
    s.time_us += time_us;
  }

  // Largest kernel time first (then most calls, then the shape's order).
  std::vector<Shape> ranked() const {
    std::vector<Shape> out;
    for (const auto& entry : shapes_) out.push_back(entry.second);
    std::stable_sort(out.begin(), out.end(), [](const Shape& a, const Shape& b) {
      if (a.time_us != b.time_us) return a.time_us > b.time_us;
      return a.calls > b.calls;
    });
    return out;
  }

  // The shape holding most of the kernel time; empty when nothing was added.
  Shape dominant() const {
    auto r = ranked();
    return r.empty() ? Shape{} : r.front();
  }

  size_t size() const { return shapes_.size(); }

  // "[4, 1, 1024] (c10::BFloat16)" for one shape; with several, the dominant
  // one and its share: "[4, 1, 1024] (c10::BFloat16) for 272 calls, 71% of
  // the time (2 shapes; [4, 1024, 1024] 17 calls 29%)" - at most `listed`
  // other shapes named.
  std::string text(size_t listed = 2) const {
    const auto r = ranked();
    if (r.empty()) return "[]";
    const auto name = [](const Shape& s) {
      return fmt::format("[{}] ({})", fmt::join(s.dims, ", "), s.type);
    };
    if (r.size() == 1) return name(r.front());
    double total = 0;
    for (const Shape& s : r) total += s.time_us;
    const auto pct = [&](const Shape& s) { return total > 0 ? 100 * s.time_us / total : 0.0; };
    std::string others;
    for (size_t k = 1; k < r.size() && k <= listed; ++k)
      others += fmt::format("{}[{}] {} calls {:.0f}%", k > 1 ? ", " : "",
                            fmt::join(r[k].dims, ", "), r[k].calls, pct(r[k]));
    if (r.size() > listed + 1) others += fmt::format(", {} more", r.size() - listed - 1);
    return fmt::format("{} for {} calls, {:.0f}% of the time ({} shapes; {})", name(r.front()),
                       r.front().calls, pct(r.front()), r.size(), others);
  }

  // evidence.by_shape: every shape, largest time first.
  nlohmann::json json() const {
    nlohmann::json out = nlohmann::json::array();
    for (const Shape& s : ranked())
      out.push_back(
          {{"dims", s.dims}, {"input_type", s.type}, {"calls", s.calls}, {"time_us", s.time_us}});
    return out;
  }

 private:
  std::map<std::pair<std::vector<int64_t>, std::string>, Shape> shapes_;
};

}  // namespace jarvis::insights::detail
