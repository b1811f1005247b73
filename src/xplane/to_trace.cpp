// The bridge from an XSpace to the event model (rules in space.h).
#include <cctype>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trace/expansion_budget.h"
#include "xplane/space.h"

namespace jarvis::xplane {

namespace {

constexpr std::string_view kSourceKey = "xplane";
constexpr int64_t kHostPidBase = 1000;  // above TraceLens's GPU-stream pid bound (100)

// Picoseconds to nanoseconds, half away from zero (offsets are >= 0 in practice).
// Written on the quotient and remainder so that no value overflows.
int64_t ps_to_ns(int64_t ps) {
  const int64_t q = ps / 1000, r = ps % 1000;
  return q + (r >= 500 ? 1 : 0) - (r <= -500 ? 1 : 0);
}

// A line's start plus an event's offset and its end: a damaged or hostile file
// can put them past 2^63 ns, which no later sum may meet.
int64_t event_start_ns(int64_t line_ns, int64_t offset_ps, int64_t dur_ns) {
  int64_t start = 0, end = 0;
  if (__builtin_add_overflow(line_ns, ps_to_ns(offset_ps), &start) ||
      __builtin_add_overflow(start, dur_ns, &end))
    throw TraceError(
        fmt::format("an XPlane event's time is out of range (line timestamp {} ns + offset {} ps + "
                    "duration {} ns passes 2^63 ns); the file is damaged",
                    line_ns, offset_ps, dur_ns));
  return start;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

const Stat* find_stat(const std::vector<Stat>& stats, std::string_view name) {
  for (const Stat& s : stats)
    if (s.name == name) return &s;
  return nullptr;
}

// Stats kept as args (TraceLens reads hlo_op / hlo_module from the kernel args).
bool kept_stat(std::string_view name) {
  for (std::string_view k :
       {"hlo_op", "hlo_module", "tf_op", "name", "kernel_details", "memcpy_details",
        "Memset_details", "program_id", "correlation_id", "device_id"})
    if (name == k) return true;
  return false;
}

PyValue value_of(const Stat& s) {
  switch (s.kind) {
    case Stat::Kind::Double:
      return PyValue::real(s.real);
    case Stat::Kind::Uint:
      return PyValue::integer(static_cast<int64_t>(s.uint));
    case Stat::Kind::Int:
      return PyValue::integer(s.integer);
    case Stat::Kind::Text:
      return PyValue::string(s.text);
    case Stat::Kind::Bytes:
      return PyValue::string(fmt::format("<{} bytes>", s.bytes_len));
    case Stat::Kind::None:
      break;
  }
  return PyValue::none();
}

// XLA's window_util::ToString, the parts that are set: "size=1x2x2
// stride=1x2x2 pad=0_1x0_1x0_1 lhs_dilate=... rhs_dilate=...".
std::string window_text(const std::vector<HloWindowDimension>& window) {
  auto join = [&](auto field, bool (*present)(const HloWindowDimension&)) {
    bool any = false;
    std::string out;
    for (size_t k = 0; k < window.size(); ++k) {
      any = any || present(window[k]);
      if (k) out += "x";
      out += field(window[k]);
    }
    return any ? out : std::string();
  };
  std::vector<std::string> parts;
  auto add = [&](std::string_view name, std::string value) {
    if (!value.empty()) parts.push_back(fmt::format("{}={}", name, value));
  };
  add("size", join([](const HloWindowDimension& w) { return std::to_string(w.size); },
                   [](const HloWindowDimension&) { return true; }));
  add("stride", join([](const HloWindowDimension& w) { return std::to_string(w.stride); },
                     [](const HloWindowDimension& w) { return w.stride != 1; }));
  add("pad",
      join(
          [](const HloWindowDimension& w) {
            return fmt::format("{}_{}", w.padding_low, w.padding_high);
          },
          [](const HloWindowDimension& w) { return w.padding_low != 0 || w.padding_high != 0; }));
  add("lhs_dilate",
      join([](const HloWindowDimension& w) { return std::to_string(w.base_dilation); },
           [](const HloWindowDimension& w) { return w.base_dilation > 1; }));
  add("rhs_dilate",
      join([](const HloWindowDimension& w) { return std::to_string(w.window_dilation); },
           [](const HloWindowDimension& w) { return w.window_dilation > 1; }));
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out += ' ';
    out += parts[k];
  }
  return out;
}

// "{{0,1},{2,3}}", as HLO text prints replica_groups.
std::string groups_text(const std::vector<std::vector<int64_t>>& groups) {
  std::string out = "{";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += g ? ",{" : "{";
    for (size_t k = 0; k < groups[g].size(); ++k) {
      if (k) out += ',';
      out += std::to_string(groups[g][k]);
    }
    out += "}";
  }
  return out + "}";
}

// What a GPU kernel's HLO instruction adds to its args (hlo.h): opcode,
// result and operand shapes as HLO text prints them, the custom-call target
// and backend config, dimension numbers, window, replica groups, and the op
// metadata (JAX op path, source line).
using ExtraArgs = std::vector<std::pair<std::string_view, PyValue>>;

// The heap a value holds (its text, its items), for the ExpansionBudget.
uint64_t heap_bytes(const PyValue& v) {
  uint64_t bytes = ExpansionBudget::string_bytes(v.s.size()) + v.list.size() * sizeof(PyValue);
  for (const PyValue& item : v.list) bytes += heap_bytes(item);
  return bytes;
}

uint64_t heap_bytes(const Stat& s) {
  return s.kind == Stat::Kind::Text ? ExpansionBudget::string_bytes(s.text.size()) : 0;
}

// PyTorch's dtype name of an XLA element type, as record_param_comms
// writes it (report/coll_analysis.h dtype_bytes reads it); "" for a type
// PyTorch has no name for here.
std::string_view torch_dtype(int64_t element_type) {
  switch (element_type) {
    case 1:
      return "Bool";
    case 2:
      return "Char";
    case 3:
      return "Short";
    case 4:
      return "Int";
    case 5:
      return "Long";
    case 6:
      return "Byte";
    case 10:
      return "Half";
    case 11:
      return "Float";
    case 12:
      return "Double";
    case 16:
      return "BFloat16";
    case 19:
      return "Float8_e5m2";
    case 20:
      return "Float8_e4m3fn";
    case 24:
      return "Float8_e5m2fnuz";
    case 25:
      return "Float8_e4m3fnuz";
    default:
      return {};
  }
}

// An XLA collective's kernel gets the args PyTorch puts on a collective
// kernel (Collective name, dtype, In / Out msg nelems, Group size; the
// replica groups as HLO prints them, "{}" for all, as its Process Group
// Name), so the collective analyses
// (report/coll_analysis.h, src/collectives) read it as they read Kineto's.
void collective_args(const HloCollective& c, ExtraArgs& out) {
  out.emplace_back("Collective name", PyValue::string(c.collective));
  if (std::string_view dtype = torch_dtype(c.element_type); !dtype.empty())
    out.emplace_back("dtype", PyValue::string(std::string(dtype)));
  out.emplace_back("In msg nelems", PyValue::integer(c.in_nelems));
  if (c.out_nelems >= 0) out.emplace_back("Out msg nelems", PyValue::integer(c.out_nelems));
  if (c.group_size > 0) out.emplace_back("Group size", PyValue::integer(c.group_size));
  out.emplace_back("Process Group Name", PyValue::string(groups_text(c.replica_groups)));
}

// The operand shapes are rendered per operand: an instruction may list one
// large operand a million times, so each is charged to `budget` as it is made.
ExtraArgs hlo_args(const HloModule& module, const HloInstruction& inst, ExpansionBudget& budget) {
  ExtraArgs out;
  out.emplace_back("hlo_opcode", PyValue::string(inst.opcode));
  out.emplace_back("hlo_shape", PyValue::string(inst.shape.text()));
  std::vector<PyValue> operands, names;
  for (const HloInstruction* op : module.operands(inst)) {
    std::string shape = op ? op->shape.text() : std::string("?");
    budget.charge(2 * sizeof(PyValue) + ExpansionBudget::string_bytes(shape.size()) +
                      ExpansionBudget::string_bytes(op ? op->name.size() : 1),
                  "the HLO operand shapes of a kernel");
    operands.push_back(PyValue::string(std::move(shape)));
    names.push_back(PyValue::string(op ? op->name : std::string("?")));
  }
  out.emplace_back("hlo_operands", PyValue::make_list(std::move(operands)));
  out.emplace_back("hlo_operand_names", PyValue::make_list(std::move(names)));
  if (module.is_root(inst)) out.emplace_back("hlo_root", PyValue::boolean(true));
  if (!inst.custom_call_target.empty())
    out.emplace_back("custom_call_target", PyValue::string(inst.custom_call_target));
  if (!inst.backend_config.empty())
    out.emplace_back("backend_config", PyValue::string(inst.backend_config));
  if (inst.conv_dims)
    out.emplace_back("conv_dim_labels", PyValue::string(inst.conv_dims->labels()));
  if (!inst.window.empty()) out.emplace_back("window", PyValue::string(window_text(inst.window)));
  if (inst.feature_group_count > 1)
    out.emplace_back("feature_group_count", PyValue::integer(inst.feature_group_count));
  if (inst.dot_dims) out.emplace_back("dot_dims", PyValue::string(inst.dot_dims->text()));
  if (!inst.replica_groups.empty())
    out.emplace_back("replica_groups", PyValue::string(groups_text(inst.replica_groups)));
  if (!inst.metadata.empty())
    out.emplace_back("hlo_metadata", PyValue::string(inst.metadata.text()));
  if (auto c = hlo_collective(module, inst)) collective_args(*c, out);
  uint64_t texts = 0;  // the replica groups as text, the metadata, ...
  for (const auto& [key, value] : out)
    if (!value.is_list()) texts += heap_bytes(value);
  budget.charge(texts, "the HLO args of a kernel");
  return out;
}

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(a[k])) !=
        std::tolower(static_cast<unsigned char>(b[k])))
      return false;
  return true;
}

// A stat of the event or of its metadata, by name in any case (XLA's
// xplane_schema spells the memset one "Memset_details").
bool has_stat_ci(const Event& ev, const EventMetadata* meta, std::string_view name) {
  for (const Stat& s : ev.stats)
    if (equals_ci(s.name, name)) return true;
  if (meta)
    for (const Stat& s : meta->stats)
      if (equals_ci(s.name, name)) return true;
  return false;
}

// What a GPU line holds when its events do not say: XLA's GPU tracer names
// a stream line after the kinds of activity it saw on it ("Stream
// #14(Memset,Compute,MemcpyD2D)", "Stream #8(MemcpyOther)", "Stream
// #17(Kernel)"; a bare "MemcpyH2D" line in older profiles). Copies when every
// kind is a Memcpy*, memsets when every kind is Memset, kernels otherwise.
Cat line_cat(std::string_view line_name) {
  std::string_view kinds = line_name;
  if (size_t open = kinds.find('('); open != std::string_view::npos && kinds.back() == ')')
    kinds = kinds.substr(open + 1, kinds.size() - open - 2);
  bool all_memcpy = true, all_memset = true, any = false;
  while (!kinds.empty()) {
    size_t comma = kinds.find(',');
    std::string_view kind = kinds.substr(0, comma);
    kinds = comma == std::string_view::npos ? std::string_view() : kinds.substr(comma + 1);
    while (!kind.empty() && kind.front() == ' ') kind.remove_prefix(1);
    while (!kind.empty() && kind.back() == ' ') kind.remove_suffix(1);
    if (kind.empty()) continue;
    any = true;
    all_memcpy = all_memcpy && starts_with(kind, "Memcpy");
    all_memset = all_memset && starts_with(kind, "Memset");
  }
  if (any && all_memcpy) return Cat::GpuMemcpy;
  if (any && all_memset) return Cat::GpuMemset;
  return Cat::Kernel;
}

// What a GPU event is, from what XLA's GPU tracer (CUPTI / roctracer)
// records on it: memcpy_details on a copy, Memset_details on a memset,
// kernel_details on a kernel launch (xprof's GpuEventStats reads them the
// same way). Only an event with none of the three is read from its line
// (line_cat): a line's name lists every kind on it, so it cannot tell a
// kernel from a copy on a shared stream.
Cat gpu_event_cat(Cat line_kind, const Event& ev, const EventMetadata* meta) {
  if (has_stat_ci(ev, meta, "memcpy_details")) return Cat::GpuMemcpy;
  if (has_stat_ci(ev, meta, "memset_details")) return Cat::GpuMemset;
  if (has_stat_ci(ev, meta, "kernel_details")) return Cat::Kernel;
  return line_kind;
}

std::string_view text_stat(const std::vector<Stat>& stats, std::string_view name) {
  const Stat* s = find_stat(stats, name);
  return s && s->kind == Stat::Kind::Text ? std::string_view(s->text) : std::string_view();
}

class Bridge {
 public:
  Bridge(const Space& space, BridgeCounts& counts)
      : space_(space), counts_(counts), budget_(space.path, space.file_bytes) {}

  Trace run() {
    budget_.charge(space_.expanded_bytes, "the decoded XSpace");
    collect_gpu_correlations();
    counts_.hlo_modules = space_.hlo_modules.size();
    trace_.path = space_.path;
    trace_.file_bytes = space_.file_bytes;
    trace_.json_bytes = space_.file_bytes;
    int64_t host_planes = 0;
    for (const Plane& plane : space_.planes) {
      int64_t gpu = plane.gpu_ordinal();
      if (gpu >= 0)
        gpu_plane(plane, gpu);
      else if (starts_with(plane.name, "/host:") && plane.name != "/host:metadata")
        host_plane(plane, kHostPidBase + host_planes++);
    }
    finish();
    return std::move(trace_);
  }

 private:
  ProcId proc(int64_t v) { return ProcId{v, false}; }

  // The correlation ids of the GPU events: a host event carrying one is the
  // launch of that GPU work (older XLA names the launch after its kernel
  // rather than hipModuleLaunchKernel).
  void collect_gpu_correlations() {
    for (const Plane& plane : space_.planes) {
      if (plane.gpu_ordinal() < 0) continue;
      for (const Line& line : plane.lines)
        for (const Event& ev : line.events) {
          int64_t corr = 0;
          if (const Stat* s = find_stat(ev.stats, "correlation_id"); s && s->as_int(corr))
            gpu_correlations_.insert(corr);
        }
    }
  }

  // The HLO instruction a GPU kernel names (hlo_module, program_id, hlo_op).
  // Kernels of one instruction share the args rendered once (nullptr: none).
  const ExtraArgs* kernel_hlo_args(const Event& ev, const EventMetadata* meta) {
    std::string_view op = text_stat(ev.stats, "hlo_op");
    std::string_view module = text_stat(ev.stats, "hlo_module");
    if (meta) {
      if (op.empty()) op = text_stat(meta->stats, "hlo_op");
      if (module.empty()) module = text_stat(meta->stats, "hlo_module");
    }
    if (op.empty() || module.empty()) return nullptr;
    int64_t program = -1;
    if (const Stat* s = find_stat(ev.stats, "program_id"); s) s->as_int(program);
    // Every step launches the same instructions: look each up and render it once.
    std::string key = fmt::format("{}\x1f{}\x1f{}", module, program, op);
    auto cached = hlo_cache_.find(key);
    if (cached == hlo_cache_.end()) {
      const HloModule* m = space_.find_hlo_module(module, program);
      const HloInstruction* inst = m ? m->find(op) : nullptr;
      std::optional<ExtraArgs> args;
      budget_.charge(ExpansionBudget::string_bytes(key.size()) + 64, "the HLO lookups of kernels");
      if (inst) args = hlo_args(*m, *inst, budget_);
      cached = hlo_cache_.emplace(std::move(key), std::move(args)).first;
    }
    if (!cached->second) {
      ++counts_.kernels_hlo_unresolved;
      return nullptr;
    }
    ++counts_.kernels_with_hlo;
    return &*cached->second;
  }

  // Each event gets its own copy of the stats it keeps (a crafted file can
  // point 200,000 events at one 2 MiB tf_op name): charged before copying.
  int32_t args_of(const std::vector<Stat>& event_stats, const EventMetadata* meta,
                  const ExtraArgs* extra) {
    ArgList args;
    auto add = [&](const std::vector<Stat>& stats) {
      for (const Stat& s : stats) {
        if (!kept_stat(s.name)) continue;
        uint32_t key = trace_.strings.intern(s.name);
        bool seen = false;
        for (const auto& [k, _] : args) seen = seen || k == key;
        if (seen) continue;
        budget_.charge(sizeof(args[0]) + heap_bytes(s), "the XPlane stats copied onto events");
        args.emplace_back(key, value_of(s));
      }
    };
    add(event_stats);
    if (meta) add(meta->stats);
    if (extra)
      for (const auto& [key, value] : *extra) {
        budget_.charge(sizeof(args[0]) + heap_bytes(value), "the HLO args copied onto kernels");
        args.emplace_back(trace_.strings.intern(key), value);
      }
    if (args.empty()) return -1;
    trace_.arg_lists.push_back(std::move(args));
    return static_cast<int32_t>(trace_.arg_lists.size() - 1);
  }

  EventFields base(const Line& line, const Event& ev, const EventMetadata* meta,
                   const ExtraArgs* extra = nullptr) {
    EventFields f;
    f.dur_ns = ps_to_ns(ev.duration_ps);
    f.ts_ns = event_start_ns(line.timestamp_ns, ev.offset_ps, f.dur_ns);
    std::string_view name = meta ? (meta->name.empty() ? std::string_view(meta->display_name)
                                                       : std::string_view(meta->name))
                                 : std::string_view();
    f.name = trace_.strings.intern(name.empty() ? fmt::format("event#{}", ev.metadata_id) : name);
    f.ph = Phase::Complete;
    int64_t corr = 0;
    if (const Stat* s = find_stat(ev.stats, "correlation_id"); s && s->as_int(corr))
      f.correlation = corr;
    f.args = args_of(ev.stats, meta, extra);
    f.has_args = f.args >= 0;
    return f;
  }

  void gpu_plane(const Plane& plane, int64_t ordinal) {
    const int64_t pid = ordinal + 1;
    if (const Stat* v = plane.stat("device_vendor"); v && v->kind == Stat::Kind::Text) {
      if (v->text == "AMD") platform_ = Platform::Rocm;
      if (v->text == "Nvidia" || v->text == "NVIDIA") platform_ = Platform::Cuda;
      if (gpu_props_.is_null()) gpu_props_ = props_of(plane, v->text);
    }
    trace_.metadata.process_name[proc(pid)] = plane.name;
    for (const Line& line : plane.lines) {
      trace_.metadata.thread_name[{proc(pid), proc(line.id)}] =
          line.display_name.empty() ? line.name : line.display_name;
      const Cat line_kind = line_cat(line.name);
      for (const Event& ev : line.events) {
        if (ev.num_occurrences > 0) {
          ++counts_.aggregated_skipped;
          continue;
        }
        const EventMetadata* meta = plane.metadata(ev.metadata_id);
        const Cat cat = gpu_event_cat(line_kind, ev, meta);
        const bool kernel = cat == Cat::Kernel;
        EventFields f = base(line, ev, meta, kernel ? kernel_hlo_args(ev, meta) : nullptr);
        // Kineto links a launch and its GPU work by correlation and External
        // id alike; XPlane has the one id, so both carry it (the call tree
        // links by External id when no runtime event is named "...launch...",
        // as in older XLA traces).
        if (f.correlation != kNoInt) f.external_id = f.correlation;
        f.cat = cat;
        f.cat_name = trace_.strings.intern(kernel                  ? "kernel"
                                           : cat == Cat::GpuMemcpy ? "gpu_memcpy"
                                                                   : "gpu_memset");
        f.pid = proc(pid);
        f.tid = proc(line.id);
        f.stream = line.id;
        f.device = ordinal;
        if (kernel) {
          if (!find_stat(ev.stats, "hlo_op")) ++counts_.kernels_without_hlo_op;
          if (f.correlation == kNoInt) ++counts_.kernels_without_correlation;
        }
        trace_.add_event(f);
        ++counts_.gpu_events;
      }
    }
  }

  void host_plane(const Plane& plane, int64_t pid) {
    trace_.metadata.process_name[proc(pid)] = plane.name;
    for (const Line& line : plane.lines) {
      trace_.metadata.thread_name[{proc(pid), proc(line.id)}] =
          line.display_name.empty() ? line.name : line.display_name;
      const bool python = starts_with(line.name, "python");
      for (const Event& ev : line.events) {
        if (ev.num_occurrences > 0) {
          ++counts_.aggregated_skipped;
          continue;
        }
        const EventMetadata* meta = plane.metadata(ev.metadata_id);
        EventFields f = base(line, ev, meta);
        std::string_view name = trace_.strings.view(f.name);
        const bool api =
            f.correlation != kNoInt && (starts_with(name, "hip") || starts_with(name, "cu") ||
                                        gpu_correlations_.count(f.correlation));
        if (api) f.external_id = f.correlation;
        // A launch is a launch on any line: JAX 0.11 on CUDA records its
        // launches (named after the kernel, Memset, MemcpyD2D, cuGraphLaunch)
        // on the "python3" thread's line, among the Python frames.
        f.cat = api ? Cat::CudaRuntime : python ? Cat::PythonFunction : Cat::CpuOp;
        f.cat_name = trace_.strings.intern(api      ? "cuda_runtime"
                                           : python ? "python_function"
                                                    : "cpu_op");
        f.pid = proc(pid);
        f.tid = proc(line.id);
        trace_.add_event(f);
        ++counts_.host_events;
      }
    }
  }

  static nlohmann::json props_of(const Plane& plane, const std::string& vendor) {
    nlohmann::json p = {{"vendor", vendor}};
    int64_t major = -1, minor = -1, v = 0;
    if (const Stat* s = plane.stat("compute_cap_major"); s && s->as_int(v)) major = v;
    if (const Stat* s = plane.stat("compute_cap_minor"); s && s->as_int(v)) minor = v;
    for (std::string_view key : {"core_count", "clock_rate", "memory_bandwidth", "memory_size"})
      if (const Stat* s = plane.stat(key); s && s->as_int(v)) p[std::string(key)] = v;
    // XLA's CUDA tracer names the product (gpu_device_name "NVIDIA H200",
    // what detect_arch_name matches to arch/*.json); the ROCm samples name
    // none, and the compute capability is what they give.
    if (const Stat* s = plane.stat("gpu_device_name");
        s && s->kind == Stat::Kind::Text && !s->text.empty())
      p["name"] = s->text;
    else
      p["name"] = major >= 0
                      ? fmt::format("{} GPU (compute capability {}.{})", vendor, major, minor)
                      : fmt::format("{} GPU", vendor);
    if (major >= 0) p["computeCapability"] = fmt::format("{}.{}", major, minor);
    return p;
  }

  void finish() {
    trace_.platform = platform_;
    nlohmann::json source = {{"source", "xplane"},
                             {"hostnames", space_.hostnames},
                             {"planes", space_.planes.size()},
                             {"gpu_events", counts_.gpu_events},
                             {"host_events", counts_.host_events},
                             {"aggregated_skipped", counts_.aggregated_skipped},
                             {"kernels_without_hlo_op", counts_.kernels_without_hlo_op},
                             {"kernels_without_correlation", counts_.kernels_without_correlation},
                             {"hlo_modules", counts_.hlo_modules},
                             {"kernels_with_hlo", counts_.kernels_with_hlo},
                             {"kernels_hlo_unresolved", counts_.kernels_hlo_unresolved}};
    // Names in a protobuf are bytes: invalid UTF-8 is replaced, not thrown.
    constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
    trace_.top_level_json.emplace_back(std::string(kSourceKey),
                                       source.dump(-1, ' ', false, kReplace));
    if (!gpu_props_.is_null())
      trace_.top_level_json.emplace_back(
          "deviceProperties", nlohmann::json::array({gpu_props_}).dump(-1, ' ', false, kReplace));
    trace_.shrink_side_tables();
  }

  const Space& space_;
  BridgeCounts& counts_;
  ExpansionBudget budget_;
  Trace trace_;
  Platform platform_ = Platform::Unknown;
  nlohmann::json gpu_props_;
  std::unordered_set<int64_t> gpu_correlations_;
  std::unordered_map<std::string, std::optional<ExtraArgs>> hlo_cache_;
};

}  // namespace

Trace to_trace(const Space& space, BridgeCounts* counts) {
  BridgeCounts local;
  return Bridge(space, counts ? *counts : local).run();
}

bool is_xplane_trace(const Trace& trace) {
  for (const auto& [key, _] : trace.top_level_json)
    if (key == kSourceKey) return true;
  return false;
}

BridgeCounts counts_of(const Trace& trace) {
  BridgeCounts c;
  for (const auto& [key, text] : trace.top_level_json) {
    if (key != kSourceKey) continue;
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) break;
    c.gpu_events = j.value("gpu_events", uint64_t{0});
    c.host_events = j.value("host_events", uint64_t{0});
    c.aggregated_skipped = j.value("aggregated_skipped", uint64_t{0});
    c.kernels_without_hlo_op = j.value("kernels_without_hlo_op", uint64_t{0});
    c.kernels_without_correlation = j.value("kernels_without_correlation", uint64_t{0});
    c.hlo_modules = j.value("hlo_modules", uint64_t{0});
    c.kernels_with_hlo = j.value("kernels_with_hlo", uint64_t{0});
    c.kernels_hlo_unresolved = j.value("kernels_hlo_unresolved", uint64_t{0});
  }
  return c;
}

}  // namespace jarvis::xplane
