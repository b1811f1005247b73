// InferenceAttention perf models of TraceLens's inference extensions
// (attention_perf_model_extensions.py): serving-engine attention ops whose
// work is not in their shapes but in the iteration's request mix. TraceLens
// reads that mix from the user annotation enclosing the op (vLLM
// `execute_<n>_context_<c>(sq..sk..sqsq..sqsk..)_generation_<g>(...)`, SGLang
// `step[... c_sq=.. g_sqsk=..]`, ATOM `prefill[...]` / `decode[...]` with
// sqsq/sqsk) and attaches it only to `vllm::unified_attention_with_output*`
// events. Without a detailed annotation the model has no estimate and
// TraceLens drops the op's row; so do these models (they throw).
#include <algorithm>
#include <regex>

#include "perf/annotations.h"
#include "perf/models_internal.h"

namespace jarvis::perf::detail {
namespace {

// Context (prefill) and generation (decode) aggregates of one iteration:
// sums over requests of sq, sk, sq*sq and sq*sk.
struct ChunkStats {
  int64_t c_sq = 0, c_sk = 0, c_sqsq = 0, c_sqsk = 0;
  int64_t g_sq = 0, g_sk = 0, g_sqsq = 0, g_sqsk = 0;
};

// Python int(text), 0 when it does not parse (TraceLens's _safe_int).
int64_t safe_int(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return 0;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return 0;
  }
}

// vLLM detailed: parentheses and runs of the letters s/q/k become '_', then
// the text is split on '_' and the aggregates read by position.
std::optional<ChunkStats> parse_vllm(const std::string& name) {
  static const std::regex detailed(
      R"(execute_\d+_context_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\)_generation_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\))");
  if (!std::regex_search(name, detailed, std::regex_constants::match_continuous))
    return std::nullopt;
  std::string flat;
  for (char c : name) {
    bool letter = c == 's' || c == 'q' || c == 'k';
    char out = c == '(' || c == ')' ? '_' : c;
    if (letter) {
      if (flat.empty() || flat.back() != '\x01') flat += '\x01';
      continue;
    }
    flat += out;
  }
  std::replace(flat.begin(), flat.end(), '\x01', '_');
  std::vector<std::string> p{""};
  for (char c : flat) {
    if (c == '_')
      p.emplace_back();
    else
      p.back().push_back(c);
  }
  auto at = [&](size_t i) { return i < p.size() ? safe_int(p[i]) : 0; };
  return ChunkStats{at(5), at(6), at(7), at(8), at(13), at(14), at(15), at(16)};
}

// `key=<digits>` pairs of a text, the last one winning (dict(re.findall)).
std::map<std::string, std::string> key_values(const std::string& body, const std::regex& pair) {
  std::map<std::string, std::string> kv;
  for (std::sregex_iterator it(body.begin(), body.end(), pair), end; it != end; ++it)
    kv[(*it)[1].str()] = (*it)[2].str();
  return kv;
}

int64_t kv_int(const std::map<std::string, std::string>& kv, const char* key) {
  auto it = kv.find(key);
  return it == kv.end() ? 0 : safe_int(it->second);
}

// SGLang detailed: step[<MODE> bs=.. c_sq=.. c_sk=.. ... g_sqsk=..].
std::optional<ChunkStats> parse_sglang(const std::string& name) {
  static const std::regex detailed(R"(step\[(?:EXTEND|DECODE|MIXED)\b[^\]]*sqsq=\d+[^\]]*\])");
  static const std::regex pair(R"((\w+)=(\d+))");
  if (!std::regex_search(name, detailed, std::regex_constants::match_continuous))
    return std::nullopt;
  auto kv = key_values(name.substr(name.find('[') + 1, name.rfind(']') - name.find('[') - 1), pair);
  return ChunkStats{kv_int(kv, "c_sq"),   kv_int(kv, "c_sk"),  kv_int(kv, "c_sqsq"),
                    kv_int(kv, "c_sqsk"), kv_int(kv, "g_sq"),  kv_int(kv, "g_sk"),
                    kv_int(kv, "g_sqsq"), kv_int(kv, "g_sqsk")};
}

// ATOM: prefill[bs=.. tok=.. ... sqsq=.. sqsk=.. sk=..] or decode[...]; the
// aggregates count only when both sqsq and sqsk are present.
std::optional<ChunkStats> parse_atom(const std::string& name) {
  static const std::regex native(R"(^(prefill|decode)\[(.*)\])");
  static const std::regex pair(R"((\w+)=(\[[^\]]*\](?:\.\.\.\+\d+)?|\S+))");
  std::smatch m;
  if (!std::regex_search(name, m, native, std::regex_constants::match_continuous))
    return std::nullopt;
  auto kv = key_values(m[2].str(), pair);
  if (!kv.count("sqsq") || !kv.count("sqsk")) return std::nullopt;
  int64_t tok = kv_int(kv, "tok"), sk = kv_int(kv, "sk");
  int64_t sqsq = kv_int(kv, "sqsq"), sqsk = kv_int(kv, "sqsk");
  if (m[1].str() == "prefill") return ChunkStats{tok, sk, sqsq, sqsk, 0, 0, 0, 0};
  return ChunkStats{0, 0, 0, 0, tok, sk, sqsq, sqsk};
}

// The first format family whose pattern matches decides; a native (not
// detailed) vLLM or SGLang label has no aggregates.
std::optional<ChunkStats> parse_chunk_stats(const std::string& name) {
  static const std::regex vllm_native(R"(execute_context_\d+\(\d+\)_generation_\d+\(\d+\))");
  static const std::regex sglang_native(R"(step\[(?:EXTEND|DECODE|MIXED)\b.*\])");
  if (auto s = parse_vllm(name)) return s;
  if (std::regex_search(name, vllm_native, std::regex_constants::match_continuous))
    return std::nullopt;
  if (auto s = parse_sglang(name)) return s;
  if (std::regex_search(name, sglang_native, std::regex_constants::match_continuous))
    return std::nullopt;
  return parse_atom(name);
}

bool annotated_op(std::string_view name) {
  return name.starts_with("vllm::unified_attention_with_output");
}

std::optional<ChunkStats> op_chunk_stats(const OpInput& op) {
  if (!annotated_op(op.name) || op.trace == nullptr || op.uid == kNoUid) return std::nullopt;
  // TraceLens apply_annotation (perf/annotations.h); a caller without an
  // index of the trace's annotations gets a one-off one.
  std::optional<std::string_view> name;
  if (op.annotations) {
    name = op.annotations->enclosing(op.uid);
  } else {
    name = TraceAnnotations(*op.trace).enclosing(op.uid);
  }
  return name ? parse_chunk_stats(std::string(*name)) : std::nullopt;
}

// Base InferenceAttention: Q (N_Q, H_Q, d_h_qk) and K (..., N_KV, H_KV, d_h)
// from the first two args; chunked-prefill (causal within the chunk) plus
// decode FLOPs and bytes from the annotation aggregates.
class InferenceAttention : public PerfModel {
 public:
  enum class Variant { Base, VFromArg2, VFixed512 };

  InferenceAttention(const OpInput& op, Variant variant) {
    std::optional<ChunkStats> stats = op_chunk_stats(op);
    if (!stats) return;  // no estimate: flops() fails as TraceLens's None does
    try {
      read_shapes(op);
    } catch (const std::exception&) {
      return;  // TraceLens catches the shape errors into "no estimate" too
    }
    s_ = *stats;
    if (variant == Variant::VFromArg2 && arg_size(op.input_dims) > 2) {
      Shape v = dims_at(op, 2);
      if (!v.empty()) d_v_ = v.back();
    }
    if (variant == Variant::VFixed512) d_v_ = 512;
    ok_ = true;
    fill_params();
  }

  double flops() const override {
    require();
    if (s_.c_sq == 0 && s_.g_sq == 0)
      throw PerfNotImplemented("Attention perf model for decode phase requires custom annotations");
    PyInt hq = h_q_, dqk = d_qk_, dv = d_v_;
    PyInt ctx = hq * (2 * PyInt(s_.c_sqsk) * dqk) + hq * (2 * PyInt(s_.c_sqsk) * dv) -
                hq * (PyInt(s_.c_sqsq) * dqk) - hq * (PyInt(s_.c_sqsq) * dv);
    PyInt gen = hq * (2 * PyInt(s_.g_sqsk) * dqk) + hq * (2 * PyInt(s_.g_sqsk) * dv);
    return static_cast<double>(ctx + gen);
  }

  std::optional<double> bytes() const override {
    require();
    int64_t bpe = bpe_of(dtype_q_).value_or(0);
    if (bpe == 0) bpe = 2;  // `name2bpe(dtype_Q) or 2`
    int64_t bpe_kv = truthy(dtype_kv_) ? bpe_of(dtype_kv_).value_or(0) : 0;
    if (bpe_kv == 0) bpe_kv = bpe;
    PyInt hq = h_q_, hkv = h_kv_, dqk = d_qk_, dv = d_v_;
    auto q_side = [&](PyInt sq) {
      return sq * hq * dqk + sq * hq * dv + sq * hkv * dqk + sq * hkv * dv;
    };
    auto kv_side = [&](PyInt cached) { return cached * hkv * dqk + cached * hkv * dv; };
    PyInt q = q_side(s_.c_sq) + q_side(s_.g_sq);
    PyInt kv = kv_side(PyInt(s_.c_sk) - s_.c_sq) + kv_side(PyInt(s_.g_sk) - s_.g_sq);
    return static_cast<double>(q * bpe + kv * bpe_kv);
  }

  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override { return ok_ ? precision_of_value(dtype_q_) : ""; }

 private:
  void read_shapes(const OpInput& op) {
    Shape q = dims_at(op, 0), k = dims_at(op, 1);
    if (q.size() != 3 || k.size() < 3) fail("attention q/k dims do not unpack");
    n_q_ = q[0];
    h_q_ = q[1];
    d_qk_ = q[2];
    n_kv_ = k[k.size() - 3];
    h_kv_ = k[k.size() - 2];
    d_v_ = k[k.size() - 1];
    dtype_q_ = type_at(op, 0);
    dtype_kv_ = arg_size(op.input_type) > 1 ? type_at(op, 1) : dtype_q_;
  }

  void fill_params() {
    add(params_, "B", int_value(1));
    add(params_, "N_Q", int_value(n_q_));
    add(params_, "H_Q", int_value(h_q_));
    add(params_, "H_V", int_value(h_kv_));
    add(params_, "H_K", int_value(h_kv_));
    add(params_, "N_KV", int_value(n_kv_));
    add(params_, "H_KV", int_value(h_kv_));
    add(params_, "d_h_qk", int_value(d_qk_));
    add(params_, "d_h_v", int_value(d_v_));
    add(params_, "dropout", float_value(0.0));
    add(params_, "causal", bool_value(false));
    add(params_, "flash_impl", bool_value(true));
    const std::pair<const char*, int64_t> aggregates[] = {
        {"c_sq", s_.c_sq}, {"c_sk", s_.c_sk}, {"c_sqsq", s_.c_sqsq}, {"c_sqsk", s_.c_sqsk},
        {"g_sq", s_.g_sq}, {"g_sk", s_.g_sk}, {"g_sqsq", s_.g_sqsq}, {"g_sqsk", s_.g_sqsk}};
    for (const auto& [name, value] : aggregates) add(params_, name, int_value(value));
    add(params_, "dtype_Q", dtype_value(dtype_q_));
    add(params_, "dtype_KV", dtype_value(dtype_kv_));
  }

  void require() const {
    if (!ok_) fail("no attention estimate without an sq/sk iteration annotation");
  }

  bool ok_ = false;
  ChunkStats s_;
  int64_t n_q_ = 0, h_q_ = 0, d_qk_ = 0, n_kv_ = 0, h_kv_ = 0, d_v_ = 0;
  PyValue dtype_q_, dtype_kv_;
};

// aiter::pa_sparse_prefill_opus_fwd (DeepSeek-V4 sparse prefill): the
// attended (query, KV slot) pairs are the lengths of the prefix and extend
// index lists (args 2 and 5); one MLA-absorbed latent KV head. Needs no
// annotation.
class SparsePrefillAttention : public PerfModel {
 public:
  explicit SparsePrefillAttention(const OpInput& op) {
    try {
      Shape q = dims_at(op, 0);
      if (q.size() < 3) fail("q has fewer than 3 dims");
      n_q_ = q[0];
      h_q_ = q[1];
      d_h_ = q[2];
      pairs_ = dims_at(op, 2).at(0) + dims_at(op, 5).at(0);
      dtype_q_ = type_at(op, 0);
      dtype_kv_ = arg_size(op.input_type) > 1 ? type_at(op, 1) : dtype_q_;
    } catch (const std::exception&) {
      return;  // TraceLens: no estimate
    }
    ok_ = true;
    add(params_, "B", int_value(1));
    add(params_, "N_Q", int_value(n_q_));
    add(params_, "H_Q", int_value(h_q_));
    add(params_, "H_V", int_value(1));
    add(params_, "H_K", int_value(1));
    add(params_, "N_KV", int_value(pairs_));
    add(params_, "H_KV", int_value(1));
    add(params_, "d_h_qk", int_value(d_h_));
    add(params_, "d_h_v", int_value(d_h_));
    add(params_, "dropout", float_value(0.0));
    add(params_, "causal", bool_value(false));
    add(params_, "flash_impl", bool_value(true));
    add(params_, "prefill_pairs", int_value(pairs_));
    add(params_, "dtype_Q", dtype_value(dtype_q_));
    add(params_, "dtype_KV", dtype_value(dtype_kv_));
  }
  double flops() const override {
    if (!ok_) fail("sparse prefill attention args do not parse");
    return static_cast<double>(PyInt(pairs_) * h_q_ * 2 * (PyInt(d_h_) + d_h_));
  }
  std::optional<double> bytes() const override {
    if (!ok_) fail("sparse prefill attention args do not parse");
    int64_t bpe = bpe_of(dtype_q_).value_or(0);
    if (bpe == 0) bpe = 2;
    int64_t bpe_kv = truthy(dtype_kv_) ? bpe_of(dtype_kv_).value_or(0) : 0;
    if (bpe_kv == 0) bpe_kv = bpe;
    PyInt qo = 2 * PyInt(n_q_) * h_q_ * d_h_ * bpe;
    return static_cast<double>(qo + PyInt(pairs_) * d_h_ * bpe_kv);
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    if (!ok_) return "";
    return truthy(dtype_q_) ? precision_of_value(dtype_q_) : "bf16";
  }

 private:
  bool ok_ = false;
  int64_t n_q_ = 0, h_q_ = 0, d_h_ = 0, pairs_ = 0;
  PyValue dtype_q_, dtype_kv_;
};

}  // namespace

void register_inference_attention_models(std::map<std::string_view, Factory>& out) {
  using V = InferenceAttention::Variant;
  auto attention = [&](const char* cls, V variant) {
    out[cls] = [variant](const OpInput& op) {
      return std::make_unique<InferenceAttention>(op, variant);
    };
  };
  attention("vllm_unified_attention_with_output", V::Base);
  attention("mha_varlen_fwd", V::Base);
  attention("mla_decode_fwd", V::Base);
  attention("aiter_fmha_v3_varlen_fwd", V::VFromArg2);
  attention("aiter_mha_batch_prefill", V::VFromArg2);
  attention("pseudo_mla_prefill_fwd", V::VFromArg2);
  // TraceLens reads the V head dim from a top-level "Concrete Inputs" key that
  // events never have, so it is always 512.
  attention("mla_tilelang_sparse_fwd", V::VFixed512);
  out["pa_sparse_prefill_opus_fwd"] = [](const OpInput& op) {
    return std::make_unique<SparsePrefillAttention>(op);
  };
}

}  // namespace jarvis::perf::detail

namespace jarvis::perf {

bool model_reads_event_context(std::string_view name) {
  return detail::annotated_op(name);
}

}  // namespace jarvis::perf
