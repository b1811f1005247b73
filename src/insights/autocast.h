// What an op's GEMM computes in under autocast, for the autocast_dtype rule
// and gemm_roofline alike.
#pragma once

#include <string>

#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::insights {

// The narrower precision ("bf16", "fp16", "fp8") an op's GEMM computes in:
// the same op with the same input dims nested in it (autocast casts the fp32
// inputs and calls the op again: aten::addmm inside aten::addmm), from that
// call's recorded input types; else the math dtype the last kernel of its
// subtree names (CUTLASS, rocBLAS, hipBLASLt; cuBLAS's nvjet names carry
// none). "" when neither says.
std::string gemm_compute_precision(const Trace& trace, const CallTree& tree, Uid op);

}  // namespace jarvis::insights
