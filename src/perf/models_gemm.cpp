// GEMM family (spec perf-models.md §5.1): aten::mm / addmm / bmm / baddbmm /
// _scaled_mm, TransformerEngine and vLLM GEMMs.
//
// Work per matrix product M×K·K×N: 2MNK FLOPs (+MN for a bias) and the
// operands' bytes. Quirk kept from TraceLens: the bias traffic always counts
// N elements, whatever the real bias shape (addmm passes an M×N C).
#include <cctype>
#include <cmath>

#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

struct GemmShape {
  int64_t M = 0, N = 0, K = 0;
  bool bias = false;
};

PyInt gemm_flops(const GemmShape& g) {
  PyInt M = g.M, N = g.N, K = g.K;
  return 2 * M * N * K + (g.bias ? M * N : 0);
}

std::optional<PyInt> gemm_bytes_exact(const GemmShape& g, std::optional<int> a,
                                      std::optional<int> b, std::optional<int> bias,
                                      std::optional<int> out) {
  if (!a || !b || !bias || !out) return std::nullopt;
  PyInt M = g.M, N = g.N, K = g.K;
  return M * K * *a + K * N * *b + M * N * *out + (g.bias ? N : 0) * *bias;
}

std::optional<double> gemm_bytes(const GemmShape& g, std::optional<int> a, std::optional<int> b,
                                 std::optional<int> bias, std::optional<int> out) {
  auto total = gemm_bytes_exact(g, a, b, bias, out);
  if (!total) return std::nullopt;
  return static_cast<double>(*total);
}

class GemmModel : public PerfModel {
 public:
  double flops() const override { return static_cast<double>(batch_ * gemm_flops(shape_)); }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    const Param* p = find_param(params_, "dtype_A_B");
    if (p == nullptr || !p->value.is_list() || p->value.list.empty()) return "";
    return precision_of_value(p->value.list[0]);
  }
  // TraceLens's GEMM base computes backward FLOPs but its bytes_bwd needs an
  // argument the metric code never passes, so the backward pass fails.
  double flops_bwd() const override {
    if (bwd_not_implemented_) return PerfModel::flops_bwd();
    GemmShape in{shape_.M, shape_.K, shape_.N, false}, w{shape_.N, shape_.K, shape_.M, false};
    return static_cast<double>(gemm_flops(in) + gemm_flops(w) +
                               (shape_.bias ? PyInt(shape_.M) * shape_.N : 0));
  }
  std::optional<double> bytes_bwd() const override {
    if (bwd_not_implemented_) return PerfModel::bytes_bwd();
    throw PerfModelError("GEMM.bytes_bwd() missing 1 required positional argument");
  }

 protected:
  // Adds B (when the class did not) and the transpose flags, as the GEMM
  // base constructor does after get_param_details.
  void finish(const OpInput& op) {
    if (find_param(params_, "B") == nullptr) add(params_, "B", int_value(1));
    for (std::string_view k : op.kernel_names) {
      auto info = parse_gemm_kernel_name(k);
      if (!info) continue;
      auto flag = [](std::optional<bool> f) { return f ? bool_value(*f) : PyValue::none(); };
      add(params_, "transpose", tuple_of({flag(info->trans_a), flag(info->trans_b)}));
      break;
    }
    batch_ = to_int(find_param(params_, "B")->value, "B");
  }
  PyValue dtype_pair(const OpInput& op, size_t first) const {
    std::vector<PyValue> items;
    for (size_t i = first; i < first + 2 && i < arg_size(op.input_type); ++i)
      items.push_back(type_at(op, i));
    return tuple_of(std::move(items));
  }
  std::optional<int> dtype_bpe(size_t i) const {
    const PyValue& d = find_param(params_, "dtype_A_B")->value;
    if (i >= d.size()) throw PerfModelError("dtype_A_B index out of range");
    return bpe_of(d.list[i]);
  }
  // stride_A / stride_B: None when the trace has no Input Strides at all.
  void add_strides(const OpInput& op, size_t a, size_t b) {
    if (op.input_strides == nullptr) {
      add(params_, "stride_A", PyValue::none());
      add(params_, "stride_B", PyValue::none());
      return;
    }
    add(params_, "stride_A", strides_at(op, a));
    add(params_, "stride_B", strides_at(op, b));
  }
  void add_mnk(const GemmShape& g) {
    add(params_, "M", int_value(g.M));
    add(params_, "N", int_value(g.N));
    add(params_, "K", int_value(g.K));
    add(params_, "bias", bool_value(g.bias));
  }

  GemmShape shape_;
  int64_t batch_ = 1;
  bool bwd_not_implemented_ = true;
};

// aten::mm, TEv2 pseudo GEMMs: A = dims[0] (M×K), B = dims[1] (K×N).
class MmModel : public GemmModel {
 public:
  MmModel(const OpInput& op, bool out_bpe_two) : out_bpe_two_(out_bpe_two) {
    Shape a = dims_at(op, 0), b = dims_at(op, 1);
    if (a.size() < 2 || b.size() < 2) fail("mm: operands are not 2-D");
    shape_ = {a[0], b[1], a[1], false};
    add_mnk(shape_);
    add_strides(op, 0, 1);
    add(params_, "dtype_A_B", dtype_pair(op, 0));
    finish(op);
  }
  std::optional<double> bytes() const override {
    auto bpe = dtype_bpe(0);
    if (out_bpe_two_) {
      const PyValue& d = find_param(params_, "dtype_A_B")->value;
      if (d.size() < 2 || !(d.list[0] == d.list[1]))
        throw PerfModelError("Data types of A and B are different");
      return gemm_bytes(shape_, bpe, bpe, bpe, 2);
    }
    return gemm_bytes(shape_, bpe, bpe, bpe, bpe);
  }

 private:
  bool out_bpe_two_;
};

// aten::addmm: C = dims[0] (ignored), A = dims[1], B = dims[2]; bias always.
class AddmmModel : public GemmModel {
 public:
  explicit AddmmModel(const OpInput& op) {
    Shape a = dims_at(op, 1), b = dims_at(op, 2);
    if (a.size() < 2 || b.size() < 2) fail("addmm: operands are not 2-D");
    shape_ = {a[0], b[1], a[1], true};
    add_mnk(shape_);
    add_strides(op, 1, 2);
    add(params_, "dtype_A_B", dtype_pair(op, 1));
    finish(op);
  }
  std::optional<double> bytes() const override {
    auto bpe = dtype_bpe(0);
    return gemm_bytes(shape_, bpe, bpe, bpe, bpe);
  }
};

// aten::_scaled_mm and aliases. bias = (len(Input Dims) == 3); fp8 inputs
// write a 2-byte output.
class ScaledMmModel : public GemmModel {
 public:
  explicit ScaledMmModel(const OpInput& op) {
    Shape a = dims_at(op, 0), b = dims_at(op, 1);
    if (a.size() < 2 || b.size() < 2) fail("_scaled_mm: operands are not 2-D");
    shape_ = {a[0], b[1], a[1], arg_size(op.input_dims) == 3};
    add_mnk(shape_);
    add_strides(op, 0, 1);
    add(params_, "dtype_A_B", dtype_pair(op, 0));
    finish(op);
  }
  std::optional<double> bytes() const override {
    auto a = dtype_bpe(0), b = dtype_bpe(1);
    if (!a || !b) throw PerfModelError("Data types of A and B are not supported");
    std::optional<int> out;
    if (*a == 1)
      out = 2;
    else if (*a == 2 || *a == 4)
      out = *a;
    return gemm_bytes(shape_, a, a, a, out);
  }
};

// aten::bmm (A = (B, M, K), B = (B, K, N)) and aten::baddbmm (operands at 1, 2).
class BmmModel : public GemmModel {
 public:
  BmmModel(const OpInput& op, bool with_bias) {
    size_t ia = with_bias ? 1 : 0;
    Shape a = dims_at(op, ia), b = dims_at(op, ia + 1);
    if (a.size() != 3 || b.size() != 3) fail("bmm: operands are not 3-D");
    shape_ = {a[1], b[2], a[2], with_bias};
    add(params_, "B", int_value(a[0]));
    add_mnk(shape_);
    add_strides(op, ia, ia + 1);
    add(params_, "dtype_A_B", dtype_pair(op, ia));
    finish(op);
  }
  std::optional<double> bytes() const override {
    auto bpe = dtype_bpe(0);
    auto per_batch = gemm_bytes_exact(shape_, bpe, bpe, bpe, bpe);
    if (!per_batch) return std::nullopt;
    return static_cast<double>(batch_ * *per_batch);
  }
};

// vllm::gemm_with_dynamic_quant: first two 2-D shapes are x (M×K) and w (N×K).
class VllmDynQuantGemmModel : public GemmModel {
 public:
  explicit VllmDynQuantGemmModel(const OpInput& op) {
    bwd_not_implemented_ = false;
    std::optional<Shape> a, b;
    for (size_t i = 0; i < arg_size(op.input_dims) && !b; ++i) {
      const PyValue& d = op.input_dims->list[i];
      if (!d.is_list() || d.size() != 2) continue;
      (a ? b : a) = to_shape(d, "Input Dims");
    }
    if (!a || !b) fail("vllm::gemm_with_dynamic_quant missing 2D A,B shapes in Input Dims");
    if (arg_size(op.input_type) < 2)
      fail("vllm::gemm_with_dynamic_quant missing A,B dtypes in 'Input type'");
    shape_ = {(*a)[0], (*b)[0], (*a)[1], false};
    add_mnk(shape_);
    add_strides(op, 0, 1);
    add(params_, "dtype_A_B", dtype_pair(op, 0));
    finish(op);
  }
  std::optional<double> bytes() const override {
    auto bpe = dtype_bpe(0);
    return gemm_bytes(shape_, bpe, bpe, bpe, bpe);
  }
};

// tex_ts::te_gemm_ts: A = dims[0], B = dims[5]; transposes from ci[4], ci[9];
// bias when ci[14] is non-empty; per-operand dtypes (A, B, out, bias).
class TeGemmTsModel : public GemmModel {
 public:
  explicit TeGemmTsModel(const OpInput& op) {
    Shape a = dims_at(op, 0), b = dims_at(op, 5);
    dims_at(op, 10);
    bool trans_a = concrete_str(op, 4) == "1", trans_b = concrete_str(op, 9) == "1";
    if (a.size() < 2 || b.size() < 2) fail("te_gemm_ts: operands are not 2-D");
    shape_.M = trans_a ? a[0] : a[1];
    shape_.K = trans_a ? a[1] : a[0];
    shape_.N = trans_b ? b[1] : b[0];
    shape_.bias = !concrete_str(op, 14).empty();
    add_mnk(shape_);
    add_strides(op, 0, 5);
    add(params_, "dtype_A_B",
        tuple_of({type_at(op, 0), type_at(op, 5), type_at(op, 10), type_at(op, 18)}));
    finish(op);
  }
  std::optional<double> bytes() const override {
    return gemm_bytes(shape_, dtype_bpe(0), dtype_bpe(1), dtype_bpe(3), dtype_bpe(2));
  }
};

// Python parse_bool: "true"/"1" → True, "false"/"0"/"" → False, else truthiness.
bool parse_bool(const PyValue& v) {
  if (v.kind == PyValue::Kind::Bool) return v.b;
  if (v.is_none()) return false;
  if (v.is_string()) {
    std::string t;
    for (char c : v.s)
      if (!std::isspace(static_cast<unsigned char>(c)))
        t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t == "true" || t == "1") return true;
    if (t == "false" || t == "0" || t.empty()) return false;
  }
  return truthy(v);
}

// Strides that TraceLens reads under try/except (KeyError, IndexError).
PyValue strides_or_none(const OpInput& op, size_t i) {
  if (op.input_strides == nullptr || i >= arg_size(op.input_strides)) return PyValue::none();
  return strides_at(op, i);
}

PyValue type_or_none(const OpInput& op, size_t i) {
  return i < arg_size(op.input_type) ? op.input_type->list[i] : PyValue::none();
}

// hipBLASLt fp8 / fp4 GEMMs (Primus-Turbo): A = dims[0], B = dims[2]; the
// transC flag swaps the operands. fp4 tensors pack two values per byte, so
// the logical K is twice the recorded one; block scales add traffic.
class HipblasltGemm : public GemmModel {
 public:
  HipblasltGemm(const OpInput& op, bool fp4) : fp4_(fp4) { build(op, 0, 2, 1, 3, true); }
  // aiter::gemm_a4w4: fixed NT layout, operands at 0, 1, scales at 2, 3.
  // (It declares no backward, so the GEMM base backward applies.)
  HipblasltGemm(const OpInput& op, int) : fp4_(true) {
    bwd_not_implemented_ = false;
    build(op, 0, 1, 2, 3, false);
  }

  std::optional<double> bytes() const override {
    auto a = dtype_bpe(0), b = dtype_bpe(1);
    if (!a || !b) throw PerfModelError("Data types of A and B are not supported");
    if (!fp4_) return gemm_bytes(shape_, a, a, a, *a == 1 ? 2 : *a);
    const int64_t M = shape_.M, N = shape_.N, K = shape_.K;
    auto scale_bpe = [&](const char* name) {
      auto bpe = bpe_of(find_param(params_, name)->value);
      return bpe && *bpe ? *bpe : 1;
    };
    int64_t scales_per_row = (K + 31) / 32;
    return static_cast<double>(M * (K / 2) * *a + N * (K / 2) * *b +
                               M * scales_per_row * scale_bpe("dtype_scaleA") +
                               N * scales_per_row * scale_bpe("dtype_scaleB") + M * N * 2);
  }

 private:
  void build(const OpInput& op, size_t ia, size_t ib, size_t isa, size_t isb,
             bool trans_from_args) {
    Shape a = dims_at(op, ia), b = dims_at(op, ib);
    bool ta = false, tb = true;
    if (trans_from_args) {
      size_t n = arg_size(op.concrete_inputs);
      ta = n > 5 && parse_bool(op.concrete_inputs->list[5]);
      tb = n > 6 && parse_bool(op.concrete_inputs->list[6]);
      bool tc = n > 7 && parse_bool(op.concrete_inputs->list[7]);
      if (tc) {
        std::swap(a, b);
        bool na = !tb, nb = !ta;
        ta = na;
        tb = nb;
      }
    }
    if (a.size() < 2 || b.size() < 2) fail("hipBLASLt GEMM: operands are not 2-D");
    shape_.M = ta ? a[1] : a[0];
    shape_.K = (ta ? a[0] : a[1]) * (fp4_ ? 2 : 1);
    shape_.N = tb ? b[0] : b[1];
    add_mnk(shape_);
    add(params_, "stride_A", strides_or_none(op, ia));
    add(params_, "stride_B", strides_or_none(op, ib));
    add(params_, "dtype_A_B", tuple_of({type_at(op, ia), type_at(op, ib)}));
    add(params_, "dtype_scaleA", type_or_none(op, isa));
    add(params_, "dtype_scaleB", type_or_none(op, isb));
    finish(op);
  }
  bool fp4_;
};

// Inference-extension GEMMs (AITER / vLLM / SGLang): X (M, K) · Wᵀ with
// W = (N, K), per-operand byte sizes that may be fractional (packed fp4).
class ExtGemm : public GemmModel {
 public:
  enum class Kind {
    A8W8Blockscale,
    VllmUnquantized,
    A16W16Atomic,
    A16W16,
    A16W16Asm,
    AFp4WFp4,
    BatchedA16WFp4,
    BatchedA8W8
  };

  ExtGemm(const OpInput& op, Kind kind) : kind_(kind) {
    bwd_not_implemented_ = false;
    Shape a = dims_at(op, 0), b = dims_at(op, 1);
    auto at = [](const Shape& s, size_t i) {
      if (i >= s.size()) throw PerfModelError("GEMM operand has too few dims");
      return s[i];
    };
    auto t = [&](size_t i) { return type_at(op, i); };
    auto t_or = [&](size_t i, const char* dflt) {
      return i < arg_size(op.input_type) ? op.input_type->list[i] : str_value(dflt);
    };
    const PyValue bf16 = str_value("c10::bfloat16");
    size_t ntypes = arg_size(op.input_type);
    bool dims2_bias = arg_size(op.input_dims) > 2 && op.input_dims->list[2].is_list() &&
                      op.input_dims->list[2].size() > 0;
    switch (kind) {
      case Kind::A8W8Blockscale: {
        shape_ = {at(a, 0), at(b, 0), at(a, 1), false};
        add(params_, "B", int_value(1));
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t_or(0, ""), t_or(1, ""), bf16}));
        if (arg_size(op.input_dims) > 3) {
          Shape xs = dims_at(op, 2), ws = dims_at(op, 3);
          // Python -(-n // d): ceiling division with floor semantics.
          auto floor_div = [](int64_t x, int64_t y) {
            return x / y - ((x % y != 0 && ((x < 0) != (y < 0))) ? 1 : 0);
          };
          auto ceil_div = [&](int64_t n, int64_t d) { return -floor_div(-n, d); };
          add(params_, "quant_scheme", str_value("a8w8_blockscale"));
          add(params_, "quant_granularity", str_value("per_block"));
          add(params_, "block_k",
              !xs.empty() && xs.back() ? int_value(ceil_div(shape_.K, xs.back()))
                                       : PyValue::none());
          add(params_, "block_n",
              !ws.empty() && ws.front() ? int_value(ceil_div(shape_.N, ws.front()))
                                        : PyValue::none());
          add(params_, "scale_dtype", ntypes > 2 ? t(2) : str_value("float32"));
        }
        add(params_, "output_shape", tuple_value({shape_.M, shape_.N}));
        add(params_, "output_dtype", bf16);
        break;
      }
      case Kind::VllmUnquantized:
        shape_ = {at(a, 0), at(b, 0), at(a, 1), dims2_bias};
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t(0), t(1), ntypes > 2 ? t(2) : str_value("")}));
        break;
      case Kind::A16W16Atomic:
      case Kind::A16W16:
      case Kind::A16W16Asm: {
        shape_ = {at(a, 0), at(b, 0), at(a, 1), kind == Kind::A16W16 && dims2_bias};
        PyValue out = t(0);
        if (kind == Kind::A16W16Atomic) out = ntypes > 3 ? t(3) : bf16;
        if (kind == Kind::A16W16Asm && ntypes > 2 && bpe_of(t(2))) out = t(2);
        PyValue t0 = t(0), t1 = t(1);
        add(params_, "B", int_value(1));
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t0, t1, out}));
        break;
      }
      case Kind::AFp4WFp4:
        shape_ = {at(a, 0), at(b, 0), at(a, 1) * 2, false};
        add(params_, "B", int_value(1));
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t(0), t(1), bf16}));
        break;
      case Kind::BatchedA16WFp4:
        shape_ = {at(a, 1), at(b, 1), at(a, 2), false};
        add(params_, "B", int_value(at(a, 0)));
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t(0), t(1), bf16}));
        break;
      case Kind::BatchedA8W8: {
        // X (B, M, K) or (M, B, K), WQ (B, N, K).
        int64_t batch = at(b, 0);
        shape_ = {at(a, 0) == batch ? at(a, 1) : at(a, 0), at(b, 1), at(a, 2), false};
        add(params_, "B", int_value(batch));
        add_mnk(shape_);
        add(params_, "dtype_A_B", tuple_of({t(0), t(1), bf16}));
        break;
      }
    }
    finish(op);
  }

  double flops() const override {
    double one = static_cast<double>(gemm_flops(shape_));
    return batched() ? static_cast<double>(batch_) * one : one;
  }
  std::optional<double> bytes() const override {
    const PyValue& d = find_param(params_, "dtype_A_B")->value;
    auto bpe = [&](size_t i) -> std::optional<double> {
      auto b = bpe_of(d.list.at(i));
      return b ? std::optional<double>(*b) : std::nullopt;
    };
    std::optional<double> a = bpe(0), b = bpe(1), out = bpe(2), bias = bpe(2);
    if (kind_ == Kind::VllmUnquantized && !shape_.bias) out = bias = bpe(1);
    if (kind_ == Kind::AFp4WFp4) a = b = 0.5;
    if (kind_ == Kind::BatchedA16WFp4) b = 0.5;
    if (!a || !b || !out || !bias) return std::nullopt;
    double M = static_cast<double>(shape_.M), N = static_cast<double>(shape_.N),
           K = static_cast<double>(shape_.K);
    double total = M * K * *a + K * N * *b + M * N * *out + (shape_.bias ? N : 0.0) * *bias;
    return batched() ? static_cast<double>(batch_) * total : total;
  }
  std::string precision() const override {
    if (kind_ == Kind::AFp4WFp4 || kind_ == Kind::BatchedA16WFp4) return "fp4";
    // batched_gemm_a8w8: the INT8 weights' dtype.
    if (kind_ == Kind::BatchedA8W8)
      return precision_of_value(find_param(params_, "dtype_A_B")->value.list.at(1));
    return GemmModel::precision();
  }

 private:
  bool batched() const { return kind_ == Kind::BatchedA16WFp4 || kind_ == Kind::BatchedA8W8; }
  Kind kind_;
};

}  // namespace

void register_gemm_models(std::map<std::string_view, Factory>& out) {
  out["aten_mm"] = [](const OpInput& op) { return std::make_unique<MmModel>(op, false); };
  out["tev2_pseudo_gemm"] = [](const OpInput& op) { return std::make_unique<MmModel>(op, true); };
  out["aten_addmm"] = [](const OpInput& op) { return std::make_unique<AddmmModel>(op); };
  out["aten_scaled_mm"] = [](const OpInput& op) { return std::make_unique<ScaledMmModel>(op); };
  out["aten_bmm"] = [](const OpInput& op) { return std::make_unique<BmmModel>(op, false); };
  out["aten_baddbmm"] = [](const OpInput& op) { return std::make_unique<BmmModel>(op, true); };
  out["vllm_gemm_with_dynamic_quant"] = [](const OpInput& op) {
    return std::make_unique<VllmDynQuantGemmModel>(op);
  };
  out["hipblaslt_gemm_fp8"] = [](const OpInput& op) {
    return std::make_unique<HipblasltGemm>(op, false);
  };
  out["hipblaslt_gemm_fp4"] = [](const OpInput& op) {
    return std::make_unique<HipblasltGemm>(op, true);
  };
  out["aiter_gemm_a4w4"] = [](const OpInput& op) { return std::make_unique<HipblasltGemm>(op, 0); };
  auto ext = [&](const char* cls, ExtGemm::Kind kind) {
    out[cls] = [kind](const OpInput& op) { return std::make_unique<ExtGemm>(op, kind); };
  };
  ext("gemm_a8w8_blockscale", ExtGemm::Kind::A8W8Blockscale);
  ext("vllm_rocm_unquantized_gemm", ExtGemm::Kind::VllmUnquantized);
  ext("gemm_a16w16_atomic_", ExtGemm::Kind::A16W16Atomic);
  ext("gemm_a16w16", ExtGemm::Kind::A16W16);
  ext("gemm_a16w16_asm", ExtGemm::Kind::A16W16Asm);
  ext("gemm_afp4wfp4", ExtGemm::Kind::AFp4WFp4);
  ext("batched_gemm_a16wfp4", ExtGemm::Kind::BatchedA16WFp4);
  ext("batched_gemm_a8w8", ExtGemm::Kind::BatchedA8W8);
  out["tex_ts_te_gemm_ts"] = [](const OpInput& op) { return std::make_unique<TeGemmTsModel>(op); };
}

}  // namespace jarvis::perf::detail
