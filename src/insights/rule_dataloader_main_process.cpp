// Input work on the main process: a DataLoader iterated with
// num_workers=0 loads and collates each batch in the training loop's own
// thread (`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`), so
// the GPU waits while the host decodes and augments; with workers (and
// pinned memory) the batch is ready when the loop asks for it. Also a
// multi-process loader whose __next__ still takes long (workers too slow,
// too few prefetched batches). Sized by the what-if on the un-profiled step
// without the loader's time on the main thread.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

// A __next__ shorter than this per step is a ready batch handed over.
constexpr double kMinLoaderUsPerStep = 200.0;

bool is_loader_next(std::string_view name) {
  return name.find("DataLoader") != std::string_view::npos &&
         name.find("__next__") != std::string_view::npos;
}

}  // namespace

void rule_dataloader_main_process(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.step || c.step->graph.ranks.empty()) return;
  const detail::StepWindow window = detail::step_window(c);
  critical_path::Scenario change;
  double host_us = 0;
  bool single_process = false;
  std::string name;
  std::set<std::string> names;  // the what_if tool's remove_ops
  for (Uid u : detail::events_named(c, is_loader_next)) {
    const Event& e = c.trace.events[u];
    if (e.cat != Cat::UserAnnotation || !e.has_ts() || !e.has_dur()) continue;
    if (!window.contains(e.ts())) continue;
    change.remove_host.push_back({window.rank, e.thread, e.ts(), e.end()});
    host_us += e.dur();
    name = std::string(c.trace.name(u));
    names.insert(name);
    single_process |= name.find("SingleProcess") != std::string::npos;
  }
  const double steps = static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size()));
  if (change.remove_host.empty() || host_us / steps < kMinLoaderUsPerStep) return;
  const double saving = detail::step_saving_total_us(c, change);
  Insight i;
  i.rule = "dataloader_main_process";
  i.scope = "trace";
  i.category = "cpu_idle";
  i.time_us = host_us;
  i.share = c.timeline && c.timeline->total_time > 0 ? host_us / c.timeline->total_time : 0;
  i.severity = detail::severity_by_step_saving(c, saving);
  i.gain_upper_bound_us = saving;
  i.step_saving_us = saving;
  i.what_if = {{"remove_ops", names}};
  if (saving <= 0)
    i.step_saving_note = "the GPU is the bottleneck: the loader's time is hidden behind it";
  i.title = fmt::format(
      "Input on the training loop's thread: {} takes {:.2f} ms per step (recorded){}; with "
      "the batch ready, the step is {:.2f} ms shorter",
      name, host_us / steps / 1e3, single_process ? " (num_workers=0)" : "", saving / steps / 1e3);
  i.detail = single_process
                 ? "The DataLoader has no workers: each batch is loaded, transformed and "
                   "collated on the main process between steps while the GPU waits."
                 : "The DataLoader's workers do not keep up: the loop waits in __next__ for "
                   "the next batch while the GPU idles.";
  i.evidence = {{"loader", name},
                {"calls", change.remove_host.size()},
                {"host_us_per_step_recorded", host_us / steps},
                {"single_process", single_process}};
  i.action_model =
      single_process
          ? "DataLoader(num_workers=4 or more, pin_memory=True, prefetch_factor=2-4, "
            "persistent_workers=True); move heavy per-sample work (decoding, augmentation) "
            "into the dataset's workers or onto the GPU."
          : "More workers or a larger prefetch_factor; persistent_workers=True; make the "
            "per-sample work cheaper (pre-processed data, GPU decoding).";
  i.action_kernel = "None: the kernels are not the cause.";
  i.verify =
      "Re-profile: __next__ takes microseconds per step (the batch is ready) and the GPU has no "
      "gap at the start of each step.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
