// XLA collectives in an XPlane trace: no shared sample has any, so the test
// writes a small real XSpace (protobuf text format against
// tests/xplane/data/xspace_subset.proto, encoded with `protoc --encode`): one
// GPU plane whose NCCL kernels name the HLO collectives of one program
// (all-reduce-start over the module's 8 replicas, reduce-scatter inside an
// async-start, all-gather-start over groups of 4, collective-permute-start,
// all-to-all) and a fusion named after a collective. Message sizes and the
// nccl-tests bandwidths are computed here from the shapes and durations the
// test writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "categories/prepare_trace.h"
#include "collectives/collectives.h"
#include "explore/input_format.h"
#include "insights/trace_health.h"
#include "report/coll_analysis.h"
#include "trace/trace.h"
#include "tree/call_tree.h"
#include "xplane/kernel_summary.h"
#include "xplane/report.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

namespace fs = std::filesystem;

bool have_protoc() {
  return std::system("protoc --version >/dev/null 2>&1") == 0;
}

struct Shape {
  int type;  // PrimitiveType: F32 11, BF16 16
  std::vector<int64_t> dims;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int bytes_per_element() const { return type == 11 ? 4 : 2; }
};

std::string shape_text(const Shape& s) {
  std::string out = fmt::format("element_type: {}", s.type);
  for (int64_t d : s.dims) out += fmt::format(" dimensions: {}", d);
  out += " layout {";
  for (size_t k = s.dims.size(); k-- > 0;) out += fmt::format(" minor_to_major: {}", k);
  return out + " }";
}

std::string tuple_text(const std::vector<Shape>& parts) {
  std::string out = "element_type: 13";
  for (const Shape& p : parts) out += " tuple_shapes { " + shape_text(p) + " }";
  return out;
}

// One collective kernel the test writes, and what it expects.
struct Case {
  std::string kernel;      // GPU event name
  std::string hlo_op;      // the instruction it names
  std::string collective;  // record_param_comms name jarvis gives it
  collectives::CollectiveType type;
  Shape in;
  int64_t group;
  int64_t out_elements;
  double dur_us;
  std::string dtype;
};

const Shape kAllReduceIn{11, {1024, 1024}};  // f32, 4 MiB
const Shape kScatterIn{16, {8192, 1024}};    // bf16, 16 MiB
const Shape kScatterOut{16, {1024, 1024}};
const Shape kGatherIn{16, {512, 256}};
const Shape kGatherOut{16, {2048, 256}};  // groups of 4
const Shape kPermute{11, {256, 256}};
const Shape kAllToAll{11, {64, 64}};
constexpr int64_t kReplicas = 8;

std::vector<Case> cases() {
  return {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all-reduce-start.1", "allreduce",
       collectives::CollectiveType::AllReduce, kAllReduceIn, kReplicas, kAllReduceIn.elements(),
       250.0, "Float"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce-scatter-start", "reducescatter",
       collectives::CollectiveType::ReduceScatter, kScatterIn, kReplicas, kScatterOut.elements(),
       120.0, "BFloat16"},
      {"ncclDevKernel_AllGather_RING_LL", "all-gather-start.2", "allgather",
       collectives::CollectiveType::AllGather, kGatherIn, 4, kGatherOut.elements(), 40.0,
       "BFloat16"},
      {"ncclDevKernel_SendRecv", "collective-permute-start.1", "collective_permute",
       collectives::CollectiveType::SendRecv, kPermute, 2, kPermute.elements(), 12.5, "Float"},
      {"ncclDevKernel_AllToAll", "all-to-all.3", "all_to_all",
       collectives::CollectiveType::AllToAll, kAllToAll, kReplicas, kAllToAll.elements(), 6.0,
       "Float"},
  };
}

constexpr const char* kFusion = "loop_all_reduce_fusion";  // a fusion, not a collective
constexpr double kFusionUs = 30.0;
constexpr const char* kNoHlo = "ncclDevKernel_Generic";  // names no HLO instruction
constexpr double kNoHloUs = 8.0;

std::string group_text(const std::vector<int64_t>& ids) {
  std::string out = "replica_groups {";
  for (int64_t id : ids) out += fmt::format(" replica_ids: {}", id);
  return out + " }";
}

std::string instruction(int64_t id, const std::string& name, const std::string& opcode,
                        const std::string& shape, const std::string& extra) {
  return fmt::format("instructions {{ name: \"{}\" opcode: \"{}\" shape {{ {} }} id: {} {} }}\n",
                     name, opcode, shape, id, extra);
}

// The XSpace in text format: /host:metadata with the program's HloProto, and
// /device:GPU:0 with one kernel per case plus the fusion, 10 us apart.
std::string xspace_text() {
  const std::vector<int64_t> all{0, 1, 2, 3, 4, 5, 6, 7};
  std::string async_comp = "computations { name: \"async_rs\" id: 2 root_id: 21\n";
  async_comp += instruction(20, "p.rs", "parameter", shape_text(kScatterIn), "");
  async_comp += instruction(21, "reduce-scatter.1", "reduce-scatter", shape_text(kScatterOut),
                            "operand_ids: 20 " + group_text(all));
  async_comp += "}\n";
  std::string main = "computations { name: \"main\" id: 3 root_id: 11\n";
  main += instruction(1, "p0", "parameter", shape_text(kAllReduceIn), "");
  main += instruction(2, "p1", "parameter", shape_text(kScatterIn), "");
  main += instruction(3, "p2", "parameter", shape_text(kGatherIn), "");
  main += instruction(4, "p3", "parameter", shape_text(kPermute), "");
  main += instruction(5, "p4", "parameter", shape_text(kAllToAll), "");
  // No replica groups: all replicas of the module (device_assignment).
  main += instruction(10, "all-reduce-start.1", "all-reduce-start", shape_text(kAllReduceIn),
                      "operand_ids: 1");
  main += instruction(11, "all-reduce-done.1", "all-reduce-done", shape_text(kAllReduceIn),
                      "operand_ids: 10");
  main +=
      instruction(12, "reduce-scatter-start", "async-start", tuple_text({kScatterIn, kScatterOut}),
                  "operand_ids: 2 called_computation_ids: 2");
  main += instruction(13, kFusion, "fusion", shape_text(kAllReduceIn),
                      "fusion_kind: \"kLoop\" operand_ids: 1");
  main +=
      instruction(14, "all-gather-start.2", "all-gather-start", tuple_text({kGatherIn, kGatherOut}),
                  "operand_ids: 3 " + group_text({0, 1, 2, 3}) + " " + group_text({4, 5, 6, 7}));
  main += instruction(15, "collective-permute-start.1", "collective-permute-start",
                      tuple_text({kPermute, kPermute, Shape{8, {}}, Shape{8, {}}}),
                      "operand_ids: 4 channel_id: 3");
  main += instruction(16, "all-to-all.3", "all-to-all", shape_text(kAllToAll),
                      "operand_ids: 5 " + group_text(all));
  main += "}\n";
  std::string hlo =
      "hlo_module { name: \"jit_step\" entry_computation_name: \"main\" id: 7\n" + async_comp +
      main +
      fmt::format("device_assignment {{ replica_count: {} computation_count: 1 }} }}", kReplicas);

  std::string out = "planes { id: 1 name: \"/host:metadata\"\n";
  out += "  stat_metadata { key: 1 value { id: 1 name: \"Hlo Proto\" } }\n";
  out +=
      "  event_metadata { key: 1 value { id: 1 name: \"jit_step(7)\" stats { metadata_id: 1 hlo "
      "{ " +
      hlo + " } } } }\n}\n";
  out += "planes { id: 2 name: \"/device:GPU:0\"\n";
  for (auto [id, name] : std::vector<std::pair<int, const char*>>{
           {1, "hlo_op"}, {2, "hlo_module"}, {3, "correlation_id"}, {4, "program_id"}})
    out += fmt::format("  stat_metadata {{ key: {} value {{ id: {} name: \"{}\" }} }}\n", id, id,
                       name);
  auto all_cases = cases();
  std::vector<std::pair<std::string, std::pair<std::string, double>>> kernels;
  for (const Case& c : all_cases) kernels.push_back({c.kernel, {c.hlo_op, c.dur_us}});
  kernels.push_back({kFusion, {kFusion, kFusionUs}});
  kernels.push_back({kNoHlo, {"", kNoHloUs}});  // as xprof >= 2.20.8 writes it: no hlo_op
  for (size_t k = 0; k < kernels.size(); ++k)
    out += fmt::format("  event_metadata {{ key: {} value {{ id: {} name: \"{}\" }} }}\n", k + 1,
                       k + 1, kernels[k].first);
  out += "  lines { id: 17 name: \"Stream #17(Kernel)\" timestamp_ns: 1000000\n";
  int64_t offset_ps = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const auto dur_ps = static_cast<int64_t>(std::llround(kernels[k].second.second * 1e6));
    const std::string& op = kernels[k].second.first;
    out += fmt::format(
        "    events {{ metadata_id: {} offset_ps: {} duration_ps: {} {}"
        "stats {{ metadata_id: 3 int64_value: {} }} stats {{ metadata_id: 4 int64_value: 7 }} }}\n",
        k + 1, offset_ps, dur_ps,
        op.empty() ? std::string()
                   : fmt::format("stats {{ metadata_id: 1 str_value: \"{}\" }} stats {{ "
                                 "metadata_id: 2 str_value: \"jit_step\" }} ",
                                 op),
        100 + k);
    offset_ps += dur_ps + 10'000'000;  // 10 us gap
  }
  out += "  }\n}\n";
  return out;
}

// Encodes the XSpace with protoc into DIR/collectives.xplane.pb.
std::string encode(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path text = dir / "collectives.textproto";
  const fs::path pb = dir / "collectives.xplane.pb";
  {
    std::ofstream f(text);
    f << xspace_text();
  }
  const std::string cmd = fmt::format(
      "protoc --proto_path='{}/tests/xplane/data' --encode=xt.XSpace xspace_subset.proto < '{}' > "
      "'{}'",
      JARVIS_SOURCE_DIR, text.string(), pb.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  return pb.string();
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fmt::format("jarvis_xcoll{}", ::getpid());
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_SUITE("xplane") {
  TEST_CASE("XLA collectives: message sizes from the HLO shapes, nccl-tests bandwidths") {
    if (!have_protoc()) {
      WARN_MESSAGE(false, "protoc not installed (apt-get install protobuf-compiler): skipped");
      return;
    }
    TempDir tmp;
    const std::string path = encode(tmp.path);
    Trace trace = load_any_trace(path);

    // The fusion named after a collective is no collective kernel.
    size_t fusions = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      if (trace.name(u) != kFusion) continue;
      ++fusions;
      CHECK(trace.arg(u, "hlo_opcode")->s == "fusion");
      CHECK(trace.arg(u, "Collective name") == nullptr);
      CHECK_FALSE(is_collective_kernel(trace, u));
      CHECK(xplane::kernel_op_category(trace.name(u), trace.arg(u, "hlo_op")->s) ==
            xplane::kXlaCategory);
    }
    CHECK(fusions == 1);

    const std::vector<Case> expected = cases();
    auto instances = collectives::collective_instances(trace);
    // The five, then the NCCL kernel without hlo_op: a collective of unknown size.
    REQUIRE(instances.size() == expected.size() + 1);
    CHECK(instances.back().kernel_name == kNoHlo);
    CHECK(instances.back().collective.empty());
    CHECK(std::isnan(instances.back().bw.busbw_gbps));
    CallTree tree(trace);
    // load_trace's collectives summary (summarize_trace): the all-reduce has
    // the most time; its mean bus bandwidth is its one kernel's.
    collectives::TraceCollectiveSummary summary = collectives::summarize_trace(trace, tree);
    CHECK(summary.count == expected.size() + 1);
    REQUIRE_FALSE(summary.top.empty());
    CHECK(summary.top[0].collective == "allreduce");
    CHECK(summary.top[0].mean_busbw_gbps == doctest::Approx(instances[0].bw.busbw_gbps));
    insights::TraceHealth health = insights::trace_health(trace, tree);
    bool noted = false;
    for (const std::string& w : health.warnings)
      noted = noted || w.find("XPlane: 1 NCCL/RCCL kernels name no HLO collective") == 0;
    CHECK(noted);
    for (size_t k = 0; k < expected.size(); ++k) {
      const Case& c = expected[k];
      const collectives::CollectiveInstance& inst = instances[k];  // start order = case order
      CAPTURE(c.hlo_op);
      CHECK(inst.kernel_name == c.kernel);
      CHECK(inst.collective == c.collective);
      CHECK(inst.type == c.type);
      CHECK(inst.dtype == c.dtype);
      CHECK(inst.in_msg_nelems == c.in.elements());
      CHECK(inst.kernel.out_msg_nelems.as_double() == static_cast<double>(c.out_elements));
      CHECK(inst.group_size == c.group);
      CHECK(inst.kernel.dur == doctest::Approx(c.dur_us).epsilon(1e-12));
      // nccl-tests: the full buffer (all-gather: its output) over the time,
      // GiB/s as TraceLens writes "GB/s"; bus factor 2(n-1)/n all-reduce,
      // (n-1)/n reduce-scatter / all-gather / all-to-all, 1 send/recv.
      const double bytes =
          static_cast<double>(c.type == collectives::CollectiveType::AllGather ? c.out_elements
                                                                               : c.in.elements()) *
          c.in.bytes_per_element();
      CHECK(inst.msg_size_mb == doctest::Approx(bytes / (1024.0 * 1024.0)).epsilon(1e-12));
      const double algbw = bytes / (1024.0 * 1024.0 * 1024.0) / (c.dur_us * 1e-6);
      const double n = static_cast<double>(c.group);
      const double factor = c.type == collectives::CollectiveType::AllReduce  ? 2 * (n - 1) / n
                            : c.type == collectives::CollectiveType::SendRecv ? 1.0
                                                                              : (n - 1) / n;
      CHECK(inst.bw.algbw_gbps == doctest::Approx(algbw).epsilon(1e-12));
      CHECK(inst.bw.busbw_gbps == doctest::Approx(algbw * factor).epsilon(1e-12));
    }
    // The replica groups, as HLO prints them, name the group ("{}": all).
    CHECK(instances[0].process_group == "{}");
    CHECK(instances[1].process_group == "{{0,1,2,3,4,5,6,7}}");  // the async-start's collective
    CHECK(instances[2].process_group == "{{0,1,2,3},{4,5,6,7}}");

    // The `collectives` command / collective_report tool (collective_report
    // over the file) and `jarvis report`'s rank_collectives sheet: the same rows.
    auto report = collectives::collective_report({path});
    CHECK(report.single_rank);
    REQUIRE_FALSE(report.tables.empty());
    const Table& rank = report.tables.front();
    CHECK(rank.rows.size() == expected.size() + 1);
    bool coll_sheet = false;
    for (const Table& t : analysis::xplane_report_tables(trace)) {
      if (t.name != rank.name) continue;
      coll_sheet = true;
      CHECK(t.to_csv() == rank.to_csv());
    }
    CHECK(coll_sheet);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
