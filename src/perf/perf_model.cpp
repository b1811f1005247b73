// Model dispatch, params, dtype tables and the arg accessors shared by the
// model families.
#include "perf/perf_model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "perf/models_internal.h"
#include "pycompat/literal.h"
#include "pycompat/numeric.h"
#include "pycompat/repr.h"
#include "pycompat/text.h"
#include "trace/numeric.h"

namespace jarvis::perf {

namespace detail {

void fail(const std::string& message) {
  throw PerfModelError(message);
}

const PyValue& arg_list(const PyValue* arg, const char* arg_name) {
  if (arg == nullptr) fail(std::string("missing arg '") + arg_name + "'");
  if (!arg->is_list()) fail(std::string("arg '") + arg_name + "' is not a list");
  return *arg;
}

const PyValue& arg_at(const PyValue* arg, const char* arg_name, size_t i) {
  const PyValue& list = arg_list(arg, arg_name);
  if (i >= list.size())
    fail(std::string("arg '") + arg_name + "' has no index " + std::to_string(i));
  return list[i];
}

size_t arg_size(const PyValue* arg) {
  return arg != nullptr && arg->is_list() ? arg->size() : 0;
}

int64_t to_int(const PyValue& v, const char* what) {
  if (v.kind == PyValue::Kind::Int) return v.i;
  if (v.kind == PyValue::Kind::Bool) return v.b ? 1 : 0;
  fail(std::string(what) + ": expected an integer, got " + v.repr_tuple());
}

// Python int(x): ints and bools as they are, floats truncated, strings
// parsed as optional blanks and sign around decimal digits; anything else
// fails as int() raises ValueError / TypeError.
int64_t python_int(const PyValue& v, const char* what) {
  if (v.kind == PyValue::Kind::Int || v.kind == PyValue::Kind::Bool) return to_int(v, what);
  if (v.kind == PyValue::Kind::Float) {
    if (!(std::fabs(v.f) < 9.2e18)) fail(std::string(what) + ": float out of integer range");
    return static_cast<int64_t>(v.f);
  }
  if (!v.is_string()) fail(std::string(what) + ": int() argument is " + v.repr_tuple());
  size_t b = v.s.find_first_not_of(" \t\n"), e = v.s.find_last_not_of(" \t\n");
  std::string t = b == std::string::npos ? "" : v.s.substr(b, e - b + 1);
  size_t digits = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
  if (t.size() == digits || t.find_first_not_of("0123456789", digits) != std::string::npos)
    fail(std::string("invalid literal for int(): ") + what);
  try {
    return std::stoll(t);
  } catch (const std::exception&) {
    fail(std::string(what) + " out of range");
  }
}

std::optional<int64_t> optional_int(const PyValue& v) {
  try {
    return python_int(v, "value");
  } catch (const PerfModelError&) {
    return std::nullopt;
  }
}

int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Shape to_shape(const PyValue& v, const char* what) {
  if (!v.is_list()) fail(std::string(what) + ": expected a shape, got " + v.repr_tuple());
  Shape s;
  s.reserve(v.size());
  for (const PyValue& d : v.list) s.push_back(to_int(d, what));
  return s;
}

Shape dims_at(const OpInput& op, size_t i) {
  return to_shape(arg_at(op.input_dims, "Input Dims", i), "Input Dims");
}

int64_t dim(const Shape& s, size_t i, const char* what) {
  if (i >= s.size())
    fail(std::string(what) + ": shape " + tuple_value(s).repr_tuple() + " has no dim " +
         std::to_string(i));
  return s[i];
}

const PyValue& type_at(const OpInput& op, size_t i) {
  return arg_at(op.input_type, "Input type", i);
}

std::string type_str(const OpInput& op, size_t i) {
  const PyValue& v = type_at(op, i);
  return v.is_string() ? v.s : std::string();
}

PyValue strides_at(const OpInput& op, size_t i) {
  const PyValue& v = arg_at(op.input_strides, "Input Strides", i);
  if (!v.is_list()) fail("Input Strides entry is not a list");
  return v;
}

const PyValue& concrete_at(const OpInput& op, size_t i) {
  return arg_at(op.concrete_inputs, "Concrete Inputs", i);
}

std::string concrete_str(const OpInput& op, size_t i) {
  const PyValue& v = concrete_at(op, i);
  if (!v.is_string()) fail("Concrete Inputs entry is not a string");
  return v.s;
}

void PyInt::overflow() {
  fail("integer overflow: the shape's FLOPs or bytes exceed 2^127");
}

int64_t PyInt::to_int64() const {
  if (v_ < std::numeric_limits<int64_t>::min() || v_ > std::numeric_limits<int64_t>::max())
    fail("integer overflow: a shape product exceeds int64");
  return static_cast<int64_t>(v_);
}

int64_t prod(const Shape& s) {
  PyInt p = 1;
  for (int64_t d : s) p *= d;
  return p.to_int64();
}

PyValue tuple_value(const Shape& s) {
  std::vector<PyValue> items;
  items.reserve(s.size());
  for (int64_t d : s) items.push_back(PyValue::integer(d));
  return PyValue::make_list(std::move(items));
}

PyValue str_value(std::string s) {
  return PyValue::string(std::move(s));
}
PyValue dtype_value(const PyValue& v) {
  return v.is_string() ? v : PyValue::none();
}
PyValue bool_value(bool b) {
  return PyValue::boolean(b);
}
PyValue int_value(int64_t i) {
  return PyValue::integer(i);
}
PyValue float_value(double f) {
  return PyValue::real(f);
}
PyValue tuple_of(std::vector<PyValue> items) {
  return PyValue::make_list(std::move(items));
}

bool truthy(const PyValue& v) {
  return v.truthy();
}

namespace {

// The literal text as an error quotes it: at most kMaxQuotedChars characters,
// since a crafted literal can be megabytes long.
std::string quoted_literal(std::string_view s) {
  constexpr size_t kMaxQuotedChars = 200;
  std::string shown(s.substr(0, kMaxQuotedChars));
  if (s.size() > kMaxQuotedChars) shown += fmt::format("... ({} chars)", s.size());
  return "'" + shown + "'";
}

// A parsed literal as the recorded-arg value the models read: lists and tuples
// both become lists (Concrete Inputs hold no dicts).
PyValue to_py_value(const PyValue& lit, std::string_view text) {
  using Kind = PyValue::Kind;
  switch (lit.kind) {
    case Kind::None:
      return PyValue::none();
    case Kind::Bool:
      return PyValue::boolean(lit.b);
    case Kind::Int:
      return PyValue::integer(lit.i);
    case Kind::Float:
      return PyValue::real(lit.f);
    case Kind::String:
      return PyValue::string(lit.s);
    case Kind::List:
    case Kind::Tuple: {
      std::vector<PyValue> items;
      items.reserve(lit.list.size());
      for (const auto& item : lit.list) items.push_back(to_py_value(item, text));
      return PyValue::make_list(std::move(items));
    }
    case Kind::Dict:
      break;
  }
  fail("cannot parse literal " + quoted_literal(text));
}

}  // namespace

double optional_float(const PyValue& v, double dflt) {
  if (v.is_none()) return dflt;
  if (v.is_number()) return v.as_double();
  if (v.kind == PyValue::Kind::Bool) return v.b ? 1.0 : 0.0;
  if (!v.is_string() || v.s.empty() || v.s == "None") return dflt;
  auto f = pycompat::python_float(v.s);
  return f ? *f : dflt;
}

double python_float(const PyValue& v, const char* what) {
  if (v.is_number()) return v.as_double();
  if (v.kind == PyValue::Kind::Bool) return v.b ? 1.0 : 0.0;
  if (v.is_string()) {
    if (auto f = pycompat::python_float(v.s)) return *f;
  }
  fail(std::string(what) + ": could not convert to float: " + v.repr_tuple());
}

PyValue eval_literal(const PyValue& v, const char* what) {
  if (!v.is_string()) return v;
  try {
    return to_py_value(pycompat::parse_py_literal(v.s), v.s);
  } catch (const pycompat::LiteralError& e) {
    switch (e.reason()) {
      case pycompat::LiteralError::Reason::TooDeep:
        fail(e.what());
      case pycompat::LiteralError::Reason::TrailingText:
        fail(std::string(what) + ": cannot evaluate " + quoted_literal(v.s));
      case pycompat::LiteralError::Reason::Syntax:
        break;
    }
    fail("cannot parse literal " + quoted_literal(v.s));
  }
}

std::vector<PyValue> literal_list(const PyValue& v, const char* what) {
  PyValue parsed = eval_literal(v, what);
  if (!parsed.is_list()) fail(std::string(what) + ": expected a list literal");
  return parsed.list;
}

std::vector<bool> bool_list(const std::vector<PyValue>& items) {
  std::vector<bool> out;
  for (const PyValue& x : items) out.push_back(truthy(x));
  return out;
}

std::vector<int64_t> int_list(const std::vector<PyValue>& items, const char* what) {
  std::vector<int64_t> out;
  for (const PyValue& x : items) {
    if (x.kind == PyValue::Kind::Float) {
      // int(float) truncates; a float beyond int64 is no shape.
      auto truncated = truncate_to_int64(x.f);
      if (!truncated) fail(std::string(what) + ": float out of integer range");
      out.push_back(*truncated);
      continue;
    }
    out.push_back(to_int(x, what));
  }
  return out;
}

std::optional<int> bpe_of(const PyValue& dtype) {
  if (!dtype.is_string()) return std::nullopt;
  return bytes_per_element(dtype.s);
}

std::string precision_of_value(const PyValue& dtype) {
  if (!dtype.is_string()) return "";
  return precision_of(dtype.s);
}

}  // namespace detail

using namespace detail;

OpInput op_input_from_event(const Trace& trace, Uid uid) {
  OpInput op;
  op.name = trace.name(uid);
  op.input_dims = trace.arg(uid, "Input Dims");
  op.input_type = trace.arg(uid, "Input type");
  op.input_strides = trace.arg(uid, "Input Strides");
  op.concrete_inputs = trace.arg(uid, "Concrete Inputs");
  op.trace = &trace;
  op.uid = uid;
  return op;
}

// A Python list at the top level; nested sequences are tuples (TraceLens's
// list params hold scalars or tuples, e.g. group_pairs [((M, K), (K, N))]).
std::string Param::repr() const {
  if (!is_list || !value.is_list()) return value.repr_tuple();
  std::string out = "[";
  for (size_t k = 0; k < value.size(); ++k) {
    if (k) out += ", ";
    out += value[k].repr_tuple();
  }
  return out + "]";
}

std::string Param::str() const {
  return value.is_string() ? value.s : repr();
}

std::string params_dict_repr(const Params& params) {
  std::string out = "{";
  for (size_t k = 0; k < params.size(); ++k) {
    if (k) out += ", ";
    out += pycompat::py_str_repr(params[k].name);
    out += ": ";
    out += params[k].repr();
  }
  out += "}";
  return out;
}

const Param* find_param(const Params& params, std::string_view name) {
  for (const Param& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string_view PerfModel::model_name() const {
  return entry_ ? entry_->model : std::string_view("TritonCompiledPerfModel");
}

double PerfModel::flops_bwd() const {
  throw PerfNotImplemented("Backward pass for " + std::string(model_name()) + " is not defined.");
}

std::optional<double> PerfModel::bytes_bwd() const {
  throw PerfNotImplemented("Backward pass for " + std::string(model_name()) + " is not defined.");
}

std::string PerfModel::compute_spec() const {
  std::string maf = maf_type(), prec = precision();
  if (maf.empty() || prec.empty()) return "";
  return maf + "_" + prec;
}

namespace {

const std::map<std::string_view, Factory>& factories() {
  static const std::map<std::string_view, Factory> table = [] {
    std::map<std::string_view, Factory> t;
    register_gemm_models(t);
    register_sdpa_models(t);
    register_conv_models(t);
    register_elementwise_models(t);
    register_norm_models(t);
    register_misc_models(t);
    register_inference_models(t);
    register_inference_attention_models(t);
    register_moe_models(t);
    register_inference_fused_models(t);
    return t;
  }();
  return table;
}

}  // namespace

std::optional<int> bytes_per_element(std::string_view dtype) {
  static const std::map<std::string, int> table = {
      {"double", 8},
      {"long int", 8},
      {"float", 4},
      {"scalar", 4},
      {"int", 4},
      {"c10::half", 2},
      {"c10::bfloat16", 2},
      {"c10::float8_e4m3fnuz", 1},
      {"c10::float8_e4m3fn", 1},
      {"c10::float8_e5m2", 1},
      {"c10::float8_e8m0fnu", 1},
      {"unsigned char", 1},
      {"signed char", 1},
      {"fp8", 1},
      {"c10::float4_e2m1fn_x2", 1},
      {"fp4", 1},
  };
  auto it = table.find(pycompat::ascii_lower(dtype));
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::string precision_of(std::string_view dtype) {
  static const std::map<std::string, std::string> table = {
      {"float", "fp32"},
      {"double", "fp64"},
      {"c10::half", "fp16"},
      {"c10::bfloat16", "bf16"},
      {"c10::float8_e4m3fnuz", "fp8"},
      {"unsigned char", "fp8"},
      {"fp8", "fp8"},
      {"fp4", "fp4"},
      {"mxfp4", "fp4"},
      {"c10::float4_e2m1fn_x2", "fp4"},
      {"c10::float8_e4m3fn", "fp8"},
  };
  auto it = table.find(pycompat::ascii_lower(dtype));
  return it == table.end() ? std::string() : it->second;
}

namespace {

// Tensile's layout tag C???_A???_B??? (three lowercase letters each) anywhere
// in the name: a fixed-width scan, linear in the name's length.
bool has_tensile_layout_tag(std::string_view name) {
  constexpr std::string_view kShape = "Cxxx_Axxx_Bxxx";
  auto fits = [&](size_t at) {
    for (size_t k = 0; k < kShape.size(); ++k) {
      char c = name[at + k];
      if (kShape[k] == 'x' ? !(c >= 'a' && c <= 'z') : c != kShape[k]) return false;
    }
    return true;
  };
  for (size_t at = 0; at + kShape.size() <= name.size(); ++at)
    if (name[at] == 'C' && fits(at)) return true;
  return false;
}

}  // namespace

std::optional<GemmKernelInfo> parse_gemm_kernel_name(std::string_view name) {
  // ROCm / Tensile: C???_A???_B??? anywhere in the name.
  std::string_view text = name;
  if (text.find('\n') == std::string_view::npos && has_tensile_layout_tag(text)) {
    GemmKernelInfo info;
    if (text.find("_Ailk_") != std::string::npos)
      info.trans_a = false;
    else if (text.find("_Alik_") != std::string::npos)
      info.trans_a = true;
    if (text.find("_Bljk_") != std::string::npos)
      info.trans_b = false;
    else if (text.find("_Bjlk_") != std::string::npos)
      info.trans_b = true;
    return info;
  }
  // CUDA nvjet: the text after the last '_' holds the two transpose letters.
  if (name.substr(0, 5) == "nvjet") {
    size_t us = name.rfind('_');
    std::string_view tail = us == std::string_view::npos ? name : name.substr(us + 1);
    if (tail.size() < 2) return std::nullopt;  // Python would raise IndexError
    GemmKernelInfo info;
    info.trans_a = tail[0] == 'T';
    info.trans_b = tail[1] == 'T';
    return info;
  }
  return std::nullopt;
}

std::unique_ptr<PerfModel> make_perf_model(const OpInput& op) {
  const ModelEntry* entry = find_model_entry(op.name);
  if (entry == nullptr) {
    if (is_triton_compiled_name(op.name)) return make_triton_compiled_model(op);
    return nullptr;
  }
  auto it = factories().find(entry->model);
  if (it == factories().end())
    throw PerfModelUnavailable("no jarvis implementation of TraceLens model " +
                               std::string(entry->model) + " (op " + std::string(op.name) + ")");
  std::unique_ptr<PerfModel> model = it->second(op);
  model->entry_ = entry;
  return model;
}

bool has_perf_model(const OpInput& op) {
  if (find_model_entry(op.name) != nullptr) return true;
  return is_triton_compiled_name(op.name) && triton_metadata_present(op);
}

}  // namespace jarvis::perf
