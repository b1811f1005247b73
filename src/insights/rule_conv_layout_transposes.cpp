// Layout conversions around convolutions: cuDNN's nchwToNhwc / nhwcToNchw
// kernels (MIOpen's batched_transpose) run when a model keeps NCHW tensors
// while the fast convolution kernels work in NHWC. Every conversion is a
// full read and write of an activation; channels_last removes them. The same
// NCHW tensors send batch norm to its NCHW kernels, which reduce each
// channel over strided planes: on an H200 ResNet-50 step those ran at a
// third of the trace's streaming rate, and channels_last (measured, ab_pairs
// s_layout) saved more in the norms than in the conversions. The finding is
// the conversions (an expert sizes them apart: ../shared/evals
// resnet50_train_h100); its evidence sizes the whole change.
#include <algorithm>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "insights/trace_facts.h"

namespace jarvis::insights {
namespace {

// A batch-norm op recorded on an image-shaped (4-D or 5-D) input.
bool is_batch_norm_on_images(const InsightContext& c, const report::PerfOpRow& row) {
  if (row.name.find("batch_norm") == std::string::npos || row.event_uid == kNoUid) return false;
  const auto dims = detail::first_input_dims(c.trace, row.event_uid);
  return dims && (dims->size() == 4 || dims->size() == 5);
}

// Kernels of the NHWC (channels_last) batch-norm path name their layout.
bool runs_channels_last_kernels(const InsightContext& c, const report::PerfOpRow& row) {
  for (Uid k : row.kernels) {
    const std::string_view name = c.trace.name(k).substr(0, 512);
    if (name.find("channels_last") != std::string_view::npos ||
        name.find("nhwc") != std::string_view::npos || name.find("NHWC") != std::string_view::npos)
      return true;
  }
  return false;
}

bool has_layout_conversions(const InsightContext& c) {
  for (size_t u = 0; u < c.trace.events.size(); ++u)
    if (c.trace.events[u].is_gpu() &&
        detail::kernel_name_facts(c, static_cast<Uid>(u)).layout_conversion)
      return true;
  return false;
}

}  // namespace

namespace detail {
bool is_layout_conversion_kernel(std::string_view name) {
  for (std::string_view marker : {"nchwToNhwc", "nhwcToNchw", "nchw2nhwc", "nhwc2nchw",
                                  "batched_transpose", "NCHWToNHWC", "NHWCToNCHW"})
    if (name.substr(0, 512).find(marker) != std::string_view::npos) return true;
  return false;
}

std::vector<size_t> nchw_batch_norm_rows(const InsightContext& c) {
  std::vector<size_t> rows;
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const auto& row = c.rows[r];
    if (row.kernel_time_us > 0 && is_batch_norm_on_images(c, row) &&
        !runs_channels_last_kernels(c, row))
      rows.push_back(r);
  }
  if (!rows.empty() && !has_layout_conversions(c)) rows.clear();
  return rows;
}
}  // namespace detail

void rule_conv_layout_transposes(const InsightContext& c, std::vector<Insight>& out) {
  double conversion_us = 0;
  size_t conversions = 0;
  std::vector<Uid> ops;         // the host ops that launched a conversion
  std::vector<Uid> changed;     // every GPU op channels_last changes: conversions, NCHW norms
  std::vector<Uid> launches;    // the conversions' launch calls (runtime events)
  std::vector<Uid> unlaunched;  // conversions whose launch is not in the trace
  std::vector<std::string> names;
  for (size_t u = 0; u < c.trace.events.size(); ++u) {
    const Event& e = c.trace.events[u];
    if (!e.is_gpu() || !e.has_dur() ||
        !detail::kernel_name_facts(c, static_cast<Uid>(u)).layout_conversion)
      continue;
    conversion_us += e.dur();
    ++conversions;
    changed.push_back(static_cast<Uid>(u));
    std::string_view name = c.trace.name(static_cast<Uid>(u));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    Uid op = c.tree.parent(static_cast<Uid>(u));  // the runtime launch, then its op
    if (op != kNoUid && c.trace.events[op].is_runtime())
      launches.push_back(op);
    else
      unlaunched.push_back(static_cast<Uid>(u));
    while (op != kNoUid && c.trace.events[op].cat != Cat::CpuOp) op = c.tree.parent(op);
    if (op != kNoUid && std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  if (conversions == 0) return;
  // The finding is the conversions (their own time is what removing them
  // gives back). The change it asks for, channels_last, also gives the NCHW
  // batch norms their NHWC kernels (bandwidth_baseline names those): the
  // what-if of the whole change sizes both, the norms at their time above
  // this trace's own streaming rate (ab_pairs s_layout: the norms were most
  // of what channels_last saved).
  const auto baseline = detail::elementwise_bandwidth_baseline(c);
  double norm_us = 0, norm_gain_us = 0;
  size_t norms = 0;
  std::vector<Uid> norm_ops;      // the NCHW batch norms' op rows
  std::vector<Uid> norm_kernels;  // their kernels
  if (baseline)
    for (size_t r : detail::nchw_batch_norm_rows(c)) {
      const auto& row = c.rows[r];
      if (!row.metrics || !row.metrics->bytes) continue;  // no bytes to put at the rate
      norm_us += row.kernel_time_us;
      norm_gain_us +=
          std::max(0.0, row.kernel_time_us - *row.metrics->bytes / (baseline->tbs * 1e6));
      ++norms;
      changed.insert(changed.end(), row.kernels.begin(), row.kernels.end());
      norm_kernels.insert(norm_kernels.end(), row.kernels.begin(), row.kernels.end());
      norm_ops.push_back(row.uid);
    }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  std::sort(norm_kernels.begin(), norm_kernels.end());
  norm_kernels.erase(std::unique(norm_kernels.begin(), norm_kernels.end()), norm_kernels.end());
  std::sort(launches.begin(), launches.end());
  launches.erase(std::unique(launches.begin(), launches.end()), launches.end());
  // The whole change as the what_if tool's arguments. A conversion channels_last
  // removes goes whole, its launch call with it: cuDNN launches each one from
  // the host (cudaLaunchKernel inside the convolution op), and once the step
  // turns host-bound those launches are step time (s_layout A: 226 a step).
  // The NCHW norms run at this trace's streaming rate. A conversion with no
  // launch in the trace (queued before profiling: the un-profiled step gives
  // that backlog no time) is scaled with the norms. A trace without launch
  // links sizes both by one factor on their GPU time.
  nlohmann::json what_if = nlohmann::json::object();
  if (!launches.empty()) {
    std::vector<Uid> scaled = norm_kernels;
    scaled.insert(scaled.end(), unlaunched.begin(), unlaunched.end());
    std::sort(scaled.begin(), scaled.end());
    if (!scaled.empty()) {
      what_if["kernel_uids"] = scaled;
      what_if["factor"] = norm_us > 0 ? std::clamp(1.0 - norm_gain_us / norm_us, 1e-6, 1.0) : 1e-6;
    } else {
      // Conversions only: their kernels are the GPU work the change removes
      // (their launches take them out; the list names them for a comparison
      // with the changed run, src/ab/change_match.h).
      what_if["kernel_uids"] = changed;
      what_if["factor"] = 1e-6;
    }
    what_if["remove_uids"] = launches;
  } else {
    what_if["kernel_uids"] = changed;
    what_if["factor"] =
        std::clamp(1.0 - (conversion_us + norm_gain_us) / (conversion_us + norm_us), 1e-6, 1.0);
  }
  double change_saving_us = 0;
  if (c.step) change_saving_us = detail::what_if_replay_total_us(c, what_if).value_or(0.0);
  const double iterations =
      c.step ? std::max<double>(1, static_cast<double>(c.step->measured.iterations.size())) : 1;
  Insight i;
  i.rule = "conv_layout_transposes";
  i.scope = "kernel";
  i.category = "CONV";
  i.uids = ops;
  i.kernel_names = names;
  i.time_us = conversion_us;
  i.share = detail::share_of(c, conversion_us);
  i.severity = detail::severity_by_share(i.share);
  i.gain_upper_bound_us = conversion_us;
  i.title = fmt::format(
      "{} NCHW<->NHWC layout conversions around convolutions: {:.1f} us "
      "({:.1f}% of kernel time) in {} ops",
      conversions, conversion_us, 100 * i.share, ops.size());
  i.detail =
      "The convolution kernels run in NHWC while the model's tensors are NCHW, so every "
      "convolution converts its input and output: pure memory traffic.";
  if (norms > 0)
    i.detail += fmt::format(
        " The same NCHW tensors send {} batch norms to their NCHW kernels ({:.1f} us, {:.1f} us "
        "above this trace's streaming rate; bandwidth_baseline names them): channels_last "
        "changes both, about {:.2f} ms per step by the what-if.",
        norms, norm_us, norm_gain_us, change_saving_us / iterations / 1e3);
  i.evidence = {{"conversions", conversions},
                {"conversion_time_us", conversion_us},
                {"ops", ops.size()},
                {"nchw_batch_norms", norms},
                {"nchw_batch_norm_time_us", norm_us},
                {"nchw_batch_norm_time_above_baseline_us", norm_gain_us},
                {"conversion_launches", launches.size()},
                {"channels_last_step_saving_us_per_step", change_saving_us / iterations}};
  if (baseline) {
    i.evidence["baseline_tbs"] = baseline->tbs;
    i.evidence["baseline_op"] = baseline->op;
  }
  i.change = "channels_last";
  i.change_also = norm_ops;
  i.what_if = std::move(what_if);
  i.action_model =
      "Use channels_last: model.to(memory_format=torch.channels_last) and the same "
      "for the inputs (autocast keeps the format).";
  i.action_kernel =
      "Convolution kernels that accept NCHW directly for these shapes (cuDNN / "
      "MIOpen engine choice), or fuse the conversion into the producer.";
  i.verify =
      "The conversion kernels are named nchwToNhwcKernel / nhwcToNchwKernel (cuDNN) or "
      "batched_transpose (MIOpen); parent_chain on a UID shows the convolution they serve.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
