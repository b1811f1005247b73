// Shared helpers for the model implementations (not part of the public API).
//
// TraceLens reads event args as Python lists and fails with KeyError /
// IndexError / ValueError when they don't fit; the accessors here raise
// PerfModelError with a message naming the arg instead.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perf/perf_model.h"

namespace jarvis::perf::detail {

using Shape = std::vector<int64_t>;

[[noreturn]] void fail(const std::string& message);

// Python's int for FLOP and byte formulas. TraceLens computes them in Python
// ints, which never wrap; int64 products of trace shapes do (M = N = K = 2^40
// gave 0 FLOPs). 128 bits hold every product of two int64 values and every
// realistic formula exactly; past that the model fails with a PerfModelError
// instead of printing a wrapped number.
class PyInt {
 public:
  constexpr PyInt(int64_t v = 0) : v_(v) {}  // NOLINT: implicit like Python's int

  friend PyInt operator+(PyInt a, PyInt b) {
    PyInt r;
    if (__builtin_add_overflow(a.v_, b.v_, &r.v_)) overflow();
    return r;
  }
  friend PyInt operator-(PyInt a, PyInt b) {
    PyInt r;
    if (__builtin_sub_overflow(a.v_, b.v_, &r.v_)) overflow();
    return r;
  }
  friend PyInt operator*(PyInt a, PyInt b) {
    PyInt r;
    if (__builtin_mul_overflow(a.v_, b.v_, &r.v_)) overflow();
    return r;
  }
  PyInt& operator+=(PyInt b) { return *this = *this + b; }
  PyInt& operator*=(PyInt b) { return *this = *this * b; }
  // Truncating division, as the int64 code it replaces (operands are sizes).
  friend PyInt operator/(PyInt a, PyInt b) {
    if (b.v_ == 0) fail("integer division by zero");
    PyInt r;
    r.v_ = a.v_ / b.v_;
    return r;
  }
  friend bool operator==(PyInt a, PyInt b) { return a.v_ == b.v_; }
  friend auto operator<=>(PyInt a, PyInt b) { return a.v_ <=> b.v_; }

  // float(int): one rounding to nearest, as Python does.
  explicit operator double() const { return static_cast<double>(v_); }
  // The value as int64 (an element count stored in a table); fails past int64.
  int64_t to_int64() const;

 private:
  __extension__ typedef __int128 Wide;
  [[noreturn]] static void overflow();
  Wide v_;
};

// The arg list itself (throws when the arg is absent or not a list).
const PyValue& arg_list(const PyValue* arg, const char* arg_name);
// Element i of an arg list (IndexError-like failure when out of range).
const PyValue& arg_at(const PyValue* arg, const char* arg_name, size_t i);
size_t arg_size(const PyValue* arg);  // 0 when absent / not a list

int64_t to_int(const PyValue& v, const char* what);
Shape to_shape(const PyValue& v, const char* what);
// Python int(x) (strings parsed; None and garbage fail like int() raises).
int64_t python_int(const PyValue& v, const char* what);
// TraceLens `optional_int`: int(x), or nullopt where int() raises.
std::optional<int64_t> optional_int(const PyValue& v);
// Python a // b (floor); fails on b == 0 like ZeroDivisionError.
int64_t floordiv(int64_t a, int64_t b);
Shape dims_at(const OpInput& op, size_t i);
// Dimension i of a shape (IndexError-like failure naming `what` when absent).
int64_t dim(const Shape& s, size_t i, const char* what);
// Input type[i] as text ("" for non-strings, as a Python None would fail later).
const PyValue& type_at(const OpInput& op, size_t i);
std::string type_str(const OpInput& op, size_t i);
// Input Strides[i] as a tuple value.
PyValue strides_at(const OpInput& op, size_t i);
// Concrete Inputs[i] (a string in Kineto traces).
const PyValue& concrete_at(const OpInput& op, size_t i);
std::string concrete_str(const OpInput& op, size_t i);

// The product of the dims (Python's math.prod); fails past int64.
int64_t prod(const Shape& s);
PyValue tuple_value(const Shape& s);
PyValue str_value(std::string s);
PyValue dtype_value(const PyValue& v);  // keeps None / string as recorded
PyValue bool_value(bool b);
PyValue int_value(int64_t i);
inline PyValue int_value(PyInt i) {
  return int_value(i.to_int64());
}
PyValue float_value(double f);
PyValue tuple_of(std::vector<PyValue> items);

// Python truthiness of a recorded value ("" / [] / 0 / None are false).
bool truthy(const PyValue& v);
// TraceLens `optional_float`: "", "None", None → default; unparsable → default.
double optional_float(const PyValue& v, double dflt);
// Python float(x) on a string (throws on garbage, like ValueError).
double python_float(const PyValue& v, const char* what);
// eval() of a concrete-input literal: True/False/None/int.
PyValue eval_literal(const PyValue& v, const char* what);
// ast.literal_eval of "[a, b, ...]" into values (ints, bools, floats, nested).
std::vector<PyValue> literal_list(const PyValue& v, const char* what);
// Python bool() of each element.
std::vector<bool> bool_list(const std::vector<PyValue>& items);
std::vector<int64_t> int_list(const std::vector<PyValue>& items, const char* what);

// bpe / precision of an optional dtype value (None → nullopt / "").
std::optional<int> bpe_of(const PyValue& dtype);
std::string precision_of_value(const PyValue& dtype);

// Registration of model factories by TraceLens class name.
using Factory = std::function<std::unique_ptr<PerfModel>(const OpInput&)>;
void register_gemm_models(std::map<std::string_view, Factory>& out);
void register_sdpa_models(std::map<std::string_view, Factory>& out);
void register_conv_models(std::map<std::string_view, Factory>& out);
void register_elementwise_models(std::map<std::string_view, Factory>& out);
void register_norm_models(std::map<std::string_view, Factory>& out);
void register_misc_models(std::map<std::string_view, Factory>& out);
void register_inference_models(std::map<std::string_view, Factory>& out);
void register_inference_attention_models(std::map<std::string_view, Factory>& out);
void register_moe_models(std::map<std::string_view, Factory>& out);
void register_inference_fused_models(std::map<std::string_view, Factory>& out);
std::unique_ptr<PerfModel> make_triton_compiled_model(const OpInput& op);
bool triton_metadata_present(const OpInput& op);

// Adds a param (in order).
inline void add(Params& p, std::string name, PyValue v, bool is_list = false) {
  p.push_back(Param{std::move(name), std::move(v), is_list});
}

}  // namespace jarvis::perf::detail
