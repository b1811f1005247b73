// The regime of an op's kernels on one GPU (beyond TraceLens, which knows only
// COMPUTE_BOUND / MEMORY_BOUND from the roofline's ridge point).
//
// A kernel cannot take less time than the platform's launch/latency floor:
// the few microseconds every kernel costs for launch, ramp-up and tail, what
// the cheapest kernels of the trace measure. An op whose roofline time of one
// call (max(FLOPs / peak, bytes / HBM bandwidth)) is below that floor is
// latency-bound: more bandwidth or FLOPs cannot make it faster, and kernel
// tuning cannot take it below the floor. The remedy is fewer launches (fusion,
// CUDA/HIP graphs, torch.compile, a larger batch), and between two GPUs of one
// generation its expected time ratio is ~1 whatever their HBM.
//
// The floor is measured, not assumed per architecture: the median of the
// shortest tenth (at least 3) of the mean per-call kernel times of the ops in
// the trace's unified_perf_summary; one odd op (a fill on an idle clock) does
// not set it. Observed floors: 2-3 us on H100/H200, 3-5 us on MI300X.
//
// One classifier serves the single-trace analyses (category analyses,
// gemm_roofline) and the cross-platform comparison (compare_hw.h), so an op
// gets the same regime in every tool.
#pragma once

#include <optional>
#include <string_view>

#include "report/table.h"

namespace jarvis {

enum class OpRegime { Unknown, LatencyBound, MemoryBound, ComputeBound };

// "latency-bound", "memory-bound", "compute-bound", "unknown".
std::string_view regime_name(OpRegime regime);

// Kernel latency floor of a platform from a unified_perf_summary (0 when it
// has no op with kernel time): see the header comment.
double latency_floor_us(const Table& unified_perf_summary);

// The regime of an op from its roofline time of one call (nullopt: no perf
// model), the platform's floor (0: unknown, never latency-bound) and TraceLens's
// Roofline Bound ("COMPUTE_BOUND" / "MEMORY_BOUND").
OpRegime classify_op_regime(std::optional<double> roofline_us, double latency_floor_us,
                            std::string_view roofline_bound);

// Time per call kernel tuning could still save: down to the roofline, or for
// a latency-bound op only down to the floor; never negative. Without a
// roofline time: nullopt.
std::optional<double> tuning_headroom_us(double kernel_mean_us, std::optional<double> roofline_us,
                                         double latency_floor_us, OpRegime regime);

}  // namespace jarvis
