// The category registry. Names and labels are the facts TraceLens's
// `torch_op_mapping.py` and `extensions/pseudo_ops_perf_utils.py` register
// (commit 171dd747); see categories.h for the lookup rules.
#include "perf/categories.h"
#include "pycompat/text.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>

namespace jarvis::perf {
namespace {

// Perf-model map, in TraceLens's dict order (insertion order; a later update
// of an existing key keeps its first position, e.g.
// vllm::unified_attention_with_output).
const std::vector<ModelEntry> kModelEntries = {

    {"aten::mm", "aten_mm", "GEMM", "", "GEMM"},
    {"aten::addmm", "aten_addmm", "GEMM", "", "GEMM"},
    {"aten::_scaled_mm", "aten_scaled_mm", "GEMM", "", "GEMM"},
    {"trtllm::cublas_scaled_mm", "aten_scaled_mm", "GEMM", "", "GEMM"},
    {"bitsandbytes::int8_linear_matmul", "aten_scaled_mm", "GEMM", "", "GEMM"},
    {"aten::bmm", "aten_bmm", "GEMM", "", "GEMM"},
    {"tex_ts::te_gemm_ts", "tex_ts_te_gemm_ts", "GEMM", "", "GEMM"},
    {"aten::baddbmm", "aten_baddbmm", "GEMM", "", "GEMM"},
    {"vllm::gemm_with_dynamic_quant", "vllm_gemm_with_dynamic_quant", "GEMM", "", "GEMM"},
    {"FlashAttnFunc", "flash_attention", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"flash_attn::_flash_attn_forward", "flash_attention", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"flash_attn::_flash_attn_backward", "flash_attention_backward", "SDPA_bwd", "SDPA_bwd",
     "SDPA"},
    {"flash_attn::_flash_attn_varlen_forward", "flash_attention_varlen_forward", "SDPA_fwd",
     "SDPA_bwd", "SDPA"},
    {"flash_attn::_flash_attn_varlen_backward", "flash_attention_varlen_backward", "SDPA_bwd",
     "SDPA_bwd", "SDPA"},
    {"aten::_scaled_dot_product_cudnn_attention", "aten__scaled_dot_product_cudnn_attention",
     "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aten::_scaled_dot_product_efficient_attention",
     "aten__scaled_dot_product_efficient_attention", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aten::_scaled_dot_product_flash_attention", "aten__scaled_dot_product_flash_attention",
     "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aten::convolution", "aten_conv", "CONV_fwd", "CONV_bwd", "CONV"},
    {"aten::convolution_backward", "aten_conv_bwd", "CONV_bwd", "CONV_bwd", "CONV"},
    {"ConvBias_", "ConvBias_", "CONV_fwd", "CONV_bwd", "CONV"},
    {"ConvBiasReLU_", "ConvBiasReLU_", "CONV_fwd", "CONV_bwd", "CONV"},
    {"ConvBias_Backward", "ConvBias_Backward", "CONV_bwd", "CONV_bwd", "CONV"},
    {"ConvBiasReLU_Backward", "ConvBiasReLU_Backward", "CONV_bwd", "CONV_bwd", "CONV"},
    {"aiter::_flash_attn_forward", "aiter__flash_attn_forward", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aiter::_flash_attn_backward", "aiter__flash_attn_backward", "SDPA_bwd", "SDPA_bwd", "SDPA"},
    {"aiter::wrapper_fmha_v3_fwd", "aiter__fmha_v3_forward", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aiter::wrapper_fmha_v3_bwd", "aiter__fmha_v3_backward", "SDPA_bwd", "SDPA_bwd", "SDPA"},
    {"aiter::mha_fwd", "aiter__mha_fwd", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aiter::fmha_v3_fwd", "aiter__fmha_v3_fwd", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"aiter::mha_bwd", "aiter__mha_bwd", "SDPA_bwd", "SDPA_bwd", "SDPA"},
    {"flash_attn_3::fwd", "flash_attn_v3_forward", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"vllm::unified_attention_with_output", "vllm_unified_attention_with_output",
     "InferenceAttention", "", "InferenceAttention"},
    {"EvoformerAttention", "evoformer_attention", "SDPA_fwd", "SDPA_bwd", "SDPA"},
    {"LigerSiLUMulFunction", "liger_silu_mul_function", "elementwise", "", "BinaryElementwise"},
    {"primus_turbo::grouped_gemm", "primus_turbo_grouped_gemm", "GroupedGEMM_fwd",
     "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo::grouped_gemm_impl", "primus_turbo_grouped_gemm", "GroupedGEMM_fwd",
     "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo_cpp_extension::grouped_gemm", "primus_turbo_grouped_gemm", "GroupedGEMM_fwd",
     "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo::grouped_gemm_variable_k", "primus_turbo_grouped_gemm_variable_k",
     "GroupedGEMM_fwd", "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo::grouped_gemm_variable_k_impl", "primus_turbo_grouped_gemm_variable_k",
     "GroupedGEMM_fwd", "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo_cpp_extension::grouped_gemm_variable_k", "primus_turbo_grouped_gemm_variable_k",
     "GroupedGEMM_fwd", "GroupedGEMM_bwd", "GroupedGEMM"},
    {"_Linear_yfwd_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"_LinearBackward_xgrad_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"_LinearBackward_wgrad_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"_LayerNormLinear_yfwd_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"_LayerNormLinearBackward_xgrad_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"_LayerNormLinearBackward_wgrad_mm", "tev2_pseudo_gemm", "GEMM", "", "GEMM"},
    {"primus_turbo_cpp_extension::ck_grouped_gemm", "primus_turbo_grouped_gemm", "GroupedGEMM_fwd",
     "GroupedGEMM_bwd", "GroupedGEMM"},
    {"primus_turbo_cpp_extension::ck_grouped_gemm_variable_k",
     "primus_turbo_grouped_gemm_variable_k", "GroupedGEMM_fwd", "GroupedGEMM_bwd", "GroupedGEMM"},
    {"MoEDispatch", "moe_dispatch", "MoE_comm_fwd", "MoE_comm_bwd", "MoE_comm"},
    {"MoECombine", "moe_combine", "MoE_comm_fwd", "MoE_comm_bwd", "MoE_comm"},
    {"DaoAILab::_causal_conv1d_fwd_cpp", "causal_conv1d_fwd", "SSM_fwd", "", "SSM"},
    {"FusedRoPEFunc", "fused_rope_fwd", "RoPE_fwd", "", "RoPE"},
    {"CrossEntropyFunction", "cross_entropy_fwd", "CrossEntropy_fwd", "", "CrossEntropy"},
    {"MambaSplitConv1dScanCombinedFn", "mamba_ssd_fwd", "SSM_fwd", "SSM_bwd", "SSM"},
    {"primus_turbo_cpp_extension::hipblaslt_gemm_fp8", "hipblaslt_gemm_fp8", "GEMM", "", "GEMM"},
    {"primus_turbo::hipblaslt_gemm_fp8", "hipblaslt_gemm_fp8", "GEMM", "", "GEMM"},
    {"primus_turbo_cpp_extension::quantize_fp8_tensorwise", "primus_turbo_quantize_fp8",
     "elementwise", "", "UnaryElementwise"},
    {"primus_turbo::quantize_fp8_tensorwise", "primus_turbo_quantize_fp8", "elementwise", "",
     "UnaryElementwise"},
    {"primus_turbo_cpp_extension::hipblaslt_gemm_fp4", "hipblaslt_gemm_fp4", "GEMM", "", "GEMM"},
    {"primus_turbo::hipblaslt_gemm_fp4", "hipblaslt_gemm_fp4", "GEMM", "", "GEMM"},
    {"primus_turbo_cpp_extension::quantize_mxfp4_dual", "primus_turbo_quantize_mxfp4_dual",
     "elementwise", "", "UnaryElementwise"},
    {"primus_turbo::quantize_mxfp4_dual", "primus_turbo_quantize_mxfp4_dual", "elementwise", "",
     "UnaryElementwise"},
    {"primus::quantize_mxfp4_dual", "primus_turbo_quantize_mxfp4_dual", "elementwise", "",
     "UnaryElementwise"},
    {"aiter::gemm_a4w4", "aiter_gemm_a4w4", "GEMM", "", "GEMM"},
    {"aiter::_gemm_a4w4_asm", "aiter_gemm_a4w4", "GEMM", "", "GEMM"},
    {"pseudo_op::moe_aiter_fused_1stage", "moe_aiter_fused_1stage", "MoE_fused", "", "MoE_fused"},
    {"aiter::moe_cktile2stages_gemm1_ck", "moe_aiter_unfused_up", "MoE_unfused", "", "MoE_unfused"},
    {"aiter::moe_cktile2stages_gemm2_ck", "moe_aiter_unfused_down", "MoE_unfused", "",
     "MoE_unfused"},
    {"aiter::ck_moe_stage1", "moe_aiter_ck_stage1", "MoE_unfused", "", "MoE_unfused"},
    {"aiter::ck_moe_stage2", "moe_aiter_ck_stage2", "MoE_unfused", "", "MoE_unfused"},
    {"aiter::fmoe_fp8_blockscale_g1u1", "moe_aiter_fused_blockscale", "MoE_fused", "", "MoE_fused"},
    {"aiter::fmoe_g1u1", "moe_aiter_fused_blockscale", "MoE_fused", "", "MoE_fused"},
    {"pseudo_op::moe_triton_unfused_up", "moe_triton_unfused_up", "MoE_unfused", "", "MoE_unfused"},
    {"pseudo_op::moe_triton_unfused_down", "moe_triton_unfused_down", "MoE_unfused", "",
     "MoE_unfused"},
    {"pseudo_op::moe_gptq_awq_up", "moe_gptq_awq_up", "MoE_unfused", "", "MoE_unfused"},
    {"pseudo_op::moe_gptq_awq_down", "moe_gptq_awq_down", "MoE_unfused", "", "MoE_unfused"},
    {"pseudo_op::moe_flydsl_stage1", "moe_flydsl_stage1", "MoE_unfused", "", "MoE_unfused"},
    {"pseudo_op::moe_flydsl_stage2", "moe_flydsl_stage2", "MoE_unfused", "", "MoE_unfused"},
    {"sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel",
     "moe_triton_invoke_grouped_gemm", "MoE_unfused", "", "MoE_unfused"},
    {"aiter::biased_grouped_topk_hip", "BiasedGroupedTopk", "MoE_aux", "", "MoE_aux"},
    {"aiter::moe_sorting_fwd", "MoeSortScatterGather", "MoE_aux", "", "MoE_aux"},
    {"aiter::mxfp4_moe_sort_hip", "MoeSortScatterGather", "MoE_aux", "", "MoE_aux"},
    {"aiter::mha_varlen_fwd", "mha_varlen_fwd", "InferenceAttention", "", "InferenceAttention"},
    {"aiter::fmha_v3_varlen_fwd", "aiter_fmha_v3_varlen_fwd", "InferenceAttention", "",
     "InferenceAttention"},
    {"aiter::mha_batch_prefill", "aiter_mha_batch_prefill", "InferenceAttention", "",
     "InferenceAttention"},
    {"sglang_profiler::attention_paged_attention_ragged", "aiter_paged_attention_ragged",
     "InferenceAttention", "", "InferenceAttention"},
    {"pseudo_mla_decode_fwd", "mla_decode_fwd", "InferenceAttention", "", "InferenceAttention"},
    {"pseudo_mla_prefill_fwd", "pseudo_mla_prefill_fwd", "InferenceAttention", "",
     "InferenceAttention"},
    {"aiter::pa_decode_gluon", "pa_decode_gluon", "InferenceAttention", "", "InferenceAttention"},
    {"pseudo_v4_paged_decode_swa", "pseudo_v4_paged_decode_swa", "InferenceAttention", "",
     "InferenceAttention"},
    {"pseudo_v4_paged_decode_csa", "pseudo_v4_paged_decode_csa", "InferenceAttention", "",
     "InferenceAttention"},
    {"pseudo_v4_paged_decode_hca", "pseudo_v4_paged_decode_hca", "InferenceAttention", "",
     "InferenceAttention"},
    {"aiter::pa_sparse_prefill_opus_fwd", "pa_sparse_prefill_opus_fwd", "InferenceAttention", "",
     "InferenceAttention"},
    {"sglang_profiler::tilelang_kernel_tilelang_sparse_fwd", "mla_tilelang_sparse_fwd",
     "InferenceAttention", "", "InferenceAttention"},
    {"aiter::batched_gemm_a16wfp4_", "batched_gemm_a16wfp4", "GEMM", "", "GEMM"},
    {"aiter::dynamic_per_token_scaled_quant", "per_group_quant", "GroupQuant", "",
     "BinaryElementwise"},
    {"aiter::dynamic_per_group_scaled_quant", "per_group_quant", "GroupQuant", "",
     "BinaryElementwise"},
    {"aiter::fused_add_rmsnorm_pad_", "vllm_rocm_aiter_triton_add_rmsnorm_pad", "RMSNorm", "",
     "RMSNorm"},
    {"aiter::mixed_sample_outer_exponential", "mixed_sample_outer_exponential", "elementwise", "",
     "elementwise"},
    {"sglang_profiler::fp8_utils_gemm_a8w8_blockscale", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"sglang_profiler::gemm_a8w8_blockscale_gemm_a8w8_blockscale", "gemm_a8w8_blockscale", "GEMM",
     "", "GEMM"},
    {"vllm::rocm_aiter_triton_gemm_a8w8_blockscale", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_blockscale_ck", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_blockscale_cktile", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_blockscale_bpreshuffle_ck", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_blockscale_bpreshuffle_cktile", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::flatmm_a8w8_blockscale_asm", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gfx950_a8w8_blockscale_asm", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_ck", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_bpreshuffle_ck", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::gemm_a8w8_bpreshuffle", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm", "gemm_a8w8_blockscale", "GEMM", "",
     "GEMM"},
    {"vllm::rocm_unquantized_gemm", "vllm_rocm_unquantized_gemm", "GEMM", "", "GEMM"},
    {"aiter::gemm_a16w16", "gemm_a16w16", "GEMM", "", "GEMM"},
    {"aiter::fused_dynamic_mx_quant_moe_sort_hip", "fused_dynamic_mx_quant_moe_sort_hip",
     "GroupQuant", "", "GroupQuant"},
    {"aiter::fused_qk_rope_concat_and_cache_mla", "fused_qk_rope_concat_and_cache_mla", "RoPE_fwd",
     "", "FusedRoPE"},
    {"aiter::gemm_a16w16_atomic_", "gemm_a16w16_atomic_", "GEMM", "", "GEMM"},
    {"aiter::_gemm_a16w16_asm", "gemm_a16w16_asm", "GEMM", "", "GEMM"},
    {"sglang_profiler::gemm_kernels_flydsl_hgemm", "gemm_a16w16_atomic_", "GEMM", "", "GEMM"},
    {"aiter::gemm_afp4wfp4_", "gemm_afp4wfp4", "GEMM", "", "GEMM"},
    {"sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_"
     "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
     "batched_gemm_a8w8", "GEMM", "", "GEMM"},
    {"vllm::triton_per_token_group_quant_fp8", "vllm_triton_per_token_group_quant_fp8",
     "GroupQuant", "", "BinaryElementwise"},
    {"sglang_profiler::fused_mxfp4_quant_fused_flatten_mxfp4_quant", "fused_flatten_mxfp4_quant",
     "GroupQuant", "", "GroupQuant"},
    {"aiter::dynamic_per_tensor_quant", "per_group_quant", "GroupQuant", "", "BinaryElementwise"},
    {"aiter::rope_cached_positions_2c_fwd_impl", "aiter_rope_cached_positions_2c_fwd_impl",
     "RoPE_fwd", "", "RoPE"},
    {"sgl_kernel::rotary_embedding", "sgl_kernel_rotary_embedding", "RoPE_fwd", "", "RoPE"},
    {"aiter::silu_and_mul", "aiter_silu_and_mul", "elementwise", "", "UnaryElementwise"},
    {"_C::silu_and_mul", "aiter_silu_and_mul", "elementwise", "", "UnaryElementwise"},
    {"sgl_kernel::silu_and_mul", "sgl_kernel_silu_and_mul", "elementwise", "", "UnaryElementwise"},
    {"aiter::gelu_and_mul", "aiter_gelu_and_mul", "elementwise", "", "UnaryElementwise"},
    {"aiter::gelu_tanh_and_mul", "aiter_gelu_tanh_and_mul", "elementwise", "", "UnaryElementwise"},
    {"aiter::rms_norm", "aiter_rms_norm", "RMSNorm", "", "RMSNorm"},
    {"aiter::rmsnorm", "aiter_rmsnorm", "RMSNorm", "", "RMSNorm"},
    {"aiter::rmsnorm2d_fwd_ck", "aiter_rms_norm", "RMSNorm", "", "RMSNorm"},
    {"aiter::rmsnorm2d_fwd_with_add_ck", "aiter_rmsnorm2d_fwd_with_add_ck", "RMSNorm", "",
     "RMSNorm"},
    {"aiter::add_rmsnorm", "aiter_rmsnorm2d_fwd_with_add_ck", "RMSNorm", "", "RMSNorm"},
    {"aiter::rmsnorm2d_fwd_with_dynamicquant_ck", "aiter_rmsnorm2d_fwd_with_dynamicquant_ck",
     "RMSNorm", "", "RMSNorm"},
    {"vllm::rocm_aiter_rmsnorm_fp8_group_quant", "vllm_rocm_aiter_rmsnorm_fp8_group_quant",
     "RMSNorm", "", "RMSNorm"},
    {"vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant",
     "vllm_rocm_aiter_rmsnorm_with_add_fp8_group_quant", "RMSNorm", "", "RMSNorm"},
    {"vllm::rocm_aiter_triton_add_rmsnorm_pad", "vllm_rocm_aiter_triton_add_rmsnorm_pad", "RMSNorm",
     "", "RMSNorm"},
    {"sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant", "fused_rms_mxfp4_quant", "RMSNorm",
     "", "RMSNorm"},
    {"aiter::_fuse_rmsnorm_fp4_quant", "fused_rms_mxfp4_quant", "RMSNorm", "", "RMSNorm"},
    {"aiter::fused_allreduce_rmsnorm", "aiter_fused_allreduce_rmsnorm", "CustomCollective", "",
     "CustomCollective"},
    {"aiter::fused_allreduce_rmsnorm_", "aiter_fused_allreduce_rmsnorm_", "CustomCollective", "",
     "CustomCollective"},
    {"_C_custom_ar::all_reduce", "custom_ar_all_reduce", "CustomCollective", "",
     "CustomCollective"},
    {"aiter::reduce_scatter", "aiter_reduce_scatter", "CustomCollective", "", "CustomCollective"},
    {"aiter::all_gather_reg", "aiter_all_gather_reg", "CustomCollective", "", "CustomCollective"},
    {"sgl_kernel::all_reduce_reg", "sgl_kernel_all_reduce_reg", "CustomCollective", "",
     "CustomCollective"},
    {"sgl_kernel::qr_all_reduce", "sgl_kernel_qr_all_reduce", "CustomCollective", "",
     "CustomCollective"},
    {"sglang::reg_all_gather_into_tensor", "sgl_kernel_reg_all_gather_into_tensor",
     "CustomCollective", "", "CustomCollective"},
    {"_C_custom_ar::qr_all_reduce", "custom_ar_qr_all_reduce", "CustomCollective", "",
     "CustomCollective"},
    {"vllm::gdn_attention_core", "gdn_attention_core", "InferenceAttention", "",
     "InferenceAttention"},
    {"aiter::linear_attention_with_output_base", "gdn_attention_core", "InferenceAttention", "",
     "InferenceAttention"},
    {"sglang::store_cache", "sglang_store_cache", "InferenceAttention", "", "InferenceAttention"},
    {"aiter::fused_qk_rope_cat_and_cache_mla", "aiter_fused_qk_rope_cat_and_cache_mla", "RoPE_fwd",
     "", "FusedRoPE"},
    {"sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts",
     "sglang_fused_append_shared_experts", "MoE_aux", "", "MoE_aux"},
    {"sglang_profiler::quant_dynamic_mxfp4_quant", "sglang_quant_dynamic_mxfp4_quant", "GroupQuant",
     "", "GroupQuant"},
    {"aiter::fused_dynamic_mxfp4_quant_moe_sort_hip",
     "aiter_fused_dynamic_mxfp4_quant_moe_sort_hip", "GroupQuant", "", "GroupQuant"},
    {"aiter::dynamic_per_group_scaled_quant_fp4", "aiter_dynamic_per_group_scaled_quant_fp4",
     "GroupQuant", "", "GroupQuant"},
    {"aiter::_gemm_a8w8_blockscale_bpreshuffle_asm", "gemm_a8w8_blockscale", "GEMM", "", "GEMM"},
    {"aiter::mhc_post", "mhc_post", "mHC", "", "mHC"},
    {"aiter::mhc_pre_gemm_sqrsum", "mhc_pre_gemm_sqrsum", "mHC", "", "mHC"},
    {"aiter::mhc_pre_big_fuse_rmsnorm", "mhc_pre_big_fuse_rmsnorm", "mHC", "", "mHC"},
    {"aiter::mhc_fused_post_pre_gemm_sqrsum", "mhc_fused_post_pre_gemm_sqrsum", "mHC", "", "mHC"},
    {"aiter::topk_softplus", "topk_softplus", "MoE_aux", "", "MoE_aux"},
    {"aiter::rmsnorm_quant", "aiter_rmsnorm_quant", "RMSNorm", "", "RMSNorm"},
    {"aiter::_groupnorm_run", "GroupNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::copy", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::copy_", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::clamp_min", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::clamp_min_", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::clamp_max", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::clamp_max_", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::sigmoid", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::rsqrt", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::silu", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::neg", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::pow", "aten_unary_elementwise", "elementwise", "", "UnaryElementwise"},
    {"aten::div", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::div_", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::mul", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::mul_", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::add", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::add_", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::sigmoid_backward", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::threshold_backward", "aten_binary_elementwise", "elementwise", "", "BinaryElementwise"},
    {"aten::batch_norm", "BatchNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::native_batch_norm", "BatchNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_batch_norm", "BatchNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_batch_norm", "BatchNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::layer_norm", "LayerNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::native_layer_norm", "LayerNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_layer_norm", "LayerNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_layer_norm", "LayerNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::group_norm", "GroupNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::native_group_norm", "GroupNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_group_norm", "GroupNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_group_norm", "GroupNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::instance_norm", "InstanceNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::native_instance_norm", "InstanceNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_instance_norm", "InstanceNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_instance_norm", "InstanceNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::_fused_rms_norm", "RMSNorm", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"aten::batch_norm_backward", "BatchNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::native_batch_norm_backward", "BatchNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_batch_norm_backward", "BatchNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_batch_norm_backward", "BatchNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::layer_norm_backward", "LayerNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::native_layer_norm_backward", "LayerNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_layer_norm_backward", "LayerNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_layer_norm_backward", "LayerNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::group_norm_backward", "GroupNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::native_group_norm_backward", "GroupNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_group_norm_backward", "GroupNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_group_norm_backward", "GroupNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::instance_norm_backward", "InstanceNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::native_instance_norm_backward", "InstanceNormBwd", "NORM_bwd", "NORM_bwd",
     "Normalization"},
    {"aten::miopen_instance_norm_backward", "InstanceNormBwd", "NORM_bwd", "NORM_bwd",
     "Normalization"},
    {"aten::cudnn_instance_norm_backward", "InstanceNormBwd", "NORM_bwd", "NORM_bwd",
     "Normalization"},
    {"aten::rms_norm_backward", "RMSNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::native_rms_norm_backward", "RMSNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::miopen_rms_norm_backward", "RMSNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::cudnn_rms_norm_backward", "RMSNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"aten::_fused_rms_norm_backward", "RMSNormBwd", "NORM_bwd", "NORM_bwd", "Normalization"},
    {"primus::fused_ln_modulate", "FusedLnModulate", "NORM_fwd", "NORM_bwd", "Normalization"},
    {"primus::fused_ln_modulate_backward", "FusedLnModulateBackward", "NORM_bwd", "NORM_bwd",
     "Normalization"},
    {"aten::sum", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::mean", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::max", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::min", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::norm", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::linalg_norm", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::std", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::var", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::logsumexp", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::cumsum", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::cumprod", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::amin", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::amax", "aten_reduce", "reduce", "", "Reduce"},
    {"aten::replication_pad1d", "aten_replication_pad", "elementwise", "", "UnaryElementwise"},
    {"aten::replication_pad2d", "aten_replication_pad", "elementwise", "", "UnaryElementwise"},
    {"aten::replication_pad3d", "aten_replication_pad", "elementwise", "", "UnaryElementwise"},
    {"aten::upsample_nearest1d", "aten_upsample_nearest", "elementwise", "", "UnaryElementwise"},
    {"aten::upsample_nearest2d", "aten_upsample_nearest", "elementwise", "", "UnaryElementwise"},
    {"aten::upsample_nearest3d", "aten_upsample_nearest", "elementwise", "", "UnaryElementwise"},
};

struct CategoryOnly {
  std::string_view name;
  std::string_view category;
};

// Names with a category label but no perf model (applied after the model map).
const CategoryOnly kCategoryOnly[] = {

    {"aten::miopen_convolution", "CONV_fwd"},
    {"aten::cudnn_convolution", "CONV_fwd"},
    {"FlashAttnFuncBackward", "SDPA_bwd"},
    {"FusedAttnFuncBackward", "SDPA_bwd"},
    {"aten::_scaled_dot_product_cudnn_attention_backward", "SDPA_bwd"},
    {"aten::_scaled_dot_product_efficient_attention_backward", "SDPA_bwd"},
    {"aten::_scaled_dot_product_flash_attention_backward", "SDPA_bwd"},
    {"aten::_efficient_attention_forward", "SDPA_fwd"},
    {"aten::_efficient_attention_backward", "SDPA_bwd"},
    {"MambaSplitConv1dScanCombinedFnBackward", "SSM_bwd"},
    {"DaoAILab::_causal_conv1d_bwd_cpp", "SSM_bwd"},
    {"TokenPermuteMaskMap", "MoE_comm_fwd"},
    {"_OperationFuserAutogradFunction", "MoE_comm_fwd"},
    {"MoEDispatchBackward", "MoE_comm_bwd"},
    {"MoECombineBackward", "MoE_comm_bwd"},
    {"TokenPermuteMaskMapBackward", "MoE_comm_bwd"},
    {"_OperationFuserAutogradFunctionBackward", "MoE_comm_bwd"},
    {"FusedRoPEFuncBackward", "RoPE_bwd"},
    {"CrossEntropyFunctionBackward", "CrossEntropy_bwd"},
    {"aiter::moe_sorting_opus_fwd", "MoE_aux"},
    {"aiter::moe_align_block_size", "MoE_aux"},
    {"_moe_C::moe_align_block_size", "MoE_aux"},
    {"aiter::fused_moe_->_fused_dynamic_mxfp4_quant_moe_sort_kernel (Synthetic Op)", "MoE_aux"},
    {"aiter::moe_sum", "MoE_aux"},
    {"aiter::topk_softmax", "MoE_aux"},
    {"aiter::topk_softmax_asm", "MoE_aux"},
    {"aiter::topk_sigmoid", "MoE_aux"},
    {"aiter::grouped_topk", "MoE_aux"},
    {"aiter::moe_fused_gate", "MoE_aux"},
    {"_C_cache_ops::reshape_and_cache_flash", "InferenceAttention"},
    {"_C_cache_ops::concat_and_cache_mla", "InferenceAttention"},
    {"aiter::fused_dynamic_mxfp4_quant_moe_sort_hip", "MoE_aux"},
    {"aiter::unified_attention_with_output_base->_fused_qk_rope_reshape_and_cache_kernel "
     "(Synthetic Op)",
     "FusedRoPE"},
    {"hipModuleLaunchKernel->kv_indices_generate_kernel (Synthetic Op)", "InferenceAttention"},
    {"aiter::get_mla_metadata_v1", "InferenceAttention"},
    {"aiter::indexer_score_topk", "InferenceAttention"},
    {"aiter::v4_attention_with_output->_inverse_rope_gptj_kernel (Synthetic Op)", "FusedRoPE"},
    {"aiter::v4_attention_with_output->_update_compressor_states_kernel (Synthetic Op)",
     "InferenceAttention"},
    {"aiter::v4_attention_with_output->_swa_write_kernel (Synthetic Op)", "InferenceAttention"},
    {"aiter::v4_attention_with_output->qk_norm_rope_H32_D512_RD64_flydsl (Synthetic Op)",
     "FusedRoPE"},
    {"aiter::v4_attention_with_output->qk_norm_rope_H64_D512_RD64_flydsl (Synthetic Op)",
     "FusedRoPE"},
    {"aiter::v4_attention_with_output->hca_norm_rope_scatter_D512_RD64_R128_KB1_rmsbf16_flydsl "
     "(Synthetic Op)",
     "FusedRoPE"},
    {"aiter::v4_attention_with_output->fused_compress_attn_D512_RD64_R4_OVL_SS8_KB32_rmsbf16_pf_"
     "flydsl (Synthetic Op)",
     "InferenceAttention"},
    {"aiter::v4_attention_with_output->fused_compress_attn_D128_RD64_R4_OVL_SS8_KB32_Q_ue8m0_psh_"
     "rmsbf16_pf_flydsl (Synthetic Op)",
     "InferenceAttention"},
    {"aiter::v4_attention_with_output->hca_compress_forward_D512_R128_NW4_SL256_S128_flydsl "
     "(Synthetic Op)",
     "InferenceAttention"},
    {"aiter::v4_attention_with_output->hca_compress_forward_D512_R128_NW8_SL128_S128_flydsl "
     "(Synthetic Op)",
     "InferenceAttention"},
    {"aiter::allgather_lastdim<std::bfloat16_t, 2>(aiter::RankData*, aiter::RankSignals, "
     "aiter::Signal*, std::bfloat16_t*, int, int, int) (Synthetic Op)",
     "CustomCollective"},
    {"aiter::allgather_lastdim<std::bfloat16_t, 4>(aiter::RankData*, aiter::RankSignals, "
     "aiter::Signal*, std::bfloat16_t*, int, int, int) (Synthetic Op)",
     "CustomCollective"},
};

struct Registry {
  std::unordered_map<std::string_view, std::string_view> category;
  std::unordered_map<std::string_view, const ModelEntry*> model;
  std::vector<std::string_view> families;
};

const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    for (const ModelEntry& e : kModelEntries) {
      r.category[e.name] = e.category;
      r.model[e.name] = &e;
      bool seen = false;
      for (std::string_view f : r.families) seen = seen || f == e.sheet;
      if (!seen) r.families.push_back(e.sheet);
    }
    for (const CategoryOnly& c : kCategoryOnly) r.category[c.name] = c.category;
    return r;
  }();
  return reg;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

}  // namespace

std::string_view op_category_by_name(std::string_view name) {
  const auto& cats = registry().category;
  auto it = cats.find(name);
  return it == cats.end() ? std::string_view{} : it->second;
}

std::string_view op_category(std::string_view name, std::string_view first_kernel_name) {
  std::string_view reg = op_category_by_name(name);
  if (!reg.empty()) return reg;
  if (starts_with(name, "triton")) return "triton";
  if (starts_with(name, "record_param_comms")) return "record_param_comms";
  if (starts_with(first_kernel_name, "void at::native")) {
    if (first_kernel_name.find("elementwise") != std::string_view::npos) return "elementwise";
    if (first_kernel_name.find("reduce") != std::string_view::npos) return "reduce";
    if (first_kernel_name.find("multi_tensor_apply") != std::string_view::npos)
      return "multi_tensor_apply";
  }
  return "other";
}

const ModelEntry* find_model_entry(std::string_view name) {
  const auto& models = registry().model;
  auto it = models.find(name);
  return it == models.end() ? nullptr : it->second;
}

const std::vector<ModelEntry>& model_entries() {
  return kModelEntries;
}

std::string_view sheet_family_by_name(std::string_view name) {
  const ModelEntry* e = find_model_entry(name);
  return e ? e->sheet : std::string_view{};
}

const std::vector<std::string_view>& sheet_families() {
  return registry().families;
}

bool is_triton_compiled_name(std::string_view name) {
  return starts_with(name, "triton_poi_") || starts_with(name, "triton_red_") ||
         starts_with(name, "triton_per_");
}

bool has_registered_model(std::string_view name) {
  return find_model_entry(name) != nullptr || is_triton_compiled_name(name);
}

std::string_view strip_direction_suffix(std::string_view category) {
  for (std::string_view suffix : {std::string_view("_fwd"), std::string_view("_bwd")}) {
    if (category.size() >= suffix.size() &&
        category.substr(category.size() - suffix.size()) == suffix)
      return category.substr(0, category.size() - suffix.size());
  }
  return category;
}

namespace {

// Other names for a category stem: TraceLens's roofline sheet names
// (Normalization, UnaryElementwise, ...) and the words people use. One table
// for every tool and flag, so "Normalization" finds NORM_fwd everywhere.
struct CategoryAlias {
  std::string_view alias;
  std::string_view stem;
};
constexpr CategoryAlias kCategoryAliases[] = {
    {"normalization", "NORM"},
    {"norm", "NORM"},
    {"layernorm", "NORM"},
    {"layer_norm", "NORM"},
    {"rmsnorm", "NORM"},
    {"batchnorm", "NORM"},
    {"attention", "SDPA"},
    {"flash_attention", "SDPA"},
    {"matmul", "GEMM"},
    {"linear", "GEMM"},
    {"conv", "CONV"},
    {"convolution", "CONV"},
    {"unaryelementwise", "elementwise"},
    {"binaryelementwise", "elementwise"},
    {"eltwise", "elementwise"},
    {"pointwise", "elementwise"},
    {"reduction", "reduce"},
    {"reduce_fwd", "reduce"},
};

}  // namespace

std::vector<std::string_view> category_aliases_of(std::string_view stem) {
  std::vector<std::string_view> out;
  for (const auto& a : kCategoryAliases)
    if (pycompat::ascii_iequals(a.stem, stem)) out.push_back(a.alias);
  return out;
}

bool category_named_by(std::string_view category, std::string_view user_name) {
  std::string_view stem = strip_direction_suffix(category);
  if (pycompat::ascii_iequals(category, user_name) || pycompat::ascii_iequals(stem, user_name))
    return true;
  for (const auto& a : kCategoryAliases)
    if (pycompat::ascii_iequals(a.alias, user_name) && pycompat::ascii_iequals(a.stem, stem))
      return true;
  return false;
}

}  // namespace jarvis::perf
