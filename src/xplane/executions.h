// XLA executions on the host of an XPlane trace: each run of a compiled XLA
// program (an executable, "module") shows on the thread that dispatched it
// as a host event named "<module>:XLA GPU module" (JAX 0.4 to 0.11, CUDA
// and ROCm: `jit_forward_3d_conv:XLA GPU module`). A step jitted whole runs
// one executable; a step run op by op (`jax.disable_jit()`, eager
// primitives) runs one small executable per primitive, named after it
// (`jit_add`, `jit_dot_general`, `jit_convert_element_type`), and a Python
// loop of small jitted calls one per call.
#pragma once

#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis::xplane {

struct XlaExecution {
  Uid uid = kNoUid;         // the "<module>:XLA GPU module" host event
  std::string_view module;  // "jit_add"
  double ts = 0, dur = 0;   // us
};

// "jit_add" for "jit_add:XLA GPU module"; empty for any other name.
std::string_view xla_module_of(std::string_view event_name);

// The executions of the host thread that dispatches the most of them (one
// device's dispatch: a multi-device job runs one thread per device), in
// time order; nested module events (none known) count once. Empty when the
// trace has none (a Kineto trace, an XPlane without host lines).
std::vector<XlaExecution> xla_executions(const Trace& trace);

}  // namespace jarvis::xplane
