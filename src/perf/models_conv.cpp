// Convolution family (spec perf-models.md §5.2): aten::convolution and
// aten::convolution_backward.
//
// Quirks kept from TraceLens: Kineto records all nine convolution args, so
// the forward `bias = len(Input Dims) == 3` test is always false; the
// backward op's bias is the Python value of `len(dims) > 3 and dims[3] and
// len(dims[3]) > 0` (in practice `[]`); bias-gradient traffic is added as an
// element count, not bytes.
#include <cmath>

#include "perf/models_internal.h"
#include "trace/numeric.h"

namespace jarvis::perf::detail {
namespace {

Shape t(const Shape& s) {
  Shape out = s;
  if (out.size() >= 2) std::swap(out[0], out[1]);
  return out;
}

int64_t elem(const Shape& s, size_t i) {
  if (i >= s.size()) throw PerfModelError("convolution shape has too few dims");
  return s[i];
}

PyInt conv_flops(const Shape& x, const Shape& w, const Shape& out, bool bias, bool transposed) {
  PyInt per_elem = 2 * PyInt(prod(Shape(w.begin() + std::min<size_t>(1, w.size()), w.end())));
  PyInt conv = PyInt(transposed ? prod(x) : prod(out)) * per_elem;
  return conv + (bias ? prod(out) : 0);
}

PyInt conv_elems(const Shape& x, const Shape& w, const Shape& out, bool bias) {
  return PyInt(prod(x)) + prod(w) + (bias ? elem(out, 1) : 0) + prod(out);
}

// "[16, 16]" -> (16, 16); "" -> default repeated over the spatial dims.
Shape int_tuple(const std::string& s, size_t ndims, int64_t dflt) {
  if (s.empty()) return Shape(ndims, dflt);
  if (s.size() < 2) throw PerfModelError("cannot parse conv parameter '" + s + "'");
  Shape out;
  std::string body = s.substr(1, s.size() - 2);
  size_t start = 0;
  for (;;) {
    size_t comma = body.find(',', start);
    std::string part =
        body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
    if (b == std::string::npos) throw PerfModelError("invalid literal for int(): '" + part + "'");
    part = part.substr(b, e - b + 1);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || part.empty())
      throw PerfModelError("invalid literal for int(): '" + part + "'");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() == 1) out = Shape(ndims, out[0]);
  return out;
}

class ConvModel : public PerfModel {
 public:
  // `o` is the arg offset: 0 for aten::convolution, 1 for the backward op
  // (whose first arg is grad_output).
  ConvModel(const OpInput& op, bool backward_op) : backward_op_(backward_op) {
    size_t o = backward_op ? 1 : 0;
    x_ = dims_at(op, o);
    w_ = dims_at(op, o + 1);
    if (x_.size() < 2) throw PerfModelError("convolution input has fewer than 2 dims");
    size_t nd = x_.size() - 2;
    PyValue bias_value = forward_bias(op);
    if (backward_op) bias_value = backward_bias(op);
    bias_ = truthy(bias_value);
    stride_ = int_tuple(concrete_str(op, 3 + o), nd, 1);
    padding_ = int_tuple(concrete_str(op, 4 + o), nd, 0);
    dilation_ = int_tuple(concrete_str(op, 5 + o), nd, 1);
    PyValue transposed = eval_literal(concrete_at(op, 6 + o), "transposed");
    transposed_ = truthy(transposed);
    output_padding_ = int_tuple(concrete_str(op, 7 + o), nd, 0);
    int64_t groups = std::stoll(concrete_str(op, 8 + o));
    PyValue d0 = type_at(op, o), d1 = type_at(op, o + 1);
    if (!(d0 == d1)) throw PerfModelError("Data types of input and weight are different");
    std::string conv_nd;
    if (x_.size() == 3)
      conv_nd = "conv1d";
    else if (x_.size() == 4)
      conv_nd = "conv2d";
    else if (x_.size() == 5)
      conv_nd = "conv3d";
    else
      throw PerfModelError("Unknown convolution dimension: " + std::to_string(x_.size()));
    add(params_, "convNd", str_value(conv_nd));
    add(params_, "input_shape", tuple_value(x_));
    add(params_, "filter_shape", tuple_value(w_));
    add(params_, "dtype_input_weight", tuple_of({d0, d1}));
    add(params_, "input_stride", op.input_strides ? strides_at(op, o) : PyValue::none());
    add(params_, "weight_stride", op.input_strides ? strides_at(op, o + 1) : PyValue::none());
    add(params_, "bias", bias_value, true);
    add(params_, "stride", tuple_value(stride_));
    add(params_, "padding", tuple_value(padding_));
    add(params_, "dilation", tuple_value(dilation_));
    add(params_, "transposed_conv", transposed);
    add(params_, "output_padding", tuple_value(output_padding_));
    add(params_, "groups", int_value(groups));
    out_ = output_shape();
    bpe_ = bpe_of(d0);
  }

  // ConvBias_ / ConvBiasReLU_ (fused conv + bias): x, w = dims[0], dims[1];
  // single-int stride / padding in ci[3], ci[4]; dilation 1, groups 1.
  struct Fused {};
  ConvModel(const OpInput& op, Fused) : backward_op_(false) {
    x_ = dims_at(op, 0);
    w_ = dims_at(op, 1);
    if (x_.size() < 2) throw PerfModelError("convolution input has fewer than 2 dims");
    size_t nd = x_.size() - 2;
    auto single = [&](size_t i, int64_t dflt) {
      if (arg_size(op.concrete_inputs) <= i) return Shape(nd, dflt);
      std::string a = concrete_str(op, i);
      return a.empty() ? Shape(nd, dflt) : Shape(nd, static_cast<int64_t>(std::stoll(a)));
    };
    stride_ = single(3, 1);
    padding_ = single(4, 0);
    dilation_ = Shape(nd, 1);
    output_padding_ = Shape(nd, 0);
    bias_ = true;
    std::vector<PyValue> d;
    for (size_t i = 0; i < 2 && i < arg_size(op.input_type); ++i) d.push_back(type_at(op, i));
    if (d.size() == 2 && !(d[0] == d[1]))
      throw PerfModelError("Data types of input and weight are different");
    if (x_.size() < 3 || x_.size() > 5)
      throw PerfModelError("Unknown convolution dimension: " + std::to_string(x_.size()));
    bool strides = op.input_strides && arg_size(op.input_strides) > 1;
    add(params_, "convNd", str_value("conv" + std::to_string(nd) + "d"));
    add(params_, "input_shape", tuple_value(x_));
    add(params_, "filter_shape", tuple_value(w_));
    add(params_, "dtype_input_weight", tuple_of(d));
    add(params_, "input_stride", strides ? strides_at(op, 0) : PyValue::none());
    add(params_, "weight_stride", strides ? strides_at(op, 1) : PyValue::none());
    add(params_, "bias", bool_value(true));
    add(params_, "stride", tuple_value(stride_));
    add(params_, "padding", tuple_value(padding_));
    add(params_, "dilation", tuple_value(dilation_));
    add(params_, "transposed_conv", bool_value(false));
    add(params_, "output_padding", tuple_value(output_padding_));
    add(params_, "groups", int_value(1));
    out_ = output_shape();
    if (d.empty()) throw PerfModelError("missing Input type");
    bpe_ = bpe_of(d[0]);
  }

  double flops() const override {
    return backward_op_ ? flops_bwd()
                        : static_cast<double>(conv_flops(x_, w_, out_, bias_, transposed_));
  }
  std::optional<double> bytes() const override {
    if (backward_op_) return bytes_bwd();
    if (!bpe_) return std::nullopt;
    return static_cast<double>(conv_elems(x_, w_, out_, bias_) * *bpe_);
  }
  double flops_bwd() const override {
    PyInt in_grad = conv_flops(out_, w_, x_, false, !transposed_);
    PyInt w_grad = transposed_ ? conv_flops(t(out_), t(x_), t(w_), false, false)
                               : conv_flops(t(x_), t(out_), t(w_), false, false);
    return static_cast<double>(in_grad + w_grad + (bias_ ? prod(out_) : 0));
  }
  std::optional<double> bytes_bwd() const override {
    if (!bpe_) return std::nullopt;
    PyInt total = conv_elems(out_, w_, x_, false) * *bpe_ + conv_elems(out_, x_, w_, false) * *bpe_;
    if (bias_) total += PyInt(prod(out_)) + elem(out_, 1);
    return static_cast<double>(total);
  }
  std::string maf_type() const override { return "matrix"; }
  std::string precision() const override {
    return precision_of_value(find_param(params_, "dtype_input_weight")->value.list[0]);
  }

 private:
  static PyValue forward_bias(const OpInput& op) {
    return bool_value(arg_size(op.input_dims) == 3);
  }
  // Python: len(dims) > 3 and dims[3] and len(dims[3]) > 0
  static PyValue backward_bias(const OpInput& op) {
    if (arg_size(op.input_dims) <= 3) return bool_value(false);
    const PyValue& d3 = op.input_dims->list[3];
    if (!truthy(d3)) return d3;
    return bool_value(d3.is_list() && d3.size() > 0);
  }

  Shape output_shape() const {
    size_t nd = x_.size() - 2;
    if (w_.size() < 2 + nd) throw PerfModelError("filter shape does not match the input rank");
    Shape out{x_[0], transposed_ ? w_[1] : w_[0]};
    for (size_t i = 0; i < nd; ++i) {
      PyInt in = x_[2 + i], k = w_[2 + i];
      PyInt s = elem(stride_, i), p = elem(padding_, i), d = elem(dilation_, i);
      if (transposed_) {
        out.push_back(
            ((in - 1) * s - 2 * p + d * (k - 1) + elem(output_padding_, i) + 1).to_int64());
      } else {
        if (s == 0) throw PerfModelError("division by zero (conv stride)");
        double v = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s) + 1;
        auto size = truncate_to_int64(std::trunc(v));
        if (!size) throw PerfModelError("convolution output size out of integer range");
        out.push_back(*size);
      }
    }
    return out;
  }

  bool backward_op_;
  Shape x_, w_, out_, stride_, padding_, dilation_, output_padding_;
  bool bias_ = false, transposed_ = false;
  std::optional<int> bpe_;
};

}  // namespace

void register_conv_models(std::map<std::string_view, Factory>& out) {
  out["aten_conv"] = [](const OpInput& op) { return std::make_unique<ConvModel>(op, false); };
  out["ConvBias_"] = [](const OpInput& op) {
    return std::make_unique<ConvModel>(op, ConvModel::Fused{});
  };
  out["ConvBiasReLU_"] = [](const OpInput& op) {
    return std::make_unique<ConvModel>(op, ConvModel::Fused{});
  };
  out["aten_conv_bwd"] = [](const OpInput& op) { return std::make_unique<ConvModel>(op, true); };
}

}  // namespace jarvis::perf::detail
