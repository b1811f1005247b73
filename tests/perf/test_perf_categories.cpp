// Category registry: exact names, patterns, kernel-name fallback, sheet families.
#include <doctest/doctest.h>

#include "perf/categories.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis::perf;

TEST_CASE("perf categories: registry lookups") {
  CHECK(op_category_by_name("aten::mm") == "GEMM");
  CHECK(op_category_by_name("aten::mul") == "elementwise");
  CHECK(op_category_by_name("aten::mean") == "reduce");
  CHECK(op_category_by_name("aten::layer_norm") == "NORM_fwd");
  CHECK(op_category_by_name("aten::native_layer_norm_backward") == "NORM_bwd");
  CHECK(op_category_by_name("aten::_scaled_dot_product_flash_attention") == "SDPA_fwd");
  CHECK(op_category_by_name("aten::_scaled_dot_product_flash_attention_backward") == "SDPA_bwd");
  CHECK(op_category_by_name("aten::convolution_backward") == "CONV_bwd");
  CHECK(op_category_by_name("aten::miopen_convolution") == "CONV_fwd");
  // The extension model replaces the core SDPA model of this name.
  CHECK(op_category_by_name("vllm::unified_attention_with_output") == "InferenceAttention");
  // Model category GroupQuant, overwritten by the category-only table.
  CHECK(op_category_by_name("aiter::fused_dynamic_mxfp4_quant_moe_sort_hip") == "MoE_aux");
  CHECK(op_category_by_name("aten::linear").empty());
  CHECK(op_category_by_name("aten::_flash_attention_forward").empty());
}

TEST_CASE("perf categories: patterns and kernel fallback") {
  CHECK(op_category("triton_poi_fused_add_0", "") == "triton");
  CHECK(op_category("record_param_comms", "") == "record_param_comms");
  CHECK(op_category("aten::fill_", "void at::native::vectorized_elementwise_kernel<4, ...>") ==
        "elementwise");
  CHECK(op_category("aten::all", "void at::native::reduce_kernel<512, 1, ...>") == "reduce");
  CHECK(op_category("aten::_foreach_add_",
                    "void at::native::(anonymous)::multi_tensor_apply_kernel") ==
        "multi_tensor_apply");
  CHECK(op_category("aten::cat", "void at::native::(anonymous namespace)::CatArrayBatchedCopy") ==
        "other");
  CHECK(op_category("aten::_flash_attention_forward", "attn_fwd") == "other");
  CHECK(op_category("aten::mm", "void at::native::elementwise") == "GEMM");
}

TEST_CASE("perf categories: sheet families in TraceLens map order") {
  const auto& fam = sheet_families();
  REQUIRE(fam.size() == 22);
  CHECK(fam.front() == "GEMM");
  CHECK(fam[1] == "SDPA");
  CHECK(fam[2] == "CONV");
  CHECK(fam[3] == "InferenceAttention");
  CHECK(fam[4] == "BinaryElementwise");
  CHECK(fam[fam.size() - 2] == "Normalization");
  CHECK(fam.back() == "Reduce");
  CHECK(sheet_family_by_name("aten::copy_") == "UnaryElementwise");
  CHECK(sheet_family_by_name("aten::native_layer_norm") == "Normalization");
  CHECK(sheet_family_by_name("aiter::dynamic_per_token_scaled_quant") == "BinaryElementwise");
  CHECK(sheet_family_by_name("aten::linear").empty());
  CHECK(is_triton_compiled_name("triton_red_fused_sum_1"));
  CHECK_FALSE(is_triton_compiled_name("triton_foo"));
  CHECK(strip_direction_suffix("SDPA_bwd") == "SDPA");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
