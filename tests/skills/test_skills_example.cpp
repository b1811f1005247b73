// The example trace shipped in examples/: it loads, is well formed the way the
// PyTorch profiler writes traces (launch linking, host nesting, op args), and
// is exactly what examples/gen_example_trace.py produces.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/gpu_timeline.h"
#include "trace/loader.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;

namespace {

const fs::path kExampleDir = fs::path(JARVIS_SOURCE_DIR) / "examples";
const fs::path kExampleTrace = kExampleDir / "example_trace.json.gz";

const Trace& example() {
  static const Trace trace = load_trace(kExampleTrace.string());
  return trace;
}

std::string gunzip(const fs::path& p) {
  gzFile f = gzopen(p.string().c_str(), "rb");
  REQUIRE_MESSAGE(f != nullptr, "cannot open " << p.string());
  std::string out;
  char buf[1 << 15];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

bool host_cat(Cat c) {
  return c == Cat::CpuOp || c == Cat::PythonFunction || c == Cat::CudaRuntime ||
         c == Cat::CudaDriver;
}

}  // namespace

TEST_SUITE("example_trace") {
  TEST_CASE("example trace: loads as a CUDA trace from one H100") {
    const Trace& t = example();
    CHECK(t.platform == Platform::Cuda);
    CHECK(t.gpu_name() == "NVIDIA H100 80GB HBM3");
    CHECK(t.file_bytes < 200 * 1024);
    std::map<Cat, int> counts;
    std::set<int64_t> streams;
    for (const Event& e : t.events) {
      counts[e.cat]++;
      if (e.is_gpu()) streams.insert(t.stream(e));
    }
    CHECK(counts[Cat::CpuOp] > 200);
    CHECK(counts[Cat::PythonFunction] > 100);
    CHECK(counts[Cat::Kernel] > 50);
    CHECK(counts[Cat::GpuMemcpy] >= 1);
    CHECK(counts[Cat::GpuMemset] >= 1);
    CHECK(counts[Cat::UserAnnotation] >= 1);
    CHECK(streams == std::set<int64_t>{7});
    ProcId gpu{0, false}, stream{7, false};
    CHECK(t.process_label(gpu) == "GPU 0");
    CHECK(t.thread_name(gpu, stream) == "stream 7 ");
  }

  TEST_CASE("example trace: every GPU event is linked to its launch by an ac2g flow pair") {
    const Trace& t = example();
    std::map<int64_t, Uid> runtime_by_corr, flow_start, flow_end;
    for (Uid u = 0; u < t.events.size(); ++u) {
      const Event& e = t.events[u];
      if (e.is_runtime() && t.correlation(e) != kNoInt) runtime_by_corr[t.correlation(e)] = u;
      if (e.cat == Cat::Ac2g && e.ph == Phase::FlowStart) flow_start[t.flow_id(e)] = u;
      if (e.cat == Cat::Ac2g && e.ph == Phase::FlowEnd) flow_end[t.flow_id(e)] = u;
    }
    int linked = 0;
    for (Uid u = 0; u < t.events.size(); ++u) {
      const Event& g = t.events[u];
      if (!g.is_gpu()) continue;
      CAPTURE(t.name(u));
      REQUIRE(runtime_by_corr.count(t.correlation(g)));
      REQUIRE(flow_start.count(t.correlation(g)));
      REQUIRE(flow_end.count(t.correlation(g)));
      const Event& rt = t.events[runtime_by_corr[t.correlation(g)]];
      const Event& s = t.events[flow_start[t.correlation(g)]];
      const Event& f = t.events[flow_end[t.correlation(g)]];
      CHECK(t.pid(s) == t.pid(rt));
      CHECK(t.tid(s) == t.tid(rt));
      CHECK(s.ts() == rt.ts());
      CHECK(t.pid(f) == t.pid(g));
      CHECK(t.tid(f) == t.tid(g));
      CHECK(f.ts() == g.ts());
      CHECK(f.bp_enclosing);
      CHECK(t.external_id(rt) == t.external_id(g));
      CHECK(g.ts() >= rt.ts());  // the GPU runs work after it was launched
      ++linked;
    }
    CHECK(linked > 50);
  }

  TEST_CASE("example trace: host events nest by time and GPU work does not overlap") {
    const Trace& t = example();
    std::vector<Uid> host, gpu;
    for (Uid u = 0; u < t.events.size(); ++u) {
      if (t.events[u].ph != Phase::Complete) continue;
      if (host_cat(t.events[u].cat)) host.push_back(u);
      if (t.events[u].is_gpu()) gpu.push_back(u);
    }
    auto by_start = [&](Uid a, Uid b) {
      const Event &x = t.events[a], &y = t.events[b];
      return x.ts() != y.ts() ? x.ts() < y.ts() : x.dur() > y.dur();
    };
    std::sort(host.begin(), host.end(), by_start);
    std::vector<Uid> open;
    for (Uid u : host) {
      const Event& e = t.events[u];
      while (!open.empty() && t.events[open.back()].end() <= e.ts()) open.pop_back();
      if (!open.empty()) {
        CAPTURE(t.name(open.back()));
        CAPTURE(t.name(u));
        CHECK(e.end() <= t.events[open.back()].end());
      }
      open.push_back(u);
    }
    std::sort(gpu.begin(), gpu.end(), by_start);
    for (size_t i = 1; i < gpu.size(); ++i)
      CHECK(t.events[gpu[i - 1]].end() <= t.events[gpu[i]].ts());
  }

  TEST_CASE("example trace: the call tree links every GPU event to the op that launched it") {
    const Trace& t = example();
    CallTree tree(t, TreeOptions{.include_python_frames = true});
    CHECK(tree.linking_key() == "correlation");
    for (Uid u = 0; u < t.events.size(); ++u) CHECK_FALSE(tree.is_bleed_skipped(u));
    std::map<std::string, std::set<std::string>> launchers_of;  // kernel family -> launcher names
    for (Uid u = 0; u < t.events.size(); ++u) {
      if (!t.events[u].is_gpu()) continue;
      CAPTURE(t.name(u));
      REQUIRE(tree.is_linked(u));
      Uid launcher = tree.launcher(u);
      REQUIRE(launcher != kNoUid);
      CHECK(t.events[launcher].cat == Cat::CpuOp);
      std::string name(t.name(u));
      std::string family = name.rfind("sm90_xmma_gemm", 0) == 0                 ? "gemm"
                           : name.find("flash_fwd_kernel") != std::string::npos ? "flash"
                           : name.rfind("Memcpy", 0) == 0                       ? "memcpy"
                           : name.rfind("Memset", 0) == 0                       ? "memset"
                                                                                : "other";
      launchers_of[family].insert(std::string(t.name(launcher)));
      // Module frames sit above every op of the model (with_modules traces).
      if (family == "gemm" || family == "flash") CHECK(tree.nn_module_stack(u).size() >= 2);
    }
    CHECK(launchers_of["gemm"] == std::set<std::string>{"aten::addmm", "aten::mm"});
    CHECK(launchers_of["flash"] == std::set<std::string>{"aten::_flash_attention_forward"});
    CHECK(launchers_of["memcpy"] == std::set<std::string>{"aten::copy_"});
    CHECK(launchers_of["memset"] == std::set<std::string>{"aten::addmm"});
  }

  TEST_CASE("example trace: GPU timeline is mostly compute with visible idle and memcpy") {
    const Trace& t = example();
    CallTree tree(t);
    GpuTimeline tl = compute_gpu_timeline(t, tree);
    REQUIRE(tl.total_time > 0);
    double compute_pct = 100 * tl.computation_time / tl.total_time;
    double idle_pct = 100 * tl.idle_time / tl.total_time;
    // examples/README.md describes the trace as ~80 % busy, ~20 % idle.
    CHECK(compute_pct > 70);
    CHECK(compute_pct < 90);
    CHECK(idle_pct > 15);  // above the cpu_idle analysis threshold on purpose
    CHECK(idle_pct < 30);
    CHECK(tl.exposed_memcpy_time > 0);
    CHECK(tl.total_comm_time == 0);
  }

  TEST_CASE("example trace: cpu ops carry shape args the way Kineto records them") {
    const Trace& t = example();
    std::set<std::string> names;
    for (Uid u = 0; u < t.events.size(); ++u) {
      if (t.events[u].cat != Cat::CpuOp) continue;
      CAPTURE(t.name(u));
      names.insert(std::string(t.name(u)));
      const PyValue* dims = t.arg(u, "Input Dims");
      const PyValue* types = t.arg(u, "Input type");
      const PyValue* strides = t.arg(u, "Input Strides");
      const PyValue* concrete = t.arg(u, "Concrete Inputs");
      REQUIRE(dims);
      REQUIRE(types);
      REQUIRE(strides);
      REQUIRE(concrete);
      REQUIRE(dims->is_list());
      CHECK(types->size() == dims->size());
      CHECK(strides->size() == dims->size());
      CHECK(concrete->size() == dims->size());
      for (size_t k = 0; k < concrete->size(); ++k) CHECK((*concrete)[k].is_string());
      CHECK(t.external_id(t.events[u]) != kNoInt);
    }
    for (const char* op :
         {"aten::linear", "aten::addmm", "aten::mm", "aten::layer_norm", "aten::native_layer_norm",
          "aten::_scaled_dot_product_flash_attention", "aten::_flash_attention_forward",
          "aten::add", "aten::mul", "aten::silu", "aten::copy_"}) {
      CAPTURE(op);
      CHECK(names.count(op) == 1);
    }
  }

  TEST_CASE("example trace: the generator reproduces the shipped file") {
    if (std::system("python3 -c pass > /dev/null 2>&1") != 0) {
      FAIL("python3 is needed to check examples/gen_example_trace.py");
    }
    fs::path out = fs::temp_directory_path() /
                   ("jarvis_example_trace_" + std::to_string(::getpid()) + ".json.gz");
    std::string cmd = "python3 '" + (kExampleDir / "gen_example_trace.py").string() + "' --out '" +
                      out.string() + "' > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK(gunzip(out) == gunzip(kExampleTrace));
    fs::remove(out);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
