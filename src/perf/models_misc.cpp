// Smaller model families (spec perf-models.md §5.7): MoE dispatch/combine,
// causal conv1d, fused RoPE, fused cross-entropy.
#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// First dtype of Input type, or the given default when there is none.
PyValue first_dtype_or(const OpInput& op, const char* dflt) {
  if (arg_size(op.input_type) > 0) return op.input_type->list[0];
  return str_value(dflt);
}

// bpe of the first dtype, 2 when unknown (TraceLens's default for these models).
int bpe_default_two(const OpInput& op) {
  PyValue d = first_dtype_or(op, "c10::BFloat16");
  auto b = truthy(d) ? bpe_of(d) : std::nullopt;
  return b ? *b : 2;
}

std::string first_precision(const OpInput& op) {
  if (arg_size(op.input_type) == 0) return "";
  const PyValue& d = op.input_type->list[0];
  return truthy(d) ? precision_of_value(d) : "";
}

// A model class without backward methods (Python AttributeError: an ordinary
// failure, not "not implemented").
class NoBackward : public PerfModel {
 public:
  double flops_bwd() const override { fail(std::string(model_name()) + " has no flops_bwd"); }
  std::optional<double> bytes_bwd() const override {
    fail(std::string(model_name()) + " has no bytes_bwd");
  }
};

// MoEDispatch / MoECombine: pure data movement, no FLOPs, no Compute Spec.
class MoEComm : public PerfModel {
 public:
  explicit MoEComm(const OpInput& op) {
    Shape tok;
    if (arg_size(op.input_dims) > 0) tok = to_shape(op.input_dims->list[0], "Input Dims");
    if (tok.size() >= 1) tokens_ = tok[0];
    if (tok.size() >= 2) hidden_ = tok[1];
    PyValue dtype = arg_size(op.input_type) > 0 ? op.input_type->list[0] : str_value("");
    if (truthy(dtype)) bpe_ = bpe_of(dtype);
    add(params_, "num_tokens", tokens_ ? int_value(*tokens_) : PyValue::none());
    add(params_, "hidden_dim", hidden_ ? int_value(*hidden_) : PyValue::none());
    add(params_, "bpe", bpe_ ? int_value(*bpe_) : PyValue::none());
  }
  double flops() const override { return 0; }
  double flops_bwd() const override { return 0; }
  std::optional<double> bytes() const override {
    if (!tokens_ || !hidden_ || !bpe_) return std::nullopt;
    return static_cast<double>(*tokens_ * *hidden_ * *bpe_);
  }
  std::optional<double> bytes_bwd() const override { return bytes(); }
  std::string maf_type() const override { return ""; }
  std::string precision() const override { return ""; }

 private:
  std::optional<int64_t> tokens_, hidden_;
  std::optional<int> bpe_;
};

// DaoAILab::_causal_conv1d_fwd_cpp: x = (B, C, L), w = (C, k), optional bias.
class CausalConv1d : public NoBackward {
 public:
  explicit CausalConv1d(const OpInput& op) : precision_(first_precision(op)) {
    Shape x = dims_at(op, 0), w = dims_at(op, 1);
    if (x.size() < 3 || w.size() < 2) throw PerfModelError("causal_conv1d: unexpected shapes");
    b_ = x[0];
    c_ = x[1];
    l_ = x[2];
    k_ = w[1];
    bias_ = arg_size(op.input_dims) > 2 && op.input_dims->list[2].is_list() &&
            op.input_dims->list[2].size() > 0;
    add(params_, "batch", int_value(b_));
    add(params_, "channels", int_value(c_));
    add(params_, "seq_len", int_value(l_));
    add(params_, "kernel_size", int_value(k_));
    add(params_, "has_bias", bool_value(bias_));
    bpe_ = bpe_default_two(op);
  }
  double flops() const override { return static_cast<double>(2 * b_ * c_ * l_ * k_); }
  std::optional<double> bytes() const override {
    int64_t io = 2 * (b_ * c_ * l_ * bpe_);
    return static_cast<double>(io + c_ * k_ * bpe_ + (bias_ ? c_ * bpe_ : 0));
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override { return precision_; }

 private:
  int64_t b_, c_, l_, k_;
  bool bias_;
  int bpe_;
  std::string precision_;
};

// FusedRoPEFunc: t = (S, B, H, D); 3 FLOPs per element, read + write.
class FusedRope : public NoBackward {
 public:
  explicit FusedRope(const OpInput& op) : precision_(first_precision(op)) {
    Shape t = dims_at(op, 0);
    if (t.size() < 4) throw PerfModelError("FusedRoPE: input is not 4-D");
    n_ = prod(t);
    add(params_, "seq_len", int_value(t[0]));
    add(params_, "batch", int_value(t[1]));
    add(params_, "heads", int_value(t[2]));
    add(params_, "head_dim", int_value(t[3]));
    add(params_, "num_elements", int_value(n_));
    bpe_ = bpe_default_two(op);
  }
  double flops() const override { return static_cast<double>(3 * n_); }
  std::optional<double> bytes() const override { return static_cast<double>(2 * n_ * bpe_); }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_; }

 private:
  int64_t n_;
  int bpe_;
  std::string precision_;
};

// CrossEntropyFunction: logits = dims[0]; 5 FLOPs per logit; int64 targets
// and fp32 loss per row.
class CrossEntropy : public NoBackward {
 public:
  explicit CrossEntropy(const OpInput& op) : precision_(first_precision(op)) {
    logits_ = dims_at(op, 0);
    if (logits_.empty()) throw PerfModelError("CrossEntropy: empty logits shape");
    batch_ = logits_.front();
    vocab_ = logits_.back();
    add(params_, "batch", int_value(batch_));
    add(params_, "vocab_size", int_value(vocab_));
    add(params_, "logits_shape", tuple_value(logits_), true);
    bpe_ = bpe_default_two(op);
  }
  double flops() const override { return static_cast<double>(5 * batch_ * vocab_); }
  std::optional<double> bytes() const override {
    return static_cast<double>(prod(logits_) * bpe_ + batch_ * 8 + batch_ * 4);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_; }

 private:
  Shape logits_;
  int64_t batch_, vocab_;
  int bpe_;
  std::string precision_;
};

}  // namespace

void register_misc_models(std::map<std::string_view, Factory>& out) {
  out["moe_dispatch"] = [](const OpInput& op) { return std::make_unique<MoEComm>(op); };
  out["moe_combine"] = [](const OpInput& op) { return std::make_unique<MoEComm>(op); };
  out["causal_conv1d_fwd"] = [](const OpInput& op) { return std::make_unique<CausalConv1d>(op); };
  out["fused_rope_fwd"] = [](const OpInput& op) { return std::make_unique<FusedRope>(op); };
  out["cross_entropy_fwd"] = [](const OpInput& op) { return std::make_unique<CrossEntropy>(op); };
}

}  // namespace jarvis::perf::detail
