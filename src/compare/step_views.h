// Step time of a capture in two views, for comparing a before/after pair of
// Nsight Systems captures (docs/nsys.md#compare):
//   * the whole capture: per GPU, the span from its first kernel's start to
//     its last kernel's end, summed over GPUs (kernel time beside it);
//   * per iteration: the same sum over the kernels inside one iteration's GPU
//     window, iterations found on the first GPU's main launching thread.
// A capture of fixed duration (`nsys profile --duration`, a capture range)
// has about the same whole-capture span whatever the code does, so the
// verdict of a comparison uses the per-iteration view when both sides have
// iterations, and says which view it used.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {

// How the iterations were found, in this order of preference:
inline constexpr const char* kStepsFromProfilerStep = "profiler_step";  // ProfilerStep#N ranges
inline constexpr const char* kStepsFromRepeats = "detected_repeats";    // launch-sequence repeats
inline constexpr const char* kStepsFromGpuGaps = "gpu_idle_gaps";       // GPU idle over 2 ms

// GPU idle between kernels of the main thread longer than this begins a new
// iteration (the fallback when neither markers nor repeats are found).
inline constexpr int64_t kIterationGapNs = 2'000'000;

// Kernel time and spans over a set of kernels.
struct StepWindow {
  int64_t start_ns = 0, end_ns = 0;  // GPU window (first kernel start, last kernel end)
  int64_t step_ns = 0;               // sum over GPUs of each GPU's kernel span
  int64_t kernel_ns = 0;             // sum of kernel durations
  size_t kernels = 0;
  std::map<int64_t, int64_t> span_ns_by_device;
  std::map<std::string, std::pair<size_t, int64_t>> by_kernel;  // name -> (count, ns)
};

struct StepViews {
  StepWindow whole;                    // every kernel of the capture
  std::vector<StepWindow> iterations;  // in time order
  std::string iterations_source;       // one of kSteps*, "" when none found
  int64_t first_device = -1;
  ProcId main_pid, main_tid;  // the thread the iterations were found on
  std::string method;         // in words
};

// The views of one trace (any trace with kernels; written for Nsight Systems
// captures of one or several GPUs). nullopt when the trace has no kernels.
// `source`: "auto" (ProfilerStep#N ranges, else launch-sequence repeats,
// else GPU idle gaps), or one of "profiler_step", "detected_repeats",
// "gpu_idle_gaps" alone (no iterations when it finds none). Throws
// std::invalid_argument for another value.
std::optional<StepViews> step_views(const Trace& trace, const CallTree& tree,
                                    const std::string& source = "auto");

// The comparison of two captures' views: both views side by side, the
// per-kernel change inside the aligned iteration, and a verdict (5% change
// threshold, 2% single-run noise floor) that names the view it used.
nlohmann::json compare_step_views(const StepViews& reference, const StepViews& target,
                                  const std::string& ref_tag, const std::string& tgt_tag,
                                  size_t iteration = 0, size_t top_n = 10);

}  // namespace jarvis
