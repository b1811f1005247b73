// Elementwise and reduce families (spec perf-models.md §5.4, §5.6).
//
// Unary: one FLOP per element, read + write. Binary: one FLOP per broadcast
// output element, both inputs read and the output written. Reduce: one FLOP
// per input element. Quirk kept from TraceLens: Kineto's Concrete Inputs are
// strings, so the reduce dim/keepdim parser never finds a typed value and the
// output is counted as one element (except cumsum / cumprod).
#include "perf/models_internal.h"
#include "pycompat/text.h"

namespace jarvis::perf::detail {
namespace {

// TraceLens's elementwise classes define no backward methods; calling them
// raises AttributeError, an ordinary (non-"not implemented") failure.
[[noreturn]] void no_backward_method(std::string_view model) {
  throw PerfModelError(std::string(model) + " has no backward model (no flops_bwd attribute)");
}

class UnaryModel : public PerfModel {
 public:
  double flops_bwd() const override { no_backward_method(model_name()); }
  std::optional<double> bytes_bwd() const override { no_backward_method(model_name()); }
  double flops() const override { return static_cast<double>(nelems_); }
  std::optional<double> bytes() const override {
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    return static_cast<double>(nelems_in_ * *bpe_in_ + nelems_ * *bpe_out_);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype_in_); }

 protected:
  // Called once params are set: op_shape, dtype_in_out.
  void finish(const Shape& op_shape, const PyValue& dtype_in, const PyValue& dtype_out) {
    nelems_ = prod(op_shape);
    if (nelems_in_ < 0) nelems_in_ = nelems_;
    dtype_in_ = dtype_in;
    bpe_in_ = bpe_of(dtype_in);
    bpe_out_ = dtype_out.is_none() ? bpe_in_ : bpe_of(dtype_out);
  }

  PyInt nelems_ = 0, nelems_in_ = -1;
  PyValue dtype_in_;
  std::optional<int> bpe_in_, bpe_out_;
};

// Gated activations of the inference extensions (aiter::silu_and_mul,
// sgl_kernel::silu_and_mul, aiter::gelu_and_mul ...): (out, input) args with
// input = gate and up concatenated (twice out's size). Reads 2 * nelems,
// writes nelems; `flops_per_elem` per output element (5 for SiLU * gate).
class GatedActivation : public UnaryModel {
 public:
  GatedActivation(const OpInput& op, int flops_per_elem) : flops_per_elem_(flops_per_elem) {
    Shape shape = dims_at(op, 0);
    PyValue din = type_at(op, 1), dout = type_at(op, 0);
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in_out", tuple_of({dtype_value(din), dtype_value(dout)}));
    add(params_, "stride_input", strides_at(op, 1));
    add(params_, "stride_output", strides_at(op, 0));
    finish(shape, din, dout);
  }
  double flops() const override { return flops_per_elem_ * static_cast<double>(nelems_); }
  std::optional<double> bytes() const override {
    if (!bpe_in_ || !bpe_out_) return std::nullopt;
    double n = static_cast<double>(nelems_);
    return 2 * n * *bpe_in_ + n * *bpe_out_;
  }

 private:
  int flops_per_elem_;
};

// aten::copy_, silu, neg, ... : op_shape = dims[0]; output dtype/stride only
// when a second non-empty tensor arg exists.
class AtenUnary : public UnaryModel {
 public:
  explicit AtenUnary(const OpInput& op) {
    Shape shape = dims_at(op, 0);
    PyValue din = type_at(op, 0);
    PyValue stride_in = strides_at(op, 0);
    PyValue dout = PyValue::none(), stride_out = PyValue::none();
    if (arg_size(op.input_dims) > 1 && truthy(op.input_dims->list[1])) {
      dout = type_at(op, 1);
      stride_out = strides_at(op, 1);
    }
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in_out", tuple_of({din, dout}));
    add(params_, "stride_input", stride_in);
    add(params_, "stride_output", stride_out);
    finish(shape, din, dout);
  }
};

// aten::replication_pad{1,2,3}d: padding "[l, r, t, b, ...]" innermost first.
class ReplicationPad : public UnaryModel {
 public:
  explicit ReplicationPad(const OpInput& op) {
    Shape in = dims_at(op, 0);
    PyValue dtype = type_at(op, 0);
    PyValue stride_in = strides_at(op, 0);
    std::vector<int64_t> pad = int_list(literal_list(concrete_at(op, 1), "padding"), "padding");
    Shape out = in;
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      if (i >= out.size()) throw PerfModelError("padding longer than the input rank");
      out[out.size() - 1 - i] += pad[2 * i] + pad[2 * i + 1];
    }
    std::vector<PyValue> pad_values;
    for (int64_t p : pad) pad_values.push_back(int_value(p));
    add(params_, "input_shape", tuple_value(in));
    add(params_, "output_shape", tuple_value(out));
    add(params_, "padding", PyValue::make_list(std::move(pad_values)), true);
    add(params_, "op_shape", tuple_value(out));
    add(params_, "dtype_in_out", tuple_of({dtype, dtype}));
    add(params_, "stride_input", stride_in);
    add(params_, "stride_output", PyValue::none());
    nelems_in_ = prod(in);
    finish(out, dtype, dtype);
  }
};

// aten::upsample_nearest{1,2,3}d: output = input[:2] + literal ci[1].
class UpsampleNearest : public UnaryModel {
 public:
  explicit UpsampleNearest(const OpInput& op) {
    Shape in = dims_at(op, 0);
    PyValue dtype = type_at(op, 0);
    PyValue stride_in = strides_at(op, 0);
    std::vector<int64_t> spatial =
        int_list(literal_list(concrete_at(op, 1), "output_size"), "output_size");
    Shape out(in.begin(), in.begin() + std::min<size_t>(2, in.size()));
    out.insert(out.end(), spatial.begin(), spatial.end());
    add(params_, "input_shape", tuple_value(in));
    add(params_, "output_shape", tuple_value(out));
    add(params_, "op_shape", tuple_value(out));
    add(params_, "dtype_in_out", tuple_of({dtype, dtype}));
    add(params_, "stride_input", stride_in);
    add(params_, "stride_output", PyValue::none());
    nelems_in_ = prod(in);
    finish(out, dtype, dtype);
  }
};

// Primus-Turbo quantizers: one BF16/FP16 2-D input, fixed output dtype.
class PrimusQuantize : public UnaryModel {
 public:
  PrimusQuantize(const OpInput& op, bool mxfp4) : mxfp4_(mxfp4) {
    shape_ = dims_at(op, 0);
    PyValue din = type_at(op, 0);
    PyValue stride =
        op.input_strides && arg_size(op.input_strides) > 0 ? strides_at(op, 0) : PyValue::none();
    PyValue dout = str_value(mxfp4 ? "c10::Float4_e2m1fn_x2" : "c10::Float8_e4m3fnuz");
    add(params_, "op_shape", tuple_value(shape_));
    add(params_, "dtype_in_out", tuple_of({din, dout}));
    add(params_, "stride_input", stride);
    add(params_, "stride_output", PyValue::none());
    finish(shape_, din, dout);
  }
  std::optional<double> bytes() const override {
    if (!mxfp4_) return UnaryModel::bytes();
    if (shape_.size() != 2) throw PerfModelError("quantize_mxfp4_dual: input is not 2-D");
    if (!bpe_in_) return std::nullopt;
    int64_t M = shape_[0], N = shape_[1];
    return static_cast<double>(M * N * *bpe_in_ + (M * N + 1) / 2 + (N * M + 1) / 2 +
                               M * ((N + 31) / 32) + N * ((M + 31) / 32));
  }

 private:
  bool mxfp4_;
  Shape shape_;
};

// MXFP4 activation quantizers of the inference extensions
// (fused_flatten_mxfp4_quant and the ops sharing its roofline): one BF16/FP16
// input of n elements read, written back as packed FP4 (half a byte each)
// plus one E8M0 scale byte per 32 elements; 2 FLOPs per element. `input` is
// the arg index of the activation; `with_stride` records its stride.
class Mxfp4Quantize : public UnaryModel {
 public:
  Mxfp4Quantize(const OpInput& op, size_t input, bool with_stride) {
    Shape shape = dims_at(op, input);
    PyValue d = type_at(op, input);
    add(params_, "op_shape", tuple_value(shape));
    add(params_, "dtype_in_out", tuple_of({d, d}));
    add(params_, "stride_input", with_stride ? strides_at(op, input) : PyValue::none());
    add(params_, "stride_output", PyValue::none());
    finish(shape, d, d);
  }
  double flops() const override { return 2 * static_cast<double>(nelems_); }
  std::optional<double> bytes() const override {
    if (!bpe_in_) return std::nullopt;
    int64_t n = nelems_.to_int64();
    return static_cast<double>(nelems_ * *bpe_in_) + static_cast<double>(n) * 0.5 +
           static_cast<double>(floordiv(n, 32));
  }
};

// Python bytes term `prod(shape) * name2bpe(dtype)`: a dtype without a byte
// size is a TypeError.
PyInt sized_bytes(const Shape& shape, const PyValue& dtype, const char* what) {
  std::optional<int> b = bpe_of(dtype);
  if (!b) fail(std::string(what) + ": dtype without a byte size (NoneType operand)");
  return PyInt(prod(shape)) * *b;
}

// aiter::dynamic_per_token_scaled_quant / dynamic_per_group_scaled_quant /
// dynamic_per_tensor_quant(out, input, scales, ...): reads input and writes
// the quantized output and the scales; 2.59375 FLOPs per output element
// (TraceLens's figure from rocprof counters).
class PerGroupQuant : public PerfModel {
 public:
  explicit PerGroupQuant(const OpInput& op) {
    out_ = dims_at(op, 0);
    in1_ = dims_at(op, 1);
    in2_ = dims_at(op, 2);
    d_in1_ = type_at(op, 1);
    d_in2_ = type_at(op, 2);
    d_out_ = type_at(op, 0);
    PyValue st_out = strides_at(op, 0), st1 = strides_at(op, 1), st2 = strides_at(op, 2);
    add(params_, "shape_in1", tuple_value(in1_));
    add(params_, "shape_in2", tuple_value(in2_));
    add(params_, "shape_out", tuple_value(out_));
    add(params_, "dtype_in1_in2_out", tuple_of({d_in1_, d_in2_, d_out_}));
    add(params_, "stride_input1", st1);
    add(params_, "stride_input2", st2);
    add(params_, "stride_output", st_out);
    n_out_ = prod(out_);
  }
  double flops() const override { return static_cast<double>(n_out_) * 2.59375; }
  std::optional<double> bytes() const override {
    PyInt total = sized_bytes(out_, d_out_, "output");
    total += sized_bytes(in1_, d_in1_, "input");
    total += sized_bytes(in2_, d_in2_, "scales");
    return static_cast<double>(total);
  }
  double flops_bwd() const override { no_backward_method(model_name()); }
  std::optional<double> bytes_bwd() const override { no_backward_method(model_name()); }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override {
    return truthy(d_in1_) ? precision_of_value(d_in1_) : "";
  }

 private:
  Shape out_, in1_, in2_;
  PyValue d_in1_, d_in2_, d_out_;
  int64_t n_out_ = 0;
};

// vllm::triton_per_token_group_quant_fp8(x, group_size): x (M, N) read,
// written as FP8 plus one FP32 scale per group of group_size (Concrete
// Inputs[1], 128 when absent or unparsable); 6 FLOPs per element.
class VllmPerTokenGroupQuantFp8 : public PerfModel {
 public:
  explicit VllmPerTokenGroupQuantFp8(const OpInput& op) {
    Shape x;
    if (arg_size(op.input_dims) > 0) x = to_shape(op.input_dims->list[0], "Input Dims");
    if (x.size() >= 2) {
      m_ = x[0];
      n_ = x[1];
    } else if (x.size() == 1) {
      n_ = x[0];
    }
    if (arg_size(op.concrete_inputs) > 1) {
      const PyValue& c = op.concrete_inputs->list[1];
      std::string raw = c.is_string() ? c.s : c.repr_tuple();
      size_t b = raw.find_first_not_of(" \t\n\r\f\v");
      size_t e = raw.find_last_not_of(" \t\n\r\f\v");
      raw = b == std::string::npos ? "" : raw.substr(b, e - b + 1);
      if (!raw.empty() && pycompat::ascii_lower(raw) != "none") {
        if (auto g = optional_int(PyValue::string(raw))) group_size_ = *g;
      }
    }
    groups_ = std::max<int64_t>(1, floordiv(n_ + group_size_ - 1, group_size_));
    dtype_x_ = arg_size(op.input_type) > 0 ? op.input_type->list[0] : str_value("");
    add(params_, "M", int_value(m_));
    add(params_, "N", int_value(n_));
    add(params_, "group_size", int_value(group_size_));
    add(params_, "num_groups", int_value(groups_));
    add(params_, "shape_x", tuple_value(x));
    add(params_, "dtype_x", dtype_x_);
    add(params_, "shape_in1", tuple_value(x));
    add(params_, "shape_in2", tuple_value({}));
    add(params_, "shape_out", tuple_value(x));
    add(params_, "dtype_in1_in2_out",
        tuple_of({dtype_x_, PyValue::none(), str_value("c10::float8_e4m3fn")}));
    add(params_, "stride_input1", PyValue::none());
    add(params_, "stride_input2", PyValue::none());
    add(params_, "stride_output", PyValue::none());
  }
  double flops() const override { return static_cast<double>(6 * PyInt(m_) * n_); }
  std::optional<double> bytes() const override {
    std::optional<int> b = bpe_of(dtype_x_);
    if (!b) return std::nullopt;
    PyInt mn = PyInt(m_) * n_;
    return static_cast<double>(mn * *b + mn * 1 + PyInt(m_) * groups_ * 4);
  }
  double flops_bwd() const override { no_backward_method(model_name()); }
  std::optional<double> bytes_bwd() const override { no_backward_method(model_name()); }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override {
    return truthy(dtype_x_) ? precision_of_value(dtype_x_) : "";
  }

 private:
  int64_t m_ = 1, n_ = 1, group_size_ = 128, groups_ = 1;
  PyValue dtype_x_;
};

Shape broadcast(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape pa(n - a.size(), 1), pb(n - b.size(), 1);
  pa.insert(pa.end(), a.begin(), a.end());
  pb.insert(pb.end(), b.begin(), b.end());
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1)
      throw PerfModelError("Shapes not broadcastable: " + tuple_value(a).repr_tuple() + " and " +
                           tuple_value(b).repr_tuple());
    out.push_back(std::max(pa[i], pb[i]));
  }
  return out;
}

class BinaryModel : public PerfModel {
 public:
  double flops_bwd() const override { no_backward_method(model_name()); }
  std::optional<double> bytes_bwd() const override { no_backward_method(model_name()); }
  double flops() const override { return static_cast<double>(n_out_); }
  std::optional<double> bytes() const override {
    if (!bpe1_ || !bpe2_ || !bpe_out_) return std::nullopt;
    return static_cast<double>(n1_ * *bpe1_ + n2_ * *bpe2_ + n_out_ * *bpe_out_);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype1_); }

 protected:
  void build(const OpInput& op, bool read_output) {
    Shape s1 = dims_at(op, 0), s2 = dims_at(op, 1);
    PyValue d1 = type_at(op, 0), d2 = type_at(op, 1);
    PyValue st1 = strides_at(op, 0), st2 = strides_at(op, 1);
    PyValue dout = PyValue::none(), stout = PyValue::none();
    if (read_output && arg_size(op.input_dims) > 2 && truthy(op.input_dims->list[2])) {
      dout = type_at(op, 2);
      stout = strides_at(op, 2);
    }
    add(params_, "shape_in1", tuple_value(s1));
    add(params_, "shape_in2", tuple_value(s2));
    add(params_, "dtype_in1_in2_out", tuple_of({d1, d2, dout}));
    add(params_, "stride_input1", st1);
    add(params_, "stride_input2", st2);
    add(params_, "stride_output", stout);
    n_out_ = prod(broadcast(s1, s2));
    n1_ = prod(s1);
    n2_ = prod(s2);
    dtype1_ = d1;
    bpe1_ = bpe_of(d1);
    bpe2_ = bpe_of(d2);
    if (!dout.is_none()) {
      bpe_out_ = bpe_of(dout);
    } else if (bpe1_ && bpe2_ && *bpe1_ && *bpe2_) {
      // A 0-d operand (Python scalar) does not widen the output.
      bpe_out_ = (!s1.empty() && !s2.empty()) ? std::max(*bpe1_, *bpe2_) : *bpe1_;
    }
  }

  PyInt n1_ = 0, n2_ = 0, n_out_ = 0;
  PyValue dtype1_;
  std::optional<int> bpe1_, bpe2_, bpe_out_;
};

class AtenBinary : public BinaryModel {
 public:
  explicit AtenBinary(const OpInput& op) { build(op, true); }
};

class LigerSiluMul : public BinaryModel {
 public:
  explicit LigerSiluMul(const OpInput& op) { build(op, false); }
};

// aten::sum / mean / max / ... (Reduce).
class AtenReduce : public PerfModel {
 public:
  explicit AtenReduce(const OpInput& op) {
    size_t ndims = arg_size(op.input_dims);
    if (op.input_dims == nullptr || ndims == 0 || op.input_dims->list[0].is_none()) {
      add(params_, "num_input_elems", int_value(0));
      add(params_, "num_output_elems", int_value(0));
      add(params_, "dtype_in_out", tuple_of({PyValue::none(), PyValue::none()}));
      return;
    }
    Shape in = dims_at(op, 0);
    n_in_ = prod(in);
    dtype_in_ = arg_size(op.input_type) > 0 ? type_at(op, 0) : PyValue::none();
    std::optional<std::vector<int64_t>> dim;
    bool keepdim = false;
    find_dims(op, dim, keepdim);
    std::string_view name = op.name;
    if (name.find("cumsum") != std::string_view::npos ||
        name.find("cumprod") != std::string_view::npos) {
      n_out_ = n_in_;
    } else if (dim && !dim->empty()) {
      n_out_ = reduced_elems(in, *dim, keepdim);
    } else {
      n_out_ = 1;
    }
    std::string type = "sum";
    for (const char* word : {"mean", "max", "min", "norm"}) {
      if (name.find(word) != std::string_view::npos) {
        type = word;
        break;
      }
    }
    add(params_, "num_input_elems", int_value(n_in_));
    add(params_, "num_output_elems", int_value(n_out_));
    add(params_, "dtype_in_out", tuple_of({dtype_in_, PyValue::none()}));
    add(params_, "reduce_type", str_value(type));
    bpe_in_ = dtype_in_.is_string() && !dtype_in_.s.empty() ? bytes_per_element(dtype_in_.s)
                                                            : std::nullopt;
  }
  double flops() const override { return static_cast<double>(n_in_); }
  std::optional<double> bytes() const override {
    if (!bpe_in_) return std::nullopt;
    return static_cast<double>(n_in_ * *bpe_in_ + n_out_ * *bpe_in_);
  }
  double flops_bwd() const override { return static_cast<double>(n_in_); }
  std::optional<double> bytes_bwd() const override {
    if (!bpe_in_) return std::nullopt;
    return static_cast<double>(n_out_ * *bpe_in_ + n_in_ * *bpe_in_);
  }
  std::string maf_type() const override { return "vector"; }
  std::string precision() const override { return precision_of_value(dtype_in_); }

 private:
  // Scans Concrete Inputs[1:] from the end for a bool (keepdim) and then an
  // int or list (dim); strings are skipped, as in TraceLens.
  static void find_dims(const OpInput& op, std::optional<std::vector<int64_t>>& dim,
                        bool& keepdim) {
    size_t n = arg_size(op.concrete_inputs);
    if (n < 2) return;
    const auto& ci = op.concrete_inputs->list;
    std::optional<size_t> keep_idx;
    for (size_t k = n; k-- > 1;) {
      if (ci[k].kind == PyValue::Kind::Bool) {
        keepdim = ci[k].b;
        keep_idx = k;
        break;
      }
    }
    for (size_t k = n; k-- > 1;) {
      if (keep_idx && k == *keep_idx) continue;
      const PyValue& v = ci[k];
      if (v.is_none() || v.is_string()) continue;
      if (v.is_list()) {
        try {
          dim = int_list(v.list, "dim");
          return;
        } catch (const PerfModelError&) {
          continue;
        }
      }
      if (v.kind == PyValue::Kind::Int) {
        dim = std::vector<int64_t>{v.i};
        return;
      }
    }
  }
  static int64_t reduced_elems(const Shape& in, std::vector<int64_t> dim, bool keepdim) {
    int64_t nd = static_cast<int64_t>(in.size());
    for (int64_t& d : dim)
      if (d < 0) d += nd;
    std::sort(dim.rbegin(), dim.rend());
    Shape out = in;
    for (int64_t d : dim) {
      if (d < 0 || d >= static_cast<int64_t>(out.size())) continue;
      if (keepdim)
        out[d] = 1;
      else
        out.erase(out.begin() + d);
    }
    return out.empty() ? 1 : prod(out);
  }

  PyInt n_in_ = 0, n_out_ = 0;
  PyValue dtype_in_;
  std::optional<int> bpe_in_;
};

}  // namespace

void register_elementwise_models(std::map<std::string_view, Factory>& out) {
  for (std::string_view name : {"aiter_silu_and_mul", "sgl_kernel_silu_and_mul"})
    out[name] = [](const OpInput& op) { return std::make_unique<GatedActivation>(op, 5); };
  out["aiter_gelu_and_mul"] = [](const OpInput& op) {
    return std::make_unique<GatedActivation>(op, 8);
  };
  out["aiter_gelu_tanh_and_mul"] = [](const OpInput& op) {
    return std::make_unique<GatedActivation>(op, 10);
  };
  out["aten_unary_elementwise"] = [](const OpInput& op) { return std::make_unique<AtenUnary>(op); };
  out["aten_replication_pad"] = [](const OpInput& op) {
    return std::make_unique<ReplicationPad>(op);
  };
  out["aten_upsample_nearest"] = [](const OpInput& op) {
    return std::make_unique<UpsampleNearest>(op);
  };
  out["aten_binary_elementwise"] = [](const OpInput& op) {
    return std::make_unique<AtenBinary>(op);
  };
  out["liger_silu_mul_function"] = [](const OpInput& op) {
    return std::make_unique<LigerSiluMul>(op);
  };
  out["primus_turbo_quantize_fp8"] = [](const OpInput& op) {
    return std::make_unique<PrimusQuantize>(op, false);
  };
  out["primus_turbo_quantize_mxfp4_dual"] = [](const OpInput& op) {
    return std::make_unique<PrimusQuantize>(op, true);
  };
  auto mxfp4 = [&](const char* cls, size_t input, bool with_stride) {
    out[cls] = [input, with_stride](const OpInput& op) {
      return std::make_unique<Mxfp4Quantize>(op, input, with_stride);
    };
  };
  mxfp4("fused_flatten_mxfp4_quant", 0, true);
  mxfp4("fused_dynamic_mx_quant_moe_sort_hip", 2, true);
  mxfp4("sglang_quant_dynamic_mxfp4_quant", 0, false);
  mxfp4("aiter_fused_dynamic_mxfp4_quant_moe_sort_hip", 2, false);
  mxfp4("aiter_dynamic_per_group_scaled_quant_fp4", 1, false);
  out["per_group_quant"] = [](const OpInput& op) { return std::make_unique<PerGroupQuant>(op); };
  out["vllm_triton_per_token_group_quant_fp8"] = [](const OpInput& op) {
    return std::make_unique<VllmPerTokenGroupQuantFp8>(op);
  };
  out["aten_reduce"] = [](const OpInput& op) { return std::make_unique<AtenReduce>(op); };
}

}  // namespace jarvis::perf::detail
