// XPlane input (src/xplane): the three real XSpace files of ../shared/jax.
// Expectations come from TraceLens's reference perf-report CSVs (the legacy
// conv trace produced them: its per-GPU totals are the CSVs' to the last
// digit) and from `protoc --decode_raw` output parsed here, independently of
// the reader under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "explore/input_format.h"
#include "golden.h"
#include "report/table.h"
#include "test_loader_support.h"
#include "xplane/kernel_summary.h"
#include "xplane/report.h"
#include "xplane/space.h"

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

namespace fs = std::filesystem;

const std::string kJaxDir = std::string(JARVIS_SHARED_DIR) + "/jax";
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
    CHECK(files >= 4);
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
    try {
      (void)xplane::load_space_bytes(std::string_view(bytes).substr(0, bytes.size() - 3), "t.pb");
      FAIL("a truncated file decoded");
    } catch (const TraceError& e) {
      CHECK(std::string(e.what()).find("truncated") != std::string::npos);
    }
  }
}
