// TraceLens's JAX report sheets that need the HLO of each kernel
// (generate_perf_report_jax.py): kernel_launchers, kernel_launchers_unique_args,
// df_xla_perf and the per-category op sheets (op_conv, op_gemm, op_te,
// op_fa_fwd, ...) with FLOPs, bytes, TFLOPS/s and TB/s from the HLO shapes.
//
// TraceLens reads the HLO of a kernel from xprof's graph-viewer text, one
// line per instruction, with regexes (util.py JaxProfileProcessor.get_dict):
// operand shapes, the result shape, `custom_call_target="..."` and
// `metadata={...` cut at the first character its pattern does not allow.
// jarvis has the instruction decoded (hlo.h; the bridge puts it in the
// kernel's args) and renders those same pieces the way XLA prints them, then
// applies TraceLens's rewrites and patterns, so the cells are TraceLens's,
// including its quirks (docs/jax.md lists them):
//   * operands are the shapes its pattern `[bfs][0-9\[\]\{,a-z]*}` finds in
//     the operand list: u8 / pred / scalar operands are left out, the list
//     ends at the first ')' (a tuple operand);
//   * an instruction that is its computation's ROOT has no metadata (the
//     graph-viewer parser skips ROOT lines);
//   * a kernel gets the metadata only when a host event carries its
//     correlation_id (TraceLens links it to pid 701, its launch);
//   * jax_conv's filter shape is the kernel operand's spatial dimensions, so
//     its FLOPs count 2 * prod(spatial) per output element (the input
//     channels are left out).
// UID: the event's index in xprof's trace-viewer event list as TraceLens
// numbers it (GPU planes by pid, then line id, then start time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"

namespace jarvis::xplane {

struct JaxKernel {
  Uid uid = kNoUid;           // jarvis's event
  int64_t tracelens_uid = 0;  // TraceLens's UID
  std::string name;
  std::string category;  // XLA op category (kernel_summary.h)
  double dur_us = 0, ts_us = 0;
  int64_t pid = 0, tid = 0;
  double launch_latency_us;           // kernel start - host launch start; NaN when unlinked
  bool has_metadata = false;          // TraceLens found the kernel's HLO instruction
  std::vector<std::string> operands;  // TraceLens's operand strings
  std::string output;                 // the result shape as TraceLens reads it
  std::string custom_call_target;     // `custom_call_target="..."`, "" = NA
  std::string metadata;               // `metadata={...` cut, "" = NA
  std::string backend_config;         // raw text ("" when none)
  std::string perf_model;  // jax_gemm, jax_conv, jax_conv_bwd, jax_te_fused_attn(_bwd), rest
  PyValue input_dims, input_type, input_strides, concrete_inputs;  // tuples
};

// The kernels of an XPlane trace (GPU events on "Stream" lines of
// /device:GPU planes whose name does not start with copy / memcpy / memset),
// in TraceLens's UID order.
std::vector<JaxKernel> jax_kernels(const Trace& trace);

Table kernel_launchers_table(const std::vector<JaxKernel>& kernels);
Table kernel_launchers_unique_args_table(const std::vector<JaxKernel>& kernels);
// The Uncategorized Events/XLA kernels with the bytes of their operands.
Table df_xla_perf_table(const std::vector<JaxKernel>& kernels);
// One sheet per XLA op category (TraceLens's order) holding kernels with a
// perf model: op_gemm, op_fa_bwd, op_fa_fwd, op_fa_v3, op_conv, op_te, ...
std::vector<Table> op_category_tables(const std::vector<JaxKernel>& kernels);

// kernel_launchers, kernel_launchers_unique_args, df_xla_perf, then
// op_category_tables.
std::vector<Table> hlo_sheets(const std::vector<JaxKernel>& kernels);

// TraceLens's view of pieces of an HLO instruction line (exposed for tests):
// the operand strings get_operands finds in "opcode(<operands>)" and the
// text a pattern keeps of `metadata={...}` / `custom_call_target="..."`.
std::vector<std::string> tracelens_operands(const std::vector<std::string>& shapes,
                                            const std::vector<std::string>& names);
std::string tracelens_metadata(const std::string& metadata_text);
std::string tracelens_custom_call_target(const std::string& target);

}  // namespace jarvis::xplane
