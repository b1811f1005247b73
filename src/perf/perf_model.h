// Performance models: FLOPs and bytes moved for one profiled op, from its
// recorded shapes, dtypes, strides and concrete inputs, as TraceLens's
// PerfModel classes compute them (spec perf-models.md §3–§5).
//
// A model is picked by exact op name (categories.h registry) or, for
// Inductor-generated Triton kernels, by name prefix. Building a model
// extracts its parameters; flops()/bytes() give the forward work and
// flops_bwd()/bytes_bwd() the backward work where TraceLens defines it.
//
// Failures follow TraceLens's two kinds: PerfNotImplemented ("no model for
// this direction" — callers skip the op silently) and PerfModelError (any
// other failure: missing args, inconsistent shapes — callers skip with a
// warning or keep the op without metrics).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "perf/categories.h"
#include "pycompat/value.h"
#include "trace/trace.h"

namespace jarvis::perf {

class TraceAnnotations;  // perf/annotations.h

class PerfNotImplemented : public ErrorOf<ErrorKind::Unsupported> {
 public:
  using ErrorOf::ErrorOf;
};

class PerfModelError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// The registry names a TraceLens model class jarvis does not implement
// (mostly inference extensions). Treated like any other model failure.
class PerfModelUnavailable : public PerfModelError {
 public:
  using PerfModelError::PerfModelError;
};

// What a model reads from one op event.
struct OpInput {
  std::string_view name;
  const PyValue* input_dims = nullptr;       // args["Input Dims"]
  const PyValue* input_type = nullptr;       // args["Input type"]
  const PyValue* input_strides = nullptr;    // args["Input Strides"]
  const PyValue* concrete_inputs = nullptr;  // args["Concrete Inputs"]
  const Trace* trace = nullptr;              // for other args (Triton metadata)
  Uid uid = kNoUid;
  // The trace's user annotations (inference attention reads its iteration's
  // request mix from them); null: the model indexes them for this op alone.
  const TraceAnnotations* annotations = nullptr;
  // Names of the kernels the metric computation attributes to the op, sorted
  // by start time (GEMM models read transpose flags from them).
  std::vector<std::string_view> kernel_names;
};

// The four shape args of trace event `uid` (kernel_names left empty).
OpInput op_input_from_event(const Trace& trace, Uid uid);

// One model parameter, in the model's dictionary order. Values print like
// Python: tuples for shapes/strides/dtype pairs; `is_list` makes the top level
// a list (its nested sequences stay tuples), where TraceLens keeps a list.
struct Param {
  std::string name;
  PyValue value;
  bool is_list = false;

  std::string repr() const;  // Python repr: 'c10::Half', (1, 2), [True], None
  std::string str() const;   // Python str(): strings unquoted, else repr
};
using Params = std::vector<Param>;

// Python repr of the params as a dict: {'M': 1, 'dtype_A_B': ('float', 'float')}.
std::string params_dict_repr(const Params& params);
const Param* find_param(const Params& params, std::string_view name);

class PerfModel {
 public:
  virtual ~PerfModel() = default;

  const ModelEntry* entry() const { return entry_; }  // nullptr for Triton-compiled
  std::string_view model_name() const;
  const Params& params() const { return params_; }

  virtual double flops() const = 0;
  // nullopt mirrors TraceLens's `None` (a dtype without a byte size).
  virtual std::optional<double> bytes() const = 0;
  virtual double flops_bwd() const;
  virtual std::optional<double> bytes_bwd() const;

  // "matrix" / "vector" / "" and "bf16" / "fp32" / ... / "" (§3.3).
  virtual std::string maf_type() const = 0;
  virtual std::string precision() const = 0;
  // "<maf>_<precision>", or "" when either part is unknown.
  std::string compute_spec() const;

 protected:
  const ModelEntry* entry_ = nullptr;
  Params params_;
  friend std::unique_ptr<PerfModel> make_perf_model(const OpInput& op);
};

// Builds the model for op.name; nullptr when no model class resolves for the
// name. Throws PerfModelError / PerfNotImplemented as TraceLens's constructor
// would fail.
std::unique_ptr<PerfModel> make_perf_model(const OpInput& op);

// Whether the model of `name` reads more of its event than the name, the
// event's args and its kernel names (the inference attention models read the
// user annotation around the op). Other models are functions of those three,
// so one model serves every event where they are equal.
bool model_reads_event_context(std::string_view name);

// TraceLens `_has_perf_model`: a class resolves for the name, and for the
// Triton-compiled model the event carries Inductor metadata in its args.
bool has_perf_model(const OpInput& op);

// ---- dtype tables (§3.1, §3.2) ----

// Bytes per element for a Kineto dtype string, case-insensitive; nullopt if unknown.
std::optional<int> bytes_per_element(std::string_view dtype);
// "fp32", "bf16", "fp8", ... or "" when unknown.
std::string precision_of(std::string_view dtype);

// GEMM transpose flags parsed from a kernel name (kernel_name_parser);
// nullopt when the name is not a recognised GEMM kernel. Each flag may be
// unknown (ROCm names without the marker).
struct GemmKernelInfo {
  std::optional<bool> trans_a, trans_b;
};
std::optional<GemmKernelInfo> parse_gemm_kernel_name(std::string_view kernel_name);

}  // namespace jarvis::perf
