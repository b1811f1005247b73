// TraceLens's remaining inference-extension models (RMSNorm variants, RoPE
// helpers, group quantizers, unfused MoE stages, MoE routing helpers, custom
// collectives, mHC) on constructed events shaped like the ops' recorded args
// (DeepSeek / Qwen decode shapes, the layouts TraceLens's extension tests
// use). Expected FLOPs and bytes are written out here term by term from the
// formulas of TraceLens's rmsnorm / perf_model / moe / custom-collective
// extensions, not through the models' helpers.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "perf/perf_model.h"
#include "report/perf_tables.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::perf;

namespace {

// A trace with one cpu_op carrying `args_json`; `kernels` become the names
// the metric computation attributes to it.
struct Op {
  Trace trace;
  OpInput op;
  explicit Op(const std::string& name, const std::string& args_json,
              std::vector<std::string> kernels = {})
      : kernel_storage(std::move(kernels)) {
    trace = load_trace_from_json(R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":")" + name +
                                 R"(","pid":1,"tid":1,"ts":100,"dur":10,"args":{)" + args_json +
                                 "}}]}");
    op = op_input_from_event(trace, 0);
    for (const std::string& k : kernel_storage) op.kernel_names.push_back(k);
  }
  std::unique_ptr<PerfModel> model() const { return make_perf_model(op); }
  std::vector<std::string> kernel_storage;
};

std::string param_str(const Params& params, std::string_view name) {
  const Param* p = find_param(params, name);
  return p ? p->repr() : "<absent>";
}

std::string param(const PerfModel& m, std::string_view name) {
  return param_str(m.params(), name);
}

// RMSNorm's FLOPs (TraceLens RMSNorm.flops, affine): per row 2N + 2 for the
// rsqrt, then 2 per element (scale and weight).
double rms_flops(double m, double n) {
  return (m * n / n) * (2 * n + 2) + m * n * 2;
}

}  // namespace

// ---------------------------------------------------------------- RMSNorm --

TEST_CASE("RMSNorm extensions: CK dynamic-quant and AITER per-group quant") {
  const double M = 32, N = 7168, n = M * N;
  Op dq(
      "aiter::rmsnorm2d_fwd_with_dynamicquant_ck",
      R"("Input Dims":[[32,7168],[32,7168],[32,1],[7168],[],[]],)"
      R"("Input type":["c10::Float8_e4m3fnuz","c10::BFloat16","float","c10::BFloat16","Scalar","Scalar"],)"
      R"("Input Strides":[[7168,1],[7168,1],[1,1],[1],[],[]],)"
      R"("Concrete Inputs":["","","","","1e-06","0"])");
  auto m = dq.model();
  REQUIRE(m);
  CHECK(m->flops() == rms_flops(M, N) + 2 * n);
  // bf16 input and weight read, fp8 output, one fp32 scale per token.
  CHECK(*m->bytes() == n * 2 + N * 2 + n * 1 + M * 4);
  CHECK(m->compute_spec() == "vector_bf16");
  CHECK(m->entry()->category == "RMSNorm");
  CHECK(params_dict_repr(m->params()) ==
        "{'op_shape': (32, 7168), 'dtype_in_out': ('c10::BFloat16', None), "
        "'stride_input': (7168, 1), 'stride_output': None, 'num_channels': 7168, "
        "'has_bias': False, 'is_affine': True, 'is_training': False}");

  // aiter::rmsnorm_quant: group_size 128 at Concrete Inputs[5] -> 56 groups per row.
  const char* rq_dims =
      R"("Input Dims":[[32,7168],[32,7168],[32,56],[7168],[],[],[]],)"
      R"("Input type":["c10::Float8_e4m3fnuz","c10::BFloat16","float","c10::BFloat16","Scalar","Scalar","Scalar"],)"
      R"("Input Strides":[[7168,1],[7168,1],[56,1],[1],[],[],[]],)";
  Op rq("aiter::rmsnorm_quant",
        std::string(rq_dims) + R"("Concrete Inputs":["","","","","1e-06","128","False"])");
  auto q = rq.model();
  REQUIRE(q);
  CHECK(q->flops() == rms_flops(M, N) + 2 * n);
  CHECK(*q->bytes() == n * 2 + N * 2 + n + M * (7168 / 128) * 4);
  // An unreadable group size means one group per row.
  Op rq0("aiter::rmsnorm_quant",
         std::string(rq_dims) + R"("Concrete Inputs":["","","","","1e-06","","False"])");
  CHECK(*rq0.model()->bytes() == n * 2 + N * 2 + n + M * 1 * 4);
}

TEST_CASE("RMSNorm extensions: vLLM fp8 group quant, with residual add, add+pad") {
  const double M = 4, N = 1536, n = M * N;
  Op gq("vllm::rocm_aiter_rmsnorm_fp8_group_quant",
        R"("Input Dims":[[4,1536],[1536],[],[]],)"
        R"("Input type":["c10::BFloat16","c10::BFloat16","Scalar","Scalar"],)"
        R"("Input Strides":[[1536,1],[1],[],[]],"Concrete Inputs":["","","1e-06","128"])");
  auto m = gq.model();
  REQUIRE(m);
  CHECK(m->flops() == rms_flops(M, N) + 2 * n);
  CHECK(*m->bytes() == n * 2 + N * 2 + n * 1 + M * 12 * 4);

  const double M2 = 4, N2 = 7168, n2 = M2 * N2;
  Op ga(
      "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant",
      R"("Input Dims":[[4,7168],[4,7168],[7168],[],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","Scalar"],)"
      R"("Input Strides":[[7168,1],[7168,1],[1],[],[]],"Concrete Inputs":["","","","1e-06","128"])");
  auto a = ga.model();
  REQUIRE(a);
  CHECK(a->flops() == rms_flops(M2, N2) + 3 * n2);
  // x and residual read, weight read, fp8 out, residual written, 56 scales per row.
  CHECK(*a->bytes() == n2 * 2 + n2 * 2 + N2 * 2 + n2 + n2 * 2 + M2 * 56 * 4);
  // A group size that does not parse fails like int() does.
  Op bad(
      "vllm::rocm_aiter_rmsnorm_fp8_group_quant",
      R"("Input Dims":[[4,1536],[1536],[],[]],"Input type":["c10::BFloat16","c10::BFloat16","Scalar","Scalar"],)"
      R"("Input Strides":[[1536,1],[1],[],[]],"Concrete Inputs":["","","1e-06",""])");
  CHECK_THROWS_AS(bad.model(), PerfModelError);

  // GPT-OSS hidden 2880 padded to a multiple of 256 -> 3072 output columns.
  const double M3 = 64, N3 = 2880, n3 = M3 * N3;
  for (const char* name :
       {"vllm::rocm_aiter_triton_add_rmsnorm_pad", "aiter::fused_add_rmsnorm_pad_"}) {
    Op pad(
        name,
        R"("Input Dims":[[64,2880],[2880],[],[64,2880],[]],)"
        R"("Input type":["c10::BFloat16","c10::BFloat16","Scalar","c10::BFloat16","Scalar"],)"
        R"("Input Strides":[[2880,1],[1],[],[2880,1],[]],"Concrete Inputs":["","","1e-05","","256"])");
    auto p = pad.model();
    REQUIRE(p);
    CHECK(p->flops() == n3 + rms_flops(M3, N3));
    CHECK(*p->bytes() == 2 * n3 * 2 + N3 * 2 + M3 * 3072 * 2 + M3 * N3 * 2);
    CHECK(p->compute_spec() == "vector_bf16");
  }
}

TEST_CASE("RMSNorm extensions: fused RMSNorm + MXFP4 quant with x2 and residual") {
  // TraceLens's own layout: x1 (4, 256), w1, eps, x2 (4, 128), w2, eps, res1 (4, 256).
  const double M = 4, N1 = 256, n = M * N1, N2 = 128;
  Op f(
      "sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant",
      R"("Input Dims":[[4,256],[256],[],[4,128],[128],[],[4,256]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","Scalar","c10::BFloat16","c10::BFloat16","Scalar","c10::BFloat16"],)"
      R"("Input Strides":[[256,1],[1],[],[128,1],[1],[],[256,1]])");
  auto m = f.model();
  REQUIRE(m);
  double base = rms_flops(M, N1);
  CHECK(m->flops() == base + M * N1 + std::trunc(base * (M * N2) / n) + 2 * n);
  double bytes = n * 2 + N1 * 2 + n * 0.5 + std::floor(n / 32);
  bytes += 2 * n * 2;                         // residual read and written
  bytes += M * N2 * 2 + N2 * 2 + M * N2 * 2;  // x2, its weight, out2
  CHECK(*m->bytes() == bytes);
  // x1 alone: no residual, no second norm.
  Op x1(
      "aiter::_fuse_rmsnorm_fp4_quant",
      R"("Input Dims":[[4,256],[256],[]],"Input type":["c10::BFloat16","c10::BFloat16","Scalar"],)"
      R"("Input Strides":[[256,1],[1],[]])");
  auto s = x1.model();
  CHECK(s->flops() == base + 2 * n);
  CHECK(*s->bytes() == n * 2 + N1 * 2 + n * 0.5 + std::floor(n / 32));
}

// ------------------------------------------------------------------- RoPE --

TEST_CASE("RoPE extensions: AITER two-channel cached RoPE and MLA rope + cache write") {
  Op r(
      "aiter::rope_cached_positions_2c_fwd_impl",
      R"("Input Dims":[[2,128,8,64],[2,128,1,64],[2,128,8,64],[2,128,1,64],[2048,1,1,64],[2048,1,1,64],[2,128],[],[],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","long int","Scalar","Scalar","Scalar"])");
  auto m = r.model();
  REQUIRE(m);
  const double elems = 2.0 * 128 * 8 * 64 + 2.0 * 128 * 1 * 64;
  CHECK(m->flops() == 3 * elems);
  CHECK(*m->bytes() == 2 * elems * 2);
  CHECK(m->compute_spec() == "vector_bf16");
  CHECK(param(*m, "num_elements") == "147456");
  CHECK(m->entry()->category == "RoPE_fwd");

  // DeepSeek MLA decode: 32 tokens, 16 heads, 512 latent + 64 rope, fp8 cache.
  const double T = 32, QH = 16, KH = 1, DL = 512, DP = 64;
  Op cat(
      "aiter::fused_qk_rope_cat_and_cache_mla",
      R"("Input Dims":[[32,16,512],[32,16,64],[32,1,512],[32,1,64],[4096,1,576],[32],[32],[163840,64],[163840,64],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::Float8_e4m3fnuz","long int","long int","c10::BFloat16","c10::BFloat16","Scalar"])");
  auto c = cat.model();
  REQUIRE(c);
  CHECK(c->flops() == 3 * (T * QH * DP + T * KH * DP));
  double read = (T * QH * DL + T * QH * DP) * 2 + (T * KH * DL + T * KH * DP) * 2;
  CHECK(*c->bytes() == read + T * QH * (DL + DP) * 2 + T * KH * (DL + DP) * 1);
  CHECK(param(*c, "dtype_kv") == "'c10::Float8_e4m3fnuz'");
  CHECK(c->entry()->sheet == "FusedRoPE");

  // The concat variant: 2-D kv_c / k_pe (one latent head), fp8 q_out at [5].
  Op concat(
      "aiter::fused_qk_rope_concat_and_cache_mla",
      R"("Input Dims":[[32,16,512],[32,16,64],[32,512],[32,64],[4096,1,576],[32,16,576],[32],[163840,64],[163840,64]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::Float8_e4m3fn","c10::Float8_e4m3fn","long int","c10::BFloat16","c10::BFloat16"])");
  auto cc = concat.model();
  REQUIRE(cc);
  CHECK(param(*cc, "KH") == "1");
  CHECK(cc->flops() == 3 * (T * QH * DP + T * 1 * DP));
  CHECK(*cc->bytes() == read + T * QH * (DL + DP) * 1 + T * 1 * (DL + DP) * 1);
}

TEST_CASE("mixed_sample_outer_exponential: logits and noise read, ids written") {
  Op s("aiter::mixed_sample_outer_exponential",
       R"("Input Dims":[[32],[32,151936],[32,151936],[]],)"
       R"("Input type":["int","c10::BFloat16","float","Scalar"])");
  auto m = s.model();
  REQUIRE(m);
  const double T = 32, V = 151936;
  CHECK(m->flops() == 2 * T * V);
  CHECK(*m->bytes() == T * V * 2 + T * V * 4 + T * 4);
  CHECK(m->compute_spec() == "vector_bf16");
  // "c10::Float" has no byte size in TraceLens's table: no bytes.
  Op f("aiter::mixed_sample_outer_exponential",
       R"("Input Dims":[[4,8],[4,8],[]],"Input type":["c10::Float","c10::Float","Scalar"])");
  CHECK_FALSE(f.model()->bytes().has_value());
}

// ------------------------------------------------------------ quantizers --

TEST_CASE("group quantizers: AITER per-token / per-group / per-tensor quant") {
  for (const char* name :
       {"aiter::dynamic_per_token_scaled_quant", "aiter::dynamic_per_group_scaled_quant",
        "aiter::dynamic_per_tensor_quant"}) {
    Op q(
        name,
        R"("Input Dims":[[32,7168],[32,7168],[32,1],[],[],[],[]],)"
        R"("Input type":["c10::Float8_e4m3fnuz","c10::BFloat16","float","","Scalar","Scalar","Scalar"],)"
        R"("Input Strides":[[7168,1],[7168,1],[1,1],[],[],[],[]])");
    auto m = q.model();
    REQUIRE(m);
    const double n = 32.0 * 7168;
    CHECK(m->flops() == n * 2.59375);
    CHECK(*m->bytes() == n * 1 + n * 2 + 32 * 4);
    CHECK(m->compute_spec() == "vector_bf16");
    CHECK(m->entry()->category == "GroupQuant");
    CHECK(param(*m, "dtype_in1_in2_out") == "('c10::BFloat16', 'float', 'c10::Float8_e4m3fnuz')");
  }
  // An output dtype without a byte size fails (None * int in Python).
  Op bad(
      "aiter::dynamic_per_token_scaled_quant",
      R"("Input Dims":[[32,7168],[32,7168],[32,1]],"Input type":["c10::Float8_e4m3fnuzX","c10::BFloat16","float"],)"
      R"("Input Strides":[[7168,1],[7168,1],[1,1]])");
  CHECK_THROWS_AS(bad.model()->bytes(), PerfModelError);
}

TEST_CASE("group quantizers: vLLM Triton per-token-group fp8 quant") {
  Op q(
      "vllm::triton_per_token_group_quant_fp8",
      R"("Input Dims":[[32,7168],[]],"Input type":["c10::BFloat16","Scalar"],"Concrete Inputs":["","128"])");
  auto m = q.model();
  REQUIRE(m);
  CHECK(m->flops() == 6.0 * 32 * 7168);
  CHECK(*m->bytes() == 32.0 * 7168 * 2 + 32.0 * 7168 * 1 + 32.0 * 56 * 4);
  CHECK(param(*m, "num_groups") == "56");
  // Absent group size: 128; a 1-D input is one row; 100 columns are one group.
  Op d(
      "vllm::triton_per_token_group_quant_fp8",
      R"("Input Dims":[[100],[]],"Input type":["c10::BFloat16","Scalar"],"Concrete Inputs":["","None"])");
  auto dm = d.model();
  CHECK(param(*dm, "M") == "1");
  CHECK(param(*dm, "group_size") == "128");
  CHECK(*dm->bytes() == 100.0 * 2 + 100 + 1 * 1 * 4);
}

TEST_CASE("group quantizers: MXFP4 activation quant family") {
  // (arg index of the activation, name) on a (32, 7168) bf16 activation.
  struct Case {
    const char* name;
    const char* args;
  };
  const Case cases[] = {
      {"sglang_profiler::fused_mxfp4_quant_fused_flatten_mxfp4_quant",
       R"("Input Dims":[[32,7168]],"Input type":["c10::BFloat16"],"Input Strides":[[7168,1]])"},
      {"sglang_profiler::quant_dynamic_mxfp4_quant",
       R"("Input Dims":[[32,7168]],"Input type":["c10::BFloat16"])"},
      {"aiter::fused_dynamic_mx_quant_moe_sort_hip",
       R"("Input Dims":[[32,3584],[256,224],[32,7168],[4096],[1]],)"
       R"("Input type":["c10::Float4_e2m1fn_x2","c10::Float8_e8m0fnu","c10::BFloat16","int","int"],)"
       R"("Input Strides":[[3584,1],[224,1],[7168,1],[1],[1]])"},
      {"aiter::fused_dynamic_mxfp4_quant_moe_sort_hip",
       R"("Input Dims":[[32,3584],[256,224],[32,7168],[4096],[1]],)"
       R"("Input type":["unsigned char","unsigned char","c10::BFloat16","int","int"])"},
      {"aiter::dynamic_per_group_scaled_quant_fp4",
       R"("Input Dims":[[32,3584],[32,7168],[32,224]],)"
       R"("Input type":["c10::Float4_e2m1fn_x2","c10::BFloat16","c10::Float8_e8m0fnu"])"},
  };
  const double n = 32.0 * 7168;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Op q(c.name, c.args);
    auto m = q.model();
    REQUIRE(m);
    CHECK(m->flops() == 2 * n);
    CHECK(*m->bytes() == n * 2 + n * 0.5 + std::floor(n / 32));
    CHECK(m->compute_spec() == "vector_bf16");
    CHECK(param(*m, "op_shape") == "(32, 7168)");
  }
}

// -------------------------------------------------------------------- MoE --

namespace {

// Expected distinct experts hit when M tokens each pick topk of E uniformly.
double active_experts(double e, double topk, double m) {
  return e * (1 - std::pow((e - topk) / e, m));
}

}  // namespace

TEST_CASE("unfused MoE: AITER CK stage1 / stage2, DeepSeek-V3 fp8 top-8 of 256") {
  const double M = 32, K = 7168, N = 2048, E = 256, topk = 8;
  const double act = active_experts(E, topk, M);
  Op s1(
      "aiter::ck_moe_stage1",
      R"("Input Dims":[[32,7168],[256,4096,7168],[256,7168,2048],[4352],[272],[1],[32,8,2048],[],[32,56],[256,32,56]],)"
      R"("Input type":["c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz","int","int","int","c10::BFloat16","Scalar","float","float"])");
  auto up = s1.model();
  REQUIRE(up);
  CHECK(up->flops() == 2 * M * K * N * topk * 2);
  // fp8 tokens, both (gate and up) fp8 weights of the active experts, output as the input.
  CHECK(*up->bytes() == M * K * 1 + act * 2 * K * N * 1 + M * N * topk * 1);
  CHECK(up->compute_spec() == "matrix_fp8");
  CHECK(up->entry()->category == "MoE_unfused");
  CHECK(params_dict_repr(up->params()) ==
        "{'num_tokens': 32, 'hidden_dim': 7168, 'inter_dim': 2048, 'num_experts': 256, "
        "'topk': 8, 'gated': True, 'input_dtype': 'c10::Float8_e4m3fnuz', "
        "'weight_dtype': 'c10::Float8_e4m3fnuz'}");
  CHECK_THROWS_AS(up->flops_bwd(), PerfNotImplemented);

  Op s2(
      "aiter::ck_moe_stage2",
      R"("Input Dims":[[32,8,2048],[256,4096,7168],[256,7168,2048],[4352],[272],[1],[32,7168],[32,8]],)"
      R"("Input type":["c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz","int","int","int","c10::BFloat16","float"])");
  auto down = s2.model();
  REQUIRE(down);
  CHECK(down->flops() == 2 * M * N * K * topk);
  CHECK(*down->bytes() == M * N * topk * 1 + act * N * K * 1 + M * K * 1);
  CHECK(param(*down, "gated") == "<absent>");

  // INT4-packed weights (w1's K stored at half): inter_dim scales by K / K_stored.
  Op packed("aiter::ck_moe_stage1",
            R"("Input Dims":[[32,7168],[256,4096,3584],[256,7168,1024],[],[],[],[32,8,2048]],)"
            R"("Input type":["c10::BFloat16","c10::Float4_e2m1fn_x2","c10::Float4_e2m1fn_x2"])");
  auto p = packed.model();
  CHECK(param(*p, "inter_dim") == "2048");
  CHECK(*p->bytes() == M * K * 2 + act * 2 * K * N * 0.5 + M * N * topk * 2);
}

TEST_CASE("unfused MoE: AITER CK-tile 2-stage GEMMs with recorded output dtypes") {
  // TraceLens's test layout: 8 experts, top-2, K = 4096, N = 7168.
  const double M = 32, K = 4096, N = 7168, E = 8, topk = 2;
  const double act = active_experts(E, topk, M);
  Op g1("aiter::moe_cktile2stages_gemm1_ck",
        R"("Input Dims":[[32,4096],[8,14336,512],[32,2,7168]],)"
        R"("Input type":["c10::BFloat16","c10::Float8_e4m3fn","c10::BFloat16"])");
  auto up = g1.model();
  REQUIRE(up);
  CHECK(param(*up, "gated") == "True");
  CHECK(up->flops() == 2 * M * K * N * topk * 2);
  CHECK(*up->bytes() == M * K * 2 + act * 2 * K * N * 1 + M * N * topk * 2);
  CHECK(up->compute_spec() == "matrix_bf16");
  Op g2("aiter::moe_cktile2stages_gemm2_ck",
        R"("Input Dims":[[32,2,7168],[8,4096,896],[32,4096]],)"
        R"("Input type":["c10::BFloat16","c10::Float8_e4m3fn","c10::Half"])");
  auto down = g2.model();
  REQUIRE(down);
  CHECK(down->flops() == 2 * M * N * K * topk);
  CHECK(*down->bytes() == M * N * topk * 2 + act * N * K * 1 + M * K * 2);
  CHECK(param(*down, "output_dtype") == "'c10::Half'");
}

TEST_CASE("unfused MoE: flydsl stages from the parent fused_moe_ args") {
  const double M = 32, K = 7168, N = 2048, E = 256, topk = 8;
  const double act = active_experts(E, topk, M);
  const char* args =
      R"("Input Dims":[[32,7168],[256,4096,3584],[256,7168,1024],[32,8],[32,8]],)"
      R"("Input type":["c10::BFloat16","c10::Float4_e2m1fn_x2","c10::Float4_e2m1fn_x2","float","int"])";
  Op s1("pseudo_op::moe_flydsl_stage1", args);
  Op s2("pseudo_op::moe_flydsl_stage2", args);
  auto up = s1.model();
  auto down = s2.model();
  REQUIRE(up);
  REQUIRE(down);
  CHECK(up->flops() == 2 * M * K * N * topk * 2);
  CHECK(*up->bytes() == M * K * 2 + act * 2 * K * N * 0.5 + M * N * topk * 2);
  CHECK(down->flops() == 2 * M * N * K * topk);
  CHECK(*down->bytes() == M * N * topk * 2 + act * N * K * 0.5 + M * K * 2);
  // Precision follows the FP4 weights.
  CHECK(up->compute_spec() == "matrix_fp4");
  CHECK(param(*down, "gated") == "True");
}

TEST_CASE("unfused MoE: Triton (GPT-OSS) and GPTQ/AWQ stages read the pseudo-op args") {
  // inter_dim is not recorded: TraceLens takes hidden_dim.
  const double M = 64, K = 2880, E = 128, topk = 4;
  const double act = active_experts(E, topk, M);
  const char* args =
      R"("Input Dims":[[64,2880],[64,128]],"Input type":["c10::BFloat16","c10::BFloat16"],)"
      R"("MoE topk":4,"MoE GEMM gated":true)";
  Op up("pseudo_op::moe_triton_unfused_up", args, {"_matmul_ogs_NNT_bf16xmxfp4x_bf16_swiglu"});
  auto m = up.model();
  REQUIRE(m);
  CHECK(m->flops() == 2 * M * K * K * topk * 2);
  CHECK(*m->bytes() == M * K * 2 + act * 2 * K * K * 0.5 + M * K * topk * 2);
  CHECK(m->compute_spec() == "matrix_fp4");
  Op down("pseudo_op::moe_triton_unfused_down", args, {"_matmul_ogs_fp8_e4m3_down"});
  auto d = down.model();
  CHECK(d->flops() == 2 * M * K * K * topk);
  CHECK(*d->bytes() == M * K * topk * 2 + act * K * K * 1 + M * K * 2);
  CHECK(d->compute_spec() == "matrix_fp8");
  // Without kernels, without the pseudo-op args, or with a bf16 kernel (no
  // weight dtype in TraceLens's table) the model fails.
  Op nokernel("pseudo_op::moe_triton_unfused_up", args);
  CHECK_THROWS_AS(nokernel.model(), PerfModelError);
  Op noargs("pseudo_op::moe_triton_unfused_up",
            R"("Input Dims":[[64,2880],[64,128]],"Input type":["c10::BFloat16","c10::BFloat16"])",
            {"mxfp4_kernel"});
  CHECK_THROWS_AS(noargs.model(), PerfModelError);
  Op bf16("pseudo_op::moe_triton_unfused_up", args, {"_matmul_ogs_bf16"});
  CHECK_THROWS_AS(bf16.model()->bytes(), PerfModelError);

  // GPTQ/AWQ: INT4 weights (0.5 B), w1 rows = 2 * inter_dim, w2 (E, K, N/2).
  const double T = 32, H = 4096, I = 1408, E2 = 64, k2 = 6;
  const double act2 = active_experts(E2, k2, T);
  const char* gargs =
      R"("Input Dims":[[32,4096],[64,2816,512],[64,4096,704],[32,6],[32,6]],)"
      R"("Input type":["c10::BFloat16","unsigned char","unsigned char","float","int"],"MoE topk":6)";
  Op gu("pseudo_op::moe_gptq_awq_up", gargs);
  auto u = gu.model();
  REQUIRE(u);
  CHECK(param(*u, "gated") == "True");  // default when the arg is absent
  CHECK(u->flops() == 2 * T * H * I * k2 * 2);
  CHECK(*u->bytes() == T * H * 2 + act2 * 2 * H * I * 0.5 + T * I * k2 * 2);
  Op gd("pseudo_op::moe_gptq_awq_down", gargs);
  auto g = gd.model();
  CHECK(param(*g, "inter_dim") == "1408");
  CHECK(g->flops() == 2 * T * I * H * k2);
  CHECK(*g->bytes() == T * I * k2 * 2 + act2 * I * H * 0.5 + T * H * 2);
  CHECK(g->compute_spec() == "matrix_bf16");
}

TEST_CASE("unfused MoE: SGLang Triton invoke_fused_moe_kernel (gate/up and down)") {
  // TraceLens's docstring shapes: 64 tokens, top-8 of 128 experts, fp8 weights.
  const double tokens = 64, topk = 8, E = 128, act = active_experts(E, topk, tokens);
  Op up(
      "sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel",
      R"("Input Dims":[[64,2048],[128,1536,2048],[],[512,1536],[],[64,8],[64,8],[4096],[64,8],[1]],)"
      R"("Input type":["c10::BFloat16","c10::Float8_e4m3fn","","c10::BFloat16","","float","int","int","int","int"])");
  auto m = up.model();
  REQUIRE(m);
  const double Mw = tokens * topk, N = 1536, K = 2048;
  CHECK(m->flops() == 2 * Mw * N * K);
  CHECK(*m->bytes() == Mw * K * 2 + act * N * K * 1 + Mw * N * 2);
  CHECK(m->compute_spec() == "matrix_fp8");
  CHECK(param(*m, "m_work") == "512");
  Op shortdims("sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel",
               R"("Input Dims":[[64,2048],[128,1536,2048]],"Input type":["c10::BFloat16"])");
  CHECK_THROWS_AS(shortdims.model(), PerfModelError);
}

TEST_CASE("MoE aux: grouped top-k router, sort/scatter, shared-expert append") {
  // DeepSeek router: logits (32, 256) bf16, bias (256,), weights (32, 8) fp32, ids (32, 8) int.
  Op topk(
      "aiter::biased_grouped_topk_hip",
      R"("Input Dims":[[32,256],[256],[32,8],[32,8],[],[],[],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","float","int","Scalar","Scalar","Scalar","Scalar"])");
  auto t = topk.model();
  REQUIRE(t);
  CHECK(t->flops() == 32 * 256);
  CHECK(*t->bytes() == 32 * 256 * 2 + 256 * 2 + 32 * 8 * 4 + 32 * 8 * 4);
  CHECK(t->compute_spec() == "vector_bf16");
  CHECK(param(*t, "operands") ==
        "[((32, 256), 'c10::BFloat16'), ((256,), 'c10::BFloat16'), ((32, 8), 'float'), "
        "((32, 8), 'int')]");
  CHECK(t->entry()->category == "MoE_aux");

  // moe_sorting_fwd: ids/weights, padded sorted ids and weights, expert ids,
  // a 2-element count and the (M, hidden) buffer it zeroes.
  Op sort(
      "aiter::moe_sorting_fwd",
      R"("Input Dims":[[32,8],[32,8],[4352],[4352],[272],[2],[32,7168],[],[]],)"
      R"("Input type":["int","float","int","float","int","int","c10::BFloat16","Scalar","Scalar"])");
  auto s = sort.model();
  REQUIRE(s);
  CHECK(s->flops() == 32 * 7168);
  CHECK(*s->bytes() ==
        32 * 8 * 4 + 32 * 8 * 4 + 4352 * 4 + 4352 * 4 + 272 * 4 + 2 * 4 + 32 * 7168 * 2);
  CHECK(s->compute_spec() == "vector_bf16");
  // Nothing sized: no bytes.
  Op unsized("aiter::mxfp4_moe_sort_hip",
             R"("Input Dims":[[64,16],[32,16]],"Input type":["c10::Float8_e8m0fnuX",""])");
  auto u = unsized.model();
  CHECK(u->flops() == 64 * 16);
  CHECK_FALSE(u->bytes().has_value());

  Op app("sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts",
         R"("Input Dims":[[32,8],[32,8],[],[]],"Input type":["int","float","Scalar","Scalar"])");
  auto a = app.model();
  REQUIRE(a);
  CHECK(a->flops() == 32 * 8);
  CHECK(*a->bytes() == 2 * (32 * 8 * 4 + 32 * 8 * 4));
  CHECK(a->compute_spec() == "vector_fp32");
  Op mismatch("sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts",
              R"("Input Dims":[[32,8],[32,9]],"Input type":["int","float"])");
  CHECK_THROWS_AS(mismatch.model(), PerfModelError);
}

// ------------------------------------------------------------------- GEMM --

TEST_CASE("batched_gemm_a8w8: per-batch GEMM, M from either activation layout") {
  const char* name =
      "sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_"
      "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant";
  // DeepSeek MLA absorbed projection: 128 heads (batches), 32 tokens, K 128 -> N 512.
  for (const char* dims :
       {R"([[128,32,128],[128,512,128],[1]])", R"([[32,128,128],[128,512,128],[1]])"}) {
    Op g(name, std::string(R"("Input Dims":)") + dims +
                   R"(,"Input type":["c10::BFloat16","signed char","float"])");
    auto m = g.model();
    REQUIRE(m);
    const double B = 128, M = 32, N = 512, K = 128;
    CHECK(m->flops() == B * 2 * M * N * K);
    CHECK(*m->bytes() == B * (M * K * 2 + K * N * 1 + M * N * 2));
    CHECK(param(*m, "M") == "32");
    // "signed char" has no compute precision in TraceLens's table.
    CHECK(m->compute_spec() == "");
  }
}

// ----------------------------------------------------------- collectives --

TEST_CASE("custom collectives: fused allreduce + RMSNorm, all-reduce, shard collectives") {
  const double M = 64, N = 7168, n = M * N;
  Op py(
      "aiter::fused_allreduce_rmsnorm_",
      R"("Input Dims":[[64,7168],[64,7168],[7168],[],[],[],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","","Scalar","Scalar"],)"
      R"("Input Strides":[[7168,1],[7168,1],[1],[],[],[],[]])");
  auto f = py.model();
  REQUIRE(f);
  CHECK(f->flops() == n + M * (2 * N + 2) + 2 * n);
  CHECK(*f->bytes() == 2 * n * 2 + N * 2 + 2 * n * 2);
  CHECK(f->compute_spec() == "");
  CHECK(f->entry()->category == "CustomCollective");
  CHECK(params_dict_repr(f->params()) ==
        "{'op_shape': (64, 7168), 'dtype_in': 'c10::BFloat16', 'stride_input': (7168, 1), "
        "'num_channels': 7168}");
  // The C++ op's layout (TraceLens's own test records every type as Scalar: 4 bytes).
  Op cxx(
      "aiter::fused_allreduce_rmsnorm",
      R"("Input Dims":[[1],[],[4,7168],[4,7168],[4,7168],[4,7168],[7168],[],[],[]],)"
      R"("Input type":["Scalar","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar"],)"
      R"("Input Strides":[[],[],[],[],[],[],[],[],[],[]])");
  auto c = cxx.model();
  CHECK(c->flops() == 4 * N + 4 * (2 * N + 2) + 2 * 4 * N);
  CHECK(*c->bytes() == 2 * 4 * N * 4 + N * 4 + 2 * 4 * N * 4);

  for (const char* name : {"_C_custom_ar::all_reduce", "_C_custom_ar::qr_all_reduce",
                           "sgl_kernel::all_reduce_reg", "sgl_kernel::qr_all_reduce"}) {
    CAPTURE(name);
    Op ar(name, R"("Input Dims":[[],[1866,7168],[1866,7168],[],[]],)"
                R"("Input type":["Scalar","c10::BFloat16","c10::BFloat16","Scalar","Scalar"],)"
                R"("Input Strides":[[],[7168,1],[7168,1],[],[]])");
    auto a = ar.model();
    REQUIRE(a);
    CHECK(a->flops() == 0);
    CHECK(*a->bytes() == 2 * 1866.0 * 7168 * 2);
  }
  // An unsized dtype fails (None * int in Python).
  Op unsized("_C_custom_ar::all_reduce",
             R"("Input Dims":[[],[4,8],[4,8]],"Input type":["Scalar","c10::Float",""],)"
             R"("Input Strides":[[],[8,1],[8,1]])");
  CHECK_THROWS_AS(unsized.model()->bytes(), PerfModelError);

  Op rs(
      "aiter::reduce_scatter",
      R"("Input Dims":[[],[8,7168],[4,7168]],"Input type":["Scalar","c10::BFloat16","c10::BFloat16"],)"
      R"("Input Strides":[[],[7168,1],[7168,1]])");
  CHECK(*rs.model()->bytes() == (8.0 * 7168 + 4.0 * 7168) * 2);
  Op ag(
      "aiter::all_gather_reg",
      R"("Input Dims":[[],[4,7168],[8,7168]],"Input type":["Scalar","c10::BFloat16","c10::BFloat16"],)"
      R"("Input Strides":[[],[7168,1],[7168,1]])");
  CHECK(*ag.model()->bytes() == (4.0 * 7168 + 8.0 * 7168) * 2);
  // sglang's (out, inp, fa) layout: W = 8 shards of 32 rows.
  Op sg(
      "sglang::reg_all_gather_into_tensor",
      R"("Input Dims":[[256,16160],[32,16160],[]],"Input type":["c10::BFloat16","c10::BFloat16","Scalar"])");
  auto s = sg.model();
  REQUIRE(s);
  CHECK(*s->bytes() == (32.0 * 16160 + 256.0 * 16160) * 2);
  CHECK(param(*s, "out_shape") == "(256, 16160)");
}

// -------------------------------------------------------------------- mHC --

TEST_CASE("mHC kernels and the top-k softplus router") {
  // 4 streams (n) of C = 7168 for M = 32 tokens: K = n*C, hc3 = n^2 + 2n = 24, split_k 4.
  const double M = 32, n = 4, C = 7168, K = n * C, hc3 = 24, sk = 4;
  const double mixes = M * n * 4 + M * n * n * 4;
  Op post(
      "aiter::mhc_post",
      R"("Input Dims":[[32,4,7168],[32,7168],[32,4,7168],[32,4,1],[32,4,4],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","float","float","Scalar"])");
  auto p = post.model();
  REQUIRE(p);
  CHECK(p->flops() == 2 * M * n * C * (n + 1));
  CHECK(*p->bytes() == M * C * 2 + M * n * C * 2 + mixes + M * n * C * 2);
  CHECK(p->compute_spec() == "vector_bf16");
  CHECK(p->entry()->category == "mHC");
  CHECK(param(*p, "hc3") == "None");

  Op pre("aiter::mhc_pre_gemm_sqrsum",
         R"("Input Dims":[[4,32,24],[4,32],[32,4,7168],[24,28672],[],[]],)"
         R"("Input type":["float","float","c10::BFloat16","float","Scalar","Scalar"])");
  auto g = pre.model();
  REQUIRE(g);
  CHECK(g->flops() == 2 * M * hc3 * K);
  CHECK(*g->bytes() == M * n * C * 2 + hc3 * K * 4 + sk * M * hc3 * 4 + sk * M * 4);
  CHECK(g->compute_spec() == "matrix_bf16");

  Op fuse(
      "aiter::mhc_pre_big_fuse_rmsnorm",
      R"("Input Dims":[[32,4,1],[32,4,4],[32,7168],[4,32,24],[4,32],[24],[24],[32,4,7168],[7168],[],[],[],[],[],[]],)"
      R"("Input type":["float","float","c10::BFloat16","float","float","float","float","c10::BFloat16","c10::BFloat16","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar"])");
  auto b = fuse.model();
  REQUIRE(b);
  CHECK(b->flops() == 2 * M * C * n + 5 * M * C);
  CHECK(*b->bytes() == M * n * C * 2 + sk * M * hc3 * 4 + C * 2 + M * C * 2 + mixes);

  Op both(
      "aiter::mhc_fused_post_pre_gemm_sqrsum",
      R"("Input Dims":[[4,32,24],[4,32],[32,4,7168],[32,7168],[32,4,7168],[32,4,1],[32,4,4],[24,28672],[],[],[],[]],)"
      R"("Input type":["float","float","c10::BFloat16","c10::BFloat16","c10::BFloat16","float","float","float","Scalar","Scalar","Scalar","Scalar"])");
  auto f = both.model();
  REQUIRE(f);
  CHECK(f->flops() == 2 * M * n * C * (n + 1) + 2 * M * hc3 * K);
  CHECK(*f->bytes() ==
        M * C * 2 + 3 * (M * n * C * 2) + mixes + hc3 * K * 4 + sk * M * hc3 * 4 + sk * M * 4);
  CHECK(f->compute_spec() == "matrix_bf16");

  // Router: 32 tokens over 256 experts, top-8; fp32 weights and int32 ids written.
  Op topk("aiter::topk_softplus",
          R"("Input Dims":[[32,8],[32,8],[32,256],[256],[]],)"
          R"("Input type":["float","int","c10::BFloat16","float","Scalar"])");
  auto t = topk.model();
  REQUIRE(t);
  CHECK(t->flops() == 6.0 * 32 * 256);
  CHECK(*t->bytes() == 32.0 * 256 * 2 + 256 * 4 + 32 * 8 * 4 + 32 * 8 * 4);
  CHECK(t->entry()->category == "MoE_aux");
  CHECK(params_dict_repr(t->params()) ==
        "{'M': 32, 'n': 1, 'C': 256, 'E': 256, 'topk': 8, 'dtype_in': 'c10::BFloat16'}");
}

// ------------------------------------------------------------ perf sheets --

namespace {

// One cpu_op launching one kernel (3 µs) through a runtime launch and an
// ac2g flow, at `ts`.
std::string launched(const std::string& op, const std::string& args, const std::string& kernel,
                     int corr, double ts) {
  std::string c = std::to_string(corr), t = std::to_string(ts), t1 = std::to_string(ts + 1),
              t2 = std::to_string(ts + 2);
  return R"({"ph":"X","cat":"cpu_op","name":")" + op + R"(","pid":1,"tid":1,"ts":)" + t +
         R"(,"dur":5,"args":{)" + args + "}}," +
         R"({"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":)" + t1 +
         R"(,"dur":1,"args":{"correlation":)" + c + "}}," +
         R"({"ph":"s","cat":"ac2g","name":"ac2g","id":)" + c + R"(,"pid":1,"tid":1,"ts":)" + t1 +
         "}," + R"({"ph":"X","cat":"kernel","name":")" + kernel + R"(","pid":0,"tid":7,"ts":)" +
         t2 + R"(,"dur":3,"args":{"correlation":)" + c + R"(,"stream":7,"device":0}},)" +
         R"({"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":)" + c +
         R"(,"pid":0,"tid":7,"ts":)" + t2 + "}";
}

}  // namespace

TEST_CASE("perf sheets: the extension models' rows appear with their FLOPs and bytes") {
  // Rows that TraceLens writes and jarvis skipped while these models were
  // unavailable: an unfused MoE stage (its weight dtype read from the
  // launched kernel's name), a group quantizer, an mHC kernel, a custom
  // all-reduce.
  std::string events =
      launched(
          "pseudo_op::moe_triton_unfused_down",
          R"("Input Dims":[[64,2880],[64,128]],"Input type":["c10::BFloat16","c10::BFloat16"],)"
          R"("MoE topk":4,"MoE GEMM gated":false)",
          "_matmul_ogs_NNT_bf16xmxfp4x_bf16", 1, 0) +
      "," +
      launched("aiter::dynamic_per_group_scaled_quant_fp4",
               R"("Input Dims":[[32,3584],[32,7168],[32,224]],)"
               R"("Input type":["c10::Float4_e2m1fn_x2","c10::BFloat16","c10::Float8_e8m0fnu"])",
               "dynamic_per_group_scaled_quant_kernel", 2, 20) +
      "," +
      launched("aiter::mhc_pre_gemm_sqrsum",
               R"("Input Dims":[[4,32,24],[4,32],[32,4,7168],[24,28672],[],[]],)"
               R"("Input type":["float","float","c10::BFloat16","float","Scalar","Scalar"])",
               "mhc_pre_gemm_sqrsum_kernel", 3, 40) +
      "," +
      launched("_C_custom_ar::all_reduce",
               R"("Input Dims":[[],[32,7168],[32,7168],[],[]],)"
               R"("Input type":["Scalar","c10::BFloat16","c10::BFloat16","Scalar","Scalar"],)"
               R"("Input Strides":[[],[7168,1],[7168,1],[],[]])",
               "cross_device_reduce_1stage", 4, 60);
  Trace trace = load_trace_from_json(R"({"traceEvents":[)" + events + "]}");
  CallTree tree(trace);
  report::ModelFailureCounts failures;
  struct Want {
    const char* family;
    const char* op;
    double gflops, bytes;
    const char* spec;
  };
  const double act = active_experts(128, 4, 64);
  const Want wants[] = {
      {"MoE_unfused", "pseudo_op::moe_triton_unfused_down", 2.0 * 64 * 2880 * 2880 * 4 / 1e9,
       64.0 * 2880 * 4 * 2 + act * 2880 * 2880 * 0.5 + 64.0 * 2880 * 2, "matrix_fp4"},
      {"GroupQuant", "aiter::dynamic_per_group_scaled_quant_fp4", 2.0 * 32 * 7168 / 1e9,
       32.0 * 7168 * 2 + 32.0 * 7168 * 0.5 + 32.0 * 7168 / 32, "vector_bf16"},
      {"mHC", "aiter::mhc_pre_gemm_sqrsum", 2.0 * 32 * 24 * 28672 / 1e9,
       32.0 * 4 * 7168 * 2 + 24.0 * 28672 * 4 + 4.0 * 32 * 24 * 4 + 4.0 * 32 * 4, "matrix_bf16"},
      {"CustomCollective", "_C_custom_ar::all_reduce", 0, 2.0 * 32 * 7168 * 2, ""},
  };
  for (const Want& w : wants) {
    CAPTURE(w.family);
    auto rows = report::perf_sheet_rows(trace, tree, w.family, false, nullptr, &failures);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].name == w.op);
    REQUIRE(rows[0].metrics.has_value());
    CHECK(rows[0].metrics->gflops == doctest::Approx(w.gflops).epsilon(1e-12));
    CHECK(*rows[0].metrics->bytes == w.bytes);
    CHECK(rows[0].metrics->compute_spec == w.spec);
    CHECK(rows[0].metrics->kernel_time_us == 3);
  }
  CHECK(failures.empty());
}

TEST_CASE("perf sheets: Triton unfused MoE rows equal TraceLens's reference cells") {
  // TraceLens's own reference perf CSVs (tests/traces/inference/vllm_decode_full and
  // vllm_prefilldecode_piecewise, MoE_unfused_fwd.csv at commit 171dd747): GPT-OSS MoE
  // pseudo ops with the recorded Input Dims / types and the launched matmul_ogs kernel.
  struct Ref {
    const char* op;
    int tokens;
    bool gated;
    const char* kernel;
    double gflops, data_moved_mb;
  };
  const Ref refs[] = {
      {"pseudo_op::moe_triton_unfused_down", 32, false,
       "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", 2.415919104, 142.93016346657365},
      {"pseudo_op::moe_triton_unfused_up", 32, true,
       "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", 4.831838208, 284.9228269331473},
      {"pseudo_op::moe_triton_unfused_up", 8192, true,
       "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", 1236.950581248, 528.0},
      {"pseudo_op::moe_triton_unfused_down", 8192, false,
       "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1", 618.475290624, 384.0},
  };
  int corr = 1;
  for (const Ref& r : refs) {
    CAPTURE(r.op);
    CAPTURE(r.tokens);
    std::string t = std::to_string(r.tokens);
    std::string args = R"("Input Dims":[[)" + t + R"(,3072],[)" + t +
                       R"(,32],[],[]],"Input type":["c10::BFloat16","c10::BFloat16","",""],)"
                       R"("Concrete Inputs":["","","",""],"MoE topk":4,"MoE GEMM gated":)" +
                       (r.gated ? "true" : "false");
    Trace trace = load_trace_from_json(R"({"traceEvents":[)" +
                                       launched(r.op, args, r.kernel, corr++, 0) + "]}");
    CallTree tree(trace);
    auto rows = report::perf_sheet_rows(trace, tree, "MoE_unfused", false, nullptr);
    REQUIRE(rows.size() == 1);
    REQUIRE(rows[0].metrics.has_value());
    CHECK(rows[0].metrics->gflops == r.gflops);
    CHECK(rows[0].metrics->data_moved_mb == r.data_moved_mb);
    CHECK(rows[0].metrics->compute_spec == "matrix_fp4");
    CHECK(param_str(rows[0].metrics->params(), "weight_dtype") == "'FP4'");
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
