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

}  // namespace

void register_inference_models(std::map<std::string_view, Factory>& out) {
  out["sglang_store_cache"] = [](const OpInput& op) {
    return std::make_unique<SglangStoreCache>(op);
  };
  out["sgl_kernel_rotary_embedding"] = [](const OpInput& op) {
    return std::make_unique<SglRotaryEmbedding>(op);
  };
}

}  // namespace jarvis::perf::detail
