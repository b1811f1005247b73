// What a GPU event of an XPlane trace is (kernel, copy, memset) and which GPU
// ran it, read from what XLA's GPU tracer records (src/xplane/to_trace.cpp):
//
// * the two JAX 0.11.2 profiles of ../shared/ab_pairs (NVIDIA H200, CUDA),
//   whose kernels, copies and memsets share one "Stream #14(Memset,Compute,
//   MemcpyD2D)" line: per event its memcpy_details / Memset_details /
//   kernel_details stat, kernel count and busy time, and the GPU named by the
//   plane's gpu_device_name stat, all recomputed from `protoc --decode` output
//   with a schema written here (field numbers of xla/tsl/profiler/protobuf/
//   xplane.proto), independently of the reader under test;
// * the three ROCm samples of ../shared/jax, read the same way (no change);
// * an XSpace written here (protoc --encode against data/xspace_subset.proto)
//   with events that carry no details stat, read from their line's name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "explore/input_format.h"
#include "explore/trace_store.h"
#include "golden.h"
#include "report/gpu_timeline.h"
#include "trace/trace.h"
#include "tree/call_tree.h"
#include "xplane/space.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

namespace fs = std::filesystem;

bool have_protoc() {
  return std::system("protoc --version >/dev/null 2>&1") == 0;
}

std::string ab_pair(const std::string& file) {
  return golden::shared_dir() + "/ab_pairs/" + file;
}

std::string jax_sample(const std::string& file) {
  return golden::shared_dir() + "/jax/" + file;
}

// The XSpace fields this test reads, numbered as in xplane.proto (proto2: no
// UTF-8 check on the host planes' strings).
constexpr std::string_view kSpaceSchema = R"P(syntax = "proto2";
package k;
message XSpace { repeated XPlane planes = 1; }
message XPlane { optional int64 id = 1; optional string name = 2; repeated XLine lines = 3;
  map<int64, XEventMetadata> event_metadata = 4; map<int64, XStatMetadata> stat_metadata = 5;
  repeated XStat stats = 6; }
message XLine { optional int64 id = 1; optional string name = 2; optional int64 timestamp_ns = 3;
  repeated XEvent events = 4; optional string display_name = 11; }
message XEvent { optional int64 metadata_id = 1; optional int64 offset_ps = 2;
  optional int64 duration_ps = 3; repeated XStat stats = 4; optional int64 num_occurrences = 5; }
message XEventMetadata { optional int64 id = 1; optional string name = 2;
  repeated XStat stats = 5; }
message XStatMetadata { optional int64 id = 1; optional string name = 2; }
message XStat { optional int64 metadata_id = 1; optional double double_value = 2;
  optional uint64 uint64_value = 3; optional int64 int64_value = 4; optional string str_value = 5;
  optional bytes bytes_value = 6; optional uint64 ref_value = 7; }
)P";

// One node of protoc's text format: `key: value` leaves, `key { ... }` messages.
struct Node {
  std::string key, value;
  std::vector<Node> children;
  std::vector<const Node*> all(std::string_view k) const {
    std::vector<const Node*> out;
    for (const Node& c : children)
      if (c.key == k) out.push_back(&c);
    return out;
  }
  const Node* first(std::string_view k) const {
    for (const Node& c : children)
      if (c.key == k) return &c;
    return nullptr;
  }
  // A string leaf without its quotes (\" and \\ unescaped).
  std::string text(std::string_view k) const {
    const Node* c = first(k);
    if (!c || c->value.size() < 2) return "";
    std::string out;
    for (size_t i = 1; i + 1 < c->value.size(); ++i) {
      if (c->value[i] == '\\' && i + 2 < c->value.size()) ++i;
      out.push_back(c->value[i]);
    }
    return out;
  }
  int64_t num(std::string_view k) const {
    const Node* c = first(k);
    return c && c->children.empty() && !c->value.empty() ? std::stoll(c->value) : 0;
  }
};

// `protoc --decode` of the file; only the /device:GPU planes are kept (the
// host planes and the HLO protos are most of the text).
std::vector<Node> decode_gpu_planes(const std::string& path) {
  fs::path dir = fs::temp_directory_path() / fmt::format("jarvis_xkinds{}", ::getpid());
  fs::create_directories(dir);
  {
    std::ofstream schema(dir / "xkinds.proto");
    schema << kSpaceSchema;
  }
  std::string cmd = fmt::format("protoc --proto_path='{}' --decode=k.XSpace xkinds.proto < '{}'",
                                dir.string(), path);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) text.append(buf, n);
  pipe.reset();
  fs::remove_all(dir);
  std::vector<Node> planes;
  Node root;
  std::vector<Node*> stack{&root};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t k = line.find_first_not_of(' ');
    if (k == std::string::npos) continue;
    std::string_view l(line.c_str() + k);
    if (l == "}") {
      stack.pop_back();
      if (stack.size() == 1) {  // a plane ends: keep it when it is a GPU's
        if (root.children.back().text("name").rfind("/device:GPU:", 0) == 0)
          planes.push_back(std::move(root.children.back()));
        root.children.pop_back();
      }
      continue;
    }
    Node node;
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
  return planes;
}

int64_t union_length(std::vector<std::pair<int64_t, int64_t>> iv) {
  if (iv.empty()) return 0;
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, cs = iv[0].first, ce = iv[0].second;
  for (auto [s, e] : iv) {
    if (s > ce) {
      total += ce - cs;
      cs = s;
      ce = e;
    } else {
      ce = std::max(ce, e);
    }
  }
  return total + ce - cs;
}

// Per XSpace, from the protoc decode: the GPU events by the details stat XLA
// records on each (kernel_details, memcpy_details, Memset_details, on the
// event or its metadata), their intervals in ps, and the GPU planes'
// gpu_device_name.
struct RawKinds {
  size_t kernels = 0, memcpy = 0, memset = 0, none = 0;  // none: no details stat
  std::vector<std::pair<int64_t, int64_t>> kernel_ps, memcpy_ps, memset_ps;
  bool whole_ns = true;  // every offset and duration a whole ns
  std::string device_name;
};

RawKinds raw_kinds(const std::string& path) {
  RawKinds r;
  for (const Node& plane : decode_gpu_planes(path)) {
    std::map<int64_t, std::string> stat_names;
    for (const Node* entry : plane.all("stat_metadata"))
      if (const Node* v = entry->first("value")) stat_names[entry->num("key")] = v->text("name");
    std::map<int64_t, const Node*> metas;
    for (const Node* entry : plane.all("event_metadata"))
      if (const Node* v = entry->first("value")) metas[entry->num("key")] = v;
    for (const Node* s : plane.all("stats"))
      if (stat_names[s->num("metadata_id")] == "gpu_device_name")
        r.device_name = s->text("str_value");
    for (const Node* line : plane.all("lines")) {
      const int64_t ts_ps = line->num("timestamp_ns") * 1000;
      for (const Node* ev : line->all("events")) {
        if (ev->num("num_occurrences") > 0) continue;
        std::vector<std::string> names;
        for (const Node* s : ev->all("stats")) names.push_back(stat_names[s->num("metadata_id")]);
        if (auto it = metas.find(ev->num("metadata_id")); it != metas.end())
          for (const Node* s : it->second->all("stats"))
            names.push_back(stat_names[s->num("metadata_id")]);
        auto has = [&](const char* n) {
          return std::find(names.begin(), names.end(), n) != names.end();
        };
        const int64_t start = ts_ps + ev->num("offset_ps");
        const std::pair<int64_t, int64_t> iv{start, start + ev->num("duration_ps")};
        r.whole_ns =
            r.whole_ns && ev->num("offset_ps") % 1000 == 0 && ev->num("duration_ps") % 1000 == 0;
        if (has("memcpy_details")) {
          ++r.memcpy;
          r.memcpy_ps.push_back(iv);
        } else if (has("Memset_details")) {
          ++r.memset;
          r.memset_ps.push_back(iv);
        } else if (has("kernel_details")) {
          ++r.kernels;
          r.kernel_ps.push_back(iv);
        } else {
          ++r.none;
        }
      }
    }
  }
  return r;
}

// jarvis's load of the same file: its GPU events by category, in ns.
struct Loaded {
  size_t kernels = 0, memcpy = 0, memset = 0;
  size_t kernels_with_details = 0, memcpy_with_details = 0, memset_with_details = 0;
  std::vector<std::pair<int64_t, int64_t>> kernel_ns;
  int64_t kernel_sum_ns = 0;
};

Loaded loaded_kinds(const Trace& trace) {
  Loaded l;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    switch (e.cat) {
      case Cat::Kernel:
        ++l.kernels;
        l.kernels_with_details += trace.arg(u, "kernel_details") != nullptr;
        l.kernel_ns.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
        l.kernel_sum_ns += e.dur_ns;
        break;
      case Cat::GpuMemcpy:
        ++l.memcpy;
        l.memcpy_with_details += trace.arg(u, "memcpy_details") != nullptr;
        break;
      case Cat::GpuMemset:
        ++l.memset;
        l.memset_with_details += trace.arg(u, "Memset_details") != nullptr;
        break;
      default:
        break;
    }
  }
  return l;
}

// What the test asserts for each CUDA profile, as protoc shows it (the test
// recomputes every number from the file too).
struct Expected {
  const char* file;
  size_t kernels, memcpy, memset;
  int64_t kernel_busy_ps;  // union of the kernel intervals
  int64_t kernel_sum_ps;   // sum of the kernel durations
};

constexpr Expected kCudaProfiles[] = {
    // op by op: every jitted primitive its own program; host-to-device
    // copies on their own "Stream #15(MemcpyH2D)" line, the rest on
    // "Stream #14(Memset,Compute,MemcpyD2D)".
    {"s_jax_A_op_by_op.xplane.pb", 312, 198, 33, 2'757'209'000, 2'777'911'000},
    // one jit of the SGD step: kernels (18 of them in a CUDA graph) and
    // memsets on "Stream #14(Memset,Compute)", no copies.
    {"s_jax_B_jit.xplane.pb", 141, 0, 33, 1'923'373'000, 2'106'864'000},
};

}  // namespace

TEST_SUITE("xplane") {
  TEST_CASE("CUDA XPlane: kernels, copies and memsets by their details stat, and the GPU named") {
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    for (const Expected& x : kCudaProfiles) {
      const std::string path = ab_pair(x.file);
      CAPTURE(path);
      if (!fs::exists(path)) {
        WARN_MESSAGE(false, path << " not found (the shared data ../shared/ab_pairs): skipped");
        continue;
      }
      const RawKinds raw = raw_kinds(path);
      // Every GPU event of these profiles says what it is.
      CHECK(raw.none == 0);
      CHECK(raw.whole_ns);
      CHECK(raw.kernels == x.kernels);
      CHECK(raw.memcpy == x.memcpy);
      CHECK(raw.memset == x.memset);
      CHECK(union_length(raw.kernel_ps) == x.kernel_busy_ps);
      int64_t raw_sum = 0;
      for (auto [s, e] : raw.kernel_ps) raw_sum += e - s;
      CHECK(raw_sum == x.kernel_sum_ps);
      CHECK(raw.device_name == "NVIDIA H200");

      CHECK(detect_input_format(path) == InputFormat::Xplane);
      const Trace trace = load_any_trace(path);
      CHECK(trace.platform == Platform::Cuda);
      const Loaded got = loaded_kinds(trace);
      CHECK(got.kernels == raw.kernels);
      CHECK(got.memcpy == raw.memcpy);
      CHECK(got.memset == raw.memset);
      CHECK(got.kernels_with_details == got.kernels);
      CHECK(got.memcpy_with_details == got.memcpy);
      CHECK(got.memset_with_details == got.memset);
      // Whole ns in the file: the ns intervals are exact.
      CHECK(union_length(got.kernel_ns) * 1000 == union_length(raw.kernel_ps));
      CHECK(got.kernel_sum_ns * 1000 == raw_sum);

      // The GPU timeline over every GPU event: kernels and memsets are
      // computation (as in a Kineto trace), copies memcpy.
      const CallTree tree(trace);
      const GpuTimeline tl = compute_gpu_timeline(trace, tree, /*include_unlinked=*/true);
      std::vector<std::pair<int64_t, int64_t>> comp = raw.kernel_ps, all;
      comp.insert(comp.end(), raw.memset_ps.begin(), raw.memset_ps.end());
      all = comp;
      all.insert(all.end(), raw.memcpy_ps.begin(), raw.memcpy_ps.end());
      CHECK(tl.event_count == raw.kernels + raw.memcpy + raw.memset);
      CHECK(tl.computation_time ==
            doctest::Approx(static_cast<double>(union_length(comp)) / 1e6).epsilon(1e-9));
      CHECK(tl.total_memcpy_time ==
            doctest::Approx(static_cast<double>(union_length(raw.memcpy_ps)) / 1e6).epsilon(1e-9));
      CHECK(tl.busy_time ==
            doctest::Approx(static_cast<double>(union_length(all)) / 1e6).epsilon(1e-9));

      // The plane's gpu_device_name is the GPU's name, and names the arch.
      CHECK(trace.gpu_name() == raw.device_name);
      CHECK(detect_arch_name(trace) == "H200");
    }
  }

  TEST_CASE("ROCm XPlane samples: kernels and copies by their details stat, GPU unnamed") {
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    for (const char* file :
         {"jax_conv_minimal_legacy/trace.xplane.pb", "jax_conv_minimal_08/tw003.xplane.pb",
          "te_fused_attn/934987a2fc2f.xplane.pb"}) {
      const std::string path = jax_sample(file);
      CAPTURE(path);
      if (!fs::exists(path)) {
        WARN_MESSAGE(false, path << " not found (the shared data ../shared/jax): skipped");
        continue;
      }
      const RawKinds raw = raw_kinds(path);
      CHECK(raw.none == 0);
      CHECK(raw.kernels > 0);
      const Trace trace = load_any_trace(path);
      const Loaded got = loaded_kinds(trace);
      CHECK(got.kernels == raw.kernels);
      CHECK(got.memcpy == raw.memcpy);
      CHECK(got.memset == raw.memset);
      CHECK(got.kernels_with_details == got.kernels);
      CHECK(got.memcpy_with_details == got.memcpy);
      // No gpu_device_name on these planes: vendor and compute capability.
      CHECK(raw.device_name.empty());
      CHECK(trace.gpu_name().rfind("AMD GPU (compute capability 9.", 0) == 0);
      CHECK(detect_arch_name(trace).empty());
    }
    // The legacy sample's copies (pid 1) and kernels (pid 8), as TraceLens's
    // reference CSVs count them.
    const std::string legacy = jax_sample("jax_conv_minimal_legacy/trace.xplane.pb");
    if (fs::exists(legacy)) {
      const Loaded got = loaded_kinds(load_any_trace(legacy));
      CHECK(got.kernels == 25);
      CHECK(got.memcpy == 53);
      CHECK(got.memset == 0);
    }
  }

  TEST_CASE("GPU events without a details stat are read from their line's name") {
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    // stat 1 kernel_details, 2 memcpy_details, 3 Memset_details,
    // 4 device_vendor, 5 gpu_device_name; event metadata k is "e<k>".
    std::string text = "planes { id: 1 name: \"/device:GPU:0\"\n";
    int id = 1;
    for (const char* name : {"kernel_details", "memcpy_details", "Memset_details", "device_vendor",
                             "gpu_device_name"}) {
      text += fmt::format("  stat_metadata {{ key: {0} value {{ id: {0} name: \"{1}\" }} }}\n", id,
                          name);
      ++id;
    }
    text += "  stats { metadata_id: 4 str_value: \"Nvidia\" }\n";
    text += "  stats { metadata_id: 5 str_value: \"NVIDIA H100 80GB HBM3\" }\n";
    struct Ev {
      const char* line;
      int stat;  // 0: none
      Cat expected;
    };
    const std::vector<Ev> evs = {
        // A shared stream: each event by its stat; one without any is a kernel.
        {"Stream #14(Memset,Compute,MemcpyD2D)", 1, Cat::Kernel},
        {"Stream #14(Memset,Compute,MemcpyD2D)", 2, Cat::GpuMemcpy},
        {"Stream #14(Memset,Compute,MemcpyD2D)", 3, Cat::GpuMemset},
        {"Stream #14(Memset,Compute,MemcpyD2D)", 0, Cat::Kernel},
        // Lines of one kind.
        {"Stream #15(MemcpyH2D)", 0, Cat::GpuMemcpy},
        {"Stream #16(MemcpyD2H,MemcpyOther)", 0, Cat::GpuMemcpy},
        {"Stream #17(Memset)", 0, Cat::GpuMemset},
        {"MemcpyD2H", 0, Cat::GpuMemcpy},
        {"Stream #18(Kernel)", 0, Cat::Kernel},
        {"Stream #2", 0, Cat::Kernel},
        // The stat wins over the line's name.
        {"Stream #19(MemcpyH2D)", 1, Cat::Kernel},
        {"Stream #18(Kernel)", 2, Cat::GpuMemcpy},
    };
    std::map<std::string, int> line_ids;
    for (const Ev& e : evs) line_ids.emplace(e.line, 0);
    int line_id = 100;
    for (auto& [name, lid] : line_ids) lid = line_id++;
    for (size_t k = 0; k < evs.size(); ++k)
      text += fmt::format("  event_metadata {{ key: {0} value {{ id: {0} name: \"e{0}\" }} }}\n",
                          k + 1);
    for (const auto& [name, lid] : line_ids) {
      text += fmt::format("  lines {{ id: {} name: \"{}\" timestamp_ns: 1000\n", lid, name);
      for (size_t k = 0; k < evs.size(); ++k) {
        if (evs[k].line != name) continue;
        text +=
            fmt::format("    events {{ metadata_id: {} offset_ps: {} duration_ps: 1000000 {}}}\n",
                        k + 1, 2'000'000 * k,
                        evs[k].stat ? fmt::format("stats {{ metadata_id: {} str_value: "
                                                  "\"x\" }} ",
                                                  evs[k].stat)
                                    : std::string());
      }
      text += "  }\n";
    }
    text += "}\n";

    const fs::path dir = fs::temp_directory_path() / fmt::format("jarvis_xkline{}", ::getpid());
    fs::create_directories(dir);
    const fs::path pb = dir / "kinds.xplane.pb";
    {
      std::ofstream f(dir / "kinds.textproto");
      f << text;
    }
    const std::string cmd = fmt::format(
        "protoc --proto_path='{}/tests/xplane/data' --encode=xt.XSpace xspace_subset.proto < "
        "'{}' > '{}'",
        JARVIS_SOURCE_DIR, (dir / "kinds.textproto").string(), pb.string());
    REQUIRE(std::system(cmd.c_str()) == 0);
    const Trace trace = xplane::to_trace(xplane::load_space(pb.string()));
    fs::remove_all(dir);

    size_t seen = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      std::string name(trace.name(u));
      if (name.size() < 2 || name[0] != 'e') continue;
      const size_t k = std::stoul(name.substr(1)) - 1;
      REQUIRE(k < evs.size());
      const std::string line = evs[k].line;
      const int stat = evs[k].stat;
      CAPTURE(line);
      CAPTURE(stat);
      CHECK(trace.events[u].cat == evs[k].expected);
      ++seen;
    }
    CHECK(seen == evs.size());
    CHECK(trace.platform == Platform::Cuda);
    CHECK(trace.gpu_name() == "NVIDIA H100 80GB HBM3");
    CHECK(detect_arch_name(trace) == "H100");
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
