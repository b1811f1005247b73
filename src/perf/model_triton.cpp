// Perf model for torch.compile-generated Triton kernels (triton_poi_*,
// triton_red_*, triton_per_*), from the kernel metadata PyTorch ≥ 2.4 records
// in the launch event's args (spec perf-models.md §5.7).
//
// FLOPs = Σ per-op weight of the fused ATen ops × xnumel·rnumel; bytes = Σ
// tensor-arg bytes (+ one output write of xnumel elements for pointwise
// kernels). xnumel / rnumel are the trailing integer concrete inputs. The
// Inductor cache-directory fallback TraceLens also has is not implemented:
// without trace metadata the kernel is unmodeled.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "perf/models_internal.h"
#include "pycompat/text.h"
#include "trace/numeric.h"

namespace jarvis::perf::detail {
namespace {

const std::unordered_set<std::string_view>& known_aten_ops() {
  static const std::unordered_set<std::string_view> ops = {
#include "perf/aten_op_names.inc"
  };
  return ops;
}

// The most '_'-separated tokens of a known op name.
size_t max_op_tokens() {
  static const size_t most = [] {
    size_t m = 1;
    for (std::string_view op : known_aten_ops())
      m = std::max<size_t>(m, 1 + std::count(op.begin(), op.end(), '_'));
    return m;
  }();
  return most;
}

// FLOPs per element of each fused ATen op (memory-only ops weigh 0).
int flops_per_elem(std::string_view op) {
  static const std::unordered_map<std::string_view, int> table = {
      {"aten.add", 1},      {"aten.sub", 1},     {"aten.mul", 1},   {"aten.div", 1},
      {"aten.pow", 2},      {"aten.sqrt", 2},    {"aten.rsqrt", 2}, {"aten.exp", 4},
      {"aten.log", 4},      {"aten.sigmoid", 4}, {"aten.tanh", 4},  {"aten.relu", 1},
      {"aten.silu", 4},     {"aten.gelu", 8},    {"aten.mean", 1},  {"aten.sum", 1},
      {"aten.var", 2},      {"aten.abs", 1},     {"aten.neg", 1},   {"aten.reciprocal", 2},
      {"aten.ne", 1},       {"aten.eq", 1},      {"aten.lt", 1},    {"aten.gt", 1},
      {"aten._to_copy", 0}, {"aten.copy_", 0},   {"aten.clone", 0}, {"aten.embedding", 0},
  };
  auto it = table.find(op);
  return it == table.end() ? 0 : it->second;
}

int c10_dtype_bytes(std::string_view dtype) {
  static const std::unordered_map<std::string_view, int> table = {
      {"c10::BFloat16", 2}, {"c10::Half", 2}, {"c10::Float", 4}, {"c10::Double", 8},
      {"c10::Byte", 1},     {"c10::Char", 1}, {"c10::Int", 4},   {"c10::Long", 8},
  };
  auto it = table.find(dtype);
  return it == table.end() ? 0 : it->second;
}

std::vector<std::string> split_underscore(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t u = s.find('_', start);
    out.push_back(s.substr(start, u == std::string::npos ? std::string::npos : u - start));
    if (u == std::string::npos) return out;
    start = u + 1;
  }
}

// The middle of "triton_{poi,red,per}_fused_<ops>_<digits>": <ops>, or
// nullopt when the name has another form. Plain string checks rather than a
// regex: the name comes from the trace and may be arbitrarily long.
std::optional<std::string_view> fused_ops_part(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"triton_poi_fused_", "triton_red_fused_",
                                                   "triton_per_fused_"};
  bool known = false;
  for (std::string_view prefix : kPrefixes) known = known || name.starts_with(prefix);
  if (!known) return std::nullopt;
  std::string_view rest = name.substr(kPrefixes[0].size());
  size_t digits = rest.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(rest[digits - 1]))) --digits;
  // At least one digit after the last '_' and a non-empty middle before it.
  if (digits == rest.size() || digits < 2 || rest[digits - 1] != '_') return std::nullopt;
  return rest.substr(0, digits - 1);
}

// Segments the kernel name's middle part into known ATen op names, preferring
// the longest op at each step when backtracking (fewest ops).
std::vector<std::string> fused_ops_from_name(std::string_view name) {
  auto middle = fused_ops_part(name);
  if (!middle) return {};
  std::vector<std::string> tokens = split_underscore(std::string(*middle));
  size_t n = tokens.size();
  // reach[i]: (candidate, start) pairs whose segmentation ends at token i.
  std::vector<std::optional<std::vector<std::pair<std::string, size_t>>>> reach(n + 1);
  reach[0].emplace();
  for (size_t i = 1; i <= n; ++i) {
    // An op name spans at most max_op_tokens() tokens, which keeps the
    // search linear in the name's length.
    const size_t span = max_op_tokens();
    for (size_t j = i > span ? i - span : 0; j < i; ++j) {
      if (!reach[j]) continue;
      std::string cand = tokens[j];
      for (size_t k = j + 1; k < i; ++k) cand += "_" + tokens[k];
      if (!known_aten_ops().count(cand)) continue;
      if (!reach[i]) reach[i].emplace();
      reach[i]->emplace_back(cand, j);
    }
  }
  if (!reach[n] || reach[n]->empty()) return {};
  std::vector<std::string> ops;
  for (size_t pos = n; pos > 0;) {
    const auto& options = *reach[pos];
    const auto* best = &options.front();
    for (const auto& o : options)
      if (o.first.size() > best->first.size()) best = &o;
    ops.push_back("aten." + best->first);
    pos = best->second;
  }
  return {ops.rbegin(), ops.rend()};
}

std::optional<int64_t> python_int(const PyValue& v) {
  if (v.kind == PyValue::Kind::Int) return v.i;
  if (v.kind == PyValue::Kind::Bool) return v.b ? 1 : 0;
  if (v.kind == PyValue::Kind::Float) return truncate_to_int64(v.f);
  if (!v.is_string()) return std::nullopt;
  std::string s = v.s;
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  if (b == std::string::npos) return std::nullopt;
  s = s.substr(b, e - b + 1);
  std::erase(s, '_');
  int64_t out = 0;
  const char* first = s.data() + (s[0] == '+' ? 1 : 0);
  auto res = std::from_chars(first, s.data() + s.size(), out);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return out;
}

struct TritonMeta {
  std::vector<std::string> ops;
  PyInt xnumel = 0, rnumel = 1;
  double total_bytes = 0;
  std::string dtype;  // "" when no tensor arg had a known dtype
};

std::optional<TritonMeta> meta_from_args(const OpInput& op) {
  if (!op.concrete_inputs || !truthy(*op.concrete_inputs) || !op.input_dims ||
      !truthy(*op.input_dims) || !op.input_type || !truthy(*op.input_type))
    return std::nullopt;
  bool reduction = op.name.starts_with("triton_red_") || op.name.starts_with("triton_per_");
  bool pointwise = op.name.starts_with("triton_poi_");
  std::vector<int64_t> scalars;
  if (op.concrete_inputs->is_list()) {
    for (const PyValue& v : op.concrete_inputs->list) {
      if (v.is_string() && v.s.empty()) continue;
      if (auto i = python_int(v)) scalars.push_back(*i);
    }
  }
  TritonMeta meta;
  if (reduction && scalars.size() >= 2) {
    meta.xnumel = scalars[scalars.size() - 2];
    meta.rnumel = scalars.back();
  } else if (!scalars.empty()) {
    meta.xnumel = scalars.back();
  } else {
    return std::nullopt;
  }
  meta.ops = fused_ops_from_name(op.name);
  int64_t first_bpe = -1;
  PyInt total = 0;
  size_t n = std::min(arg_size(op.input_dims), arg_size(op.input_type));
  for (size_t i = 0; i < n; ++i) {
    const PyValue& dims = op.input_dims->list[i];
    const PyValue& dt = op.input_type->list[i];
    if ((dt.is_string() && dt.s == "Scalar") || !truthy(dims)) continue;
    int bpe = dt.is_string() ? c10_dtype_bytes(dt.s) : 0;
    if (first_bpe < 0) first_bpe = bpe;
    total += PyInt(prod(to_shape(dims, "Input Dims"))) * bpe;
    if (meta.dtype.empty() && bpe > 0) {
      std::string_view d = dt.s;
      size_t c = d.rfind("::");
      meta.dtype = pycompat::ascii_lower(c == std::string_view::npos ? d : d.substr(c + 2));
    }
  }
  meta.total_bytes = static_cast<double>(total);
  if (pointwise && first_bpe >= 0) meta.total_bytes += static_cast<double>(first_bpe * meta.xnumel);
  return meta;
}

class TritonCompiled : public PerfModel {
 public:
  explicit TritonCompiled(const OpInput& op) : name_(op.name), meta_(meta_from_args(op)) {
    if (!meta_) return;
    std::string joined;
    for (size_t i = 0; i < meta_->ops.size(); ++i) joined += (i ? ", " : "") + meta_->ops[i];
    add(params_, "fused_ops", str_value(joined));
    add(params_, "xnumel", int_value(meta_->xnumel.to_int64()));
    add(params_, "rnumel", int_value(meta_->rnumel.to_int64()));
  }
  double flops() const override {
    need_meta();
    PyInt fpe = 0;
    for (const std::string& o : meta_->ops) fpe += flops_per_elem(o);
    return static_cast<double>(fpe * (meta_->xnumel * meta_->rnumel));
  }
  std::optional<double> bytes() const override {
    need_meta();
    return meta_->total_bytes;
  }
  std::string maf_type() const override { return meta_ ? "vector" : ""; }
  std::string precision() const override { return meta_ ? meta_->dtype : ""; }

 private:
  void need_meta() const {
    if (!meta_) throw PerfNotImplemented("No Inductor artifacts found for " + name_);
  }
  std::string name_;
  std::optional<TritonMeta> meta_;
};

}  // namespace

std::unique_ptr<PerfModel> make_triton_compiled_model(const OpInput& op) {
  return std::make_unique<TritonCompiled>(op);
}

bool triton_metadata_present(const OpInput& op) {
  return meta_from_args(op).has_value();
}

}  // namespace jarvis::perf::detail
