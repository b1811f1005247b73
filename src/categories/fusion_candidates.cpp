// Fusion candidate extraction; see fusion_candidates.h. Follows TraceLens's
// orchestrator_prepare.py (standalone extraction) and classify_kernels.py.
#include "categories/fusion_candidates.h"

#include <re2/re2.h>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "categories/kernel_details_text.h"
#include "pycompat/text.h"
#include "report/perf_tables.h"
#include "tree/call_tree.h"

namespace jarvis::analysis {

namespace {

struct KernelTypeRule {
  const char* pattern;  // case-insensitive ECMAScript regex
  const char* type;
  int priority;
};

// classify_kernels.py KERNEL_TYPE_RULES, in table order (ties on priority go
// to the earlier rule, as Python's stable sort does).
constexpr KernelTypeRule kKernelTypeRules[] = {
    {R"(Rmsnorm|rmsnorm2d)", "RMSNorm", 20},
    {R"(layer_norm|layernorm)", "LayerNorm", 20},
    {R"(l2norm_fwd|l2norm_kernel)", "L2Norm", 20},
    {R"(rsqrt.*mean.*pow|mean.*mul.*pow.*rsqrt)", "RMSNorm (fused triton)", 20},
    {R"(_to_copy_add.*mean.*rsqrt)", "RMSNorm (fused triton)", 20},
    {R"(fused__to_copy_abs.*mean.*pow.*rsqrt)", "RMSNorm (fused triton)", 18},
    {R"(fused__to_copy_add.*mean.*pow.*rsqrt)", "RMSNorm (fused triton)", 18},
    {R"(fused_add_copy__mean.*pow)", "RMSNorm (fused triton residual)", 18},
    {R"(fused__to_copy_add_copy__mean.*pow)", "RMSNorm (fused triton residual)", 18},
    {R"(fused__to_copy_add_mean_moe_forward_shared.*pow.*rsqrt)", "RMSNorm (shared expert + norm)",
     20},
    {R"(fused__to_copy_add_mean.*mul.*pow.*rsqrt)", "RMSNorm (fused triton)", 18},
    {R"(attention_[23]d|unified_attention)", "Attention (AMD unified)", 20},
    {R"(fmha[Ss]m\d+|fmhaSm100f)", "Attention (NVIDIA fmha)", 20},
    {R"(paged_attention|PagedAttention)", "Attention (paged)", 20},
    {R"(flash_attn|flash_fwd)", "Attention (flash)", 20},
    {R"(reduce_segments)", "Attention Reduce", 20},
    {R"(reshape_and_cache_flash|reshape_and_cache)", "KV Cache Store", 20},
    {R"(chunk_gated_delta_rule_fwd)", "Linear Attention (chunk delta)", 20},
    {R"(chunk_fwd_kernel_o)", "Linear Attention (chunk fwd)", 20},
    {R"(chunk_scaled_dot_kkt)", "Linear Attention (chunk kkt)", 20},
    {R"(chunk_local_cumsum)", "Linear Attention (chunk cumsum)", 20},
    {R"(fused_recurrent_gated_delta_rule)", "Linear Attention (recurrent delta)", 20},
    {R"(recompute_w_u_fwd)", "Linear Attention (recompute wu)", 20},
    {R"(merge_\d+x\d+_to_\d+x\d+_inverse)", "Linear Attention (merge inverse)", 20},
    {R"(_causal_conv1d_fwd|_causal_conv1d_update)", "Causal Conv1D", 20},
    {R"(fused_gdn_gating)", "GDN Gating", 20},
    {R"(swiglu|swiGlu)", "MoE GateUp+SwiGLU GEMM", 25},
    {R"(fmoe.*g1u1.*silu|fmoe.*silu)", "MoE GEMM+SiLU (aiter)", 25},
    {R"(kernel_moe_gemm|MoeGemmBlockScale)", "MoE GEMM (CK)", 22},
    {R"(finalize.*scatter|_finalize_matmul|finalizeKernel)", "MoE Finalize", 20},
    {R"(topk_forward)", "MoE TopK", 20},
    {R"(topkGatingSoftmax)", "MoE TopK Gating", 20},
    {R"(bitmatrix|_sum_bitmatrix)", "MoE BitMatrix", 20},
    {R"(combined_routing_memset)", "MoE Routing Memset", 20},
    {R"(combined_routing_compute)", "MoE Routing Compute", 20},
    {R"(routingIndicesCluster|routingRenormalize)", "MoE Routing (fused)", 20},
    {R"(MoeSorting)", "MoE Sorting", 20},
    {R"(constant_pad.*moe|moe_forward)", "MoE Pad", 20},
    {R"(quantize_with_block_size)", "MoE Quantize", 20},
    {R"(per_token_group_quant|dynamic_per_group_scaled_quant)", "Quantize (per-group)", 18},
    {R"(act_and_mul_kernel.*silu_kernel)", "Activation (SiLU+Mul)", 20},
    {R"(silu_and_mul|silu_mul|SiluAndMul)", "Activation (SiLU+Mul)", 18},
    {R"(activationDeepSeekKernel)", "Activation (DeepSeek fused)", 18},
    {R"(fused_mul_sigmoid)", "Activation (SiLU)", 18},
    {R"(\bsilu\b|swish)", "Activation (SiLU)", 15},
    {R"(\bgelu\b)", "Activation (GELU)", 15},
    {R"(memcpy)", "MemCpy", 30},
    {R"(swiglu|swiGlu)", "MoE GEMM", 25},
    {R"(fmoe.*g1u1.*silu|fmoe.*silu)", "MoE GEMM", 25},
    {R"(kernel_moe_gemm|MoeGemmBlockScale)", "MoE GEMM", 22},
    {R"(finalize.*scatter|_finalize_matmul|finalizeKernel)", "MoE Finalize", 20},
    {R"(topk_forward)", "MoE Routing", 20},
    {R"(topkGatingSoftmax)", "MoE Routing", 20},
    {R"(bitmatrix|_sum_bitmatrix)", "MoE Routing", 20},
    {R"(combined_routing_memset)", "MoE Routing", 20},
    {R"(combined_routing_compute)", "MoE Routing", 20},
    {R"(routingIndicesCluster|routingRenormalize)", "MoE Routing", 20},
    {R"(MoeSorting)", "MoE Routing", 20},
    {R"(constant_pad.*moe|moe_forward)", "MoE Routing", 20},
    {R"(quantize_with_block_size)", "MoE Quantize", 20},
    {R"(Rmsnorm|rmsnorm2d)", "Normalization", 20},
    {R"(layer_norm|layernorm)", "Normalization", 20},
    {R"(l2norm_fwd|l2norm_kernel)", "Normalization", 20},
    {R"(rsqrt.*mean.*pow|mean.*mul.*pow.*rsqrt)", "Normalization", 20},
    {R"(_to_copy_add.*mean.*rsqrt)", "Normalization", 20},
    {R"(fused__to_copy_abs.*mean.*pow.*rsqrt)", "Normalization", 18},
    {R"(fused__to_copy_add.*mean.*pow.*rsqrt)", "Normalization", 18},
    {R"(fused_add_copy__mean.*pow)", "Normalization", 18},
    {R"(fused__to_copy_add_copy__mean.*pow)", "Normalization", 18},
    {R"(fused__to_copy_add_mean_moe_forward_shared.*pow.*rsqrt)", "Normalization", 20},
    {R"(fused__to_copy_add_mean.*mul.*pow.*rsqrt)", "Normalization", 18},
    {R"(attention_[23]d|unified_attention)", "Attention", 20},
    {R"(fmha[Ss]m\d+|fmhaSm100f)", "Attention", 20},
    {R"(paged_attention|PagedAttention)", "Attention", 20},
    {R"(flash_attn|flash_fwd)", "Attention", 20},
    {R"(reduce_segments)", "Attention", 20},
    {R"(reshape_and_cache_flash|reshape_and_cache)", "KV Cache Store", 20},
    {R"(chunk_gated_delta_rule_fwd)", "Linear Attention", 20},
    {R"(chunk_fwd_kernel_o)", "Linear Attention", 20},
    {R"(chunk_scaled_dot_kkt)", "Linear Attention", 20},
    {R"(chunk_local_cumsum)", "Linear Attention", 20},
    {R"(fused_recurrent_gated_delta_rule)", "Linear Attention", 20},
    {R"(recompute_w_u_fwd)", "Linear Attention", 20},
    {R"(merge_\d+x\d+_to_\d+x\d+_inverse)", "Linear Attention", 20},
    {R"(_causal_conv1d_fwd|_causal_conv1d_update)", "Linear Attention", 20},
    {R"(fused_gdn_gating)", "GDN Gating", 20},
    {R"(rotary|rope)", "Rotary Embedding", 18},
    {R"(activationDeepSeekKernel)", "Activation (DeepSeek fused)", 18},
    {R"(act_and_mul_kernel.*silu_kernel)", "Elementwise", 20},
    {R"(embedding)", "Elementwise", 20},
    {R"(gather_kernel|vectorized_gather)", "Elementwise", 20},
    {R"(per_token_group_quant|dynamic_per_group_scaled_quant)", "Quantization", 18},
    {R"(silu_and_mul|silu_mul|SiluAndMul)", "Elementwise", 18},
    {R"(fused_mul_sigmoid)", "Elementwise", 18},
    {R"(\bsilu\b|swish)", "Elementwise", 15},
    {R"(\bgelu\b)", "Elementwise", 15},
    {R"(splitKreduce|splitkreduce)", "GEMM", 15},
    {R"(top_k|top_p|sampling|topk_topp)", "Elementwise", 15},
    {R"(CUDAFunctorOnSelf_add<int>)", "Elementwise", 15},
    {R"(__amd_rocclr_copyBuffer)", "Elementwise", 12},
    {R"(memcpy32_post)", "Elementwise", 12},
    {R"(copy_page_indices)", "Elementwise", 12},
    {R"(vectorized_elementwise_kernel.*FillFunctor)", "Elementwise", 10},
    {R"(direct_copy_kernel|_to_copy\b)", "Elementwise", 10},
    {R"(CatArrayBatchedCopy)", "Elementwise", 10},
    {R"(elementwise.*add|FunctorOnSelf_add)", "Elementwise", 8},
    {R"(elementwise.*mul)", "Elementwise", 8},
    {R"(elementwise)", "Elementwise", 5},
    {R"(_matmul_ogs.*mxfp4)", "GEMM", 12},
    {R"(_gemm_a16_w16)", "GEMM", 12},
    {R"(nvjet_tst)", "GEMM", 12},
    {R"(wvSplitK)", "GEMM", 12},
    {R"(Cijk_)", "GEMM", 12},
    {R"(kernel_gemm_xdl_cshuffle)", "GEMM", 12},
    {R"(_gemm_a\d+w\d+)", "GEMM", 10},
    {R"(bmm_MxE4m3.*MxE2m1)", "GEMM", 10},
    {R"(bmm_Bfloat16.*MxE2m1)", "GEMM", 10},
    {R"(cublasLt|cublas)", "GEMM", 10},
    {R"(rocm_aiter_gemm_a8w8)", "GEMM", 10},
    {R"(triton_poi_fused.*clamp.*div.*rocm_aiter_gemm)", "GEMM", 8},
    {R"(triton_per_fused.*abs.*clamp.*div.*max.*rocm_aiter_gemm)", "GEMM", 8},
    {R"(gemm|matmul|bmm)", "GEMM", 5},
    {R"(quant)", "Quantization", 4},
    {R"(triton_poi_fused)", "Elementwise", 3},
    {R"(triton_red_fused)", "Elementwise", 3},
    {R"(triton_per_fused)", "Elementwise", 3},
    {R"(\bnorm\b)", "Normalization", 1},
    {R"(rocprim|hipcub)", "Elementwise", 1},
    {R"(cub::DeviceScan|DeviceRadixSort|DeviceReduce)", "Elementwise", 1},
};

constexpr int kMinConfidence = 5;

constexpr const char* kExcludedKernels[] = {"nccl", "rccl", "memcpy", "memset"};
constexpr const char* kAlreadyFused[] = {"attn_fwd",          "attn_bwd",        "fmha",
                                         "unified_attention", "paged_attention", "flash_attn",
                                         "flash_fwd",         "silu_and_mul"};
constexpr const char* kNormKernels[] = {"batchnorm", "layernorm", "groupnorm", "instancenorm",
                                        "rmsnorm"};

// RE2: linear time in the kernel name, whatever its length (std::regex's
// backtracking overflowed the stack on a 100k-character name).
const std::vector<std::unique_ptr<RE2>>& compiled_rules() {
  static const std::vector<std::unique_ptr<RE2>> rules = [] {
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    std::vector<std::unique_ptr<RE2>> v;
    for (const auto& r : kKernelTypeRules) v.push_back(std::make_unique<RE2>(r.pattern, options));
    return v;
  }();
  return rules;
}

bool contains_any(const std::string& lowered, const auto& markers) {
  for (const char* m : markers)
    if (lowered.find(m) != std::string::npos) return true;
  return false;
}

bool is_fusion_eligible(const std::string& name) {
  std::string l = pycompat::ascii_lower(name);
  return !contains_any(l, kExcludedKernels) && !contains_any(l, kAlreadyFused);
}

// "nn.Module: Foo_3" -> "Foo" (TraceLens _strip_module_index).
std::string strip_module_index(const std::string& name) {
  std::string base = name.starts_with("nn.Module: ") ? name.substr(11) : name;
  size_t digits = base.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(base[digits - 1]))) --digits;
  if (digits < base.size() && digits > 0 && base[digits - 1] == '_') base.resize(digits - 1);
  return base;
}

// The nearest kMaxParentChain ancestors: a crafted trace nests thousands of
// frames, and a full chain per candidate made the pass quadratic (8,000
// frames took 21 s and 2 GB). Real stacks, Python frames included, are
// shallower than this.
constexpr size_t kMaxParentChain = 64;

ojson parent_chain_names(const Trace& trace, const CallTree& tree, Uid uid) {
  ojson chain = ojson::array();
  size_t walked = 0;
  for (Uid a = tree.parent(uid); a != kNoUid && walked < kMaxParentChain;
       a = tree.parent(a), ++walked) {
    std::string name(trace.name(a));
    if (name.empty()) continue;
    if (name.starts_with("nn.Module: "))
      name = name.substr(11);
    else if (auto slash = name.rfind('/'); slash != std::string::npos)
      name = name.substr(slash + 1);
    chain.push_back(name);
  }
  return chain;
}

ojson input_dims_json(const Trace& trace, Uid uid) {
  const PyValue* dims = trace.arg(uid, "Input Dims");
  return dims ? dims->to_ojson() : ojson();
}

std::string kernel_name_of(const ojson& k) {
  return k.contains("name") ? k["name"].get<std::string>() : k.value("kernel_name", "");
}

// ----------------------------------------------------------- module pass

std::vector<ojson> module_candidates(const Trace& trace, const CallTree& tree) {
  std::vector<ojson> entries;
  std::unordered_map<std::string, size_t> by_base;
  for (Uid uid = 0; uid < trace.events.size(); ++uid) {
    const Event& ev = trace.events[uid];
    if (ev.is_gpu() || ev.cat == Cat::CudaRuntime || ev.cat == Cat::CudaDriver) continue;
    auto gpu = tree.gpu_events(uid);
    if (gpu.size() < 2) continue;
    std::string name(trace.name(uid));
    std::string base = strip_module_index(name);
    if (base.empty()) continue;
    if (auto it = by_base.find(base); it != by_base.end()) {
      ojson& e = entries[it->second];
      e["instance_count"] = e["instance_count"].get<int64_t>() + 1;
      double t = e["total_kernel_time_us"].get<double>();
      for (Uid g : gpu)
        if (trace.events[g].cat == Cat::Kernel) t += trace.events[g].dur();
      e["total_kernel_time_us"] = t;
      continue;
    }
    ojson kernels = ojson::array();
    for (Uid g : gpu) {
      if (trace.events[g].cat != Cat::Kernel) continue;
      std::string kname(trace.name(g));
      kernels.push_back({{"name", kname},
                         {"type", classify_kernel_type(kname)},
                         {"dur_us", trace.events[g].dur()},
                         {"eligible", is_fusion_eligible(kname)},
                         {"gpu_op_uid", g}});
    }
    if (kernels.size() < 2) continue;
    ojson signature = ojson::array();
    ojson summary = ojson::object();
    bool fused = false;
    int64_t eligible = 0;
    double total = 0;
    for (const auto& k : kernels) {
      std::string type = k["type"];
      signature.push_back(type);
      summary[type] = summary.value(type, 0) + 1;
      fused =
          fused || contains_any(pycompat::ascii_lower(k["name"].get<std::string>()), kAlreadyFused);
      eligible += k["eligible"].get<bool>() ? 1 : 0;
      total += k["dur_us"].get<double>();
    }
    ojson e;
    e["module_name"] = name;
    e["base_name"] = base;
    e["parent_chain"] = parent_chain_names(trace, tree, uid);
    e["instance_count"] = 1;
    e["kernel_count"] = kernels.size();
    e["eligible_kernel_count"] = eligible;
    e["kernels"] = kernels;
    e["kernel_type_signature"] = signature;
    e["kernel_type_summary"] = summary;
    e["has_fused_kernel"] = fused;
    e["total_kernel_time_us"] = total;
    e["input_dims"] = input_dims_json(trace, uid);
    by_base[base] = entries.size();
    entries.push_back(std::move(e));
  }
  return entries;
}

// ---------------------------------------------------------- sibling pass

std::vector<ojson> sibling_candidates(const Trace& trace, const CallTree& tree) {
  auto rows = report::unified_perf_rows(trace, tree, nullptr, true);
  std::vector<Uid> parent_order;
  std::map<Uid, ojson> groups;
  for (const auto& row : rows) {
    if (row.uid >= trace.events.size()) continue;  // synthetic rows have no parent
    auto gpu = tree.gpu_events(row.uid);
    if (gpu.size() != 1) continue;
    Uid parent = tree.parent(row.uid);
    if (parent == kNoUid) continue;
    Uid g = gpu[0];
    if (trace.events[g].cat != Cat::Kernel) continue;
    std::string kname(trace.name(g));
    auto [it, inserted] = groups.try_emplace(parent, ojson::array());
    if (inserted) parent_order.push_back(parent);
    it->second.push_back({{"op", std::string(trace.name(row.uid))},
                          {"kernel_type", classify_kernel_type(kname)},
                          {"kernel_name", kname},
                          {"dur_us", trace.events[g].dur()},
                          {"gpu_op_uid", g}});
  }
  std::vector<ojson> out;
  std::unordered_map<std::string, size_t> by_base;
  for (Uid parent : parent_order) {
    const ojson& children = groups[parent];
    if (children.size() < 2) continue;
    double t = 0;
    for (const auto& c : children) t += c["dur_us"].get<double>();
    std::string pname(trace.name(parent));
    std::string base = strip_module_index(pname);
    if (auto it = by_base.find(base); it != by_base.end()) {
      ojson& e = out[it->second];
      e["instance_count"] = e["instance_count"].get<int64_t>() + 1;
      e["total_kernel_time_us"] = e["total_kernel_time_us"].get<double>() + t;
      continue;
    }
    ojson signature = ojson::array();
    for (const auto& c : children) signature.push_back(c["kernel_type"]);
    ojson e;
    e["module_name"] = pname;
    e["base_name"] = base;
    e["parent_chain"] = ojson::array();
    e["instance_count"] = 1;
    e["kernel_count"] = children.size();
    e["eligible_kernel_count"] = children.size();
    e["kernels"] = children;
    e["kernel_type_signature"] = signature;
    e["kernel_type_summary"] = ojson::object();
    e["has_fused_kernel"] = false;
    e["total_kernel_time_us"] = t;
    e["source"] = "sibling_sequence";
    e["input_dims"] = input_dims_json(trace, parent);
    by_base[base] = out.size();
    out.push_back(std::move(e));
  }
  return out;
}

// ---------------------------------------------------------------- filter

bool is_gemm_type(const ojson& k) {
  std::string t = k.value("type", "");
  std::string up = t;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up == "GEMM" || up == "GEMM (GENERIC)" ||
         pycompat::ascii_lower(k.value("name", "")).find("conv") != std::string::npos;
}

// GEMM plus only normalization / add / cast kernels: BN folding, not fusion.
bool is_gemm_norm_only(const ojson& entry) {
  const ojson& kernels = entry["kernels"];
  bool has_gemm = false;
  std::vector<const ojson*> others;
  for (const auto& k : kernels) {
    if (is_gemm_type(k))
      has_gemm = true;
    else
      others.push_back(&k);
  }
  if (!has_gemm || others.empty()) return false;
  for (const ojson* k : others) {
    std::string type = k->value("type", "");
    if (!contains_any(pycompat::ascii_lower(k->value("name", "")), kNormKernels) &&
        type != "Elementwise Add" && type != "Copy/Cast")
      return false;
  }
  return true;
}

// -------------------------------------------------------- post-processing

struct PerfEntry {
  std::string op_category;
  std::optional<double> data_in_mb, data_out_mb;
};
// kernel name -> (first-input-shape key -> entry), both in first-seen order.
using ShapeMap = std::vector<std::pair<std::string, PerfEntry>>;
using PerfLookup = std::vector<std::pair<std::string, ShapeMap>>;

// Hashable key of parse_first_shape(dims): the first element of a parsed
// sequence when it is itself a sequence, else "None".
std::string first_shape_key_of(const std::optional<PyValue>& parsed) {
  if (!parsed || !parsed->is_seq() || parsed->list.empty() || !parsed->list[0].is_seq())
    return "None";
  return parsed->list[0].to_ojson().dump();
}

std::pair<std::optional<double>, std::optional<double>> split_data_moved(
    const std::string& category, const std::string& params_text, std::optional<double> moved) {
  using Pair = std::pair<std::optional<double>, std::optional<double>>;
  Pair half = moved && *moved != 0 ? Pair{*moved / 2, *moved / 2} : Pair{};
  std::optional<PyValue> params;
  if (!params_text.empty()) {
    params = try_parse_py_literal(params_text);
    if (!params) return half;
  }
  if (!moved) return half;
  auto get = [&](const char* key) -> const PyValue* { return params ? params->get(key) : nullptr; };
  if (category == "GEMM") {
    const PyValue *m = get("M"), *n = get("N"), *k = get("K");
    if (m && n && k && m->truthy() && n->truthy() && k->truthy()) {
      double M = m->as_double(), N = n->as_double(), K = k->as_double();
      double total = M * K + K * N + M * N;
      return {*moved * (M * K + K * N) / total, *moved * M * N / total};
    }
  } else if (category == "reduce") {
    return {*moved, 0.0};
  } else if (category == "elementwise" && get("shape_in1")) {
    return {*moved * 2 / 3, *moved / 3};
  }
  return half;
}

PerfLookup build_perf_lookup(const Table& t) {
  PerfLookup lookup;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const Cell* kd = cell_at(t, r, "kernel_details_summary");
    if (!kd || is_na(*kd)) continue;
    std::string category = cell_text(cell_at(t, r, "op category"));
    const Cell* dm = cell_at(t, r, "Data Moved (MB)");
    std::optional<double> moved;
    if (dm && !is_na(*dm)) moved = cell_number(dm);
    const Cell* pp = cell_at(t, r, "perf_params");
    std::string params = pp && !is_na(*pp) ? cell_text(pp) : "";
    auto [din, dout] = split_data_moved(category, params, moved);
    const Cell* dims = cell_at(t, r, "Input Dims");
    std::string shape =
        dims && !is_na(*dims) ? first_shape_key_of(try_parse_py_literal(cell_text(dims))) : "None";
    std::string text = cell_text(kd);
    for (const std::string& kn : kernel_detail_names(text)) {
      auto it = std::find_if(lookup.begin(), lookup.end(), [&](auto& p) { return p.first == kn; });
      if (it == lookup.end()) {
        lookup.emplace_back(kn, ShapeMap{});
        it = std::prev(lookup.end());
      }
      auto& shapes = it->second;
      if (std::none_of(shapes.begin(), shapes.end(), [&](auto& s) { return s.first == shape; }))
        shapes.emplace_back(shape, PerfEntry{category, din, dout});
    }
  }
  return lookup;
}

// Exact kernel name, else the first name one is a prefix of (CSV names can be
// truncated).
const ShapeMap* prefix_lookup(const PerfLookup& lookup, const std::string& kname) {
  for (const auto& [n, shapes] : lookup)
    if (n == kname) return &shapes;
  for (const auto& [n, shapes] : lookup)
    if (kname.starts_with(n) || n.starts_with(kname)) return &shapes;
  return nullptr;
}

// A softmax between two GEMM-category kernels: the QK^T ... PV slice.
std::optional<ojson> attention_core(const ojson& kernels, const PerfLookup& lookup) {
  auto is_gemm = [&](const ojson& k) {
    const ShapeMap* shapes = prefix_lookup(lookup, kernel_name_of(k));
    if (!shapes) return false;
    return std::any_of(shapes->begin(), shapes->end(),
                       [](auto& s) { return s.second.op_category == "GEMM"; });
  };
  int n = static_cast<int>(kernels.size());
  for (int i = 0; i < n; ++i) {
    if (pycompat::ascii_lower(kernel_name_of(kernels[i])).find("softmax") == std::string::npos)
      continue;
    int qk = -1, pv = -1;
    for (int j = i - 1; j >= 0 && qk < 0; --j)
      if (is_gemm(kernels[j])) qk = j;
    for (int j = i + 1; j < n && pv < 0; ++j)
      if (is_gemm(kernels[j])) pv = j;
    if (qk >= 0 && pv >= 0) {
      ojson core = ojson::array();
      for (int j = qk; j <= pv; ++j) core.push_back(kernels[j]);
      return core;
    }
  }
  return std::nullopt;
}

void narrow_attention(ojson& c, const PerfLookup& lookup) {
  auto core = attention_core(c["kernels"], lookup);
  if (!core) return;
  ojson signature = ojson::array();
  double t = 0;
  for (const auto& k : *core) {
    signature.push_back(k.contains("type") ? k["type"] : ojson(k.value("kernel_type", "Unknown")));
    t += k.value("dur_us", 0.0);
  }
  c["kernel_count"] = core->size();
  c["eligible_kernel_count"] = core->size();
  c["kernels"] = *core;
  c["kernel_type_signature"] = signature;
  c["total_kernel_time_us"] = t * c.value("instance_count", 1);
}

// Keeps one candidate per ordered kernel-name tuple: the nn.Module one, then
// the one with the longer parent chain (first seen wins ties, keeps its slot).
// Hashed by the tuple so many candidates stay linear.
std::vector<ojson> dedup_by_kernel_names(std::vector<ojson> candidates) {
  std::vector<std::pair<std::vector<std::string>, ojson>> seen;
  std::unordered_map<std::string, size_t> slot_of;  // tuple joined with '\0' -> seen index
  auto score = [](const ojson& c) {
    return std::pair{c.value("module_name", "").starts_with("nn.Module:"),
                     c.contains("parent_chain") ? c["parent_chain"].size() : size_t{0}};
  };
  for (auto& c : candidates) {
    if (c["kernels"].empty()) continue;
    std::vector<std::string> key;
    std::string joined;
    for (const auto& k : c["kernels"]) {
      key.push_back(kernel_name_of(k));
      joined.append(key.back()).push_back('\0');
    }
    auto [it, inserted] = slot_of.try_emplace(joined, seen.size());
    if (inserted)
      seen.emplace_back(std::move(key), std::move(c));
    else if (score(c) > score(seen[it->second].second))
      seen[it->second].second = std::move(c);
  }
  std::vector<ojson> out;
  for (auto& s : seen) out.push_back(std::move(s.second));
  return out;
}

void add_data_movement(ojson& c, const PerfLookup& lookup) {
  std::string shape = "None";
  const ojson& dims = c["input_dims"];
  bool truthy_dims = !dims.is_null() && !(dims.is_array() && dims.empty()) &&
                     !(dims.is_string() && dims.get<std::string>().empty());
  if (truthy_dims && dims.is_array()) {
    // str(list) then literal_eval: the first element when it is a list.
    if (!dims.empty() && dims[0].is_array()) shape = dims[0].dump();
  }
  for (auto& k : c["kernels"]) {
    if (k.contains("data_in_mb") && !k["data_in_mb"].is_null()) continue;
    const ShapeMap* shapes = prefix_lookup(lookup, kernel_name_of(k));
    if (!shapes || shapes->empty()) continue;
    const PerfEntry* entry = &shapes->front().second;
    for (const auto& [key, e] : *shapes)
      if (key == shape) {
        entry = &e;
        break;
      }
    if (!entry->data_in_mb) continue;
    k["data_in_mb"] = *entry->data_in_mb;
    k["data_out_mb"] = entry->data_out_mb ? ojson(*entry->data_out_mb) : ojson();
  }
}

}  // namespace

std::string classify_kernel_type(std::string_view kernel_name) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  std::string name(kernel_name);
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(name); it != cache.end()) return it->second;
  }
  const auto& rules = compiled_rules();
  int best = -1;
  std::string type = "Unknown";
  for (size_t i = 0; i < rules.size(); ++i) {
    if (kKernelTypeRules[i].priority <= best) continue;
    if (RE2::PartialMatch(name, *rules[i])) {
      best = kKernelTypeRules[i].priority;
      type = kKernelTypeRules[i].type;
    }
  }
  if (best < kMinConfidence) type = "Unknown";
  std::lock_guard lock(mu);
  cache.emplace(name, type);
  return type;
}

ojson fusion_candidates(const Trace& trace, const Table* unified_perf_summary) {
  return fusion_candidates(trace, CallTree(trace, TreeOptions{.include_python_frames = true}),
                           unified_perf_summary);
}

ojson fusion_candidates(const Trace& trace, const CallTree& tree,
                        const Table* unified_perf_summary) {
  std::vector<ojson> candidates;
  for (auto& m : module_candidates(trace, tree)) {
    if (m["has_fused_kernel"].get<bool>() || m["eligible_kernel_count"].get<int64_t>() < 2)
      continue;
    if (is_gemm_norm_only(m)) continue;
    candidates.push_back(std::move(m));
  }
  for (auto& s : sibling_candidates(trace, tree)) candidates.push_back(std::move(s));

  if (unified_perf_summary) {
    PerfLookup lookup = build_perf_lookup(*unified_perf_summary);
    for (auto& c : candidates) narrow_attention(c, lookup);
    candidates = dedup_by_kernel_names(std::move(candidates));
    for (auto& c : candidates) add_data_movement(c, lookup);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const ojson& a, const ojson& b) {
    return a.value("total_kernel_time_us", 0.0) > b.value("total_kernel_time_us", 0.0);
  });
  ojson out = ojson::array();
  for (auto& c : candidates) out.push_back(std::move(c));
  return out;
}

}  // namespace jarvis::analysis
