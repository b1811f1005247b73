// Fused MoE perf models of TraceLens's inference extensions
// (moe_perf_model_extensions.py, FusedMoE): one kernel does the up/gate GEMM,
// the activation, the down GEMM and the weighted sum over the top-k experts.
// FLOPs are exact; bytes assume uniform routing for the number of experts
// whose weights are read.
#include <cmath>
#include <type_traits>

#include "perf/models_internal.h"
#include "pycompat/text.h"

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
    s_.num_tokens = dim(dims_at(op, 0), 0, "Input Dims[0]");
    read_weights(dims_at(op, 1), dims_at(op, 2), s_);
    s_.topk = dim(dims_at(op, 3), 1, "Input Dims[3]");
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
    s_.num_tokens = dim(dims_at(op, 0), 0, "Input Dims[0]");
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

// ---- Unfused MoE stages (UnfusedMoE_Up / UnfusedMoE_Down) ----
//
// Up: 2*M*K*N*topk FLOPs (twice with a gated up+gate projection); reads the
// tokens and the active experts' weights, writes M*topk rows of N. Down:
// 2*M*N*K*topk; reads the M*topk intermediate rows and the active experts'
// weights, writes M rows of K. Active experts as in FusedMoE.
class UnfusedMoE : public PerfModel {
 public:
  double flops() const override {
    PyInt m = s_.num_tokens, k = s_.hidden_dim, n = s_.inter_dim, topk = s_.topk;
    if (up_) return static_cast<double>(2 * m * k * n * topk * (s_.gated ? 2 : 1));
    return static_cast<double>(2 * m * n * k * topk);
  }
  std::optional<double> bytes() const override {
    auto [in_bpe, w_bpe, out_bpe] = bpes();
    if (s_.num_experts == 0) fail("division by zero (num_experts is 0)");
    double e = static_cast<double>(s_.num_experts);
    double active = e * (1 - std::pow((e - static_cast<double>(s_.topk)) / e,
                                      static_cast<double>(s_.num_tokens)));
    double k = static_cast<double>(s_.hidden_dim), n = static_cast<double>(s_.inter_dim);
    PyInt m = s_.num_tokens;
    if (up_) {
      double input = static_cast<double>(m * s_.hidden_dim) * in_bpe;
      double weight = active * (s_.gated ? 2 : 1) * k * n * w_bpe;
      double output = static_cast<double>(m * s_.inter_dim * s_.topk) * out_bpe;
      return input + weight + output;
    }
    double input = static_cast<double>(m * s_.inter_dim * s_.topk) * in_bpe;
    double weight = active * n * k * w_bpe;
    double output = static_cast<double>(m * s_.hidden_dim) * out_bpe;
    return input + weight + output;
  }
  double flops_bwd() const override {
    throw PerfNotImplemented("Backward pass for unfused MoE is not defined.");
  }
  std::optional<double> bytes_bwd() const override {
    throw PerfNotImplemented("Backward pass for unfused MoE is not defined.");
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    return truthy(precision_dtype_) ? precision_of_value(precision_dtype_) : "";
  }

 protected:
  explicit UnfusedMoE(bool up) : up_(up) {}
  virtual std::tuple<double, double, double> bpes() const = 0;

  // num_tokens, hidden_dim, inter_dim, num_experts, topk [, gated].
  void add_shape_params(bool with_gated) {
    add(params_, "num_tokens", int_value(s_.num_tokens));
    add(params_, "hidden_dim", int_value(s_.hidden_dim));
    add(params_, "inter_dim", int_value(s_.inter_dim));
    add(params_, "num_experts", int_value(s_.num_experts));
    add(params_, "topk", int_value(s_.topk));
    if (with_gated) add(params_, "gated", bool_value(s_.gated));
  }

  bool up_;
  MoeShape s_;
  PyValue precision_dtype_;
};

// An unfused stage whose byte sizes come from recorded dtypes through
// TraceLens's MoE table with per-dtype defaults; the output as the input
// unless an output dtype is recorded.
class TableUnfusedMoE : public UnfusedMoE {
 protected:
  using UnfusedMoE::UnfusedMoE;
  std::tuple<double, double, double> bpes() const override {
    double in = moe_bpe(input_dtype_, 2);
    return {in, moe_bpe(weight_dtype_, 1), has_output_dtype_ ? moe_bpe(output_dtype_, 2) : in};
  }
  void add_dtype_params() {
    add(params_, "input_dtype", input_dtype_);
    add(params_, "weight_dtype", weight_dtype_);
    if (has_output_dtype_) add(params_, "output_dtype", output_dtype_);
  }
  PyValue input_dtype_, weight_dtype_, output_dtype_;
  bool has_output_dtype_ = false;
};

// `a, b, c = shape`: exactly three dims.
Shape three(Shape s, const char* what) {
  if (s.size() != 3) fail(std::string(what) + ": expected 3 dims");
  return s;
}

// aiter::moe_cktile2stages_gemm1_ck(XQ (M, K), WQ (E, N*(gated+1), K_packed),
// Y (M, topk, N), ...) and aiter::moe_cktile2stages_gemm2_ck(XQ (M, topk,
// N), WQ (E, K, N_packed), Y (M, K), ...); types XQ, WQ, Y.
class AiterCkTileStage : public TableUnfusedMoE {
 public:
  AiterCkTileStage(const OpInput& op, bool up) : TableUnfusedMoE(up) {
    if (up) {
      Shape x = dims_at(op, 0);
      if (x.size() != 2) fail("Input Dims[0]: expected (tokens, hidden_dim)");
      Shape w1 = three(dims_at(op, 1), "Input Dims[1]");
      Shape y = three(dims_at(op, 2), "Input Dims[2]");
      s_.num_tokens = x[0];
      s_.hidden_dim = x[1];
      s_.num_experts = w1[0];
      s_.topk = y[1];
      s_.inter_dim = y[2];
      s_.gated = w1[1] == 2 * s_.inter_dim;
    } else {
      Shape x = three(dims_at(op, 0), "Input Dims[0]");
      Shape w = three(dims_at(op, 1), "Input Dims[1]");
      s_.num_tokens = x[0];
      s_.topk = x[1];
      s_.inter_dim = x[2];
      s_.num_experts = w[0];
      s_.hidden_dim = w[1];
    }
    input_dtype_ = type_at(op, 0);
    weight_dtype_ = type_at(op, 1);
    output_dtype_ = type_at(op, 2);
    has_output_dtype_ = true;
    precision_dtype_ = input_dtype_;
    add_shape_params(up);
    add_dtype_params();
  }
};

// aiter::ck_moe_stage1(hidden (M, K_packed), w1 (E, N*(gated+1), K_packed),
// w2 (E, K, N_packed), sorted ids, expert ids, num valid ids, out (M, topk,
// N), ...): K from w2, N scaled by the packing ratio K / w1's last dim.
// aiter::ck_moe_stage2(inter (M, topk, N_packed), w1, w2, ..., out (M, K)):
// weight dtype from w2. Outputs as the input dtype.
class AiterCkStage : public TableUnfusedMoE {
 public:
  AiterCkStage(const OpInput& op, bool up) : TableUnfusedMoE(up) {
    Shape w1 = dims_at(op, 1);
    Shape w2 = three(dims_at(op, 2), "Input Dims[2]");
    if (up) {
      Shape x = dims_at(op, 0);
      Shape out = dims_at(op, 6);
      s_.num_tokens = dim(x, 0, "x");
      s_.num_experts = w2[0];
      s_.hidden_dim = w2[1];
      if (w1.empty()) fail("Input Dims[1]: w1 has no dims");
      s_.inter_dim = w2[2] * floordiv(s_.hidden_dim, w1.back());
      s_.topk = dim(out, 1, "out");
      s_.gated = dim(w1, 1, "w1") == 2 * s_.inter_dim;
      weight_dtype_ = type_at(op, 1);
    } else {
      Shape x = three(dims_at(op, 0), "Input Dims[0]");
      s_.num_tokens = x[0];
      s_.topk = x[1];
      s_.num_experts = w2[0];
      s_.hidden_dim = w2[1];
      s_.inter_dim = x[2] * (w1.empty() ? 1 : floordiv(s_.hidden_dim, w1.back()));
      weight_dtype_ = type_at(op, 2);
    }
    input_dtype_ = type_at(op, 0);
    precision_dtype_ = input_dtype_;
    add_shape_params(up);
    add_dtype_params();
  }
};

// pseudo_op::moe_flydsl_stage1 / stage2: the parent aiter::fused_moe_ args
// (input (M, K), w1, w2, topk_weights (M, topk)), read as the fused 1-stage
// MoE reads them. Precision follows the weights (FP4 MFMA).
class FlydslStage : public TableUnfusedMoE {
 public:
  FlydslStage(const OpInput& op, bool up) : TableUnfusedMoE(up) {
    s_.num_tokens = dim(dims_at(op, 0), 0, "Input Dims[0]");
    read_weights(dims_at(op, 1), dims_at(op, 2), s_);
    s_.topk = dim(dims_at(op, 3), 1, "Input Dims[3]");
    input_dtype_ = type_at(op, 0);
    weight_dtype_ = type_at(op, 1);
    precision_dtype_ = weight_dtype_;
    add_shape_params(true);
    add_dtype_params();
  }
};

// The extra args TraceLens's pseudo-op extensions attach ("MoE topk", "MoE
// GEMM gated"); a missing one is a KeyError.
const PyValue& required_event_arg(const OpInput& op, const char* key) {
  const PyValue* v = op.trace ? op.trace->arg(op.uid, key) : nullptr;
  if (v == nullptr) fail(std::string("'") + key + "' not found in event args");
  return *v;
}

// pseudo_op::moe_triton_unfused_up / _down (GPT-OSS Triton MoE): tokens and
// hidden_dim from Input Dims[0], experts from the router logits
// Input Dims[1]; inter_dim is not recorded and taken as hidden_dim. The
// weight dtype comes from the first kernel's name (mxfp4/fp4 -> FP4,
// fp8/e4m3 -> FP8); both dtypes must be in the MoE byte table.
class TritonUnfusedStage : public UnfusedMoE {
 public:
  TritonUnfusedStage(const OpInput& op, bool up) : UnfusedMoE(up) {
    if (arg_size(op.input_dims) < 2)
      fail("Expected at least 2 Input Dims for unfused MoE, got " +
           std::to_string(arg_size(op.input_dims)));
    Shape x = dims_at(op, 0), router = dims_at(op, 1);
    s_.num_tokens = dim(x, 0, "x");
    s_.hidden_dim = dim(x, 1, "x");
    s_.num_experts = dim(router, 1, "router");
    s_.topk = to_int(required_event_arg(op, "MoE topk"), "MoE topk");
    gated_value_ = required_event_arg(op, "MoE GEMM gated");
    s_.gated = truthy(gated_value_);
    s_.inter_dim = s_.hidden_dim;
    if (op.kernel_names.empty()) fail("Kernel details not found in event");
    std::string kernel = pycompat::ascii_lower(op.kernel_names.front());
    if (kernel.find("mxfp4") != std::string::npos || kernel.find("fp4") != std::string::npos)
      weight_dtype_ = str_value("FP4");
    else if (kernel.find("fp8") != std::string::npos || kernel.find("e4m3") != std::string::npos)
      weight_dtype_ = str_value("FP8");
    if (arg_size(op.input_type) < 2)
      fail("Expected at least 2 Input types, got " + std::to_string(arg_size(op.input_type)));
    input_dtype_ = op.input_type->list[0];
    precision_dtype_ = weight_dtype_;
    add(params_, "num_tokens", int_value(s_.num_tokens));
    add(params_, "hidden_dim", int_value(s_.hidden_dim));
    add(params_, "inter_dim", int_value(s_.inter_dim));
    add(params_, "num_experts", int_value(s_.num_experts));
    add(params_, "topk", int_value(s_.topk));
    add(params_, "gated", gated_value_);
    add(params_, "input_dtype", input_dtype_);
    add(params_, "weight_dtype", weight_dtype_);
  }

 private:
  std::tuple<double, double, double> bpes() const override {
    double in = moe_bpe(input_dtype_, -1), w = moe_bpe(weight_dtype_, -1);
    if (in < 0) fail("Unknown input dtype " + input_dtype_.repr_tuple());
    if (w < 0) fail("Unknown weight dtype " + weight_dtype_.repr_tuple());
    return {in, w, in};
  }
  PyValue gated_value_, input_dtype_, weight_dtype_;
};

// pseudo_op::moe_gptq_awq_up / _down (vllm::outplace_fused_experts args):
// INT4 weights, half a byte per element. Up: w1 (E, N_rows, K_packed) with
// N_rows = 2 * inter_dim when gated ("MoE GEMM gated", default True). Down:
// w2 (E, K, N_packed) with inter_dim = 2 * N_packed.
class GptqAwqStage : public UnfusedMoE {
 public:
  GptqAwqStage(const OpInput& op, bool up) : UnfusedMoE(up) {
    Shape x = dims_at(op, 0);
    s_.num_tokens = dim(x, 0, "x");
    s_.hidden_dim = dim(x, 1, "x");
    if (up) {
      Shape w1 = dims_at(op, 1);
      s_.num_experts = dim(w1, 0, "w1");
      int64_t rows = dim(w1, 1, "w1");
      s_.topk = to_int(required_event_arg(op, "MoE topk"), "MoE topk");
      const PyValue* g = op.trace ? op.trace->arg(op.uid, "MoE GEMM gated") : nullptr;
      gated_value_ = g ? *g : bool_value(true);
      s_.gated = truthy(gated_value_);
      s_.inter_dim = s_.gated ? floordiv(rows, 2) : rows;
    } else {
      Shape w2 = dims_at(op, 2);
      s_.num_experts = dim(w2, 0, "w2");
      s_.inter_dim = dim(w2, 2, "w2") * 2;
      s_.topk = to_int(required_event_arg(op, "MoE topk"), "MoE topk");
    }
    input_dtype_ =
        op.input_type == nullptr ? str_value("BFloat16") : arg_at(op.input_type, "Input type", 0);
    precision_dtype_ = input_dtype_;
    add(params_, "num_tokens", int_value(s_.num_tokens));
    add(params_, "hidden_dim", int_value(s_.hidden_dim));
    add(params_, "inter_dim", int_value(s_.inter_dim));
    add(params_, "num_experts", int_value(s_.num_experts));
    add(params_, "topk", int_value(s_.topk));
    if (up) add(params_, "gated", gated_value_);
    add(params_, "input_dtype", input_dtype_);
  }

 private:
  std::tuple<double, double, double> bpes() const override {
    double in = moe_bpe(input_dtype_, 2);
    return {in, 0.5, in};
  }
  PyValue gated_value_, input_dtype_;
};

// sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel: one
// grouped GEMM launch of SGLang's Triton MoE (gate/up or down): A (rows,
// K), B (E, N, K), C, ..., topk_ids (tokens, topk) at Input Dims[8].
// M_work = tokens * topk rows; 2 * M_work * N * K FLOPs; reads the rows and
// the active experts' weights, writes M_work * N.
class TritonInvokeGroupedGemm : public PerfModel {
 public:
  explicit TritonInvokeGroupedGemm(const OpInput& op) {
    size_t ndims = arg_size(op.input_dims);
    if (ndims < 9)
      fail("Expected >=9 Input Dims for invoke_fused_moe_kernel, got " + std::to_string(ndims));
    Shape b = dims_at(op, 1);
    if (b.size() != 3) fail("Expected 3D weight tensor at Input Dims[1]");
    experts_ = b[0];
    n_ = b[1];
    k_ = b[2];
    Shape ids = dims_at(op, 8);
    if (ids.size() != 2) fail("Expected 2D topk_ids at Input Dims[8]");
    tokens_ = ids[0];
    topk_ = ids[1];
    m_work_ = PyInt(tokens_) * topk_;
    size_t nt = op.input_type && op.input_type->is_list() ? op.input_type->size() : 0;
    input_dtype_ = nt > 0 ? op.input_type->list[0] : PyValue::none();
    weight_dtype_ = nt > 1 ? op.input_type->list[1] : PyValue::none();
    output_dtype_ =
        nt > 3 && truthy(op.input_type->list[3]) ? op.input_type->list[3] : input_dtype_;
    add(params_, "m_work", int_value(m_work_));
    add(params_, "num_tokens", int_value(tokens_));
    add(params_, "topk", int_value(topk_));
    add(params_, "N", int_value(n_));
    add(params_, "K", int_value(k_));
    add(params_, "num_experts", int_value(experts_));
    add(params_, "input_dtype", input_dtype_);
    add(params_, "weight_dtype", weight_dtype_);
    add(params_, "output_dtype", output_dtype_);
  }
  double flops() const override { return static_cast<double>(2 * m_work_ * n_ * k_); }
  std::optional<double> bytes() const override {
    double in = moe_bpe(input_dtype_, 2), w = moe_bpe(weight_dtype_, 1),
           out = moe_bpe(output_dtype_, 2);
    double e = static_cast<double>(experts_);
    double active =
        experts_ > 0
            ? e * (1 - std::pow((e - static_cast<double>(topk_)) / e, static_cast<double>(tokens_)))
            : 0;
    double a = static_cast<double>(m_work_ * k_) * in;
    double b = active * static_cast<double>(n_) * static_cast<double>(k_) * w;
    double c = static_cast<double>(m_work_ * n_) * out;
    return a + b + c;
  }
  double flops_bwd() const override {
    throw PerfNotImplemented("Backward pass for fused MoE is not defined.");
  }
  std::optional<double> bytes_bwd() const override {
    throw PerfNotImplemented("Backward pass for fused MoE is not defined.");
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    return truthy(weight_dtype_) ? precision_of_value(weight_dtype_) : "";
  }

 private:
  int64_t experts_ = 0, n_ = 0, k_ = 0, tokens_ = 0, topk_ = 0;
  PyInt m_work_ = 0;
  PyValue input_dtype_, weight_dtype_, output_dtype_;
};

// ---- MoE routing / sorting helpers (MoE_aux) ----

// aiter::biased_grouped_topk_hip, aiter::moe_sorting_fwd,
// aiter::mxfp4_moe_sort_hip: every tensor operand (a non-empty all-int
// shape) counts; 1 FLOP per element of the largest, bytes summed over the
// operands with a known byte size (None when nothing is sized).
class MoeOperands : public PerfModel {
 public:
  MoeOperands(const OpInput& op, bool dims_required, const char* what) : what_(what) {
    if (dims_required && op.input_dims == nullptr) fail("'Input Dims' not found in event args");
    size_t n = arg_size(op.input_dims);
    std::vector<PyValue> listed;
    for (size_t i = 0; i < n; ++i) {
      const PyValue& shape = op.input_dims->list[i];
      if (!shape.is_list() || shape.size() == 0) continue;
      bool ints = true;
      for (const PyValue& d : shape.list)
        ints = ints && (d.kind == PyValue::Kind::Int || d.kind == PyValue::Kind::Bool);
      if (!ints) continue;
      Operand o{to_shape(shape, "Input Dims"),
                i < arg_size(op.input_type) ? op.input_type->list[i] : PyValue::none()};
      listed.push_back(tuple_of({tuple_value(o.shape), o.dtype}));
      operands_.push_back(std::move(o));
    }
    add(params_, "operands", PyValue::make_list(std::move(listed)), true);
  }
  double flops() const override {
    int64_t best = 0;
    for (size_t i = 0; i < operands_.size(); ++i) {
      int64_t p = prod(operands_[i].shape);
      if (i == 0 || p > best) best = p;
    }
    return static_cast<double>(best);
  }
  std::optional<double> bytes() const override {
    PyInt total = 0;
    for (const Operand& o : operands_) {
      if (!o.dtype.is_none() && !o.dtype.is_string())
        fail("operand dtype is not a string: " + o.dtype.repr_tuple());
      if (auto b = bpe_of(o.dtype)) total += PyInt(prod(o.shape)) * *b;
    }
    if (!(total > PyInt(0))) return std::nullopt;
    return static_cast<double>(total);
  }
  double flops_bwd() const override {
    throw PerfNotImplemented(std::string("Backward pass for ") + what_ + " is not defined.");
  }
  std::optional<double> bytes_bwd() const override {
    throw PerfNotImplemented(std::string("Backward pass for ") + what_ + " is not defined.");
  }
  std::string maf_type() const override { return "vector"; }
  // The dtype of the first largest operand.
  std::string precision() const override {
    if (operands_.empty()) return "";
    size_t best = 0;
    for (size_t i = 1; i < operands_.size(); ++i)
      if (prod(operands_[i].shape) > prod(operands_[best].shape)) best = i;
    const PyValue& d = operands_[best].dtype;
    return truthy(d) ? precision_of_value(d) : "";
  }

 private:
  struct Operand {
    Shape shape;
    PyValue dtype;
  };
  const char* what_;
  std::vector<Operand> operands_;
};

// sglang fused_append_shared_experts(topk_ids (M, topk), topk_weights, ...):
// reads and rewrites the id and weight tensors; 1 FLOP per id. Built on
// TraceLens's BinaryElementwise, so the two shapes must broadcast.
class AppendSharedExperts : public PerfModel {
 public:
  explicit AppendSharedExperts(const OpInput& op) {
    ids_ = dims_at(op, 0);
    wts_ = ids_;
    if (arg_size(op.input_dims) > 1 && truthy(op.input_dims->list[1])) wts_ = dims_at(op, 1);
    const PyValue& types = arg_list(op.input_type, "Input type");
    dtype_ids_ = types.size() > 0 ? types.list[0] : str_value("int");
    dtype_wts_ = types.size() > 1 ? types.list[1] : str_value("float");
    // BinaryElementwise's broadcast check.
    size_t n = std::max(ids_.size(), wts_.size());
    for (size_t k = 0; k < n; ++k) {
      int64_t a = k < n - ids_.size() ? 1 : ids_[k - (n - ids_.size())];
      int64_t b = k < n - wts_.size() ? 1 : wts_[k - (n - wts_.size())];
      if (a != b && a != 1 && b != 1) fail("Shapes not broadcastable");
    }
    add(params_, "shape_in1", tuple_value(ids_));
    add(params_, "shape_in2", tuple_value(wts_));
    add(params_, "dtype_in1_in2_out", tuple_of({dtype_ids_, dtype_wts_, dtype_wts_}));
    add(params_, "stride_input1", PyValue::none());
    add(params_, "stride_input2", PyValue::none());
    add(params_, "stride_output", PyValue::none());
  }
  double flops() const override { return static_cast<double>(prod(ids_)); }
  std::optional<double> bytes() const override {
    // `bpe or 4`: unknown and zero sizes count as 4 bytes.
    int b_ids = bpe_of(dtype_ids_).value_or(0), b_wts = bpe_of(dtype_wts_).value_or(0);
    if (b_ids == 0) b_ids = 4;
    if (b_wts == 0) b_wts = 4;
    return static_cast<double>(2 * (PyInt(prod(ids_)) * b_ids + PyInt(prod(wts_)) * b_wts));
  }
  double flops_bwd() const override { fail(std::string(model_name()) + " has no flops_bwd"); }
  std::optional<double> bytes_bwd() const override {
    fail(std::string(model_name()) + " has no bytes_bwd");
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override {
    return truthy(dtype_wts_) ? precision_of_value(dtype_wts_) : "";
  }

 private:
  Shape ids_, wts_;
  PyValue dtype_ids_, dtype_wts_;
};

}  // namespace

void register_moe_models(std::map<std::string_view, Factory>& out) {
  out["moe_aiter_fused_1stage"] = [](const OpInput& op) {
    return std::make_unique<AiterFused1Stage>(op);
  };
  auto stage = [&](const char* cls, auto tag, bool up) {
    using Model = typename decltype(tag)::type;
    out[cls] = [up](const OpInput& op) { return std::make_unique<Model>(op, up); };
  };
  stage("moe_aiter_unfused_up", std::type_identity<AiterCkTileStage>{}, true);
  stage("moe_aiter_unfused_down", std::type_identity<AiterCkTileStage>{}, false);
  stage("moe_aiter_ck_stage1", std::type_identity<AiterCkStage>{}, true);
  stage("moe_aiter_ck_stage2", std::type_identity<AiterCkStage>{}, false);
  stage("moe_flydsl_stage1", std::type_identity<FlydslStage>{}, true);
  stage("moe_flydsl_stage2", std::type_identity<FlydslStage>{}, false);
  stage("moe_triton_unfused_up", std::type_identity<TritonUnfusedStage>{}, true);
  stage("moe_triton_unfused_down", std::type_identity<TritonUnfusedStage>{}, false);
  stage("moe_gptq_awq_up", std::type_identity<GptqAwqStage>{}, true);
  stage("moe_gptq_awq_down", std::type_identity<GptqAwqStage>{}, false);
  out["moe_triton_invoke_grouped_gemm"] = [](const OpInput& op) {
    return std::make_unique<TritonInvokeGroupedGemm>(op);
  };
  out["BiasedGroupedTopk"] = [](const OpInput& op) {
    return std::make_unique<MoeOperands>(op, true, "MoE top-k routing");
  };
  out["MoeSortScatterGather"] = [](const OpInput& op) {
    return std::make_unique<MoeOperands>(op, false, "MoE sort/scatter");
  };
  out["sglang_fused_append_shared_experts"] = [](const OpInput& op) {
    return std::make_unique<AppendSharedExperts>(op);
  };
  out["moe_aiter_fused_blockscale"] = [](const OpInput& op) {
    return std::make_unique<AiterFusedBlockscale>(op);
  };
}

}  // namespace jarvis::perf::detail
