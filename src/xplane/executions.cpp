#include "xplane/executions.h"

#include <algorithm>
#include <map>

namespace jarvis::xplane {

std::string_view xla_module_of(std::string_view name) {
  constexpr std::string_view kSuffix = ":XLA GPU module";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return {};
  return name.substr(0, name.size() - kSuffix.size());
}

std::vector<XlaExecution> xla_executions(const Trace& trace) {
  std::map<uint32_t, std::vector<XlaExecution>> by_thread;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.is_gpu() || !e.has_ts() || !e.has_dur()) continue;
    const std::string_view module = xla_module_of(trace.name(u));
    if (module.empty()) continue;
    by_thread[e.thread].push_back({u, module, e.ts(), e.dur()});
  }
  std::vector<XlaExecution> busiest;
  for (auto& [thread, list] : by_thread)
    if (list.size() > busiest.size()) busiest = std::move(list);
  std::sort(busiest.begin(), busiest.end(),
            [](const XlaExecution& a, const XlaExecution& b) { return a.ts < b.ts; });
  // An event inside the one before it is that execution again.
  std::vector<XlaExecution> out;
  for (const XlaExecution& x : busiest)
    if (out.empty() || x.ts >= out.back().ts + out.back().dur) out.push_back(x);
  return out;
}

}  // namespace jarvis::xplane
