// Fused MoE perf models of TraceLens's inference extensions
// (moe_perf_model_extensions.py, FusedMoE): one kernel does the up/gate GEMM,
// the activation, the down GEMM and the weighted sum over the top-k experts.
// FLOPs are exact; bytes assume uniform routing for the number of experts
// whose weights are read.
#include <cmath>

#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// TraceLens's own MoE byte table: exact (case-sensitive) dtype spellings,
// FP4 at half a byte; anything else takes the caller's default.
double moe_bpe(const PyValue& dtype, double dflt) {
  static const std::map<std::string, double> table = {{"Float8_e4m3fn", 1},
                                                      {"Float8_e4m3fnuz", 1},
                                                      {"Float8_e5m2", 1},
                                                      {"Float8_e5m2fnuz", 1},
                                                      {"FP8", 1},
                                                      {"FP4", 0.5},
                                                      {"BFloat16", 2},
                                                      {"Float16", 2},
                                                      {"Half", 2},
                                                      {"Float32", 4},
                                                      {"Float", 4},
                                                      {"c10::BFloat16", 2},
                                                      {"c10::Float8_e4m3fn", 1},
                                                      {"c10::Float8_e4m3fnuz", 1},
                                                      {"c10::Float4_e2m1fn_x2", 0.5},
                                                      {"c10::Half", 2},
                                                      {"c10::Float", 4}};
  if (!dtype.is_string()) return dflt;
  auto it = table.find(dtype.s);
  return it == table.end() ? dflt : it->second;
}

struct MoeShape {
  int64_t num_tokens = 0, hidden_dim = 0, inter_dim = 0, num_experts = 0, topk = 0;
  bool gated = false;
};

// w1 (E, N * (gated + 1), K_stored) and w2 (E, K, N_stored): K from w2, N
// scaled by the packing ratio K / K_stored (INT4 weights store half of K).
void read_weights(const Shape& w1, const Shape& w2, MoeShape& s) {
  if (w1.size() != 3 || w2.size() != 3) fail("MoE weight shapes are not 3-D");
  if (w1[2] == 0) fail("integer division or modulo by zero");
  s.hidden_dim = w2[1];
  int64_t ratio = s.hidden_dim / w1[2];
  if ((s.hidden_dim % w1[2] != 0) && ((s.hidden_dim < 0) != (w1[2] < 0))) --ratio;  // floor
  s.inter_dim = w2[2] * ratio;
  s.num_experts = w1[0];
  s.gated = w1[1] == 2 * s.inter_dim;
}

class FusedMoE : public PerfModel {
 public:
  double flops() const override {
    PyInt m = s_.num_tokens, k = s_.hidden_dim, n = s_.inter_dim, topk = s_.topk;
    PyInt fc1 = 2 * m * k * n * topk * (s_.gated ? 2 : 1);
    PyInt fc2 = 2 * m * k * n * topk;
    PyInt aggregation = m * k * (2 * topk - 1);
    return static_cast<double>(fc1 + fc2 + aggregation);
  }
  std::optional<double> bytes() const override {
    auto [in_bpe, w_bpe, out_bpe] = bpes();
    double e = static_cast<double>(s_.num_experts);
    double m = static_cast<double>(s_.num_tokens);
    double k = static_cast<double>(s_.hidden_dim), n = static_cast<double>(s_.inter_dim);
    // Expected number of distinct experts hit by M tokens choosing top-k.
    double active = e * (1 - std::pow((e - static_cast<double>(s_.topk)) / e, m));
    double mk = static_cast<double>(PyInt(s_.num_tokens) * s_.hidden_dim);
    double fc1 = active * n * k * w_bpe * (s_.gated ? 2 : 1);
    double fc2 = active * n * k * w_bpe;
    return mk * in_bpe + fc1 + fc2 + mk * out_bpe;
  }
  std::string maf_type() const override { return "matrix"; }

 protected:
  virtual std::tuple<double, double, double> bpes() const = 0;

  void add_shape_params() {
    add(params_, "num_tokens", int_value(s_.num_tokens));
    add(params_, "hidden_dim", int_value(s_.hidden_dim));
    add(params_, "inter_dim", int_value(s_.inter_dim));
    add(params_, "num_experts", int_value(s_.num_experts));
    add(params_, "topk", int_value(s_.topk));
    add(params_, "gated", bool_value(s_.gated));
  }

  MoeShape s_;
};

// pseudo_op::moe_aiter_fused_1stage (args of vllm::rocm_aiter_fused_moe):
// input (M, K), w1, w2, topk_weights (M, topk); types input, w1, ...
class AiterFused1Stage : public FusedMoE {
 public:
  explicit AiterFused1Stage(const OpInput& op) {
    s_.num_tokens = dims_at(op, 0).at(0);
    read_weights(dims_at(op, 1), dims_at(op, 2), s_);
    s_.topk = dims_at(op, 3).at(1);
    input_dtype_ = type_at(op, 0);
    weight_dtype_ = type_at(op, 1);
    add_shape_params();
    add(params_, "input_dtype", dtype_value(input_dtype_));
    add(params_, "weight_dtype", dtype_value(weight_dtype_));
  }
  std::string precision() const override {
    return truthy(input_dtype_) ? precision_of_value(input_dtype_) : "";
  }

 private:
  std::tuple<double, double, double> bpes() const override {
    double in = moe_bpe(input_dtype_, 2);
    return {in, moe_bpe(weight_dtype_, 1), in};  // output as the input
  }
  PyValue input_dtype_, weight_dtype_;
};

// aiter::fmoe_fp8_blockscale_g1u1 / aiter::fmoe_g1u1: out (M, K), input,
// w1, w2; topk is Concrete Inputs[8]; types out, input, w1, ...
class AiterFusedBlockscale : public FusedMoE {
 public:
  explicit AiterFusedBlockscale(const OpInput& op) {
    s_.num_tokens = dims_at(op, 0).at(0);
    read_weights(dims_at(op, 2), dims_at(op, 3), s_);
    if (arg_size(op.concrete_inputs) <= 8 || !truthy(concrete_at(op, 8)))
      fail("Cannot extract topk: Concrete Inputs[8] missing or empty");
    s_.topk = python_int(concrete_at(op, 8), "topk");
    output_dtype_ = type_at(op, 0);
    input_dtype_ = type_at(op, 1);
    weight_dtype_ = type_at(op, 2);
    add_shape_params();
    add(params_, "input_dtype", dtype_value(input_dtype_));
    add(params_, "weight_dtype", dtype_value(weight_dtype_));
    add(params_, "output_dtype", dtype_value(output_dtype_));
  }
  // TraceLens maps a recorded "bf16" input to fp8 here (the kernel quantizes).
  std::string precision() const override {
    if (!truthy(input_dtype_)) return "";
    if (input_dtype_.is_string() && (input_dtype_.s == "fp8" || input_dtype_.s == "bf16"))
      return "fp8";
    return precision_of_value(input_dtype_);
  }

 private:
  std::tuple<double, double, double> bpes() const override {
    return {moe_bpe(input_dtype_, 1), moe_bpe(weight_dtype_, 1), moe_bpe(output_dtype_, 2)};
  }
  PyValue input_dtype_, weight_dtype_, output_dtype_;
};

}  // namespace

void register_moe_models(std::map<std::string_view, Factory>& out) {
  out["moe_aiter_fused_1stage"] = [](const OpInput& op) {
    return std::make_unique<AiterFused1Stage>(op);
  };
  out["moe_aiter_fused_blockscale"] = [](const OpInput& op) {
    return std::make_unique<AiterFusedBlockscale>(op);
  };
}

}  // namespace jarvis::perf::detail
