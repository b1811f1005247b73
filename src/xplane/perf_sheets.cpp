#include "xplane/perf_sheets.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text_match.h"
#include "perf/perf_model.h"
#include "pycompat/numeric.h"
#include "pycompat/repr.h"
#include "report/stats.h"
#include "xplane/hlo.h"
#include "xplane/kernel_summary.h"

namespace jarvis::xplane {

namespace {

using pycompat::kNaN;
using pycompat::py_float_repr;
using pycompat::py_str_repr;

// ---- TraceLens's reading of one graph-viewer line (util.py get_dict) ----

// re.sub of a literal pattern: every non-overlapping `from`, left to right.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t at = 0;
  while (true) {
    size_t hit = s.find(from, at);
    out.append(s.substr(at, hit == std::string_view::npos ? std::string_view::npos : hit - at));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    at = hit + from.size();
  }
}

// get_dict's rewrites, in its order: "),"->")", ", "->",", " %"->"%".
std::string rewrite(std::string_view s) {
  return replace_all(replace_all(replace_all(s, "),", ")"), ", ", ","), " %", "%");
}

bool in_metadata_class(char c, bool dollar) {
  // [a-zA-Z_=\"\(\)\/ @.0-9-] (custom_call_target's pattern adds $)
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '=' || c == '"' || c == '(' || c == ')' || c == '/' || c == ' ' || c == '@' ||
         c == '.' || c == '-' || (dollar && c == '$');
}

// `prefix` then the longest run of `rest` the pattern allows.
std::string cut_after(std::string_view prefix, std::string_view rest, bool dollar) {
  size_t n = 0;
  while (n < rest.size() && in_metadata_class(rest[n], dollar)) ++n;
  std::string out(prefix);
  out.append(rest.substr(0, n));
  return out;
}

bool in_operand_class(char c) {
  // [0-9\[\]\{,a-z]
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '[' || c == ']' || c == '{' ||
         c == ',';
}

// re.findall(r"[bfs][0-9\[\]\{,a-z]*}", s): the run of class characters
// after a b / f / s must end right before a '}' (which the class excludes).
std::vector<std::string> find_operand_shapes(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == 'b' || c == 'f' || c == 's') {
      size_t j = i + 1;
      while (j < s.size() && in_operand_class(s[j])) ++j;
      if (j < s.size() && s[j] == '}') {
        out.emplace_back(s.substr(i, j - i + 1));
        i = j + 1;
        continue;
      }
    }
    ++i;
  }
  return out;
}

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

struct ParsedOperand {
  std::string type;
  std::vector<int64_t> dims;
};

// The first match of parse_operands' ([A-Za-z]+[0-9]+)\[([0-9,]+)\]\{([0-9,]+)\}.
std::optional<ParsedOperand> parse_operand(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!is_alpha(s[i])) continue;
    size_t j = i;
    while (j < s.size() && is_alpha(s[j])) ++j;
    size_t d = j;
    while (d < s.size() && is_digit(s[d])) ++d;
    if (d == j || d >= s.size() || s[d] != '[') continue;
    size_t k = d + 1;
    while (k < s.size() && (is_digit(s[k]) || s[k] == ',')) ++k;
    if (k == d + 1 || k >= s.size() || s[k] != ']') continue;
    size_t l = k + 1;
    if (l >= s.size() || s[l] != '{') continue;
    size_t m = l + 1;
    while (m < s.size() && (is_digit(s[m]) || s[m] == ',')) ++m;
    if (m == l + 1 || m >= s.size() || s[m] != '}') continue;
    ParsedOperand p;
    p.type = std::string(s.substr(i, d - i));
    std::string_view dims = s.substr(d + 1, k - d - 1);
    size_t start = 0;
    while (start <= dims.size()) {
      size_t comma = dims.find(',', start);
      std::string_view part = dims.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (!part.empty()) {
        int64_t v = 0;
        for (char ch : part) v = v * 10 + (ch - '0');
        p.dims.push_back(v);
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return p;
  }
  return std::nullopt;
}

// parse_operands: the operands that match, empty strings dropped.
std::vector<ParsedOperand> parse_operands(const std::vector<std::string>& operands) {
  std::vector<ParsedOperand> out;
  for (const std::string& o : operands) {
    if (o.empty()) continue;
    if (auto p = parse_operand(o)) out.push_back(std::move(*p));
  }
  return out;
}

PyValue tuple_of(std::vector<PyValue> items) {
  PyValue v = PyValue::make_list(std::move(items));
  v.kind = PyValue::Kind::Tuple;
  return v;
}

PyValue dims_tuple(const std::vector<int64_t>& dims) {
  std::vector<PyValue> items;
  for (int64_t d : dims) items.push_back(PyValue::integer(d));
  return tuple_of(std::move(items));
}

PyValue dims_tuples(const std::vector<ParsedOperand>& ops, size_t from, size_t to) {
  std::vector<PyValue> items;
  for (size_t k = from; k < std::min(to, ops.size()); ++k) items.push_back(dims_tuple(ops[k].dims));
  return tuple_of(std::move(items));
}

PyValue types_tuple(const std::vector<ParsedOperand>& ops, size_t from, size_t to) {
  std::vector<PyValue> items;
  for (size_t k = from; k < std::min(to, ops.size()); ++k)
    items.push_back(PyValue::string(ops[k].type));
  return tuple_of(std::move(items));
}

bool icase_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(a[k])) !=
        std::tolower(static_cast<unsigned char>(b[k])))
      return false;
  return true;
}

// JaxTreePerfAnalyzer.get_event_perf_model_name.
std::string perf_model_name(const JaxKernel& k) {
  if (!k.has_metadata || k.operands.empty() || k.custom_call_target.empty()) return "rest";
  const std::string& cc = k.custom_call_target;
  if ((contains(cc, "matmul") || contains(cc, "cublas")) && icase_equal(k.category, "GEMM"))
    return "jax_gemm";
  if (contains(cc, "te_fused_attn_forward_ffi")) return "jax_te_fused_attn";
  if (contains(cc, "te_fused_attn_backward_ffi")) return "jax_te_fused_attn_bwd";
  if ((contains(cc, "cudnn$convForward") || contains(cc, "cudnn$convBiasActivationForward")) &&
      icase_equal(k.category, "Conv"))
    return "jax_conv";
  if (contains(cc, "cudnn$convBackward") && icase_equal(k.category, "Conv")) return "jax_conv_bwd";
  return "rest";
}

const PyValue* arg(const Trace& trace, Uid u, std::string_view key) {
  return trace.arg(u, key);
}

std::string arg_text(const Trace& trace, Uid u, std::string_view key) {
  const PyValue* v = arg(trace, u, key);
  return v && v->is_string() ? v->s : std::string();
}

std::vector<std::string> arg_texts(const Trace& trace, Uid u, std::string_view key) {
  std::vector<std::string> out;
  const PyValue* v = arg(trace, u, key);
  if (!v || !v->is_seq()) return out;
  for (const PyValue& item : v->list) out.push_back(item.is_string() ? item.s : item.str());
  return out;
}

// ---- Python reprs of the cells ----

std::string np_float(double v) {
  return fmt::format("np.float64({})", py_float_repr(v));
}

std::string str_list_repr(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t k = 0; k < v.size(); ++k) {
    if (k) out += ", ";
    out += py_str_repr(v[k]);
  }
  return out + "]";
}

// The kernel_details dict's fields after 'dur' (TraceLens's key order).
std::string detail_fields(const JaxKernel& k) {
  const bool md = k.has_metadata;
  std::string out;
  out +=
      fmt::format(", 'custom_call_target': {}",
                  py_str_repr(md && !k.custom_call_target.empty() ? k.custom_call_target : "NA"));
  out += fmt::format(", 'operands': {}", md ? str_list_repr(k.operands) : py_str_repr("NA"));
  out += ", 'outputs': 'NA'";
  out +=
      fmt::format(", 'metadata': {}", py_str_repr(md && !k.metadata.empty() ? k.metadata : "NA"));
  return out;
}

std::string kernel_details_repr(const JaxKernel& k) {
  return fmt::format("[{{'name': {}, 'dur': {}{}}}]", py_str_repr(k.name), py_float_repr(k.dur_us),
                     detail_fields(k));
}

// _summarize_kernel_stats over one-kernel detail lists: the template's
// fields (dur removed) and the statistics of the durations.
std::string summary_repr(std::string head, const std::vector<double>& durs) {
  head += fmt::format(", 'count': {}", durs.size());
  head += fmt::format(", 'total_duration_us': {}", np_float(pycompat::numpy_sum(durs)));
  if (!durs.empty()) {
    head += fmt::format(", 'mean_duration_us': {}", np_float(pycompat::numpy_mean(durs)));
    head += fmt::format(", 'median_duration_us': {}", np_float(stats::median(durs)));
    head += fmt::format(", 'std_dev_duration_us': {}", np_float(pycompat::numpy_std(durs)));
    head += fmt::format(", 'min_duration_us': {}", np_float(stats::min(durs)));
    head += fmt::format(", 'max_duration_us': {}", np_float(stats::max(durs)));
  }
  return fmt::format("[{}}}]", head);
}

Cell number_or_missing(double v) {
  return std::isnan(v) ? Cell() : Cell(v);
}

// The five pandas groupby aggregates TraceLens asks for, in its order.
struct Agg {
  double mean, median, std, min, max, sum;
};
Agg aggregate(const std::vector<double>& v) {
  return {pycompat::pandas_groupby_mean(v),
          stats::median(v),
          pycompat::pandas_groupby_std(v),
          stats::min(v),
          stats::max(v),
          pycompat::pandas_groupby_sum(v)};
}

// ---- perf models (TraceLens PerfModel: jax_conv, jax_gemm, jax_te_fused_attn) ----

std::optional<int> jax_dtype_bpe(std::string_view t) {
  if (t == "f32") return 4;
  if (t == "f16" || t == "bf16") return 2;
  if (t == "f8" || t == "fp8") return 1;
  return std::nullopt;
}

std::string py_bool(bool b) {
  return b ? "True" : "False";
}

std::string py_opt_int(std::optional<int> v) {
  return v ? std::to_string(*v) : "None";
}

std::string dims_str(const std::vector<int64_t>& d) {
  return dims_tuple(d).repr();
}

double prod(const std::vector<int64_t>& d, size_t from = 0) {
  double p = 1;
  for (size_t k = from; k < d.size(); ++k) p *= static_cast<double>(d[k]);
  return p;
}

struct Metrics {
  double flops = 0;
  std::optional<double> bytes;
  std::vector<std::pair<std::string, std::string>> params;  // "param: x" columns, as str()
  PyValue input_dims, input_type;
};

// CONV.flops_func / bytes_func.
double conv_flops(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                  const std::vector<int64_t>& out, bool bias, bool transposed) {
  double per_element = 2 * prod(w, 1);
  double f = (transposed ? prod(x) : prod(out)) * per_element;
  return f + (bias ? prod(out) : 0);
}
std::optional<double> conv_bytes(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                 const std::vector<int64_t>& out, bool bias,
                                 std::optional<int> bpe) {
  if (!bpe) return std::nullopt;
  double bias_elems = bias && out.size() > 1 ? static_cast<double>(out[1]) : 0;
  return (prod(x) + prod(w) + bias_elems + prod(out)) * *bpe;
}
std::vector<int64_t> conv_t(const std::vector<int64_t>& s) {
  if (s.size() < 2) return s;
  std::vector<int64_t> t = s;
  std::swap(t[0], t[1]);
  return t;
}

std::optional<Metrics> conv_metrics(const JaxKernel& k, bool bwd) {
  auto ops = parse_operands(k.operands);
  auto outs = parse_operands({k.output});
  if (ops.size() < 2 || outs.empty()) return std::nullopt;  // TraceLens raises here
  const auto& x = ops[0].dims;
  std::vector<int64_t> w(bwd ? outs[0].dims : ops[1].dims);
  w.erase(w.begin(), w.begin() + std::min<size_t>(2, w.size()));
  const auto& out = outs[0].dims;
  const bool bias = ops.size() == 3;
  auto bpe = jax_dtype_bpe(ops[0].type);
  std::string nd = x.size() == 3   ? "conv1d"
                   : x.size() == 4 ? "conv2d"
                   : x.size() == 5 ? "conv3d"
                                   : "";
  if (nd.empty()) return std::nullopt;
  Metrics m;
  if (!bwd) {
    m.flops = conv_flops(x, w, out, bias, false);
    m.bytes = conv_bytes(x, w, out, bias, bpe);
  } else {
    m.flops = conv_flops(out, w, x, false, true) +
              conv_flops(conv_t(x), conv_t(out), conv_t(w), false, false) + (bias ? prod(out) : 0);
    if (bpe) {
      double bias_bytes = bias && out.size() > 1 ? prod(out) + static_cast<double>(out[1]) : 0;
      m.bytes =
          *conv_bytes(out, w, x, false, bpe) + *conv_bytes(out, x, w, false, bpe) + bias_bytes;
    }
  }
  m.params = {{"convNd", nd},
              {"input_shape", dims_str(x)},
              {"filter_shape", dims_str(w)},
              {"output_shape", dims_str(out)},
              {"bias", py_bool(bias)},
              {"bytes_per_element", py_opt_int(bpe)},
              {"transposed_conv", "False"}};
  m.input_dims = dims_tuples(ops, 0, ops.size());
  m.input_type = types_tuple(ops, 0, ops.size());
  return m;
}

// JaxProfileProcessor.process_gemm_ops for one op, then jax_gemm.
std::optional<Metrics> gemm_metrics(const JaxKernel& k) {
  auto config = nlohmann::json::parse(k.backend_config, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return std::nullopt;
  const auto& g = config.value("gemm_backend_config", nlohmann::json::object());
  if (!g.is_object()) return std::nullopt;
  int64_t beta = 0;
  if (auto it = g.find("beta"); it != g.end() && it->is_number()) beta = it->get<int64_t>();
  const bool epilogue_bias = g.value("epilogue", std::string()) == "BIAS";
  const auto& dd = g.value("dot_dimension_numbers", nlohmann::json::object());
  auto first_dim = [&](const char* key) -> std::optional<size_t> {
    auto it = dd.find(key);
    if (it == dd.end() || !it->is_array() || it->empty()) return std::nullopt;
    const auto& v = (*it)[0];
    if (v.is_string()) return static_cast<size_t>(std::stoll(v.get<std::string>()));
    if (v.is_number_integer()) return v.get<size_t>();
    return std::nullopt;
  };
  auto lhs = first_dim("lhs_contracting_dimensions");
  auto rhs = first_dim("rhs_contracting_dimensions");
  if (!lhs || !rhs) return std::nullopt;
  // The result: the first f/bf16/f8 tensor of the output tuple.
  auto outs = parse_operands({k.output});
  std::vector<ParsedOperand> tensors;
  for (const auto& o : parse_operands(k.operands)) tensors.push_back(o);
  if (outs.empty() || tensors.size() < 2 || tensors.size() > 4) return std::nullopt;
  if (tensors.size() == 4 && !epilogue_bias) return std::nullopt;
  std::vector<int64_t> c = outs[0].dims, a = tensors[0].dims, b = tensors[1].dims;
  if (c.size() > 3 || a.size() > 3 || b.size() > 3 || *lhs >= a.size() || *rhs >= b.size())
    return std::nullopt;
  if (a[*lhs] != b[*rhs]) return std::nullopt;
  const int64_t kdim = a[*lhs];
  // list.remove: the first element equal to the value.
  auto remove_value = [](std::vector<int64_t>& v, int64_t x) {
    auto it = std::find(v.begin(), v.end(), x);
    if (it != v.end()) v.erase(it);
  };
  remove_value(a, kdim);
  remove_value(b, kdim);
  int64_t batch = 1;
  if (c.size() > 2) {
    batch = c[0];
    remove_value(a, batch);
    remove_value(b, batch);
  }
  // The output's layout: "0,1" in it swaps M and N.
  std::string order;
  if (size_t brace = k.output.find('{'); brace != std::string::npos) {
    size_t e = brace + 1;
    while (e < k.output.size() &&
           (k.output[e] == '0' || k.output[e] == '1' || k.output[e] == '2' || k.output[e] == ','))
      ++e;
    order = k.output.substr(brace + 1, e - brace - 1);
  }
  int64_t n = 1, m = 1;
  if (contains(order, "0,1")) {
    n = b.empty() ? 1 : b[0];
    m = a.empty() ? 1 : a[0];
  } else {
    n = a.empty() ? 1 : a[0];
    m = b.empty() ? 1 : b[0];
  }
  std::string type;
  if (contains(k.custom_call_target, "f8")) {
    type = "fp8";
  } else {
    for (std::string_view t : {"bf16", "f16", "f32", "f8", "fp8"})
      if (k.operands[0].rfind(t, 0) == 0) {
        type = std::string(t);
        break;
      }
  }
  if (type.empty()) return std::nullopt;
  const bool bias = beta != 0;
  auto bpe = jax_dtype_bpe(type);
  const double M = static_cast<double>(m), N = static_cast<double>(n),
               K = static_cast<double>(kdim), B = static_cast<double>(batch);
  Metrics mt;
  mt.flops = B * (2 * M * N * K + (bias ? M * N : 0));
  if (bpe) mt.bytes = B * ((M * K + K * N + M * N + (bias ? N : 0)) * *bpe);
  std::string sim = type == "f32"    ? "fp32"
                    : type == "f16"  ? "fp16"
                    : type == "bf16" ? "bf16"
                                     : "fp8";
  mt.params = {{"B", std::to_string(batch)},
               {"M", std::to_string(m)},
               {"N", std::to_string(n)},
               {"K", std::to_string(kdim)},
               {"bias", py_bool(bias)},
               {"dtype_A_B", tuple_of({PyValue::string(type), PyValue::string(type)}).repr()},
               {"simulation_dtype", sim}};
  // TraceLens's GEMM model adds the transpose flags it parses from the
  // kernel name (kernel_name_parser: Tensile's Ailk/Alik, Bljk/Bjlk; nvjet's
  // last two letters), when the name parses.
  if (auto info = perf::parse_gemm_kernel_name(k.name)) {
    auto flag = [](std::optional<bool> b) { return b ? PyValue::boolean(*b) : PyValue::none(); };
    mt.params.emplace_back("transpose",
                           tuple_of({flag(info->trans_a), flag(info->trans_b)}).repr());
  }
  // jarvis's flags from the HLO: (lhs, rhs) transposed in row-major BLAS
  // terms. The lhs is M x K, transposed unless its contracting dimension is
  // its minor-most (contiguous) one; the rhs is K x N, transposed when its
  // contracting dimension is the minor-most.
  {
    auto minor_most = [](const std::string& operand, size_t rank) -> std::optional<size_t> {
      size_t close = operand.find(']');
      size_t brace = close == std::string::npos ? close : operand.find('{', close);
      if (brace == std::string::npos || brace + 1 >= operand.size() ||
          !is_digit(operand[brace + 1]))
        return rank ? std::optional<size_t>(rank - 1) : std::nullopt;  // XLA's default layout
      size_t v = 0;
      for (size_t i = brace + 1; i < operand.size() && is_digit(operand[i]) && v < rank; ++i)
        v = v * 10 + static_cast<size_t>(operand[i] - '0');
      return v < rank ? std::optional<size_t>(v) : std::nullopt;
    };
    std::vector<std::string> texts;
    for (const std::string& o : k.operands)
      if (!o.empty() && parse_operand(o)) texts.push_back(o);
    auto lm = minor_most(texts[0], tensors[0].dims.size());
    auto rm = minor_most(texts[1], tensors[1].dims.size());
    auto flag = [](std::optional<size_t> minor, size_t contracting, bool lhs) {
      if (!minor) return PyValue::none();
      return PyValue::boolean(lhs ? *minor != contracting : *minor == contracting);
    };
    mt.params.emplace_back("hlo_transpose",
                           tuple_of({flag(lm, *lhs, true), flag(rm, *rhs, false)}).repr());
  }
  mt.input_dims = dims_tuples(tensors, 0, tensors.size());
  mt.input_type = types_tuple(tensors, 0, tensors.size());
  return mt;
}

std::string dtype_jax2torch(std::string_view t) {
  if (t == "f32") return "float";
  if (t == "f64") return "double";
  if (t == "f16") return "c10::half";
  if (t == "bf16") return "c10::bfloat16";
  if (t == "f8") return "c10::float8_e4m3fnuz";
  if (t == "fp8") return "fp8";
  return "None";
}

// jax_te_fused_attn (SDPA with BSHD operands). TraceLens indexes the first
// three operands as q, k, v; with Transformer Engine's packed QKV layout
// ([B, S, 3, H, D] and empty k / v) that raises in TraceLens; jarvis reads
// q, k and v from the packed tensor instead (docs/jax.md).
std::optional<Metrics> te_metrics(const JaxKernel& k, bool bwd) {
  auto ops = parse_operands(k.operands);
  if (ops.size() < 3) return std::nullopt;
  std::vector<int64_t> q = ops[0].dims, kk = ops[1].dims, v = ops[2].dims;
  auto packed = [](const std::vector<int64_t>& s) {
    return std::vector<int64_t>{s[0], s[1], s[3], s[4]};
  };
  if (q.size() == 5 && (q[2] == 3 || q[2] == 2) && prod(kk) == 0 && prod(v) == 0) {
    q = kk = v = packed(q);
  } else if (q.size() == 4 && kk.size() == 5 && kk[2] == 2 && prod(v) == 0) {
    kk = v = packed(kk);  // packed KV
  }
  if (q.size() != 4 || kk.size() != 4 || v.size() != 4) return std::nullopt;
  // bhnd_idx (0, 2, 1, 3) of a BSHD tensor.
  const double B = static_cast<double>(q[0]), NQ = static_cast<double>(q[1]),
               HQ = static_cast<double>(q[2]), DQK = static_cast<double>(q[3]);
  const double NKV = static_cast<double>(kk[1]), HKV = static_cast<double>(kk[2]),
               DV = static_cast<double>(v[3]);
  if (q[0] != kk[0] || q[0] != v[0] || kk[2] != v[2] || kk[1] != v[1] || q[3] != kk[3])
    return std::nullopt;
  auto bpe = jax_dtype_bpe(ops[0].type);
  Metrics m;
  if (!bwd) {
    m.flops = B * HQ * (2 * NQ * NKV * DQK) + B * HQ * (2 * NQ * DV * NKV);
    if (bpe)
      m.bytes =
          (B * NQ * HQ * DQK + B * NKV * HKV * DQK + B * NKV * HKV * DV + B * NQ * HQ * DV) * *bpe;
  } else {
    const double gqa = std::floor(HQ / HKV) - 1;
    double f = B * HQ * (2 * NQ * NKV * DQK);                  // recompute QK (flash)
    f += B * HQ * (2 * NKV * NQ * DV) + B * NKV * DV * gqa;    // V grad
    f += B * HQ * (2 * NQ * NKV * DV);                         // P grad
    f += B * HQ * (2 * NQ * NKV * DQK);                        // Q grad
    f += B * HQ * (2 * NKV * NQ * DQK) + B * NKV * DQK * gqa;  // K grad
    m.flops = f;
    if (bpe)
      m.bytes = (B * NQ * HQ * DQK + B * NKV * HKV * DQK + B * NKV * HKV * DV + B * NQ * HQ * DV +
                 B * NQ * HQ * DQK + B * NKV * HKV * DQK + B * NKV * HKV * DV) *
                *bpe;
  }
  auto concrete = dims_tuples(ops, 3, 4);
  std::string dtypes = tuple_of({PyValue::string(dtype_jax2torch(ops[0].type)),
                                 PyValue::string(dtype_jax2torch(ops[1].type))})
                           .repr();
  m.params = {{"B", std::to_string(q[0])},
              {"N_Q", std::to_string(q[1])},
              {"H_Q", std::to_string(q[2])},
              {"N_KV", std::to_string(kk[1])},
              {"H_KV", std::to_string(kk[2])},
              {"d_h_qk", std::to_string(q[3])},
              {"d_h_v", std::to_string(v[3])},
              {"bias", concrete.repr()},
              {"dtype_A_B", dtypes},
              {"causal", "False"},
              {"flash_impl", "True"},
              {"fused", "True"},
              {"bytes_per_element", py_opt_int(bpe)}};
  m.input_dims = dims_tuples(ops, 0, 3);
  m.input_type = types_tuple(ops, 0, 3);
  return m;
}

std::optional<Metrics> metrics_of(const JaxKernel& k) {
  if (k.perf_model == "jax_conv") return conv_metrics(k, false);
  if (k.perf_model == "jax_conv_bwd") return conv_metrics(k, true);
  if (k.perf_model == "jax_gemm") return gemm_metrics(k);
  if (k.perf_model == "jax_te_fused_attn") return te_metrics(k, false);
  if (k.perf_model == "jax_te_fused_attn_bwd") return te_metrics(k, true);
  return std::nullopt;
}

// Input Dims / type / Concrete Inputs as get_event_metadata sets them.
void set_input_args(JaxKernel& k) {
  k.input_dims = k.input_type = k.input_strides = k.concrete_inputs = tuple_of({});
  if (!k.has_metadata || k.operands.empty()) return;
  auto ops = parse_operands(k.operands);
  if (contains(k.perf_model, "te_fused_attn")) {
    k.input_dims = dims_tuples(ops, 0, 3);
    k.input_type = types_tuple(ops, 0, 3);
    k.concrete_inputs = dims_tuples(ops, 3, 4);
    return;
  }
  k.input_dims = dims_tuples(ops, 0, ops.size());
  k.input_type = types_tuple(ops, 0, ops.size());
}

std::vector<std::string> launcher_columns() {
  return {"name",
          "UID",
          "op category",
          "total_direct_kernel_time",
          "direct_kernel_count",
          "pid",
          "tid",
          "Input Dims",
          "Input type",
          "Input Strides",
          "Concrete Inputs",
          "kernel_details",
          "GPU_kernel_launch_latency"};
}

void fill_launcher_row(std::vector<Cell>& row, const JaxKernel& k) {
  row[0] = Cell(k.name);
  row[1] = Cell(k.tracelens_uid);
  row[2] = Cell(k.category);
  row[3] = Cell(k.dur_us);
  row[4] = Cell(int64_t{1});
  row[5] = Cell(k.pid);
  row[6] = Cell(k.tid);
  row[7] = Cell(k.input_dims.repr());
  row[8] = Cell(k.input_type.repr());
  row[9] = Cell(k.input_strides.repr());
  row[10] = Cell(k.concrete_inputs.repr());
  row[11] = Cell(kernel_details_repr(k));
  row[12] = number_or_missing(k.launch_latency_us);
}

// df_xla_perf's dtype table (get_df_xla_perf).
std::optional<int> xla_perf_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int> table = {
      {"f32", 4},        {"bf16", 2},   {"s32", 4},        {"fp16", 2},
      {"u32", 4},        {"f16", 2},    {"u64", 8},        {"f8e4m3fn", 1},
      {"f8e4m3fnuz", 1}, {"f8e5m2", 1}, {"f8e5m2fnuz", 1}, {"pred", 1}};
  auto it = table.find(dtype);
  if (it != table.end()) return it->second;
  if (dtype.rfind("f8", 0) == 0 || dtype.rfind("s8", 0) == 0) return 1;
  return std::nullopt;
}

// re.match(r"(\w+)\[([0-9,]*)\](?:\{([0-9,]*)\})?", operand): dtype and dims.
int64_t operand_bytes(std::string_view s) {
  auto word = [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; };
  size_t i = 0;
  while (i < s.size() && word(s[i])) ++i;
  if (i == 0 || i >= s.size() || s[i] != '[') return 0;
  size_t j = i + 1;
  while (j < s.size() && (is_digit(s[j]) || s[j] == ',')) ++j;
  if (j >= s.size() || s[j] != ']') return 0;
  std::vector<int64_t> dims;
  int64_t cur = -1;
  for (size_t k = i + 1; k <= j; ++k) {
    if (k < j && is_digit(s[k])) {
      cur = (cur < 0 ? 0 : cur * 10) + (s[k] - '0');
    } else {
      if (cur >= 0) dims.push_back(cur);
      cur = -1;
    }
  }
  if (dims.empty()) return 0;  // a scalar: TraceLens skips it
  auto nbytes = xla_perf_bytes(s.substr(0, i));
  if (!nbytes) return 0;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n * *nbytes;
}

// The categories TraceLens writes op sheets for, in its order.
const std::vector<std::string_view>& op_categories() {
  static const std::vector<std::string_view> cats = {
      "GEMM", "FA BWD", "FA FWD", "FA V3", "Conv", "TE", "Communication rccl/nccl"};
  return cats;
}

std::string sheet_name_of(std::string_view category) {
  std::string out = "op_";
  bool space = false;
  for (char c : category) {
    if (c == ' ') {
      space = true;
      continue;
    }
    if (space && out.size() > 3) out += '_';
    space = false;
    // "rccl/nccl" would name a folder: TraceLens's sheet name, minus the slash.
    out += c == '/' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

std::vector<std::string> tracelens_operands(const std::vector<std::string>& shapes,
                                            const std::vector<std::string>& names) {
  // "opcode(" + operands as XLA prints them (shape %name, "/*index=N*/"
  // before every fifth) + ")", rewritten; get_operands keeps what lies
  // between the first '(' and the next ')'.
  std::string line = "op(";
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (k) line += ", ";
    if (k && k % 5 == 0) line += fmt::format("/*index={}*/", k);
    line += shapes[k];
    line += " %";
    line += k < names.size() ? names[k] : std::string("?");
  }
  line += ")";
  line = rewrite(line);
  std::string_view section(line);
  section.remove_prefix(section.find('(') + 1);
  if (size_t close = section.find(')'); close != std::string_view::npos)
    section = section.substr(0, close);
  std::vector<std::string> found = find_operand_shapes(section);
  if (!found.empty()) return found;
  // No match: operands.split(",").
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = section.find(',', start);
    parts.emplace_back(section.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::string tracelens_metadata(const std::string& metadata_text) {
  std::string piece = rewrite(fmt::format("metadata={{{}}}", metadata_text));
  return cut_after("metadata={", std::string_view(piece).substr(10), false);
}

std::string tracelens_custom_call_target(const std::string& target) {
  // Followed by ", " and the next attribute in the line ("," once rewritten).
  std::string piece = rewrite(fmt::format("custom_call_target=\"{}\", ", hlo_escape(target)));
  constexpr std::string_view kPrefix = "custom_call_target=\"";
  return cut_after(kPrefix, std::string_view(piece).substr(kPrefix.size()), true);
}

std::vector<JaxKernel> jax_kernels(const Trace& trace) {
  // TraceLens's UIDs: xprof's trace viewer lists the GPU planes' events by
  // pid, line (tid) and start, before the host's.
  struct Key {
    int64_t pid, tid, ts;
    Uid uid;
  };
  std::vector<Key> gpu;
  // The host launch of each correlation: the last in TraceLens's order.
  std::unordered_map<int64_t, Key> launch;
  // Per (pid, tid) pair: 1 a /device: plane, 2 a /host: plane, 0 neither.
  std::vector<int8_t> plane_kind(trace.threads.size(), -1);
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    const ProcId& pid = trace.pid(e);
    const ProcId& tid = trace.tid(e);
    if (pid.is_string || !pid.present() || tid.is_string || !e.has_ts()) continue;
    int8_t& kind = plane_kind[e.thread];
    if (kind < 0) {
      std::string process = trace.process_name(pid);
      kind = process.rfind("/device:", 0) == 0 ? 1 : process.rfind("/host:", 0) == 0 ? 2 : 0;
    }
    if (kind == 1) {
      gpu.push_back({pid.value, tid.value, e.ts_ns, u});
    } else if (kind == 2) {
      int64_t corr = trace.correlation(e);
      if (corr == kNoInt) continue;
      Key k{pid.value, tid.value, e.ts_ns, u};
      auto [it, fresh] = launch.emplace(corr, k);
      if (!fresh && std::tie(it->second.pid, it->second.tid, it->second.ts, it->second.uid) <
                        std::tie(k.pid, k.tid, k.ts, k.uid))
        it->second = k;
    }
  }
  std::sort(gpu.begin(), gpu.end(), [](const Key& a, const Key& b) {
    return std::tie(a.pid, a.tid, a.ts, a.uid) < std::tie(b.pid, b.tid, b.ts, b.uid);
  });
  std::unordered_map<Uid, int64_t> tracelens_uid;
  for (size_t k = 0; k < gpu.size(); ++k) tracelens_uid[gpu[k].uid] = static_cast<int64_t>(k);

  std::vector<JaxKernel> out;
  for (const KernelLaunch& l : kernel_launches(trace)) {
    const Event& e = trace.events[l.uid];
    JaxKernel k;
    k.uid = l.uid;
    k.tracelens_uid = tracelens_uid.count(l.uid) ? tracelens_uid[l.uid] : -1;
    k.name = std::string(l.name);
    k.category = std::string(l.category);
    k.dur_us = l.dur_us;
    k.ts_us = e.ts();
    k.pid = l.gpu_pid;
    k.tid = trace.tid(e).value;
    k.launch_latency_us = kNaN;
    int64_t corr = trace.correlation(e);
    bool linked = false;
    if (corr != kNoInt) {
      if (auto it = launch.find(corr); it != launch.end()) {
        linked = true;
        k.launch_latency_us = k.ts_us - trace.events[it->second.uid].ts();
      }
    }
    const PyValue* shapes = trace.arg(l.uid, "hlo_operands");
    const PyValue* root = trace.arg(l.uid, "hlo_root");
    const bool is_root = root && root->kind == PyValue::Kind::Bool && root->b;
    k.has_metadata = linked && shapes && !is_root;
    if (k.has_metadata) {
      k.operands = tracelens_operands(arg_texts(trace, l.uid, "hlo_operands"),
                                      arg_texts(trace, l.uid, "hlo_operand_names"));
      k.output = rewrite(arg_text(trace, l.uid, "hlo_shape"));
      if (std::string t = arg_text(trace, l.uid, "custom_call_target"); !t.empty())
        k.custom_call_target = tracelens_custom_call_target(t);
      if (std::string m = arg_text(trace, l.uid, "hlo_metadata"); !m.empty())
        k.metadata = tracelens_metadata(m);
      k.backend_config = arg_text(trace, l.uid, "backend_config");
    }
    k.perf_model = perf_model_name(k);
    set_input_args(k);
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const JaxKernel& a, const JaxKernel& b) {
    return a.tracelens_uid < b.tracelens_uid;
  });
  return out;
}

Table kernel_launchers_table(const std::vector<JaxKernel>& kernels) {
  Table t("kernel_launchers", launcher_columns());
  for (const JaxKernel& k : kernels) fill_launcher_row(t.add_row(), k);
  return t;
}

Table df_xla_perf_table(const std::vector<JaxKernel>& kernels) {
  auto cols = launcher_columns();
  cols.push_back("total_input_bytes");
  Table t("df_xla_perf", cols);
  for (const JaxKernel& k : kernels) {
    if (k.category != kXlaCategory) continue;
    auto& row = t.add_row();
    fill_launcher_row(row, k);
    int64_t bytes = 0;
    if (k.has_metadata)
      for (const std::string& o : k.operands) bytes += operand_bytes(o);
    row[13] = Cell(bytes);
  }
  return t;
}

Table kernel_launchers_unique_args_table(const std::vector<JaxKernel>& kernels) {
  struct Group {
    const JaxKernel* first = nullptr;
    std::vector<double> durs;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  for (const JaxKernel& k : kernels) {
    std::string key = k.name + '\x1f' + k.input_dims.repr() + '\x1f' + k.input_type.repr() +
                      '\x1f' + k.input_strides.repr() + '\x1f' + k.concrete_inputs.repr();
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) groups.push_back({&k, {}});
    groups[it->second].durs.push_back(k.dur_us);
  }
  std::vector<Agg> aggs;
  for (const Group& g : groups) aggs.push_back(aggregate(g.durs));
  std::vector<size_t> order(groups.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (aggs[a].sum != aggs[b].sum) return aggs[a].sum > aggs[b].sum;
    return groups[a].first->tracelens_uid < groups[b].first->tracelens_uid;
  });
  std::vector<double> sums;
  for (size_t g : order) sums.push_back(aggs[g].sum);
  const double total = pycompat::pandas_series_sum(sums);
  Table t("kernel_launchers_unique_args",
          {"name", "Input Dims", "Input type", "Input Strides", "Concrete Inputs",
           "operation_count", "total_direct_kernel_time_mean", "total_direct_kernel_time_median",
           "total_direct_kernel_time_std", "total_direct_kernel_time_min",
           "total_direct_kernel_time_max", "total_direct_kernel_time_sum", "ex_UID",
           "kernel_details_summary", "Percentage (%)", "Cumulative Percentage (%)"});
  double cumulative = 0;
  for (size_t g : order) {
    const JaxKernel& k = *groups[g].first;
    const Agg& a = aggs[g];
    auto& row = t.add_row();
    row[0] = Cell(k.name);
    row[1] = Cell(k.input_dims.repr());
    row[2] = Cell(k.input_type.repr());
    row[3] = Cell(k.input_strides.repr());
    row[4] = Cell(k.concrete_inputs.repr());
    row[5] = Cell(groups[g].durs.size());
    row[6] = Cell(a.mean);
    row[7] = Cell(a.median);
    row[8] = number_or_missing(a.std);
    row[9] = Cell(a.min);
    row[10] = Cell(a.max);
    row[11] = Cell(a.sum);
    row[12] = Cell(k.tracelens_uid);
    row[13] = Cell(summary_repr(
        fmt::format("{{'name': {}{}", py_str_repr(k.name), detail_fields(k)), groups[g].durs));
    double pct = a.sum / total * 100;
    cumulative += pct;
    row[14] = Cell(pct);
    row[15] = Cell(cumulative);
  }
  return t;
}

std::vector<Table> op_category_tables(const std::vector<JaxKernel>& kernels) {
  std::vector<Table> out;
  for (std::string_view category : op_categories()) {
    struct Row {
      const JaxKernel* k;
      Metrics m;
      double gflops, tflops_s, mb, flops_per_byte, tb_s;
    };
    std::vector<Row> rows;
    for (const JaxKernel& k : kernels) {
      if (!icase_equal(k.category, category) || k.perf_model == "rest") continue;
      auto m = metrics_of(k);
      if (!m) continue;  // TraceLens raises on these; jarvis leaves the kernel out
      Row r{&k, std::move(*m), 0, 0, kNaN, kNaN, kNaN};
      r.gflops = r.m.flops / 1e9;
      r.tflops_s = k.dur_us > 0 ? (r.gflops / 1e3) / (k.dur_us / 1e6) : kNaN;
      if (r.m.bytes) {
        r.mb = *r.m.bytes / (1024.0 * 1024.0);
        r.flops_per_byte = *r.m.bytes > 0 ? (r.gflops * 1e9) / *r.m.bytes : kNaN;
        r.tb_s = k.dur_us > 0 ? (*r.m.bytes / 1e12) / (k.dur_us / 1e6) : kNaN;
      }
      rows.push_back(std::move(r));
    }
    if (rows.empty()) continue;
    // The param columns: every row's keys in first-seen order (a DataFrame
    // of dicts), "nan" where a row lacks one (TraceLens groups on the
    // columns' str()).
    std::vector<std::string> param_names;
    for (const Row& r : rows)
      for (const auto& [p, _] : r.m.params)
        if (std::find(param_names.begin(), param_names.end(), p) == param_names.end())
          param_names.push_back(p);
    // Group by name and the param columns' str(), keys sorted (pandas groupby).
    std::map<std::vector<std::string>, std::vector<size_t>> groups;
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<std::string> key{rows[r].k->name};
      for (const std::string& p : param_names) {
        auto it = std::find_if(rows[r].m.params.begin(), rows[r].m.params.end(),
                               [&p](const auto& kv) { return kv.first == p; });
        key.push_back(it == rows[r].m.params.end() ? std::string("nan") : it->second);
      }
      groups[key].push_back(r);
    }
    std::vector<std::string> cols{"name"};
    for (const std::string& p : param_names) cols.push_back(fmt::format("param: {}", p));
    for (const char* c : {"GFLOPS_first",
                          "Data Moved (MB)_first",
                          "FLOPS/Byte_first",
                          "TB/s_mean",
                          "TB/s_median",
                          "TB/s_std",
                          "TB/s_min",
                          "TB/s_max",
                          "TFLOPS/s_mean",
                          "TFLOPS/s_median",
                          "TFLOPS/s_std",
                          "TFLOPS/s_min",
                          "TFLOPS/s_max",
                          "kernel_details__summarize_kernel_stats",
                          "Input Dims_first",
                          "Input type_first",
                          "Kernel Time (µs)_mean",
                          "Kernel Time (µs)_median",
                          "Kernel Time (µs)_std",
                          "Kernel Time (µs)_min",
                          "Kernel Time (µs)_max",
                          "Kernel Time (µs)_sum",
                          "name_count",
                          "UID_first"})
      cols.push_back(c);
    struct Out {
      std::vector<Cell> cells;
      double sum;
      int64_t uid;
    };
    std::vector<Out> result;
    for (const auto& [key, members] : groups) {
      const Row& first = rows[members.front()];
      std::vector<double> tb, tf, kt;
      for (size_t r : members) {
        tb.push_back(rows[r].tb_s);
        tf.push_back(rows[r].tflops_s);
        kt.push_back(rows[r].k->dur_us);
      }
      Agg atb = aggregate(tb), atf = aggregate(tf), akt = aggregate(kt);
      std::vector<Cell> c;
      for (const std::string& part : key) c.emplace_back(part);
      c.push_back(Cell(first.gflops));
      c.push_back(number_or_missing(first.mb));
      c.push_back(number_or_missing(first.flops_per_byte));
      for (const Agg* a : {&atb, &atf}) {
        c.push_back(number_or_missing(a->mean));
        c.push_back(number_or_missing(a->median));
        c.push_back(number_or_missing(a->std));
        c.push_back(number_or_missing(a->min));
        c.push_back(number_or_missing(a->max));
      }
      c.push_back(Cell(summary_repr(fmt::format("{{'name': {}", py_str_repr(first.k->name)), kt)));
      c.push_back(Cell(first.m.input_dims.repr()));
      c.push_back(Cell(first.m.input_type.repr()));
      c.push_back(Cell(akt.mean));
      c.push_back(Cell(akt.median));
      c.push_back(number_or_missing(akt.std));
      c.push_back(Cell(akt.min));
      c.push_back(Cell(akt.max));
      c.push_back(Cell(akt.sum));
      c.push_back(Cell(members.size()));
      c.push_back(Cell(first.k->tracelens_uid));
      result.push_back({std::move(c), akt.sum, first.k->tracelens_uid});
    }
    std::stable_sort(result.begin(), result.end(), [](const Out& a, const Out& b) {
      if (a.sum != b.sum) return a.sum > b.sum;
      return a.uid < b.uid;
    });
    Table t(sheet_name_of(category), cols);
    for (auto& r : result) t.add_row() = std::move(r.cells);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Table> hlo_sheets(const std::vector<JaxKernel>& kernels) {
  std::vector<Table> out{kernel_launchers_table(kernels),
                         kernel_launchers_unique_args_table(kernels), df_xla_perf_table(kernels)};
  for (Table& t : op_category_tables(kernels)) out.push_back(std::move(t));
  return out;
}

}  // namespace jarvis::xplane
