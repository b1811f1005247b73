// Perf models of TraceLens's inference extensions (SGLang, vLLM, AITER ops)
// that are pure data movement or light elementwise math: the KV-cache
// store and rotary embeddings. Formulas and parameter names follow
// TraceLens's extension models so the InferenceAttention_fwd / RoPE_fwd
// sheets match its reports.
#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// sglang::store_cache(k, v, k_cache, v_cache, indices, ...): scatter-copy of
// the new K/V rows into the paged cache. No math; reads k and v, writes the
// same number of rows of k_cache and v_cache: 4 * nelems(k) * bpe.
class SglangStoreCache : public PerfModel {
 public:
  explicit SglangStoreCache(const OpInput& op) {
    Shape k = dims_at(op, 0);
    dtype_ = type_at(op, 0);
    nelems_ = prod(k);
    add(params_, "op_shape", tuple_value(k));
    add(params_, "nelems", int_value(nelems_));
    add(params_, "dtype", dtype_value(dtype_));
  }
  double flops() const override { return 0; }
  std::optional<double> bytes() const override {
    return 4.0 * static_cast<double>(nelems_) * bpe_of(dtype_).value_or(2);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype_); }

 private:
  PyValue dtype_;
  PyInt nelems_ = 0;
};

// sgl_kernel::rotary_embedding(positions, query, key, head_size,
// cos_sin_cache, is_neox): in-place rotate-half RoPE of the rot_dim slice of
// every q and k head. ~3 FLOPs per rotated element; each is read and written.
class SglRotaryEmbedding : public PerfModel {
 public:
  explicit SglRotaryEmbedding(const OpInput& op) {
    Shape q = dims_at(op, 1), k = dims_at(op, 2);
    if (q.size() < 2 || k.size() < 2) fail("query/key dims need 2 entries");
    int64_t head_size = q.back();
    if (arg_size(op.concrete_inputs) > 3) {
      std::string h = concrete_str(op, 3);
      if (h.find_first_not_of(" \t") != std::string::npos)
        head_size = to_int(PyValue::integer(static_cast<int64_t>(
                               python_float(concrete_at(op, 3), "Concrete Inputs[3] (head_size)"))),
                           "head_size");
    }
    if (head_size <= 0) fail("head_size must be positive");
    int64_t rot_dim = head_size;
    if (arg_size(op.input_dims) > 4) {
      Shape cache = dims_at(op, 4);
      if (cache.size() > 1) rot_dim = cache[1];
    }
    elements_ = q[0] * (q[1] / head_size + k[1] / head_size) * rot_dim;
    dtype_ = type_at(op, 1);
    add(params_, "num_elements", int_value(elements_));
  }
  double flops() const override { return 3.0 * static_cast<double>(elements_); }
  std::optional<double> bytes() const override {
    return 2.0 * static_cast<double>(elements_) * bpe_of(dtype_).value_or(2);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype_); }

 private:
  PyValue dtype_;
  PyInt elements_ = 0;
};

// TraceLens's FusedRoPE base: bytes per element from Input type[0] (2 when
// absent, empty or unknown), precision from the same dtype.
int rope_bpe(const OpInput& op) {
  if (arg_size(op.input_type) == 0) return 2;
  const PyValue& d = op.input_type->list[0];
  std::optional<int> b = truthy(d) ? bpe_of(d) : std::nullopt;
  return b ? *b : 2;
}
std::string rope_precision(const OpInput& op) {
  if (arg_size(op.input_type) == 0) return "";
  const PyValue& d = op.input_type->list[0];
  return truthy(d) ? precision_of_value(d) : "";
}

// FusedRoPE-derived models have no backward methods (AttributeError).
class RopeBase : public PerfModel {
 public:
  double flops_bwd() const override { fail(std::string(model_name()) + " has no flops_bwd"); }
  std::optional<double> bytes_bwd() const override {
    fail(std::string(model_name()) + " has no bytes_bwd");
  }
  std::string maf_type() const override { return "vector"; }
};

// aiter::rope_cached_positions_2c_fwd_impl(out_x, out_y, in_x, in_y, cos,
// sin, positions, ...): rotates both channels; 3 FLOPs per element of in_x
// and in_y, each read and written.
class RopeCachedPositions2c : public RopeBase {
 public:
  explicit RopeCachedPositions2c(const OpInput& op)
      : bpe_(rope_bpe(op)), precision_(rope_precision(op)) {
    Shape x = dims_at(op, 2), y = dims_at(op, 3);
    elements_ = PyInt(prod(x)) + prod(y);
    add(params_, "x_shape", tuple_value(x));
    add(params_, "y_shape", tuple_value(y));
    add(params_, "num_elements", int_value(elements_));
  }
  double flops() const override { return static_cast<double>(3 * elements_); }
  std::optional<double> bytes() const override { return static_cast<double>(2 * elements_ * bpe_); }
  std::string precision() const override { return precision_; }

 private:
  int bpe_;
  std::string precision_;
  PyInt elements_ = 0;
};

// MLA RoPE + KV-cache write: aiter::fused_qk_rope_cat_and_cache_mla(q_nope
// (T, QH, D_lora), q_pe (T, QH, D_pe), k_nope (T, KH, D_lora), k_pe,
// kv_cache, ...) and aiter::fused_qk_rope_concat_and_cache_mla(q_nope, q_pe,
// kv_c (T, D_lora), k_pe (T, D_pe), kv_cache, q_out, ...) with one latent KV
// head. 3 FLOPs per rotated (pe) element of Q and K; reads Q and K, writes
// the concatenated Q (q_out dtype) and the T new cache rows (cache dtype).
class MlaRopeCache : public RopeBase {
 public:
  MlaRopeCache(const OpInput& op, bool concat) : concat_(concat) {
    Shape q_nope = dims_at(op, 0), q_pe = dims_at(op, 1);
    if (q_nope.size() != 3) fail("q_nope: expected 3 dims (T, QH, D_lora)");
    t_ = q_nope[0];
    qh_ = q_nope[1];
    d_lora_ = q_nope[2];
    d_pe_ = dim(q_pe, 2, "q_pe");
    kh_ = concat ? 1 : dim(dims_at(op, 2), 1, "Input Dims[2]");
    size_t ntypes = arg_size(op.input_type);
    dtype_in_ = type_at(op, 0);
    dtype_kv_ = ntypes > 4 && truthy(op.input_type->list[4]) ? op.input_type->list[4] : dtype_in_;
    dtype_out_ = ntypes > 5 && truthy(op.input_type->list[5]) ? op.input_type->list[5] : dtype_in_;
    add(params_, "T", int_value(t_));
    add(params_, "QH", int_value(qh_));
    add(params_, "KH", int_value(kh_));
    add(params_, "D_lora", int_value(d_lora_));
    add(params_, "D_pe", int_value(d_pe_));
    add(params_, "dtype_in", dtype_in_);
    add(params_, "dtype_kv", dtype_kv_);
    if (concat) add(params_, "dtype_out", dtype_out_);
  }
  double flops() const override {
    PyInt t = t_;
    return static_cast<double>(3 * (t * qh_ * d_pe_ + t * kh_ * d_pe_));
  }
  std::optional<double> bytes() const override {
    std::optional<int> in = bpe_of(dtype_in_);
    if (!in) return std::nullopt;
    int out = *in;
    if (concat_) {
      // `name2bpe(dtype_out) or bpe_in`
      std::optional<int> o = bpe_of(dtype_out_);
      if (o && *o != 0) out = *o;
    }
    int kv = bpe_of(dtype_kv_).value_or(*in);
    PyInt t = t_, d = PyInt(d_lora_) + d_pe_;
    PyInt read_q = (t * qh_ * d_lora_ + t * qh_ * d_pe_) * *in;
    PyInt read_k = (t * kh_ * d_lora_ + t * kh_ * d_pe_) * *in;
    PyInt write_q = t * qh_ * d * out;
    PyInt write_kv = t * kh_ * d * kv;
    return static_cast<double>(read_q + read_k + write_q + write_kv);
  }
  std::string precision() const override { return precision_of_value(dtype_in_); }

 private:
  bool concat_;
  int64_t t_ = 0, qh_ = 0, kh_ = 0, d_lora_ = 0, d_pe_ = 0;
  PyValue dtype_in_, dtype_kv_, dtype_out_;
};

// aiter::mixed_sample_outer_exponential(out, logits (T, V), exp_noise, ...):
// argmax of logits / noise per row; 2 FLOPs per logit, reads logits and
// noise, writes one int32 token id per row.
class MixedSampleOuterExponential : public PerfModel {
 public:
  explicit MixedSampleOuterExponential(const OpInput& op) {
    Shape logits = dims_at(op, 1);
    t_ = logits.size() >= 1 ? logits[0] : 1;
    v_ = logits.size() >= 2 ? logits[1] : 1;
    size_t ntypes = arg_size(op.input_type);
    if (op.input_type == nullptr || !op.input_type->is_list()) fail("Input type is missing");
    dtype_logits_ = ntypes > 1 ? op.input_type->list[1] : str_value("c10::bfloat16");
    dtype_noise_ = ntypes > 2 ? op.input_type->list[2] : str_value("float");
    add(params_, "T", int_value(t_));
    add(params_, "V", int_value(v_));
    add(params_, "dtype_logits", dtype_logits_);
    add(params_, "dtype_noise", dtype_noise_);
  }
  double flops() const override { return static_cast<double>(2 * PyInt(t_) * v_); }
  std::optional<double> bytes() const override {
    std::optional<int> bl = bpe_of(dtype_logits_), bn = bpe_of(dtype_noise_);
    if (!bl || !bn) return std::nullopt;
    PyInt tv = PyInt(t_) * v_;
    return static_cast<double>(tv * *bl + tv * *bn + PyInt(t_) * 4);
  }
  double flops_bwd() const override { fail(std::string(model_name()) + " has no flops_bwd"); }
  std::optional<double> bytes_bwd() const override {
    fail(std::string(model_name()) + " has no bytes_bwd");
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override {
    return truthy(dtype_logits_) ? precision_of_value(dtype_logits_) : "";
  }

 private:
  int64_t t_ = 1, v_ = 1;
  PyValue dtype_logits_, dtype_noise_;
};

}  // namespace

void register_inference_models(std::map<std::string_view, Factory>& out) {
  out["sglang_store_cache"] = [](const OpInput& op) {
    return std::make_unique<SglangStoreCache>(op);
  };
  out["aiter_rope_cached_positions_2c_fwd_impl"] = [](const OpInput& op) {
    return std::make_unique<RopeCachedPositions2c>(op);
  };
  out["aiter_fused_qk_rope_cat_and_cache_mla"] = [](const OpInput& op) {
    return std::make_unique<MlaRopeCache>(op, false);
  };
  out["fused_qk_rope_concat_and_cache_mla"] = [](const OpInput& op) {
    return std::make_unique<MlaRopeCache>(op, true);
  };
  out["mixed_sample_outer_exponential"] = [](const OpInput& op) {
    return std::make_unique<MixedSampleOuterExponential>(op);
  };
  out["sgl_kernel_rotary_embedding"] = [](const OpInput& op) {
    return std::make_unique<SglRotaryEmbedding>(op);
  };
}

}  // namespace jarvis::perf::detail
