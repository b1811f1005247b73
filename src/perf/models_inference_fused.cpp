// Perf models of TraceLens's inference extensions for custom collectives
// (custom_collectives_perf_model_extensions.py) and the AITER mHC
// (manifold-constrained hyper-connection) kernels plus the top-k softplus
// router (perf_model_extensions.py). Collectives count the per-GPU HBM
// traffic of the local read and write (the inter-GPU transfer is not on the
// roofline); they define no MAF type or precision, so their Compute Spec is
// empty as in TraceLens.
#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// Neither family defines backward methods (Python AttributeError).
class NoBackwardModel : public PerfModel {
 public:
  double flops_bwd() const override { fail(std::string(model_name()) + " has no flops_bwd"); }
  std::optional<double> bytes_bwd() const override {
    fail(std::string(model_name()) + " has no bytes_bwd");
  }
};

// `n * name2bpe(dtype)`: a dtype without a byte size is a TypeError.
int64_t required_bpe(const PyValue& dtype) {
  std::optional<int> b = bpe_of(dtype);
  if (!b) fail("dtype " + dtype.repr_tuple() + " has no byte size (NoneType operand)");
  return *b;
}

class CustomCollective : public NoBackwardModel {
 public:
  std::string maf_type() const override { return ""; }
  std::string precision() const override { return ""; }
};

// aiter::fused_allreduce_rmsnorm(ptr, reg, inp, res_inp, res_out, out, w,
// eps, ...) with inp at 2 and w at 6; aiter::fused_allreduce_rmsnorm_(inp,
// res_inp, w, eps, ...) with inp at 0 and w at 2. FLOPs: the residual add
// plus an affine RMSNorm in integer arithmetic; bytes: inp, res_inp and w
// read, res_out and out written.
class FusedAllreduceRmsnorm : public CustomCollective {
 public:
  FusedAllreduceRmsnorm(const OpInput& op, size_t input, size_t weight) {
    Shape shape = dims_at(op, input);
    dtype_ = type_at(op, input);
    PyValue stride = strides_at(op, input);
    channels_ = dim(dims_at(op, weight), 0, "weight");
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in", dtype_);
    add(params_, "stride_input", stride);
    add(params_, "num_channels", int_value(channels_));
    n_ = prod(shape);
  }
  double flops() const override {
    PyInt rows = floordiv(n_, channels_);
    return static_cast<double>(PyInt(n_) + rows * (2 * PyInt(channels_) + 2) + PyInt(n_) * 2);
  }
  std::optional<double> bytes() const override {
    int64_t b = required_bpe(dtype_);
    PyInt n = n_;
    return static_cast<double>(2 * n * b + PyInt(channels_) * b + 2 * n * b);
  }

 private:
  PyValue dtype_;
  int64_t n_ = 0, channels_ = 0;
};

// _C_custom_ar::all_reduce, _C_custom_ar::qr_all_reduce,
// sgl_kernel::all_reduce_reg, sgl_kernel::qr_all_reduce: (fa, inp, out,
// ...); inp read and out written, no FLOPs.
class AllReduce : public CustomCollective {
 public:
  explicit AllReduce(const OpInput& op) {
    Shape shape = dims_at(op, 1);
    dtype_ = type_at(op, 1);
    PyValue stride = strides_at(op, 1);
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in", dtype_);
    add(params_, "stride_input", stride);
    n_ = prod(shape);
  }
  double flops() const override { return 0; }
  std::optional<double> bytes() const override {
    return static_cast<double>(2 * PyInt(n_) * required_bpe(dtype_));
  }

 private:
  PyValue dtype_;
  int64_t n_ = 0;
};

// aiter::reduce_scatter / aiter::all_gather_reg(fa, inp, out, ...) and
// sglang::reg_all_gather_into_tensor(out, inp, fa): the local input read and
// the output written (a shard or the gathered tensor), no FLOPs.
class ShardCollective : public CustomCollective {
 public:
  ShardCollective(const OpInput& op, bool out_first) {
    if (out_first) {
      Shape out = dims_at(op, 0), in = dims_at(op, 1);
      dtype_ = type_at(op, 0);
      add(params_, "out_shape", tuple_value(out));
      add(params_, "op_shape", tuple_value(in));
      add(params_, "dtype_in", dtype_);
      n_in_ = prod(in);
      n_out_ = prod(out);
      return;
    }
    Shape in = dims_at(op, 1), out = dims_at(op, 2);
    dtype_ = type_at(op, 1);
    PyValue stride = strides_at(op, 1);
    add(params_, "op_shape", tuple_value(in));
    add(params_, "out_shape", tuple_value(out));
    add(params_, "dtype_in", dtype_);
    add(params_, "stride_input", stride);
    n_in_ = prod(in);
    n_out_ = prod(out);
  }
  double flops() const override { return 0; }
  std::optional<double> bytes() const override {
    return static_cast<double>((PyInt(n_in_) + n_out_) * required_bpe(dtype_));
  }

 private:
  PyValue dtype_;
  int64_t n_in_ = 0, n_out_ = 0;
};

// ---- mHC family (M tokens, n streams of C channels, K = n*C, hc3 = n^2+2n
// projection rows, split_k partials; mixes and projections in FP32) ----

class Mhc : public NoBackwardModel {
 public:
  enum class Kind { Post, PreGemmSqrsum, PreBigFuseRmsnorm, FusedPostPreGemmSqrsum, TopkSoftplus };

  Mhc(const OpInput& op, Kind kind) : kind_(kind) {
    const PyValue* types = op.input_type;
    size_t ntypes = types && types->is_list() ? types->size() : 0;
    auto dtype_at = [&](size_t i) {
      return ntypes > i ? types->list[i] : str_value("c10::BFloat16");
    };
    switch (kind) {
      case Kind::Post: {
        Shape x = dims_at(op, 1);
        m_ = dim(x, 0, "x");
        c_ = dim(x, 1, "x");
        n_ = dim(dims_at(op, 0), 1, "out");
        dtype_ = dtype_at(1);
        add_mnc();
        add(params_, "hc3", PyValue::none());
        break;
      }
      case Kind::PreGemmSqrsum: {
        Shape x = dims_at(op, 2), fn = dims_at(op, 3);
        m_ = dim(x, 0, "x");
        n_ = dim(x, 1, "x");
        c_ = dim(x, 2, "x");
        hc3_ = dim(fn, 0, "fn");
        k_ = dim(fn, 1, "fn");
        split_k_ = dim(dims_at(op, 0), 0, "out");
        dtype_ = dtype_at(2);
        add_mnc();
        add(params_, "hc3", int_value(hc3_));
        add(params_, "K", int_value(k_));
        add(params_, "split_k", int_value(split_k_));
        break;
      }
      case Kind::PreBigFuseRmsnorm: {
        Shape out = dims_at(op, 2);
        m_ = dim(out, 0, "out");
        c_ = dim(out, 1, "out");
        n_ = dim(dims_at(op, 0), 1, "post_mix");
        hc3_ = dim(dims_at(op, 6), 0, "hc_base");
        split_k_ = dim(dims_at(op, 3), 0, "gemm_out_mul");
        dtype_ = dtype_at(7);
        add_mnc();
        add(params_, "hc3", int_value(hc3_));
        add(params_, "split_k", int_value(split_k_));
        break;
      }
      case Kind::FusedPostPreGemmSqrsum: {
        Shape layer = dims_at(op, 3);
        m_ = dim(layer, 0, "layer_input");
        c_ = dim(layer, 1, "layer_input");
        n_ = dim(dims_at(op, 2), 1, "next_residual");
        Shape fn = dims_at(op, 7);
        hc3_ = dim(fn, 0, "fn");
        k_ = dim(fn, 1, "fn");
        split_k_ = dim(dims_at(op, 0), 0, "gemm_out_mul");
        dtype_ = dtype_at(3);
        add_mnc();
        add(params_, "hc3", int_value(hc3_));
        add(params_, "K", int_value(k_));
        add(params_, "split_k", int_value(split_k_));
        break;
      }
      case Kind::TopkSoftplus: {
        Shape gating = dims_at(op, 2);
        m_ = dim(gating, 0, "gating_output");
        c_ = dim(gating, 1, "gating_output");  // E
        n_ = 1;
        k_ = dim(dims_at(op, 0), 1, "topk_weights");  // topk
        dtype_ = dtype_at(2);
        add_mnc();
        add(params_, "E", int_value(c_));
        add(params_, "topk", int_value(k_));
        break;
      }
    }
    add(params_, "dtype_in", dtype_);
  }

  double flops() const override {
    PyInt m = m_, n = n_, c = c_;
    switch (kind_) {
      case Kind::Post:
        return static_cast<double>(2 * m * n * c * (n + 1));
      case Kind::PreGemmSqrsum:
        return static_cast<double>(2 * m * hc3_ * k_);
      case Kind::PreBigFuseRmsnorm:
        return static_cast<double>(2 * m * c * n + 5 * m * c);
      case Kind::FusedPostPreGemmSqrsum:
        return static_cast<double>(2 * m * n * c * (n + 1) + 2 * m * hc3_ * k_);
      case Kind::TopkSoftplus:
        return static_cast<double>(6 * m * c);
    }
    return 0;
  }
  std::optional<double> bytes() const override {
    std::optional<int> bpe = bpe_of(dtype_);
    if (!bpe) return std::nullopt;
    PyInt m = m_, n = n_, c = c_, b = *bpe;
    PyInt mixes = m * n * 4 + m * n * n * 4;
    PyInt mnc = m * n * c * b;
    switch (kind_) {
      case Kind::Post:  // x, residual and mixes read; next residual written
        return static_cast<double>(m * c * b + mnc + mixes + mnc);
      case Kind::PreGemmSqrsum:  // residual and fn read; partials and square sums written
        return static_cast<double>(mnc + PyInt(hc3_) * k_ * 4 + PyInt(split_k_) * m * hc3_ * 4 +
                                   PyInt(split_k_) * m * 4);
      case Kind::PreBigFuseRmsnorm:  // residual, partials, weight read; layer input, mixes written
        return static_cast<double>(mnc + PyInt(split_k_) * m * hc3_ * 4 + c * b + m * c * b +
                                   mixes);
      case Kind::FusedPostPreGemmSqrsum:
        return static_cast<double>(m * c * b + mnc + mnc + mnc + mixes + PyInt(hc3_) * k_ * 4 +
                                   (PyInt(split_k_) * m * hc3_ * 4 + PyInt(split_k_) * m * 4));
      case Kind::TopkSoftplus:  // logits and bias read; fp32 weights and int32 ids written
        return static_cast<double>(m * c * b + c * 4 + m * k_ * 4 + m * k_ * 4);
    }
    return std::nullopt;
  }
  std::string maf_type() const override {
    return kind_ == Kind::PreGemmSqrsum || kind_ == Kind::FusedPostPreGemmSqrsum ? "matrix"
                                                                                 : "vector";
  }
  std::string precision() const override {
    return truthy(dtype_) ? precision_of_value(dtype_) : "";
  }

 private:
  void add_mnc() {
    add(params_, "M", int_value(m_));
    add(params_, "n", int_value(n_));
    add(params_, "C", int_value(c_));
  }

  Kind kind_;
  int64_t m_ = 0, n_ = 0, c_ = 0, hc3_ = 0, k_ = 0, split_k_ = 0;
  PyValue dtype_;
};

}  // namespace

void register_inference_fused_models(std::map<std::string_view, Factory>& out) {
  out["aiter_fused_allreduce_rmsnorm"] = [](const OpInput& op) {
    return std::make_unique<FusedAllreduceRmsnorm>(op, 2, 6);
  };
  out["aiter_fused_allreduce_rmsnorm_"] = [](const OpInput& op) {
    return std::make_unique<FusedAllreduceRmsnorm>(op, 0, 2);
  };
  for (std::string_view cls : {"custom_ar_all_reduce", "sgl_kernel_all_reduce_reg",
                               "sgl_kernel_qr_all_reduce", "custom_ar_qr_all_reduce"})
    out[cls] = [](const OpInput& op) { return std::make_unique<AllReduce>(op); };
  for (std::string_view cls : {"aiter_reduce_scatter", "aiter_all_gather_reg"})
    out[cls] = [](const OpInput& op) { return std::make_unique<ShardCollective>(op, false); };
  out["sgl_kernel_reg_all_gather_into_tensor"] = [](const OpInput& op) {
    return std::make_unique<ShardCollective>(op, true);
  };
  using K = Mhc::Kind;
  auto mhc = [&](const char* cls, K kind) {
    out[cls] = [kind](const OpInput& op) { return std::make_unique<Mhc>(op, kind); };
  };
  mhc("mhc_post", K::Post);
  mhc("mhc_pre_gemm_sqrsum", K::PreGemmSqrsum);
  mhc("mhc_pre_big_fuse_rmsnorm", K::PreBigFuseRmsnorm);
  mhc("mhc_fused_post_pre_gemm_sqrsum", K::FusedPostPreGemmSqrsum);
  mhc("topk_softplus", K::TopkSoftplus);
}

}  // namespace jarvis::perf::detail
