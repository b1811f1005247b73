// Scaled dot-product attention family (spec perf-models.md §5.3).
//
// One configurable model covers every registered SDPA op: where q/k/v sit in
// the args, their layout, which concrete input holds dropout / causal, and
// whether the op itself is a backward op. Quirk kept from TraceLens: bytes
// use 2 bytes per element whatever the dtype, except for
// flash_attn::_flash_attn_backward.
#include <array>
#include <cmath>

#include "perf/models_internal.h"
#include "pycompat/text.h"
#include "trace/numeric.h"

namespace jarvis::perf::detail {
namespace {

enum class Layout { BHND, BNHD, Varlen };
// How a concrete input is turned into dropout / causal.
enum class DropoutRule { Float, OptionalFloat, FloatIfPresent, Zero };
enum class CausalRule { Eval, EqualsTrue, EvalIfPresentElseTrue };

struct SdpaSpec {
  std::array<size_t, 3> qkv;
  Layout layout;
  DropoutRule dropout_rule;
  size_t dropout_idx;
  CausalRule causal_rule;
  size_t causal_idx;
  bool flash_impl;
  bool strides;       // q_stride / k_stride / v_stride params
  bool dtype;         // dtype_A_B param
  bool backward_op;   // flops()/bytes() are the backward formulas
  bool dtype_bytes;   // bytes() uses the dtype's bpe instead of 2
  size_t cu_seqlens;  // varlen: index of cu_seqlens_q (cu_seqlens_k follows)
  size_t max_seqlen;  // varlen: index of max_seqlen_q (max_seqlen_k follows)
};

struct Cfg {
  int64_t B, N_Q, H_Q, N_KV, H_KV, d_qk, d_v;
};

template <typename T>
T fwd_flops(T B, T NQ, T HQ, T NKV, T d_qk, T d_v) {
  return B * HQ * (2 * NQ * NKV * d_qk) + B * HQ * (2 * NQ * d_v * NKV);
}

template <typename T>
T bwd_flops(T B, T NQ, T HQ, T NKV, int64_t HKV, T d_qk, T d_v, bool flash) {
  if (HKV == 0) throw PerfModelError("integer division by zero (H_KV)");
  T total = 0;
  if (flash) total += B * HQ * (2 * NQ * NKV * d_qk);
  auto gqa_floor = truncate_to_int64(std::floor(static_cast<double>(HQ) / HKV));
  if (!gqa_floor) throw PerfModelError("H_Q / H_KV out of integer range");
  int64_t gqa = *gqa_floor - 1;
  total += B * HQ * (2 * NKV * NQ * d_v) + B * NKV * d_v * static_cast<T>(gqa);
  total += B * HQ * (2 * NQ * NKV * d_v);
  total += B * HQ * (2 * NQ * NKV * d_qk);
  total += B * HQ * (2 * NKV * NQ * d_qk) + B * NKV * d_qk * static_cast<T>(gqa);
  return total;
}

// Python: `total /= 2` under causal, which needs N_Q == N_KV.
template <typename T>
double apply_causal(T total, bool causal, double nq, double nkv) {
  if (!causal) return static_cast<double>(total);
  if (nq != nkv) throw PerfModelError("causal=True but N_Q != N_K");
  return static_cast<double>(total) / 2;
}

PyInt bytes_elems(const Cfg& c, bool bwd) {
  PyInt B = c.B;
  PyInt q = B * c.N_Q * c.H_Q * c.d_qk, k = B * c.N_KV * c.H_KV * c.d_qk;
  PyInt v = B * c.N_KV * c.H_KV * c.d_v, o = B * c.N_Q * c.H_Q * c.d_v;
  if (!bwd) return q + k + v + o;
  return q + k + v + o + q + k + v;
}

class SdpaModel : public PerfModel {
 public:
  SdpaModel(const OpInput& op, const SdpaSpec& spec) : spec_(spec) {
    cfg_ = extract(op);
    add(params_, "B", int_value(cfg_.B));
    add(params_, "N_Q", int_value(cfg_.N_Q));
    add(params_, "H_Q", int_value(cfg_.H_Q));
    add(params_, "N_KV", int_value(cfg_.N_KV));
    add(params_, "H_KV", int_value(cfg_.H_KV));
    add(params_, "d_h_qk", int_value(cfg_.d_qk));
    add(params_, "d_h_v", int_value(cfg_.d_v));
    if (spec.strides) {
      add(params_, "q_stride", strides_at(op, spec.qkv[0]));
      add(params_, "k_stride", strides_at(op, spec.qkv[1]));
      add(params_, "v_stride", strides_at(op, spec.qkv[2]));
    }
    read_varlen(op);
    add(params_, "dropout", float_value(dropout(op)));
    causal_ = causal(op);
    add(params_, "causal", causal_value_);
    add(params_, "flash_impl", bool_value(spec.flash_impl));
    if (spec.dtype) {
      std::vector<PyValue> d;
      for (size_t i = 0; i < 2 && i < arg_size(op.input_type); ++i) d.push_back(type_at(op, i));
      add(params_, "dtype_A_B", tuple_of(std::move(d)));
    }
    if (spec.layout == Layout::Varlen) {
      add(params_, "num_seqs_q", int_value(num_seqs_q_));
      add(params_, "num_seqs_kv", int_value(num_seqs_kv_));
      add(params_, "max_seqlen_q", float_value(max_q_));
      add(params_, "max_seqlen_kv", float_value(max_kv_));
    }
  }

  double flops() const override {
    if (!spec_.backward_op) return fwd();
    return spec_.layout == Layout::Varlen ? varlen_bwd() : flops_bwd();
  }
  std::optional<double> bytes() const override {
    if (!spec_.backward_op) return static_cast<double>(bytes_elems(cfg_, false) * 2);
    if (!spec_.dtype_bytes) return bytes_bwd();
    auto bpe = bpe_of(find_param(params_, "dtype_A_B")->value.list.at(0));
    if (!bpe) throw PerfModelError("unsupported dtype for SDPA backward bytes");
    return static_cast<double>(bytes_elems(cfg_, true) * *bpe);
  }
  double flops_bwd() const override {
    return apply_causal(bwd_flops<PyInt>(cfg_.B, cfg_.N_Q, cfg_.H_Q, cfg_.N_KV, cfg_.H_KV,
                                         cfg_.d_qk, cfg_.d_v, spec_.flash_impl),
                        causal_, static_cast<double>(cfg_.N_Q), static_cast<double>(cfg_.N_KV));
  }
  std::optional<double> bytes_bwd() const override {
    return static_cast<double>(bytes_elems(cfg_, true) * 2);
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    const Param* p = find_param(params_, "dtype_A_B");
    if (p == nullptr || p->value.list.empty()) return "";
    return precision_of_value(p->value.list[0]);
  }

 private:
  Cfg extract(const OpInput& op) {
    Shape q = dims_at(op, spec_.qkv[0]), k = dims_at(op, spec_.qkv[1]),
          v = dims_at(op, spec_.qkv[2]);
    auto pick = [](const Shape& s, size_t i) {
      if (i >= s.size()) throw PerfModelError("SDPA operand has too few dims");
      return s[i];
    };
    if (spec_.layout == Layout::Varlen) {  // (T, H, d), B = 1
      Cfg c{1, pick(q, 0), pick(q, 1), pick(k, 0), pick(k, 1), pick(q, 2), pick(v, 2)};
      check(c, pick(v, 1), pick(v, 0), pick(k, 2));
      return c;
    }
    std::array<size_t, 4> idx = spec_.layout == Layout::BHND ? std::array<size_t, 4>{0, 1, 2, 3}
                                                             : std::array<size_t, 4>{0, 2, 1, 3};
    Cfg c{pick(q, idx[0]), pick(q, idx[2]), pick(q, idx[1]), pick(k, idx[2]),
          pick(k, idx[1]), pick(q, idx[3]), pick(v, idx[3])};
    if (c.B != pick(k, idx[0]) || c.B != pick(v, idx[0]))
      throw PerfModelError("Batch sizes do not match");
    check(c, pick(v, idx[1]), pick(v, idx[2]), pick(k, idx[3]));
    return c;
  }
  static void check(const Cfg& c, int64_t h_v, int64_t n_v, int64_t d_k) {
    if (c.H_KV != h_v) throw PerfModelError("Head sizes do not match for K and V");
    if (c.N_KV != n_v) throw PerfModelError("Length sizes do not match for K and V");
    if (c.d_qk != d_k) throw PerfModelError("Head dimensions do not match for Q and K");
  }

  void read_varlen(const OpInput& op) {
    if (spec_.layout != Layout::Varlen) return;
    num_seqs_q_ = dims_at(op, spec_.cu_seqlens).at(0) - 1;
    num_seqs_kv_ = dims_at(op, spec_.cu_seqlens + 1).at(0) - 1;
    max_q_ = python_float(concrete_at(op, spec_.max_seqlen), "max_seqlen_q");
    max_kv_ = python_float(concrete_at(op, spec_.max_seqlen + 1), "max_seqlen_kv");
  }

  double dropout(const OpInput& op) const {
    switch (spec_.dropout_rule) {
      case DropoutRule::Zero:
        return 0.0;
      case DropoutRule::Float:
        return python_float(concrete_at(op, spec_.dropout_idx), "dropout");
      case DropoutRule::OptionalFloat:
        return optional_float(concrete_at(op, spec_.dropout_idx), 0.0);
      case DropoutRule::FloatIfPresent: {
        size_t i = spec_.dropout_idx;
        if (arg_size(op.concrete_inputs) > i && truthy(concrete_at(op, i)))
          return python_float(concrete_at(op, i), "dropout");
        return 0.0;
      }
    }
    return 0.0;
  }

  bool causal(const OpInput& op) {
    size_t i = spec_.causal_idx;
    switch (spec_.causal_rule) {
      case CausalRule::Eval:
        causal_value_ = eval_literal(concrete_at(op, i), "causal");
        return truthy(causal_value_);
      case CausalRule::EvalIfPresentElseTrue:
        if (arg_size(op.concrete_inputs) > i && truthy(concrete_at(op, i)))
          causal_value_ = eval_literal(concrete_at(op, i), "causal");
        else
          causal_value_ = bool_value(true);
        return truthy(causal_value_);
      case CausalRule::EqualsTrue: {
        const PyValue& v = concrete_at(op, i);
        bool c = false;
        if (!(v.is_string() && (v.s.empty() || v.s == "None")) && !v.is_none()) {
          if (!v.is_string()) throw PerfModelError("causal flag is not a string");
          c = pycompat::ascii_lower(v.s) == "true";
        }
        causal_value_ = bool_value(c);
        return c;
      }
    }
    return false;
  }

  double fwd() const {
    if (spec_.layout != Layout::Varlen)
      return apply_causal(
          fwd_flops<PyInt>(cfg_.B, cfg_.N_Q, cfg_.H_Q, cfg_.N_KV, cfg_.d_qk, cfg_.d_v), causal_,
          static_cast<double>(cfg_.N_Q), static_cast<double>(cfg_.N_KV));
    // Varlen: the longest sequence plus (num_seqs - 1) equal-length others.
    auto one = [&](double nq, double nkv) {
      return apply_causal(
          fwd_flops<double>(static_cast<double>(cfg_.B), nq, static_cast<double>(cfg_.H_Q), nkv,
                            static_cast<double>(cfg_.d_qk), static_cast<double>(cfg_.d_v)),
          causal_, nq, nkv);
    };
    double total = one(max_q_, max_kv_);
    if (num_seqs_q_ > 1) total += static_cast<double>(num_seqs_q_ - 1) * one(rest_q(), rest_kv());
    return total;
  }
  double varlen_bwd() const {
    auto one = [&](double nq, double nkv) {
      double B = static_cast<double>(cfg_.B), HQ = static_cast<double>(cfg_.H_Q);
      return apply_causal(
          bwd_flops<double>(B, nq, HQ, nkv, cfg_.H_KV, static_cast<double>(cfg_.d_qk),
                            static_cast<double>(cfg_.d_v), spec_.flash_impl),
          causal_, nq, nkv);
    };
    double total = one(max_q_, max_kv_);
    if (num_seqs_q_ > 1) total += static_cast<double>(num_seqs_q_ - 1) * one(rest_q(), rest_kv());
    return total;
  }
  double rest_q() const {
    return std::floor((static_cast<double>(cfg_.N_Q) - max_q_) /
                      static_cast<double>(num_seqs_q_ - 1));
  }
  double rest_kv() const {
    if (num_seqs_kv_ == 1) throw PerfModelError("float floor division by zero");
    return std::floor((static_cast<double>(cfg_.N_KV) - max_kv_) /
                      static_cast<double>(num_seqs_kv_ - 1));
  }

  SdpaSpec spec_;
  Cfg cfg_{};
  bool causal_ = false;
  PyValue causal_value_;
  int64_t num_seqs_q_ = 0, num_seqs_kv_ = 0;
  double max_q_ = 0, max_kv_ = 0;
};

// EvoformerAttention: q = (Batch, N_seq, N_res, Head, Dim); never causal; its
// own param layout (dtype_A_B is a one-element list).
class EvoformerAttention : public PerfModel {
 public:
  explicit EvoformerAttention(const OpInput& op) {
    Shape q = dims_at(op, 0);
    if (q.size() != 5) throw PerfModelError("EvoformerAttention: q is not 5-D");
    B_ = q[0] * q[1];
    N_ = q[2];
    H_ = q[3];
    D_ = q[4];
    add(params_, "B", int_value(B_));
    add(params_, "N_Q", int_value(N_));
    add(params_, "H_Q", int_value(H_));
    add(params_, "N_KV", int_value(N_));
    add(params_, "H_KV", int_value(H_));
    add(params_, "d_h_qk", int_value(D_));
    add(params_, "d_h_v", int_value(D_));
    add(params_, "causal", bool_value(false));
    add(params_, "flash_impl", bool_value(false));
    PyValue dtype = arg_size(op.input_type) > 0 ? type_at(op, 0) : PyValue::none();
    add(params_, "dtype_A_B", tuple_of({dtype}), true);
  }
  double flops() const override {
    return static_cast<double>(fwd_flops<PyInt>(B_, N_, H_, N_, D_, D_));
  }
  std::optional<double> bytes() const override {
    return static_cast<double>(bytes_elems({B_, N_, H_, N_, H_, D_, D_}, false) * 2);
  }
  double flops_bwd() const override {
    return static_cast<double>(bwd_flops<PyInt>(B_, N_, H_, N_, H_, D_, D_, false));
  }
  std::optional<double> bytes_bwd() const override {
    return static_cast<double>(bytes_elems({B_, N_, H_, N_, H_, D_, D_}, true) * 2);
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    return precision_of_value(find_param(params_, "dtype_A_B")->value.list[0]);
  }

 private:
  int64_t B_, N_, H_, D_;
};

Factory sdpa(SdpaSpec spec) {
  return [spec](const OpInput& op) { return std::make_unique<SdpaModel>(op, spec); };
}

}  // namespace

void register_sdpa_models(std::map<std::string_view, Factory>& out) {
  using L = Layout;
  using D = DropoutRule;
  using C = CausalRule;
  //                         qkv        layout  dropout          causal            flash strides
  //                         dtype  bwd   dbytes
  out["flash_attention"] =
      sdpa({{0, 1, 2}, L::BNHD, D::Float, 3, C::Eval, 5, true, true, true, false, false, 0, 0});
  out["flash_attention_backward"] = sdpa({{1, 2, 3},
                                          L::BNHD,
                                          D::FloatIfPresent,
                                          8,
                                          C::EvalIfPresentElseTrue,
                                          10,
                                          true,
                                          true,
                                          true,
                                          true,
                                          true,
                                          0,
                                          0});
  out["flash_attention_varlen_forward"] =
      sdpa({{0, 1, 2}, L::Varlen, D::Float, 7, C::Eval, 9, true, true, true, false, false, 3, 5});
  out["flash_attention_varlen_backward"] =
      sdpa({{1, 2, 3}, L::Varlen, D::Float, 13, C::Eval, 15, true, true, true, true, false, 9, 11});
  out["aten__scaled_dot_product_cudnn_attention"] = sdpa({{0, 1, 2},
                                                          L::BHND,
                                                          D::OptionalFloat,
                                                          5,
                                                          C::EqualsTrue,
                                                          6,
                                                          false,
                                                          false,
                                                          true,
                                                          false,
                                                          false,
                                                          0,
                                                          0});
  // Same argument layout as the cuDNN variant.
  out["aten__scaled_dot_product_efficient_attention"] =
      out["aten__scaled_dot_product_cudnn_attention"];
  out["aten__scaled_dot_product_flash_attention"] = sdpa({{0, 1, 2},
                                                          L::BHND,
                                                          D::OptionalFloat,
                                                          3,
                                                          C::EqualsTrue,
                                                          4,
                                                          true,
                                                          false,
                                                          true,
                                                          false,
                                                          false,
                                                          0,
                                                          0});
  out["aiter__flash_attn_forward"] = sdpa({{0, 1, 2},
                                           L::BNHD,
                                           D::OptionalFloat,
                                           3,
                                           C::EqualsTrue,
                                           5,
                                           true,
                                           false,
                                           false,
                                           false,
                                           false,
                                           0,
                                           0});
  out["aiter__flash_attn_backward"] = sdpa({{0, 1, 2},
                                            L::BNHD,
                                            D::OptionalFloat,
                                            10,
                                            C::EqualsTrue,
                                            12,
                                            true,
                                            false,
                                            false,
                                            true,
                                            false,
                                            0,
                                            0});
  out["aiter__fmha_v3_forward"] = sdpa({{1, 2, 3},
                                        L::BNHD,
                                        D::OptionalFloat,
                                        4,
                                        C::EqualsTrue,
                                        6,
                                        true,
                                        false,
                                        false,
                                        false,
                                        false,
                                        0,
                                        0});
  out["aiter__fmha_v3_backward"] = sdpa({{1, 2, 3},
                                         L::BNHD,
                                         D::OptionalFloat,
                                         7,
                                         C::EqualsTrue,
                                         9,
                                         true,
                                         false,
                                         false,
                                         true,
                                         false,
                                         0,
                                         0});
  out["aiter__mha_fwd"] = sdpa({{0, 1, 2},
                                L::BNHD,
                                D::OptionalFloat,
                                3,
                                C::EqualsTrue,
                                5,
                                true,
                                false,
                                false,
                                false,
                                false,
                                0,
                                0});
  out["aiter__fmha_v3_fwd"] = out["aiter__mha_fwd"];
  out["aiter__mha_bwd"] = sdpa({{1, 2, 3},
                                L::BNHD,
                                D::OptionalFloat,
                                6,
                                C::EqualsTrue,
                                8,
                                true,
                                false,
                                false,
                                true,
                                false,
                                0,
                                0});
  out["flash_attn_v3_forward"] = sdpa(
      {{0, 1, 2}, L::BNHD, D::Zero, 0, C::EqualsTrue, 24, true, false, false, false, false, 0, 0});
  out["evoformer_attention"] = [](const OpInput& op) {
    return std::make_unique<EvoformerAttention>(op);
  };
}

}  // namespace jarvis::perf::detail
