// Operator categories: the exact-name registry TraceLens uses to label ops
// (GEMM, SDPA_fwd, elementwise, ...) and to pick the roofline sheet an op
// lands in. See spec perf-models.md §2 and tree-and-timeline.md §9.
//
// The registry is the union of the perf-model map (core models, inference
// extension models, elementwise/norm/reduce lists, in TraceLens's dict order)
// and the category-only table; a name in both takes the category-only label,
// because TraceLens applies that table last.
#pragma once

#include <string_view>
#include <vector>

namespace jarvis::perf {

// One name of the perf-model map, in map order.
struct ModelEntry {
  std::string_view name;          // exact op name
  std::string_view model;         // TraceLens class name (for diagnostics)
  std::string_view category;      // forward category of the class
  std::string_view bwd_category;  // "" when the class has none
  std::string_view sheet;         // sheet family (§2.5)
};

// Exact-name registry lookup: the category of a registered op name, or ""
// when the name is neither a perf-model op nor a category-only op.
std::string_view op_category_by_name(std::string_view name);

// The full §9 categorizer: registry, then name patterns (`triton*`,
// `record_param_comms*`), then the kernel-name fallback on the first kernel
// name (pass "" when the op has no kernels), else "other".
std::string_view op_category(std::string_view name, std::string_view first_kernel_name);

// The perf-model map entry for an exact name, or nullptr. Triton-compiled
// kernels are matched by prefix elsewhere (is_triton_compiled_name).
const ModelEntry* find_model_entry(std::string_view name);

// Every perf-model map entry, in TraceLens's map order.
const std::vector<ModelEntry>& model_entries();

// Sheet family of a modeled op name ("" when the name has no model).
std::string_view sheet_family_by_name(std::string_view name);

// Distinct sheet families in map order (GEMM, SDPA, CONV, ...).
const std::vector<std::string_view>& sheet_families();

// Names starting `triton_poi_`, `triton_red_`, `triton_per_`: resolved to the
// Triton-compiled model by TraceLens's pattern matcher.
bool is_triton_compiled_name(std::string_view name);

// True when a perf-model class resolves for the name (exact or Triton prefix).
// TraceLens's `has_perf_model` additionally needs Inductor metadata for the
// Triton case; that check lives with the model (perf_model.h).
bool has_registered_model(std::string_view name);

// `category` with a trailing `_fwd` / `_bwd` removed.
std::string_view strip_direction_suffix(std::string_view category);

// Whether a user's category name names `category`: case-insensitive, with or
// without the _fwd/_bwd suffix ("gemm" names GEMM, "sdpa" SDPA_fwd/_bwd), or
// by an alias ("Normalization", "layernorm" and "norm" name NORM_fwd/_bwd;
// "attention" SDPA; "matmul" GEMM; "UnaryElementwise" elementwise; ...).
bool category_named_by(std::string_view category, std::string_view user_name);
// The aliases of a category stem (GEMM, SDPA, NORM, ...), for messages.
std::vector<std::string_view> category_aliases_of(std::string_view stem);

}  // namespace jarvis::perf
