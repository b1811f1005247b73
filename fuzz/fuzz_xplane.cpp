// libFuzzer target for the XPlane reader (src/xplane): each input is an
// XSpace protobuf; load_space decodes it and the HLO protos of its
// /host:metadata plane (hlo.cpp); if it decodes, the bridge into the event
// model, the call tree, TraceLens's JAX per-GPU timeline and the sheets built
// from the kernels' HLO (perf_sheets.cpp) run on it. A TraceError (the
// reader's refusal, or "no GPU events") is the expected answer; any other
// exception, crash or sanitizer report is a finding.
// Seeds: tests/malformed/xplane/*.pb and fuzz/corpus_xplane (small real
// XSpaces cut to a GPU plane, one with the HLO proto of its program, see
// make_corpus_xplane.py). A quarter of the mutations amplify instead
// (protobuf_amplify.h): a field repeated thousands of times, a count set
// to 2^20 or more, a string grown by repetition, the shapes of issue 63's
// kilobyte-to-gigabyte inputs, which the ExpansionBudget must stop.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectives/collectives.h"
#include "protobuf_amplify.h"
#include "tree/call_tree.h"
#include "xplane/perf_sheets.h"
#include "xplane/report.h"
#include "xplane/space.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 4 == 0)
    if (size_t grown = jarvis::fuzz::amplify(data, size, max_size, seed); grown > 0) return grown;
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    jarvis::xplane::Space space = jarvis::xplane::load_space_bytes(input, "fuzz.xplane.pb");
    jarvis::Trace trace = jarvis::xplane::to_trace(space);
    jarvis::CallTree tree(trace);
    auto kernels = jarvis::xplane::jax_kernels(trace);
    (void)jarvis::xplane::kernel_launchers_table(kernels);
    (void)jarvis::xplane::kernel_launchers_unique_args_table(kernels);
    (void)jarvis::xplane::df_xla_perf_table(kernels);
    (void)jarvis::xplane::op_category_tables(kernels);
    (void)jarvis::collectives::collective_instances(trace);  // sizes from HLO collectives
    auto devices = jarvis::xplane::device_timelines(trace);
    (void)jarvis::xplane::gpu_timeline_by_device_table(devices);
    (void)jarvis::xplane::average_timeline(devices);
  } catch (const jarvis::TraceError&) {
  }
  return 0;
}
