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
    PyInt io = 2 * (b_ * c_ * l_ * bpe_);
    return static_cast<double>(io + c_ * k_ * bpe_ + (bias_ ? c_ * bpe_ : 0));
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override { return precision_; }

 private:
  PyInt b_, c_, l_, k_;
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
  PyInt n_;
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
  PyInt batch_, vocab_;
  int bpe_;
  std::string precision_;
};

// TraceLens _collect_2d_shapes: every (rows, cols) pair of positive ints.
void collect_2d_shapes(const PyValue& v, std::vector<std::pair<int64_t, int64_t>>& out) {
  if (!v.is_list()) return;
  if (v.size() == 2 && v[0].kind == PyValue::Kind::Int && v[1].kind == PyValue::Kind::Int &&
      v[0].i > 0 && v[1].i > 0) {
    out.emplace_back(v[0].i, v[1].i);
    return;
  }
  for (const PyValue& item : v.list) collect_2d_shapes(item, out);
}

bool positive_ints(const PyValue& v, size_t from, size_t to) {
  for (size_t i = from; i < to && i < v.size(); ++i)
    if (v[i].kind != PyValue::Kind::Int || v[i].i <= 0) return false;
  return true;
}

// Primus-Turbo grouped GEMMs. Fixed K: X (M, K) @ W (G, K, N) (or (G, N, K)),
// or zipped per-group shapes with uniform K, N. Variable K: per-group pairs.
class GroupedGemm : public PerfModel {
 public:
  GroupedGemm(const OpInput& op, bool variable_k) : variable_k_(variable_k) {
    const PyValue empty = PyValue::make_list({});
    const PyValue& dims = op.input_dims ? *op.input_dims : empty;
    if (variable_k ? !variable_pairs(dims) : !fixed_dims(dims))
      fail("primus_turbo grouped GEMM could not parse Input Dims: " + dims.repr_list());
    PyValue din = arg_size(op.input_type) > 0 ? op.input_type->list[0] : PyValue::none();
    PyValue dout = arg_size(op.input_type) > 1 ? op.input_type->list[1] : din;
    bpe_in_ = din.is_none() ? std::nullopt : bpe_of(din);
    bpe_out_ = dout.is_none() ? bpe_in_ : bpe_of(dout);
    if (arg_size(op.input_type) > 0)
      precision_ = precision_of_value(op.input_type->list[0]);
    else if (!op.input_type || op.input_type->is_list())
      throw PerfModelError("Input type is empty");
    add(params_, "M", int_value(M_));
    add(params_, "K", int_value(K_));
    add(params_, "N", int_value(N_));
    add(params_, "G", int_value(G_));
    add(params_, "bpe_in", bpe_in_ ? int_value(*bpe_in_) : PyValue::none());
    add(params_, "bpe_out", bpe_out_ ? int_value(*bpe_out_) : PyValue::none());
    if (variable_k) {
      std::vector<PyValue> items;
      for (const auto& [a, b] : pairs_)
        items.push_back(
            tuple_of({tuple_value({a.first, a.second}), tuple_value({b.first, b.second})}));
      add(params_, "group_pairs", PyValue::make_list(std::move(items)), true);
    }
  }
  double flops() const override {
    if (!variable_k_) return static_cast<double>(2 * M_ * K_ * N_);
    int64_t total = 0;
    for (const auto& [a, b] : pairs_) total += 2 * a.first * a.second * b.second;
    return static_cast<double>(total);
  }
  std::optional<double> bytes() const override {
    if (!variable_k_) {
      if (!bpe_in_ || !bpe_out_) throw PerfModelError("grouped GEMM: unknown dtype size");
      return static_cast<double>((M_ * K_ + G_ * K_ * N_) * *bpe_in_ + M_ * N_ * *bpe_out_);
    }
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    int64_t total = 0;
    for (const auto& [a, b] : pairs_)
      total +=
          (a.first * a.second + a.second * b.second) * *bpe_in_ + a.first * b.second * *bpe_out_;
    return static_cast<double>(total);
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override { return precision_; }

 private:
  bool fixed_dims(const PyValue& dims) {
    if (dims.is_list() && dims.size() >= 2) {
      const PyValue &a = dims[0], &b = dims[1];
      if (a.is_list() && b.is_list() && a.size() >= 2 && b.size() == 3 && positive_ints(a, 0, 2) &&
          positive_ints(b, 0, 3)) {
        M_ = a[0].i;
        K_ = a[1].i;
        G_ = b[0].i;
        if (b[1].i == K_ || b[2].i == K_) {
          N_ = b[1].i == K_ ? b[2].i : b[1].i;
          return true;
        }
      }
    }
    std::vector<std::pair<int64_t, int64_t>> lhs, rhs;
    if (!zipped(dims, lhs, rhs)) return false;
    K_ = lhs[0].second;
    N_ = rhs[0].second;
    M_ = 0;
    for (size_t i = 0; i < lhs.size(); ++i) {
      if (lhs[i].second != K_ || rhs[i].first != K_ || rhs[i].second != N_) return false;
      M_ += lhs[i].first;
    }
    G_ = static_cast<int64_t>(lhs.size());
    return true;
  }
  bool variable_pairs(const PyValue& dims) {
    if (dims.is_list() && dims.size() >= 2) {
      const PyValue &a = dims[0], &b = dims[1];
      if (a.is_list() && b.is_list() && a.size() == 2 && b.size() == 2 && positive_ints(a, 0, 2) &&
          positive_ints(b, 0, 2)) {
        pairs_.push_back({{a[0].i, a[1].i}, {a[1].i, b[1].i}});
      }
    }
    if (pairs_.empty()) {
      std::vector<std::pair<int64_t, int64_t>> lhs, rhs;
      if (!zipped(dims, lhs, rhs)) return false;
      for (size_t i = 0; i < lhs.size(); ++i) {
        if (lhs[i].second != rhs[i].first) return false;
        pairs_.push_back({lhs[i], rhs[i]});
      }
    }
    M_ = 0;
    for (const auto& p : pairs_) M_ += p.first.first;
    K_ = pairs_[0].first.second;
    N_ = pairs_[0].second.second;
    G_ = static_cast<int64_t>(pairs_.size());
    return true;
  }
  static bool zipped(const PyValue& dims, std::vector<std::pair<int64_t, int64_t>>& lhs,
                     std::vector<std::pair<int64_t, int64_t>>& rhs) {
    if (!dims.is_list() || dims.size() < 2 || !dims[0].is_list() || !dims[1].is_list())
      return false;
    collect_2d_shapes(dims[0], lhs);
    collect_2d_shapes(dims[1], rhs);
    return !lhs.empty() && !rhs.empty() && lhs.size() == rhs.size();
  }

  bool variable_k_;
  PyInt M_ = 0, K_ = 0, N_ = 0, G_ = 0;
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>> pairs_;
  std::optional<int> bpe_in_, bpe_out_;
  std::string precision_;
};

// MambaSplitConv1dScanCombinedFn (Mamba-2 SSD): conv1d + chunked scan matmuls.
class MambaSsd : public PerfModel {
 public:
  explicit MambaSsd(const OpInput& op) : precision_(first_precision(op)) {
    Shape x = dims_at(op, 0), w = dims_at(op, 1), dt = dims_at(op, 3);
    if (x.size() < 3 || w.size() < 2 || dt.empty())
      throw PerfModelError("MambaSSD: unexpected shapes");
    B_ = x[0];
    T_ = x[1];
    combined_ = x[2];
    conv_ch_ = w[0];
    d_conv_ = w[1];
    H_ = dt[0];
    auto ci_int = [&](size_t i, int64_t dflt) {
      if (arg_size(op.concrete_inputs) > i && truthy(op.concrete_inputs->list[i]))
        return static_cast<int64_t>(std::stoll(concrete_str(op, i)));
      return dflt;
    };
    C_ = ci_int(6, 128);
    P_ = ci_int(15, 64);
    G_ = ci_int(16, 1);
    d_inner_ = H_ * P_;
    int64_t num = (combined_ - 2 * d_inner_ - H_).to_int64(), den = (2 * G_).to_int64();
    if (num <= 0 || den == 0 || num % den != 0)
      throw PerfModelError("MambaSSD: cannot derive d_state");
    N_ = num / den;
    for (auto [k, v] :
         std::initializer_list<std::pair<const char*, PyInt>>{{"B", B_},
                                                              {"T", T_},
                                                              {"H", H_},
                                                              {"P", P_},
                                                              {"G", G_},
                                                              {"N", N_},
                                                              {"C", C_},
                                                              {"d_inner", d_inner_},
                                                              {"d_conv", d_conv_},
                                                              {"conv_channels", conv_ch_},
                                                              {"combined_dim", combined_}})
      add(params_, k, int_value(v));
    bpe_ = bpe_default_two(op);
    auto slot_bpe = [&](size_t slot, int dflt) {
      if (arg_size(op.input_type) > slot && truthy(op.input_type->list[slot])) {
        auto b = bpe_of(op.input_type->list[slot]);
        return b ? *b : dflt;
      }
      return dflt;
    };
    bpe_dt_ = slot_bpe(3, 4);
    bpe_a_ = slot_bpe(4, 4);
    bpe_d_ = slot_bpe(5, bpe_);
  }
  double flops() const override {
    return static_cast<double>(2 * B_ * conv_ch_ * T_ * d_conv_ + 2 * B_ * G_ * T_ * C_ * N_ +
                               2 * B_ * H_ * T_ * C_ * P_ + 2 * (2 * B_ * H_ * T_ * N_ * P_));
  }
  std::optional<double> bytes() const override {
    return static_cast<double>(B_ * T_ * combined_ * bpe_ + conv_ch_ * d_conv_ * bpe_ +
                               conv_ch_ * bpe_ + H_ * bpe_dt_ + H_ * bpe_a_ + H_ * bpe_d_ +
                               B_ * T_ * d_inner_ * bpe_);
  }
  double flops_bwd() const override { return flops(); }
  std::optional<double> bytes_bwd() const override { return bytes(); }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override { return precision_; }

 private:
  PyInt B_, T_, combined_, conv_ch_, d_conv_, H_, C_, P_, G_, d_inner_, N_;
  int bpe_, bpe_dt_, bpe_a_, bpe_d_;
  std::string precision_;
};

}  // namespace

void register_misc_models(std::map<std::string_view, Factory>& out) {
  out["moe_dispatch"] = [](const OpInput& op) { return std::make_unique<MoEComm>(op); };
  out["moe_combine"] = [](const OpInput& op) { return std::make_unique<MoEComm>(op); };
  out["causal_conv1d_fwd"] = [](const OpInput& op) { return std::make_unique<CausalConv1d>(op); };
  out["fused_rope_fwd"] = [](const OpInput& op) { return std::make_unique<FusedRope>(op); };
  out["primus_turbo_grouped_gemm"] = [](const OpInput& op) {
    return std::make_unique<GroupedGemm>(op, false);
  };
  out["primus_turbo_grouped_gemm_variable_k"] = [](const OpInput& op) {
    return std::make_unique<GroupedGemm>(op, true);
  };
  out["mamba_ssd_fwd"] = [](const OpInput& op) { return std::make_unique<MambaSsd>(op); };
  out["cross_entropy_fwd"] = [](const OpInput& op) { return std::make_unique<CrossEntropy>(op); };
}

}  // namespace jarvis::perf::detail
