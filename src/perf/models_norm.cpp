// Normalization family (spec perf-models.md §5.5): batch / layer / group /
// instance / RMS norms and their backward ops.
//
// Quirks kept from TraceLens: "is not None" tests on Input Dims entries are
// always true (Kineto writes [] rather than null), so is_affine / has_bias
// are always true; BatchNorm / InstanceNorm is_training is the truthiness of
// the *string* concrete input, so "False" counts as training; GroupNormBwd's
// channel count is a float.
#include <cmath>

#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// "x is not None" on an Input Dims entry (present and not a JSON null).
bool present_not_none(const OpInput& op, size_t i) {
  return !arg_at(op.input_dims, "Input Dims", i).is_none();
}

class NormModel : public PerfModel {
 public:
  double flops() const override {
    if (backward_op_) return flops_backward();
    double c = channels_;
    // Python: C*3 [+ N*3] + C*3 + 2N, ints unless C is a float.
    double total = c * 3;
    if (training_) total += static_cast<double>(n_) * 3;
    total += c * 3;
    return total + 2 * static_cast<double>(n_);
  }
  std::optional<double> bytes() const override {
    if (backward_op_) return bytes_backward();
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    int w = 2 + (affine_ ? 1 + (has_bias_ ? 1 : 0) : 0) + (training_ ? 2 : 0);
    return static_cast<double>(n_) * *bpe_in_ + static_cast<double>(n_) * *bpe_out_ +
           w * channels_ * *bpe_in_;
  }
  double flops_bwd() const override {
    if (!bwd_pass_defined_) return PerfModel::flops_bwd();
    return flops_backward();
  }
  std::optional<double> bytes_bwd() const override {
    if (!bwd_pass_defined_) return PerfModel::bytes_bwd();
    return bytes_backward();
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype_in_); }

 protected:
  double flops_backward() const {
    double per_channel_elems = static_cast<double>(n_) / channels_;
    double per_channel = training_ ? 0 : 3;
    per_channel += 4 * per_channel_elems;
    if (mask0()) {
      if (training_) per_channel += 5 * per_channel_elems;
    } else {
      per_channel += 2 * per_channel_elems;
    }
    return channels_ * per_channel;
  }
  std::optional<double> bytes_backward() const {
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    double n = static_cast<double>(n_), c = channels_;
    double total = n * *bpe_out_ + n * *bpe_in_ * ((mask0() && training_) ? 2 : 1);
    if (training_) total += c * *bpe_in_;
    if (affine_) {
      total += c * *bpe_in_;
      if (training_) total += c * *bpe_in_ * (has_bias_ ? 2 : 1);
    }
    return total;
  }
  // output_mask[0]; forward classes keep TraceLens's default string "[False]",
  // whose first character '[' is truthy.
  bool mask0() const { return output_mask_.empty() ? true : output_mask_[0]; }

  // Common params: op_shape, dtype_in_out, stride_input, stride_output,
  // num_channels, has_bias, is_affine, is_training [, output_mask].
  void set_common(const Shape& shape, const PyValue& dtype, const PyValue& stride, PyValue channels,
                  bool has_bias, bool affine, bool training) {
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in_out", tuple_of({dtype, PyValue::none()}));
    add(params_, "stride_input", stride);
    add(params_, "stride_output", PyValue::none());
    channels_ = channels.as_double();
    add(params_, "num_channels", std::move(channels));
    add(params_, "has_bias", bool_value(has_bias));
    add(params_, "is_affine", bool_value(affine));
    add(params_, "is_training", bool_value(training));
    n_ = prod(shape);
    dtype_in_ = dtype;
    bpe_in_ = bpe_of(dtype);
    bpe_out_ = bpe_in_;
    has_bias_ = has_bias;
    affine_ = affine;
    training_ = training;
  }
  void set_mask(const std::vector<bool>& mask) {
    output_mask_ = mask;
    std::vector<PyValue> v;
    for (bool b : mask) v.push_back(bool_value(b));
    add(params_, "output_mask", PyValue::make_list(std::move(v)), true);
  }

  PyInt n_ = 0;
  double channels_ = 0;
  bool has_bias_ = false, affine_ = false, training_ = false;
  bool backward_op_ = false, bwd_pass_defined_ = false;
  std::vector<bool> output_mask_;
  PyValue dtype_in_;
  std::optional<int> bpe_in_, bpe_out_;
};

int64_t prod_literal(const OpInput& op, size_t ci, const char* what) {
  PyInt p = 1;
  for (int64_t v : int_list(literal_list(concrete_at(op, ci), what), what)) p *= v;
  return p.to_int64();
}

int64_t dim1(const Shape& s) {
  if (s.size() < 2) throw PerfModelError("norm input has fewer than 2 dims");
  return s[1];
}

class BatchNorm : public NormModel {
 public:
  explicit BatchNorm(const OpInput& op) {
    Shape s = dims_at(op, 0);
    PyValue d = type_at(op, 0), st = strides_at(op, 0);
    bool affine = present_not_none(op, 2);
    bool training = truthy(concrete_at(op, 5));
    set_common(s, d, st, int_value(dim1(s)), true, affine, training);
  }
};

class BatchNormBwd : public NormModel {
 public:
  explicit BatchNormBwd(const OpInput& op) {
    backward_op_ = bwd_pass_defined_ = true;
    bool fused = op.name == "aten::cudnn_batch_norm_backward" ||
                 op.name == "aten::miopen_batch_norm_backward";
    size_t in = fused ? 0 : 1;
    bool has_output = fused ? true : !arg_at(op.input_dims, "Input Dims", 0).is_none();
    bool training = fused ? false : truthy(concrete_at(op, 7));
    Shape s = dims_at(op, in);
    int64_t c = dim1(s);
    PyValue d = type_at(op, in), st = strides_at(op, in);
    bool affine = present_not_none(op, 2);
    set_common(s, d, st, int_value(c), true, affine, training);
    set_mask({has_output});
  }
};

class LayerNorm : public NormModel {
 public:
  explicit LayerNorm(const OpInput& op) {
    Shape s = dims_at(op, 0);
    int64_t c = prod_literal(op, 1, "normalized_shape");
    bool has_bias = present_not_none(op, 3);
    PyValue d = type_at(op, 0), st = strides_at(op, 0);
    bool affine = present_not_none(op, 2);
    set_common(s, d, st, int_value(c), has_bias, affine, true);
  }
};

class LayerNormBwd : public NormModel {
 public:
  explicit LayerNormBwd(const OpInput& op) {
    backward_op_ = bwd_pass_defined_ = true;
    Shape s = dims_at(op, 1);
    int64_t c = prod_literal(op, 2, "normalized_shape");
    PyValue d = type_at(op, 1), st = strides_at(op, 1);
    std::vector<bool> mask = bool_list(literal_list(concrete_at(op, 7), "output_mask"));
    if (mask.size() < 3) throw PerfModelError("output_mask has fewer than 3 entries");
    set_common(s, d, st, int_value(c), mask[2], mask[1], true);
    set_mask(mask);
  }
};

class GroupNorm : public NormModel {
 public:
  explicit GroupNorm(const OpInput& op) {
    Shape s = dims_at(op, 0);
    PyValue d = type_at(op, 0), st = strides_at(op, 0);
    bool affine = present_not_none(op, 2);
    set_common(s, d, st, int_value(dim1(s)), true, affine, true);
  }
};

class GroupNormBwd : public NormModel {
 public:
  explicit GroupNormBwd(const OpInput& op) {
    backward_op_ = bwd_pass_defined_ = true;
    Shape s = dims_at(op, 1);
    PyValue d = type_at(op, 1), st = strides_at(op, 1);
    bool affine = present_not_none(op, 5);
    std::vector<bool> mask = bool_list(literal_list(concrete_at(op, 9), "output_mask"));
    int64_t groups = std::stoll(concrete_str(op, 8));
    if (groups == 0) throw PerfModelError("division by zero (groups)");
    set_common(s, d, st, float_value(static_cast<double>(dim1(s)) / static_cast<double>(groups)),
               true, affine, true);
    set_mask(mask);
  }
};

class InstanceNorm : public NormModel {
 public:
  explicit InstanceNorm(const OpInput& op) {
    Shape s = dims_at(op, 0);
    PyValue d = type_at(op, 0), st = strides_at(op, 0);
    bool affine = present_not_none(op, 2);
    bool training = truthy(concrete_at(op, 5));
    set_common(s, d, st, int_value(dim1(s)), true, affine, training);
  }
};

class RmsNorm : public NormModel {
 public:
  explicit RmsNorm(const OpInput& op) {
    Shape s = dims_at(op, 0);
    PyValue d = type_at(op, 0), st = strides_at(op, 0);
    bool affine = present_not_none(op, 2);
    int64_t c = prod_literal(op, 1, "normalized_shape");
    set_common(s, d, st, int_value(c), false, affine, false);
  }
  // The inference extensions' RMSNorm ops (aiter::rms_norm, aiter::rmsnorm):
  // the input at `input`, the affine weight's length at Input Dims[weight][0];
  // always affine, never training, same roofline as RMSNorm.
  RmsNorm(const OpInput& op, size_t input, size_t weight) {
    Shape s = dims_at(op, input);
    PyValue d = type_at(op, input), st = strides_at(op, input);
    Shape w = dims_at(op, weight);
    if (w.empty()) fail("Input Dims[" + std::to_string(weight) + "] (weight) is empty");
    set_common(s, d, st, int_value(w[0]), false, true, false);
  }
  double flops() const override {
    double rows = static_cast<double>(n_) / channels_;
    double total = rows * (2 * channels_ + 2);
    return total + static_cast<double>(n_ * (affine_ ? 2 : 1));
  }
  std::optional<double> bytes() const override {
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    double n = static_cast<double>(n_);
    return n * *bpe_in_ + n * *bpe_out_ + (affine_ ? channels_ * *bpe_in_ : 0);
  }
};

// Fused residual add + RMSNorm (aiter::rmsnorm2d_fwd_with_add_ck,
// aiter::add_rmsnorm): (out, input, residual_in, residual_out, weight, eps).
// Adds one FLOP per element; reads input, residual and weight, writes out
// and residual_out.
class AddRmsNorm : public RmsNorm {
 public:
  explicit AddRmsNorm(const OpInput& op) : RmsNorm(op, 1, 4) {}
  double flops() const override { return static_cast<double>(n_) + RmsNorm::flops(); }
  std::optional<double> bytes() const override {
    if (!bpe_in_) return std::nullopt;
    double n = static_cast<double>(n_);
    return 2 * n * *bpe_in_ + channels_ * *bpe_in_ + 2 * n * *bpe_in_;
  }
};

// The quantizing / padding RMSNorm extensions below share RmsNorm's
// parameters and FLOPs and add their own terms. `rows` is M = n // N and
// `width` N = the weight's length, both as Python ints.
class RmsNormExt : public RmsNorm {
 public:
  RmsNormExt(const OpInput& op, size_t input, size_t weight) : RmsNorm(op, input, weight) {
    width_ = dim(dims_at(op, weight), 0, "weight");
  }

 protected:
  int64_t rows() const { return floordiv(n_.to_int64(), width_); }
  // bpe of the input; Python fails with TypeError on None * int.
  int64_t bpe() const {
    if (!bpe_in_) fail("unsupported input dtype (no bytes per element)");
    return *bpe_in_;
  }
  // RMSNorm + quantization to 1-byte elements with `groups` FP32 scales per
  // row: reads input and weight, writes the quantized output and the scales.
  double quant_bytes(int64_t groups) const {
    PyInt n = n_, b = bpe();
    return static_cast<double>(n * b + PyInt(width_) * b + n * 1 + PyInt(rows()) * groups * 4);
  }

  int64_t width_ = 0;
};

// aiter::rmsnorm2d_fwd_with_dynamicquant_ck(out, input, yscale, weight, eps,
// ...): RMSNorm + per-token FP8 quant (2 FLOPs per element), one FP32 scale
// per row.
class RmsNormDynamicQuant : public RmsNormExt {
 public:
  explicit RmsNormDynamicQuant(const OpInput& op) : RmsNormExt(op, 1, 3) {}
  double flops() const override { return RmsNorm::flops() + 2 * static_cast<double>(n_); }
  std::optional<double> bytes() const override { return quant_bytes(1); }
};

// RMSNorm + per-group FP8 quant: aiter::rmsnorm_quant(out, input, scale,
// weight, eps, group_size, ...) reads group_size from Concrete Inputs[5]
// (0 when unreadable: one group per row); vllm::rocm_aiter_rmsnorm_fp8_group_quant
// (x, weight, eps, group_size) from Concrete Inputs[3], which must parse.
// With `with_add` (vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant(x,
// residual, weight, eps, group_size)) the residual add costs one more FLOP
// per element and the residual is read and written.
class RmsNormGroupQuant : public RmsNormExt {
 public:
  enum class Kind { Aiter, Vllm, VllmWithAdd };
  RmsNormGroupQuant(const OpInput& op, Kind kind)
      : RmsNormExt(op, kind == Kind::Aiter ? 1 : 0,
                   kind == Kind::Aiter ? 3 : (kind == Kind::Vllm ? 1 : 2)),
        with_add_(kind == Kind::VllmWithAdd) {
    if (kind == Kind::Aiter) {
      const PyValue* ci = op.concrete_inputs;
      std::optional<int64_t> gs;
      if (ci != nullptr && ci->is_list() && ci->size() > 5) gs = optional_int(ci->list[5]);
      group_size_ = gs.value_or(0);
      if (group_size_ <= 0) group_size_ = width_;
    } else {
      group_size_ = python_int(concrete_at(op, kind == Kind::Vllm ? 3 : 4), "group_size");
    }
  }
  double flops() const override {
    return RmsNorm::flops() + (with_add_ ? 3 : 2) * static_cast<double>(n_);
  }
  std::optional<double> bytes() const override {
    int64_t groups = floordiv(width_ + group_size_ - 1, group_size_);
    double total = quant_bytes(groups);
    // Residual read and updated residual written (bf16), Python's term order.
    if (with_add_) total += 2 * static_cast<double>(n_ * bpe());
    return total;
  }

 private:
  bool with_add_;
  int64_t group_size_ = 0;
};

// aiter::fused_add_rmsnorm_pad_ / vllm::rocm_aiter_triton_add_rmsnorm_pad(x,
// weight, eps, residual, x_pad_to_multiple): residual add + RMSNorm, the
// output padded on the hidden dim to a multiple of Concrete Inputs[4].
class AddRmsNormPad : public RmsNormExt {
 public:
  explicit AddRmsNormPad(const OpInput& op)
      : RmsNormExt(op, 0, 1), pad_(python_int(concrete_at(op, 4), "x_pad_to_multiple")) {
    n_out_ = pad_ > 0 ? floordiv(width_ + pad_ - 1, pad_) * pad_ : width_;
  }
  double flops() const override { return static_cast<double>(n_) + RmsNorm::flops(); }
  std::optional<double> bytes() const override {
    PyInt n = n_, b = bpe(), m = rows();
    return static_cast<double>(2 * n * b + PyInt(width_) * b + m * n_out_ * b + m * width_ * b);
  }

 private:
  int64_t pad_, n_out_ = 0;
};

// fused_rms_mxfp4_quant(x1, x1_weight, eps, x2, x2_weight, eps2, res1, ...):
// RMSNorm of x1 quantized to MXFP4 (0.5 B per element plus one E8M0 scale
// per 32), an optional residual add (res1 rank 2 at Input Dims[6]) and an
// optional second RMSNorm of x2 (rank 2 at Input Dims[3]).
class RmsMxfp4Quant : public RmsNormExt {
 public:
  explicit RmsMxfp4Quant(const OpInput& op) : RmsNormExt(op, 0, 1) {
    size_t n = arg_size(op.input_dims);
    if (n > 3) {
      Shape x2 = dims_at(op, 3);
      if (x2.size() == 2) {
        has_x2_ = true;
        n2_ = x2[1];
      }
    }
    if (n > 6 && dims_at(op, 6).size() == 2) has_res1_ = true;
  }
  double flops() const override {
    int64_t m = rows();
    double base = RmsNorm::flops();
    double total = base;
    if (has_res1_) total += static_cast<double>(PyInt(m) * width_);
    if (has_x2_) {
      // int(base * x2_elems / max(n, 1)): the x2 norm at x1's FLOPs per element.
      double x2_elems = static_cast<double>(PyInt(m) * n2_);
      double n = static_cast<double>(std::max<int64_t>(n_.to_int64(), 1));
      total += std::trunc(base * x2_elems / n);
    }
    return total + 2 * static_cast<double>(n_);
  }
  std::optional<double> bytes() const override {
    int64_t b = bpe();
    PyInt n = n_, m = rows();
    double total = static_cast<double>(n * b + PyInt(width_) * b) + static_cast<double>(n) * 0.5 +
                   static_cast<double>(floordiv(n.to_int64(), 32));
    if (has_res1_) {
      total += static_cast<double>(n * b);
      total += static_cast<double>(n * b);
    }
    if (has_x2_) {
      PyInt x2 = m * n2_;
      total += static_cast<double>(x2 * b);
      total += static_cast<double>(PyInt(n2_) * b);
      total += static_cast<double>(x2 * b);
    }
    return total;
  }

 private:
  bool has_x2_ = false, has_res1_ = false;
  int64_t n2_ = 0;
};

class RmsNormBwd : public NormModel {
 public:
  explicit RmsNormBwd(const OpInput& op) {
    bwd_pass_defined_ = true;
    Shape s = dims_at(op, 1);
    PyValue d = type_at(op, 1), st = strides_at(op, 1);
    bool affine = present_not_none(op, 4);
    int64_t c = prod_literal(op, 2, "normalized_shape");
    std::vector<bool> mask = bool_list(literal_list(concrete_at(op, 5), "output_mask"));
    set_common(s, d, st, int_value(c), false, affine, false);
    set_mask(mask);
  }
  double flops() const override { return flops_bwd(); }
  std::optional<double> bytes() const override { return bytes_bwd(); }
  double flops_bwd() const override {
    if (output_mask_.size() < 2) throw PerfModelError("output_mask has fewer than 2 entries");
    double rows = static_cast<double>(n_) / channels_;
    PyInt total = affine_ ? n_ : 0;
    total += n_;
    if (output_mask_[0]) total += 6 * n_;
    if (output_mask_[1] && affine_) {
      total += n_;
      if (rows > 1) total += n_;
    }
    return static_cast<double>(total);
  }
  std::optional<double> bytes_bwd() const override {
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    double n = static_cast<double>(n_);
    double total = n * *bpe_out_ + n * *bpe_in_ * 2;
    if (affine_) total += channels_ * *bpe_in_ * 2;
    return total;
  }
};

// primus::fused_ln_modulate (x = (T, B, H)) and its backward op.
class FusedLnModulate : public NormModel {
 public:
  FusedLnModulate(const OpInput& op, bool backward) : backward_(backward) {
    Shape s = dims_at(op, 0);
    if (s.size() < 3) throw PerfModelError("fused_ln_modulate: input is not (T, B, H)");
    PyValue d = type_at(op, 0);
    PyValue st =
        op.input_strides && arg_size(op.input_strides) > 0 ? strides_at(op, 0) : PyValue::none();
    set_common(s, d, st, int_value(s[2]), true, true, true);
    if (backward) set_mask({true, true, true});
    t_ = s[0];
    b_ = s[1];
  }
  double flops() const override { return static_cast<double>(n_ * (backward_ ? 15 : 12)); }
  std::optional<double> bytes() const override {
    if (!bpe_in_) throw PerfModelError("unsupported dtype for fused_ln_modulate");
    int64_t bpe = *bpe_in_, h = static_cast<int64_t>(channels_);
    if (!backward_)
      return static_cast<double>(n_ * bpe + n_ * bpe + 2 * b_ * h * bpe + 2 * t_ * b_ * 4);
    return static_cast<double>(2 * n_ * bpe + 2 * b_ * t_ * 4 + n_ * bpe + 2 * b_ * h * bpe +
                               b_ * h * bpe);
  }

 private:
  bool backward_;
  PyInt t_ = 0, b_ = 0;
};

}  // namespace

void register_norm_models(std::map<std::string_view, Factory>& out) {
  out["BatchNorm"] = [](const OpInput& op) { return std::make_unique<BatchNorm>(op); };
  out["BatchNormBwd"] = [](const OpInput& op) { return std::make_unique<BatchNormBwd>(op); };
  out["LayerNorm"] = [](const OpInput& op) { return std::make_unique<LayerNorm>(op); };
  out["LayerNormBwd"] = [](const OpInput& op) { return std::make_unique<LayerNormBwd>(op); };
  out["GroupNorm"] = [](const OpInput& op) { return std::make_unique<GroupNorm>(op); };
  out["GroupNormBwd"] = [](const OpInput& op) { return std::make_unique<GroupNormBwd>(op); };
  out["InstanceNorm"] = [](const OpInput& op) { return std::make_unique<InstanceNorm>(op); };
  out["InstanceNormBwd"] = [](const OpInput&) -> std::unique_ptr<PerfModel> {
    throw PerfNotImplemented("Backward pass for InstanceNorm is not defined.");
  };
  out["FusedLnModulate"] = [](const OpInput& op) {
    return std::make_unique<FusedLnModulate>(op, false);
  };
  out["FusedLnModulateBackward"] = [](const OpInput& op) {
    return std::make_unique<FusedLnModulate>(op, true);
  };
  out["RMSNorm"] = [](const OpInput& op) { return std::make_unique<RmsNorm>(op); };
  // aiter::rms_norm(x, weight, eps) and aiter::rmsnorm(out, input, weight, eps).
  out["aiter_rms_norm"] = [](const OpInput& op) { return std::make_unique<RmsNorm>(op, 0, 1); };
  out["aiter_rmsnorm"] = [](const OpInput& op) { return std::make_unique<RmsNorm>(op, 1, 2); };
  out["aiter_rmsnorm2d_fwd_with_add_ck"] = [](const OpInput& op) {
    return std::make_unique<AddRmsNorm>(op);
  };
  out["aiter_rmsnorm2d_fwd_with_dynamicquant_ck"] = [](const OpInput& op) {
    return std::make_unique<RmsNormDynamicQuant>(op);
  };
  using GQ = RmsNormGroupQuant::Kind;
  out["aiter_rmsnorm_quant"] = [](const OpInput& op) {
    return std::make_unique<RmsNormGroupQuant>(op, GQ::Aiter);
  };
  out["vllm_rocm_aiter_rmsnorm_fp8_group_quant"] = [](const OpInput& op) {
    return std::make_unique<RmsNormGroupQuant>(op, GQ::Vllm);
  };
  out["vllm_rocm_aiter_rmsnorm_with_add_fp8_group_quant"] = [](const OpInput& op) {
    return std::make_unique<RmsNormGroupQuant>(op, GQ::VllmWithAdd);
  };
  out["vllm_rocm_aiter_triton_add_rmsnorm_pad"] = [](const OpInput& op) {
    return std::make_unique<AddRmsNormPad>(op);
  };
  out["fused_rms_mxfp4_quant"] = [](const OpInput& op) {
    return std::make_unique<RmsMxfp4Quant>(op);
  };
  out["RMSNormBwd"] = [](const OpInput& op) { return std::make_unique<RmsNormBwd>(op); };
}

}  // namespace jarvis::perf::detail
