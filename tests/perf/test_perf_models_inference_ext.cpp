// TraceLens's inference-extension models for attention (InferenceAttention)
// and fused MoE, on constructed events. Expected FLOPs and bytes are worked
// out here from the formulas of TraceLens's attention / MoE extensions
// (chunked prefill causal within the chunk, decode against the cache; fused
// MoE with uniform-routing active experts), term by term.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "perf/perf_model.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::perf;

namespace {

// A trace with one cpu_op (ts 100, dur 10) and, optionally, a user annotation
// around it; the op is the last event.
struct AnnotatedOp {
  Trace trace;
  OpInput op;
  AnnotatedOp(const std::string& name, const std::string& args_json,
              const std::string& annotation = "", double ann_ts = 50, double ann_dur = 100) {
    std::string events;
    if (!annotation.empty())
      events += R"({"ph":"X","cat":"user_annotation","name":")" + annotation +
                R"(","pid":1,"tid":1,"ts":)" + std::to_string(ann_ts) + R"(,"dur":)" +
                std::to_string(ann_dur) + "},";
    events += R"({"ph":"X","cat":"cpu_op","name":")" + name +
              R"(","pid":1,"tid":1,"ts":100,"dur":10,"args":{)" + args_json + "}}";
    trace = load_trace_from_json(R"({"traceEvents":[)" + events + "]}");
    op = op_input_from_event(trace, static_cast<Uid>(trace.events.size() - 1));
  }
};

std::string param(const PerfModel& m, std::string_view name) {
  const Param* p = find_param(m.params(), name);
  return p ? p->repr() : "<absent>";
}

// q (N, 32, 128), k / v caches (N, 8, 128), bf16: GQA 32 query heads, 8 KV heads.
const char* kAttentionArgs =
    R"("Input Dims":[[6147,32,128],[6147,8,128],[6147,8,128],[6147,32,128],[]],)"
    R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar"])";

}  // namespace

TEST_CASE("inference attention: vLLM chunked prefill + decode from the detailed annotation") {
  // Two prefill requests (sq sum 6144 of sk sum 7144, i.e. 1000 cached
  // tokens) and three decode requests over 6144 cached tokens in all.
  AnnotatedOp a("vllm::unified_attention_with_output", kAttentionArgs,
                "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)"
                "_generation_3(sq3sk6144sqsq3sqsk6144)");
  auto m = make_perf_model(a.op);
  REQUIRE(m);
  const double HQ = 32, HKV = 8, D = 128;
  // Prefill: QKᵀ and PV over sq·sk pairs, minus the masked half of the
  // sq·sq diagonal block; decode: full sq·sk.
  double ctx = HQ * 2 * 23019520 * D * 2 - HQ * 20971520 * D * 2;
  double gen = HQ * 2 * 6144 * D * 2;
  CHECK(m->flops() == ctx + gen);
  // Bytes: per new token Q and O (H_Q heads) and the new K and V (H_KV
  // heads); per cached token K and V. All bf16.
  double new_tokens = 6144 + 3, cached = (7144 - 6144) + (6144 - 3);
  double elems = new_tokens * (HQ * D * 2 + HKV * D * 2) + cached * HKV * D * 2;
  CHECK(*m->bytes() == elems * 2);
  CHECK(m->compute_spec() == "matrix_bf16");
  CHECK(params_dict_repr(m->params()) ==
        "{'B': 1, 'N_Q': 6147, 'H_Q': 32, 'H_V': 8, 'H_K': 8, 'N_KV': 6147, 'H_KV': 8, "
        "'d_h_qk': 128, 'd_h_v': 128, 'dropout': 0.0, 'causal': False, 'flash_impl': True, "
        "'c_sq': 6144, 'c_sk': 7144, 'c_sqsq': 20971520, 'c_sqsk': 23019520, 'g_sq': 3, "
        "'g_sk': 6144, 'g_sqsq': 3, 'g_sqsk': 6144, 'dtype_Q': 'c10::BFloat16', "
        "'dtype_KV': 'c10::BFloat16'}");
}

TEST_CASE("inference attention: SGLang and ATOM detailed annotations, fp8 KV cache") {
  AnnotatedOp s("vllm::unified_attention_with_output",
                R"("Input Dims":[[6,4,64],[100,16,2,64]],)"
                R"("Input type":["c10::BFloat16","c10::Float8_e4m3fnuz"])",
                "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 "
                "g_sqsq=1 g_sqsk=12]");
  auto m = make_perf_model(s.op);
  REQUIRE(m);
  const double HQ = 4, HKV = 2, D = 64;
  CHECK(m->flops() == HQ * 2 * 40 * D * 2 - HQ * 25 * D * 2 + HQ * 2 * 12 * D * 2);
  // New tokens (5 + 1) in bf16, cached tokens ((8-5) + (12-1)) as fp8.
  CHECK(*m->bytes() == 6 * (HQ * D * 2 + HKV * D * 2) * 2 + 14 * HKV * D * 2 * 1);
  CHECK(param(*m, "N_KV") == "16");  // k_shape[-3:] of the paged cache
  CHECK(param(*m, "dtype_KV") == "'c10::Float8_e4m3fnuz'");

  AnnotatedOp atom("vllm::unified_attention_with_output", kAttentionArgs,
                   "decode[bs=32 tok=128 d=32 spec=3 sqsq=512 sqsk=262144 sk=65536]");
  auto ma = make_perf_model(atom.op);
  CHECK(ma->flops() == 32.0 * 2 * 262144 * 128 * 2);
}

TEST_CASE("inference attention: no estimate without a detailed annotation (TraceLens drops it)") {
  // No annotation, a native (count-only) label, an annotation that ends with
  // the op (the end must be strictly later), and an op TraceLens does not
  // annotate at all.
  AnnotatedOp none("vllm::unified_attention_with_output", kAttentionArgs);
  AnnotatedOp native("vllm::unified_attention_with_output", kAttentionArgs,
                     "execute_context_2(6144)_generation_3(3)");
  AnnotatedOp flush("vllm::unified_attention_with_output", kAttentionArgs,
                    "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)"
                    "_generation_3(sq3sk6144sqsq3sqsk6144)",
                    50, 60);
  AnnotatedOp other("aiter::mha_varlen_fwd", kAttentionArgs,
                    "step[DECODE bs=1 g_sq=1 g_sqsq=1 g_sqsk=9 g_sk=9]");
  for (const AnnotatedOp* a : {&none, &native, &flush, &other}) {
    auto m = make_perf_model(a->op);
    REQUIRE(m);
    CHECK_THROWS_AS(m->flops(), PerfModelError);
  }
  // Annotated but with neither prefill nor decode tokens: not implemented.
  AnnotatedOp empty("vllm::unified_attention_with_output", kAttentionArgs,
                    "step[DECODE bs=0 g_sq=0 g_sqsq=0 g_sqsk=0 g_sk=0]");
  CHECK_THROWS_AS(make_perf_model(empty.op)->flops(), PerfNotImplemented);
}

TEST_CASE("inference attention: DeepSeek-V4 sparse prefill counts the attended pairs") {
  // q (512, 64, 576); prefix and extend index lists of 4096 and 1024 slots.
  AnnotatedOp a("aiter::pa_sparse_prefill_opus_fwd",
                R"("Input Dims":[[512,64,576],[100,1,576],[4096],[513],[512],[1024]],)"
                R"("Input type":["c10::BFloat16","c10::BFloat16","int","int","int","int"])");
  auto m = make_perf_model(a.op);
  REQUIRE(m);
  const double pairs = 4096 + 1024;
  CHECK(m->flops() == pairs * 64 * 2 * (576 + 576));
  CHECK(*m->bytes() == 2.0 * 512 * 64 * 576 * 2 + pairs * 576 * 2);
  CHECK(param(*m, "prefill_pairs") == "5120");
  CHECK(m->compute_spec() == "matrix_bf16");
}

TEST_CASE("fused MoE: AITER FP8 block-scale, gated, top-8 of 256 experts") {
  // out / input (M=4, K=7168); w1 (256, 2·2048, 7168); w2 (256, 7168, 2048).
  AnnotatedOp a("aiter::fmoe_fp8_blockscale_g1u1",
                R"("Input Dims":[[4,7168],[4,7168],[256,4096,7168],[256,7168,2048],[4,8],[4,8]],)"
                R"("Input type":["c10::BFloat16","c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz",)"
                R"("c10::Float8_e4m3fnuz","float","int"],)"
                R"("Concrete Inputs":["","","","","","","","","8","","","","","128","128"])");
  auto m = make_perf_model(a.op);
  REQUIRE(m);
  const double M = 4, K = 7168, N = 2048, E = 256, topk = 8;
  double up = 2 * M * K * N * topk * 2, down = 2 * M * K * N * topk,
         combine = M * K * (2 * topk - 1);
  CHECK(m->flops() == up + down + combine);
  // Distinct experts hit by 4 tokens choosing 8 of 256 uniformly.
  double active = E * (1 - std::pow((E - topk) / E, M));
  CHECK(*m->bytes() == M * K * 1 + active * N * K * 1 * 2 + active * N * K * 1 + M * K * 2);
  CHECK(m->compute_spec() == "matrix_fp8");
  CHECK(params_dict_repr(m->params()) ==
        "{'num_tokens': 4, 'hidden_dim': 7168, 'inter_dim': 2048, 'num_experts': 256, "
        "'topk': 8, 'gated': True, 'input_dtype': 'c10::Float8_e4m3fnuz', "
        "'weight_dtype': 'c10::Float8_e4m3fnuz', 'output_dtype': 'c10::BFloat16'}");
  CHECK_THROWS_AS(m->flops_bwd(), PerfNotImplemented);

  AnnotatedOp no_topk(
      "aiter::fmoe_g1u1",
      R"("Input Dims":[[4,7168],[4,7168],[256,4096,7168],[256,7168,2048]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16"],)"
      R"("Concrete Inputs":["","","",""])");
  CHECK_THROWS_AS(make_perf_model(no_topk.op), PerfModelError);
}

TEST_CASE("fused MoE: AITER 1-stage with INT4-packed weights, bf16 activations") {
  // w1 stores K / 2 = 512 columns: N is scaled by the packing ratio 2, so
  // inter_dim = 2 · 256 = 512 and w1's 1024 rows make it gated.
  AnnotatedOp a("pseudo_op::moe_aiter_fused_1stage",
                R"("Input Dims":[[16,1024],[8,1024,512],[8,1024,256],[16,2]],)"
                R"("Input type":["c10::BFloat16","int","int","float"])");
  auto m = make_perf_model(a.op);
  REQUIRE(m);
  const double M = 16, K = 1024, N = 512, E = 8, topk = 2;
  CHECK(param(*m, "inter_dim") == "512");
  CHECK(param(*m, "gated") == "True");
  CHECK(m->flops() == 2 * M * K * N * topk * 2 + 2 * M * K * N * topk + M * K * (2 * topk - 1));
  // "int" is not in TraceLens's MoE byte table: weights default to 1 byte.
  double active = E * (1 - std::pow((E - topk) / E, M));
  CHECK(*m->bytes() == M * K * 2 + active * N * K * 1 * 2 + active * N * K * 1 + M * K * 2);
  CHECK(m->compute_spec() == "matrix_bf16");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
