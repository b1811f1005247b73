// XPlane input (src/xplane): the three real XSpace files of ../shared/jax.
// Expectations come from TraceLens's reference perf-report CSVs (the legacy
// conv trace produced them: its per-GPU totals are the CSVs' to the last
// digit) and from `protoc --decode_raw` output parsed here, independently of
// the reader under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "categories/prepare_trace.h"
#include "explore/input_format.h"
#include "golden.h"
#include "insights/trace_health.h"
#include "memory/memory.h"
#include "replay/replay.h"
#include "report/table.h"
#include "test_loader_support.h"
#include "tree/call_tree.h"
#include "xplane/hlo.h"
#include "xplane/kernel_summary.h"
#include "xplane/perf_sheets.h"
#include "xplane/report.h"
#include "xplane/space.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

namespace fs = std::filesystem;

const std::string kJaxDir = golden::shared_dir() + "/jax";
const std::string kLegacy = kJaxDir + "/jax_conv_minimal_legacy/trace.xplane.pb";
const std::string kConv08 = kJaxDir + "/jax_conv_minimal_08/tw003.xplane.pb";
const std::string kTeAttn = kJaxDir + "/te_fused_attn/934987a2fc2f.xplane.pb";
const std::string kRefCsvs = kJaxDir + "/jax_conv_minimal_perf_report_csvs";

bool have_samples() {
  return fs::exists(kLegacy) && fs::exists(kConv08) && fs::exists(kTeAttn);
}

bool have_protoc() {
  return std::system("protoc --version >/dev/null 2>&1") == 0;
}

// One node of `protoc --decode_raw` output: `N: value` leaves and `N { ... }`
// messages.
struct RawNode {
  int field = 0;
  std::string value;  // leaf text (numbers, "quoted strings")
  std::vector<RawNode> children;
  bool message = false;
  std::vector<const RawNode*> all(int f) const {
    std::vector<const RawNode*> out;
    for (const RawNode& c : children)
      if (c.field == f) out.push_back(&c);
    return out;
  }
  const RawNode* first(int f) const {
    for (const RawNode& c : children)
      if (c.field == f) return &c;
    return nullptr;
  }
  int64_t num(int f, int64_t fallback = 0) const {
    const RawNode* c = first(f);
    return c && !c->message ? std::stoll(c->value) : fallback;
  }
};

RawNode decode_raw(const std::string& path) {
  std::string cmd = "protoc --decode_raw < '" + path + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) text.append(buf, n);
  RawNode root;
  root.message = true;
  std::vector<RawNode*> stack{&root};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t k = line.find_first_not_of(' ');
    if (k == std::string::npos) continue;
    std::string_view l(line.c_str() + k);
    if (l == "}") {
      stack.pop_back();
      continue;
    }
    size_t sep = l.find_first_of(":{");
    RawNode node;
    node.field = std::stoi(std::string(l.substr(0, sep)));
    if (l[sep] == '{') {
      node.message = true;
      stack.back()->children.push_back(std::move(node));
      stack.push_back(&stack.back()->children.back());
    } else {
      node.value = std::string(l.substr(sep + 2));
      stack.back()->children.push_back(std::move(node));
    }
  }
  return root;
}

std::string unquote(const std::string& s) {
  return s.size() >= 2 && s.front() == '"' ? s.substr(1, s.size() - 2) : s;
}

// Per GPU plane (by its name) from the raw decode: event count, union of the
// event intervals (busy) and first start to last end (total), in ps.
struct RawGpu {
  size_t events = 0;
  int64_t busy_ps = 0, total_ps = 0;
};

std::map<std::string, RawGpu> raw_gpu_planes(const RawNode& space) {
  std::map<std::string, RawGpu> out;
  for (const RawNode* plane : space.all(1)) {  // XSpace.planes
    const RawNode* name = plane->first(2);
    if (!name || name->message) continue;
    std::string plane_name = unquote(name->value);
    if (plane_name.rfind("/device:GPU:", 0) != 0) continue;
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (const RawNode* line : plane->all(3)) {      // XPlane.lines
      int64_t ts_ps = line->num(3) * 1000;           // XLine.timestamp_ns
      for (const RawNode* ev : line->all(4)) {       // XLine.events
        int64_t start = ts_ps + ev->num(2);          // XEvent.offset_ps
        iv.emplace_back(start, start + ev->num(3));  // XEvent.duration_ps
      }
    }
    if (iv.empty()) continue;
    std::sort(iv.begin(), iv.end());
    RawGpu g;
    g.events = iv.size();
    int64_t cs = iv[0].first, ce = iv[0].second, last = 0;
    for (auto [s, e] : iv) {
      last = std::max(last, e);
      if (s > ce) {
        g.busy_ps += ce - cs;
        cs = s;
        ce = e;
      } else {
        ce = std::max(ce, e);
      }
    }
    g.busy_ps += ce - cs;
    g.total_ps = last - iv[0].first;
    out[plane_name] = g;
  }
  return out;
}

golden::Options exact() {
  golden::Options o;
  o.rel_tol = 1e-9;
  return o;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `protoc --decode` with a schema written here: the XSpace fields that lead
// to the /host:metadata HLO protos (XStat.bytes_value typed as an HloProto)
// and the HLO fields checked. Field numbers from xla/tsl/profiler/protobuf/
// xplane.proto, xla/service/hlo.proto and xla/xla_data.proto; protoc, not
// jarvis, decodes the bytes.
constexpr std::string_view kHloSchema = R"P(syntax = "proto3";
package t;
message XSpace { repeated XPlane planes = 1; }
message XPlane { int64 id = 1; string name = 2; map<int64, XEventMetadata> event_metadata = 4; }
message XEventMetadata { int64 id = 1; string name = 2; repeated MetaStat stats = 5; }
message MetaStat { int64 metadata_id = 1; HloProto hlo = 6; }
message HloProto { HloModuleProto hlo_module = 1; }
message HloModuleProto { string name = 1; repeated HloComputationProto computations = 3; }
message HloComputationProto { string name = 1; repeated HloInstructionProto instructions = 2;
  int64 id = 5; int64 root_id = 6; }
message HloInstructionProto { string name = 1; string opcode = 2; ShapeProto shape = 3;
  OpMetadata metadata = 7; string custom_call_target = 28; int64 id = 35;
  repeated int64 operand_ids = 36; string backend_config = 43; }
message ShapeProto { int32 element_type = 2; repeated int64 dimensions = 3;
  repeated ShapeProto tuple_shapes = 4; LayoutProto layout = 5; }
message LayoutProto { repeated int64 minor_to_major = 1; }
message OpMetadata { string op_type = 1; string op_name = 2; string source_file = 3;
  int32 source_line = 4; }
)P";

// One node of protoc's text format: `key: value` leaves, `key { ... }` messages.
struct TextNode {
  std::string key, value;
  std::vector<TextNode> children;
  std::vector<const TextNode*> all(std::string_view k) const {
    std::vector<const TextNode*> out;
    for (const TextNode& c : children)
      if (c.key == k) out.push_back(&c);
    return out;
  }
  const TextNode* first(std::string_view k) const {
    for (const TextNode& c : children)
      if (c.key == k) return &c;
    return nullptr;
  }
  // A string leaf, unquoted and unescaped (\" \\ \n and octal escapes).
  std::string text(std::string_view k) const {
    const TextNode* c = first(k);
    if (!c || c->value.size() < 2) return "";
    std::string out;
    std::string_view v(c->value);
    v = v.substr(1, v.size() - 2);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '\\' || i + 1 == v.size()) {
        out.push_back(v[i]);
        continue;
      }
      char n = v[++i];
      if (n >= '0' && n <= '7') {
        int code = 0, digits = 0;
        while (digits < 3 && i < v.size() && v[i] >= '0' && v[i] <= '7') {
          code = code * 8 + (v[i++] - '0');
          ++digits;
        }
        --i;
        out.push_back(static_cast<char>(code));
      } else {
        out.push_back(n == 'n' ? '\n' : n == 't' ? '\t' : n == 'r' ? '\r' : n);
      }
    }
    return out;
  }
  int64_t num(std::string_view k, int64_t fallback = 0) const {
    const TextNode* c = first(k);
    return c && c->children.empty() && !c->value.empty() ? std::stoll(c->value) : fallback;
  }
};

TextNode decode_typed(const std::string& path) {
  fs::path dir = fs::temp_directory_path() / "jarvis_xhlo";
  dir += std::to_string(::getpid());
  fs::create_directories(dir);
  {
    std::ofstream schema(dir / "xhlo.proto");
    schema << kHloSchema;
  }
  std::string cmd = "protoc --proto_path='";
  cmd += dir.string();
  cmd += "' --decode=t.XSpace xhlo.proto < '";
  cmd += path;
  cmd += "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) text.append(buf, n);
  fs::remove_all(dir);
  TextNode root;
  std::vector<TextNode*> stack{&root};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t k = line.find_first_not_of(' ');
    if (k == std::string::npos) continue;
    std::string_view l(line.c_str() + k);
    if (l == "}") {
      stack.pop_back();
      continue;
    }
    TextNode node;
    if (l.back() == '{') {
      node.key = std::string(l.substr(0, l.size() - 2));
      stack.back()->children.push_back(std::move(node));
      stack.push_back(&stack.back()->children.back());
    } else {
      size_t sep = l.find(": ");
      node.key = std::string(l.substr(0, sep));
      node.value = std::string(l.substr(sep + 2));
      stack.back()->children.push_back(std::move(node));
    }
  }
  return root;
}

// A shape as XLA prints it, from the text-format ShapeProto (the element
// type names of the samples' types, xla_data.proto PrimitiveType).
std::string shape_text(const TextNode& shape) {
  static const std::map<int64_t, std::string> names = {
      {1, "pred"}, {2, "s8"},    {3, "s16"},    {4, "s32"},  {5, "s64"},  {6, "u8"},
      {7, "u16"},  {8, "u32"},   {9, "u64"},    {10, "f16"}, {11, "f32"}, {12, "f64"},
      {15, "c64"}, {16, "bf16"}, {17, "token"}, {18, "c128"}};
  int64_t type = shape.num("element_type");
  if (type == 13) {
    std::string out = "(";
    auto parts = shape.all("tuple_shapes");
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k) out += ", ";
      if (k && k % 5 == 0) {
        out += "/*index=";
        out += std::to_string(k);
        out += "*/";
      }
      out += shape_text(*parts[k]);
    }
    return out + ")";
  }
  auto it = names.find(type);
  std::string out = it == names.end() ? std::string("type?") : it->second;
  auto join = [&out](const std::vector<const TextNode*>& items) {
    for (size_t k = 0; k < items.size(); ++k) {
      if (k) out += ',';
      out += items[k]->value;
    }
  };
  out += '[';
  auto dims = shape.all("dimensions");
  join(dims);
  out += ']';
  if (const TextNode* layout = shape.first("layout"); layout && !dims.empty()) {
    out += '{';
    join(layout->all("minor_to_major"));
    out += '}';
  }
  return out;
}

// Every program of the /host:metadata plane: (label, HloModuleProto node).
std::vector<std::pair<std::string, const TextNode*>> typed_modules(const TextNode& space) {
  std::vector<std::pair<std::string, const TextNode*>> out;
  for (const TextNode* plane : space.all("planes")) {
    if (plane->text("name") != "/host:metadata") continue;
    for (const TextNode* entry : plane->all("event_metadata")) {
      const TextNode* meta = entry->first("value");
      if (!meta) continue;
      for (const TextNode* stat : meta->all("stats"))
        if (const TextNode* hlo = stat->first("hlo"))
          if (const TextNode* module = hlo->first("hlo_module"))
            out.emplace_back(meta->text("name"), module);
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("xplane") {
  TEST_CASE("the three samples are detected by content and read through the one dispatch") {
    if (!have_samples()) return;
    for (const std::string& path : {kLegacy, kConv08, kTeAttn}) {
      CAPTURE(path);
      CHECK(xplane::is_xplane_input(path));
      CHECK(detect_input_format(path) == InputFormat::Xplane);
      Trace trace = load_any_trace(path);
      CHECK(xplane::is_xplane_trace(trace));
      CHECK(trace.platform == Platform::Rocm);  // device_vendor "AMD"
      CHECK(trace.events.size() > 0);
    }
    // A Kineto JSON is not an XSpace.
    std::string kineto = std::string(JARVIS_SOURCE_DIR) + "/tests/malformed/empty_trace.json";
    CHECK_FALSE(xplane::is_xplane_input(kineto));
  }

  TEST_CASE(
      "legacy conv trace: gpu_timeline and gpu_events_averages match TraceLens cell for cell") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    auto devices = xplane::device_timelines(trace);
    REQUIRE(devices.size() == 2);
    CHECK(devices[0].gpu_pid == 8);  // Python set order of {1, 8}
    CHECK(devices[1].gpu_pid == 1);
    for (const Table& actual :
         {xplane::gpu_timeline_by_device_table(devices),
          xplane::gpu_events_averages_table(xplane::average_timeline(devices))}) {
      auto result = golden::compare_tables(read_csv_file(kRefCsvs + "/" + actual.name + ".csv"),
                                           actual, exact());
      MESSAGE(actual.name << ": " << result.summary());
      CHECK(result.ok());
    }
  }

  TEST_CASE(
      "legacy conv trace: kernel summaries by name, XLA op category and XLA name match TraceLens") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    auto kernels = xplane::kernel_launches(trace);
    CHECK(kernels.size() == 25);
    for (const Table& actual : {xplane::kernel_launchers_summary_table(kernels),
                                xplane::kernel_launchers_summary_by_category_table(kernels),
                                xplane::xla_summary_table(kernels)}) {
      auto result = golden::compare_tables(read_csv_file(kRefCsvs + "/" + actual.name + ".csv"),
                                           actual, exact());
      MESSAGE(actual.name << ": " << result.summary());
      CHECK(result.ok());
    }
  }

  TEST_CASE("XLA op categories: name keywords, hlo_op override, FA names kept") {
    using xplane::kernel_op_category;
    CHECK(kernel_op_category("Cijk_Ailk_Bljk_BBS", "") == "GEMM");
    // hlo_op overrides the name's category (TraceLens issue #422).
    CHECK(kernel_op_category("Cijk_Ailk_Bljk_BBS", "cudnn-conv.1.0") == "Conv");
    CHECK(kernel_op_category("__amd_rocclr_fillBufferAligned.kd",
                             "te_fused_attn_backward_ffi.12") == "TE");
    // ...but not an FA kernel name's.
    CHECK(kernel_op_category("ck_tile::FmhaBwdOGradDotOKernel", "te_fused_attn_backward_ffi.3") ==
          "FA BWD");
    CHECK(kernel_op_category("ncclDevKernel_AllReduce", "") == "Communication rccl/nccl");
    CHECK(kernel_op_category("loop_transpose_fusion", "loop_transpose_fusion") ==
          "Uncategorized Events/XLA");
  }

  TEST_CASE(
      "per-GPU event counts, busy and total time equal those recomputed from protoc --decode_raw") {
    if (!have_samples()) return;
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    for (const std::string& path : {kLegacy, kConv08, kTeAttn}) {
      CAPTURE(path);
      auto raw = raw_gpu_planes(decode_raw(path));
      REQUIRE(!raw.empty());
      xplane::Space space = xplane::load_space(path);
      Trace trace = xplane::to_trace(space);
      auto devices = xplane::device_timelines(trace);
      CHECK(devices.size() == raw.size());
      for (const auto& d : devices) {
        std::string name = "/device:GPU:" + std::to_string(d.gpu_pid - 1);
        CAPTURE(name);
        REQUIRE(raw.count(name) == 1);
        const RawGpu& g = raw[name];
        CHECK(d.timeline.event_count == g.events);
        // µs from ps; jarvis sums µs doubles, the raw side exact ps integers.
        CHECK(d.timeline.busy_time ==
              doctest::Approx(static_cast<double>(g.busy_ps) / 1e6).epsilon(1e-9));
        CHECK(d.timeline.total_time ==
              doctest::Approx(static_cast<double>(g.total_ps) / 1e6).epsilon(1e-9));
      }
      // The whole report runs; kernel_launchers has one row per kernel: an
      // event on a "Stream #" line of a GPU plane whose name (its event
      // metadata's) does not start with copy / memcpy / memset (aggregated
      // events, num_occurrences, are none: the samples have none).
      size_t raw_kernels = 0;
      const RawNode decoded = decode_raw(path);
      for (const RawNode* plane : decoded.all(1)) {
        const RawNode* pname = plane->first(2);
        if (!pname || unquote(pname->value).rfind("/device:GPU:", 0) != 0) continue;
        std::map<int64_t, std::string> names;
        for (const RawNode* entry : plane->all(4))
          if (const RawNode* meta = entry->first(2); meta && meta->first(2))
            names[entry->num(1)] = unquote(meta->first(2)->value);
        for (const RawNode* line : plane->all(3)) {
          // XLine.display_name (11), else name (2), as xprof shows the line.
          const RawNode* lname = line->first(11) ? line->first(11) : line->first(2);
          if (!lname || unquote(lname->value).rfind("Stream #", 0) != 0) continue;
          for (const RawNode* ev : line->all(4)) {
            std::string n = names[ev->num(1)];
            std::transform(n.begin(), n.end(), n.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            if (n.rfind("copy", 0) != 0 && n.rfind("memcpy", 0) != 0 && n.rfind("memset", 0) != 0)
              ++raw_kernels;
          }
        }
      }
      size_t launcher_rows = 0, timeline_rows = 0;
      for (const Table& t : analysis::xplane_report_tables(trace)) {
        if (t.name == "kernel_launchers") launcher_rows = t.rows.size();
        if (t.name == "gpu_timeline") timeline_rows = t.rows.size();
      }
      CHECK(launcher_rows == raw_kernels);
      CHECK(timeline_rows == 8 * raw.size());
    }
  }

  TEST_CASE("Python set order of GPU pids") {
    CHECK(xplane::python_set_order({1, 8, 1, 8}) == std::vector<int64_t>{8, 1});
    CHECK(xplane::python_set_order({3, 1, 2}) == std::vector<int64_t>{1, 2, 3});
    // Eight pids grow the table to 32 slots: ascending.
    CHECK(xplane::python_set_order({8, 7, 6, 5, 4, 3, 2, 1}) ==
          std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
    // 9 and 1 collide in 8 slots: 9 probes to slot 2.
    CHECK(xplane::python_set_order({1, 9}) == std::vector<int64_t>{1, 9});
    CHECK(xplane::python_set_order({9, 1, 2}) == std::vector<int64_t>{9, 1, 2});
  }

  TEST_CASE("kernels carry their XLA op, module and correlation as in the protobuf") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    // The first kernel of GPU:7's stream (protoc --decode_raw: metadata 4,
    // offset 2666727000 ps, 6890000 ps, correlation_id 171, hlo_op
    // loop_transpose_fusion, hlo_module jit_forward_3d_conv).
    bool found = false;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      if (trace.events[u].cat != Cat::Kernel || trace.correlation(u) != 171) continue;
      found = true;
      CHECK(trace.name(u) == "loop_transpose_fusion");
      CHECK(trace.events[u].dur_ns == 6890);
      CHECK(trace.events[u].ts_ns == 1633193266LL + 2666727);
      CHECK(trace.device(u) == 7);
      const PyValue* hlo = trace.arg(u, "hlo_op");
      REQUIRE(hlo);
      CHECK(hlo->repr() == "'loop_transpose_fusion'");
      const PyValue* mod = trace.arg(u, "hlo_module");
      REQUIRE(mod);
      CHECK(mod->repr() == "'jit_forward_3d_conv'");
    }
    CHECK(found);
    xplane::BridgeCounts c = xplane::counts_of(trace);
    CHECK(c.gpu_events == 53 + 25);
    CHECK(c.kernels_without_hlo_op == 0);
    CHECK(c.kernels_without_correlation == 0);
  }

  TEST_CASE("HLO protos decode as protoc decodes them: names, opcodes, shapes, operands") {
    if (!have_samples()) return;
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    for (const std::string& path : {kLegacy, kConv08, kTeAttn}) {
      CAPTURE(path);
      TextNode raw = decode_typed(path);
      auto modules = typed_modules(raw);
      xplane::Space space = xplane::load_space(path);
      REQUIRE(modules.size() == space.hlo_modules.size());
      REQUIRE(modules.size() >= 8);
      size_t checked = 0;
      for (size_t m = 0; m < modules.size(); ++m) {
        const auto& [label, module] = modules[m];
        const xplane::HloModule& mine = space.hlo_modules[m];
        CHECK(mine.label == label);
        CHECK(mine.name == module->text("name"));
        std::string expected_label = mine.name;
        expected_label += '(';
        expected_label += std::to_string(mine.program_id);
        expected_label += ')';
        CHECK(label == expected_label);
        for (const TextNode* comp : module->all("computations")) {
          std::map<int64_t, const TextNode*> by_id;
          for (const TextNode* inst : comp->all("instructions")) by_id[inst->num("id")] = inst;
          for (const TextNode* inst : comp->all("instructions")) {
            std::string name = inst->text("name");
            CAPTURE(name);
            const xplane::HloInstruction* mi = mine.find(name);
            REQUIRE(mi);
            CHECK(mi->opcode == inst->text("opcode"));
            CHECK(mi->custom_call_target == inst->text("custom_call_target"));
            CHECK(mi->backend_config == inst->text("backend_config"));
            CHECK(mi->shape.text() == shape_text(*inst->first("shape")));
            const TextNode* md = inst->first("metadata");
            CHECK(mi->metadata.op_name == (md ? md->text("op_name") : ""));
            CHECK(mi->metadata.source_line == (md ? md->num("source_line") : 0));
            CHECK(mine.is_root(*mi) == (comp->num("root_id") == inst->num("id")));
            auto ops = mine.operands(*mi);
            auto ids = inst->all("operand_ids");
            REQUIRE(ops.size() == ids.size());
            for (size_t k = 0; k < ids.size(); ++k) {
              REQUIRE(ops[k]);
              CHECK(ops[k]->shape.text() ==
                    shape_text(*by_id.at(std::stoll(ids[k]->value))->first("shape")));
            }
            ++checked;
          }
        }
      }
      CHECK(checked > 100);
    }
  }

  TEST_CASE("kernels carry their HLO instruction; launches link to their kernels") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    xplane::BridgeCounts c = xplane::counts_of(trace);
    CHECK(c.hlo_modules == 8);
    CHECK(c.kernels_with_hlo == 25);
    CHECK(c.kernels_hlo_unresolved == 0);
    // The cuDNN convolution's two kernels (protoc: custom-call cudnn-conv.1.0,
    // operands bf16[1,16,32,60,104] and bf16[5120,16,1,2,2]).
    size_t convs = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      if (trace.events[u].cat != Cat::Kernel) continue;
      const PyValue* op = trace.arg(u, "hlo_op");
      if (!op || op->s != "cudnn-conv.1.0") continue;
      ++convs;
      CHECK(trace.arg(u, "hlo_opcode")->s == "custom-call");
      CHECK(trace.arg(u, "custom_call_target")->s == "__cudnn$convForward");
      CHECK(trace.arg(u, "hlo_shape")->s == "(bf16[1,5120,34,31,53]{4,3,2,1,0}, u8[7150336]{0})");
      CHECK(trace.arg(u, "hlo_operands")->repr() ==
            "['bf16[1,16,32,60,104]{4,3,2,1,0}', 'bf16[5120,16,1,2,2]{4,3,2,1,0}']");
      CHECK(trace.arg(u, "hlo_operand_names")->repr() == "['bitcast.39.0', 'bitcast.46.0']");
      // protoc --decode_raw: convolution_dimension_numbers {3: 1, 6: [2,3,4], 8: 1, 10: 1,
      // 11: [2,3,4], 12: [2,3,4]} (batch / output-feature 0 by default), window dims
      // {size 1 stride 1 pad 1/1}, {size 2 stride 2 pad 1/1} x2.
      CHECK(trace.arg(u, "conv_dim_labels")->s == "bf012_oi012->bf012");
      CHECK(trace.arg(u, "window")->s == "size=1x2x2 stride=1x2x2 pad=1_1x1_1x1_1");
      CHECK(trace.arg(u, "hlo_metadata")->s ==
            "op_name=\"jit(forward_3d_conv)/jit(main)/conv_general_dilated\" "
            "source_file=\"/workspace/conv-jax/jax_conv_profiling.py\" source_line=77");
    }
    CHECK(convs == 10);  // Im3d2Col + the GEMM, five steps
    // Older XLA names each launch after its kernel (py_xla_execute line, with
    // the kernel's correlation_id): every kernel and copy is linked.
    CallTree tree(trace);
    size_t gpu = 0, linked = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      if (!trace.events[u].is_gpu()) continue;
      ++gpu;
      linked += tree.is_linked(u);
    }
    CHECK(gpu == 78);
    CHECK(linked == 78);
    insights::TraceHealth health = insights::trace_health(trace, tree);
    CHECK(health.linked_gpu_events == 78);
    CHECK(health.gpu_busy_share > 0);
    bool xplane_link_note = false;
    for (const std::string& w : health.warnings) {
      CHECK(w.find("% of GPU events are linked") == std::string::npos);
      CHECK(w.find("older Kineto schema") == std::string::npos);
      xplane_link_note = xplane_link_note || w.find("share a correlation_id") != std::string::npos;
    }
    CHECK(xplane_link_note);
  }

  TEST_CASE(
      "legacy conv trace: kernel_launchers, unique args, df_xla_perf, op_conv match TraceLens") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    auto kernels = xplane::jax_kernels(trace);
    REQUIRE(kernels.size() == 25);
    std::vector<Table> sheets{xplane::kernel_launchers_table(kernels),
                              xplane::kernel_launchers_unique_args_table(kernels),
                              xplane::df_xla_perf_table(kernels)};
    auto ops = xplane::op_category_tables(kernels);
    REQUIRE(ops.size() == 1);  // op_conv: the one category with a perf model here
    sheets.push_back(ops[0]);
    for (const Table& actual : sheets) {
      CAPTURE(actual.name);
      auto result = golden::compare_tables(read_csv_file(kRefCsvs + "/" + actual.name + ".csv"),
                                           actual, exact());
      MESSAGE(actual.name << ": " << result.summary());
      CHECK(result.ok());
    }
  }

  TEST_CASE("TE sample: op_gemm and op_te from the HLO shapes protoc decodes") {
    if (!have_samples()) return;
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    // The cuBLAS GEMM and the TE forward attention of jit_loss_fn, from protoc.
    TextNode raw = decode_typed(kTeAttn);
    double gemm_gflops = -1, gemm_mb = -1, attn_gflops = -1;
    int64_t gemm_k = -1;
    std::string gemm_hlo_transpose;  // "(lhs, rhs)" from the layouts and contracting dims
    std::vector<int64_t> qkv;
    for (const auto& [label, module] : typed_modules(raw)) {
      for (const TextNode* comp : module->all("computations")) {
        std::map<int64_t, const TextNode*> by_id;
        for (const TextNode* inst : comp->all("instructions")) by_id[inst->num("id")] = inst;
        auto dims_of = [&](const TextNode* inst, size_t operand) {
          std::vector<int64_t> d;
          const TextNode* op = by_id.at(std::stoll(inst->all("operand_ids").at(operand)->value));
          for (const TextNode* n : op->first("shape")->all("dimensions"))
            d.push_back(std::stoll(n->value));
          return d;
        };
        for (const TextNode* inst : comp->all("instructions")) {
          std::string target = inst->text("custom_call_target");
          if (target == "__cublas$gemm") {
            auto config = nlohmann::json::parse(inst->text("backend_config"));
            const auto& dd = config.at("gemm_backend_config").at("dot_dimension_numbers");
            size_t lc = std::stoul(dd.at("lhs_contracting_dimensions").at(0).get<std::string>());
            size_t rc = std::stoul(dd.at("rhs_contracting_dimensions").at(0).get<std::string>());
            auto a = dims_of(inst, 0), b = dims_of(inst, 1);
            REQUIRE(a.size() == 2);
            REQUIRE(b.size() == 2);
            int64_t k = a[lc], m = a[1 - lc], n = b[1 - rc];
            CHECK(b[rc] == k);
            // Row-major BLAS terms: the lhs (M x K) is transposed unless K
            // is its minor-most dimension; the rhs (K x N) when K is.
            auto minor_most = [&](size_t operand) {
              const TextNode* op =
                  by_id.at(std::stoll(inst->all("operand_ids").at(operand)->value));
              const TextNode* layout = op->first("shape")->first("layout");
              REQUIRE(layout);
              return static_cast<size_t>(std::stoll(layout->all("minor_to_major").at(0)->value));
            };
            auto py = [](bool b) { return b ? std::string("True") : std::string("False"); };
            std::string t =
                fmt::format("({}, {})", py(minor_most(0) != lc), py(minor_most(1) == rc));
            CHECK((gemm_hlo_transpose.empty() || gemm_hlo_transpose == t));
            gemm_hlo_transpose = t;
            gemm_k = k;
            gemm_gflops = 2.0 * m * n * k / 1e9;
            gemm_mb = (m * k + k * n + m * n) * 2.0 / (1024 * 1024);  // bf16
          }
          if (target == "te_fused_attn_forward_ffi") {
            qkv = dims_of(inst, 0);  // packed [B, S, 3, H, D]
            REQUIRE(qkv.size() == 5);
            double b = qkv[0], sq = qkv[1], h = qkv[3], d = qkv[4];
            attn_gflops = 4 * b * h * sq * sq * d / 1e9;
          }
        }
      }
    }
    REQUIRE(gemm_gflops > 0);
    REQUIRE(attn_gflops > 0);

    Trace trace = load_any_trace(kTeAttn);
    auto sheets = xplane::op_category_tables(xplane::jax_kernels(trace));
    auto cell = [](const Table& t, size_t row, std::string_view col) {
      return t.at(row, col).is_number() ? t.at(row, col).number()
                                        : std::stod(t.at(row, col).text());
    };
    bool gemm = false, fwd = false, bwd = false;
    size_t tensile_gemms = 0;
    auto swapped = [](const std::string& pair) {  // "(a, b)" -> "(b, a)"
      const size_t comma = pair.find(", ");
      return fmt::format("({}, {})", pair.substr(comma + 2, pair.size() - comma - 3),
                         pair.substr(1, comma - 1));
    };
    for (const Table& t : sheets) {
      CAPTURE(t.name);
      for (size_t r = 0; r < t.rows.size(); ++r) {
        if (t.name == "op_gemm") {
          gemm = true;
          CHECK(cell(t, r, "GFLOPS_first") == doctest::Approx(gemm_gflops).epsilon(1e-12));
          CHECK(cell(t, r, "Data Moved (MB)_first") == doctest::Approx(gemm_mb).epsilon(1e-12));
          CHECK(cell(t, r, "param: K") == gemm_k);
          CHECK(t.at(r, "param: hlo_transpose").text() == gemm_hlo_transpose);
          // TraceLens's transpose from the kernel name (kernel_name_parser:
          // Tensile's _Ailk_/_Alik_ and _Bljk_/_Bjlk_), "nan" when the name
          // is no Tensile or nvjet GEMM.
          const std::string kname = t.at(r, "name").text();
          if (kname.find("Cijk_") != std::string::npos) {
            auto flag = [&kname](const char* no, const char* yes) {
              return kname.find(no) != std::string::npos    ? std::string("False")
                     : kname.find(yes) != std::string::npos ? std::string("True")
                                                            : std::string("None");
            };
            CHECK(t.at(r, "param: transpose").text() ==
                  fmt::format("({}, {})", flag("_Ailk_", "_Alik_"), flag("_Bljk_", "_Bjlk_")));
            ++tensile_gemms;
            // XLA calls the column-major BLAS with the operands swapped
            // (C^T = rhs^T lhs^T): the kernel's A is the HLO's rhs.
            CHECK(fmt::format("({}, {})", flag("_Ailk_", "_Alik_"), flag("_Bljk_", "_Bjlk_")) ==
                  swapped(gemm_hlo_transpose));
          }
          continue;
        }
        REQUIRE((t.name == "op_te" || t.name == "op_fa_fwd" || t.name == "op_fa_bwd"));
        CHECK(cell(t, r, "param: B") == qkv[0]);
        CHECK(cell(t, r, "param: N_Q") == qkv[1]);
        CHECK(cell(t, r, "param: H_Q") == qkv[3]);
        CHECK(cell(t, r, "param: d_h_qk") == qkv[4]);
        double g = cell(t, r, "GFLOPS_first");
        // Forward 4·B·H·S²·D; flash backward recomputes QK: 10·B·H·S²·D.
        if (g == doctest::Approx(attn_gflops).epsilon(1e-12))
          fwd = true;
        else if (g == doctest::Approx(2.5 * attn_gflops).epsilon(1e-12))
          bwd = true;
        else
          FAIL_CHECK("GFLOPS " << g << " is neither the forward nor the backward count");
      }
    }
    CHECK(gemm);
    CHECK(tensile_gemms >= 1);
    CHECK(fwd);
    CHECK(bwd);
  }

  TEST_CASE("commands with nothing to read in an XLA trace say why") {
    if (!have_samples()) return;
    Trace trace = load_any_trace(kLegacy);
    try {
      (void)memory::analyse_memory(trace);
      FAIL("memory analysed an XPlane trace");
    } catch (const TraceError& e) {
      std::string what = e.what();
      CHECK(what.find(kLegacy) == 0);
      CHECK(what.find("XPlane trace: it has no allocator samples") != std::string::npos);
    }
    CallTree tree(trace);
    try {
      (void)replay::plan_replay(trace, tree, replay::Selection::by_category("other", 1));
      FAIL("replay planned an XPlane trace");
    } catch (const replay::ReplayError& e) {
      CHECK(std::string(e.what()).find("an XLA program has none") != std::string::npos);
    }
  }

  TEST_CASE("TraceLens's reading of HLO text: operands, metadata, custom_call_target") {
    // get_operands keeps the shapes its pattern finds: u8 / pred / scalar
    // operands drop out, a name without a dot glues onto the next shape.
    CHECK(xplane::tracelens_operands({"bf16[2,3]{1,0}", "u8[4]{0}", "f32[]", "s32[2]{0}"},
                                     {"p.1", "p.2", "c.3", "p.4"}) ==
          std::vector<std::string>{"bf16[2,3]{1,0}", "s32[2]{0}"});
    CHECK(xplane::tracelens_operands({"pred[2]{0}"}, {"p.1"}) ==
          std::vector<std::string>{"pred[2]{0}%p.1"});  // no match: split(",")
    CHECK(xplane::tracelens_metadata("op_name=\"jit(f)/dot_general\" source_file=\"/a/b.py\" "
                                     "source_line=3") ==
          "metadata={op_name=\"jit(f)/dot_general\" source_file=\"/a/b.py\" source_line=3");
    CHECK(xplane::tracelens_metadata("op_name=\"a[0]\"") == "metadata={op_name=\"a");
    CHECK(xplane::tracelens_custom_call_target("__cudnn$convForward") ==
          "custom_call_target=\"__cudnn$convForward\"");
  }

  TEST_CASE("bad input: a clear TraceError, never a crash") {
    // Not a protobuf at all, and an empty file.
    CHECK_THROWS_AS(xplane::load_space_bytes("{\"traceEvents\": []}", "x.json"), TraceError);
    CHECK_THROWS_AS(xplane::load_space_bytes("", "empty.xplane.pb"), TraceError);
    // Checked-in malformed files (tests/malformed/xplane/README.md).
    std::string dir = std::string(JARVIS_SOURCE_DIR) + "/tests/malformed/xplane";
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".pb") continue;
      ++files;
      CAPTURE(entry.path().string());
      CHECK_THROWS_AS(xplane::load_space(entry.path().string()), TraceError);
    }
    CHECK(files >= 8);
    // A damaged HLO proto in /host:metadata names the file and the program.
    for (const char* name :
         {"hlo_length_past_end.pb", "hlo_packed_cut.pb", "hlo_deep_tuple.pb", "hlo_garbage.pb"}) {
      CAPTURE(name);
      std::string path = dir + "/" + name;
      try {
        (void)xplane::load_space(path);
        FAIL("a damaged HLO proto decoded");
      } catch (const TraceError& e) {
        std::string what = e.what();
        CHECK(what.find(path) == 0);
        CHECK(what.find("jit_f(1): a damaged HloProto") != std::string::npos);
      }
    }
    if (!have_samples()) return;
    // Every cut of a real file either decodes (a cut at a plane boundary) or
    // is refused with the file named; the message says it may be truncated.
    std::string bytes = read_bytes(kTeAttn);
    size_t refused = 0;
    for (size_t cut = 1; cut < bytes.size(); cut += 997) {
      try {
        xplane::Space s =
            xplane::load_space_bytes(std::string_view(bytes).substr(0, cut), "cut.pb");
        (void)xplane::to_trace(s);
      } catch (const TraceError& e) {
        ++refused;
        CHECK(std::string(e.what()).find("cut.pb") == 0);
      }
    }
    CHECK(refused > 0);
    // Bytes overwritten inside the HLO protos (the first ~126 KB of the
    // legacy file are its /host:metadata plane): the file decodes, or is
    // refused naming it, and what decodes still bridges and reports.
    std::string legacy = read_bytes(kLegacy);
    size_t damaged = 0, decoded = 0;
    for (size_t at = 200; at < 120000; at += 1531) {
      std::string copy = legacy;
      copy[at] = static_cast<char>(0xff);
      copy[at + 1] = static_cast<char>(0x7f);
      try {
        xplane::Space s = xplane::load_space_bytes(copy, "hlo.pb");
        Trace t = xplane::to_trace(s);
        auto k = xplane::jax_kernels(t);
        (void)xplane::op_category_tables(k);
        (void)xplane::kernel_launchers_unique_args_table(k);
        ++decoded;
      } catch (const TraceError& e) {
        ++damaged;
        CHECK(std::string(e.what()).find("hlo.pb") == 0);
      }
    }
    CHECK(damaged > 0);
    CHECK(decoded > 0);
    try {
      (void)xplane::load_space_bytes(std::string_view(bytes).substr(0, bytes.size() - 3), "t.pb");
      FAIL("a truncated file decoded");
    } catch (const TraceError& e) {
      CHECK(std::string(e.what()).find("truncated") != std::string::npos);
    }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
