// Collectives: nccl-tests bandwidths, per-kernel comm/compute overlap on
// constructed timelines, and the per-instance view of the real 2-rank trace.
#include <doctest/doctest.h>

#include <cmath>

#include "collectives/collectives.h"
#include "golden.h"
#include "report_fixture.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace co = jarvis::collectives;
using jarvis::Uid;

namespace {

co::TimelineKernel kernel(Uid uid, double ts, double dur, int64_t stream, bool collective,
                          int64_t device = 0) {
  co::TimelineKernel k;
  k.uid = uid;
  k.ts = ts;
  k.dur = dur;
  k.stream = stream;
  k.device = device;
  k.is_collective = collective;
  return k;
}

const co::KernelOverlap& find(const std::vector<co::KernelOverlap>& v, Uid uid) {
  for (const auto& o : v)
    if (o.uid == uid) return o;
  FAIL("no overlap entry for uid " << uid);
  return v.front();
}

std::string nccl_trace_dir() {
  return jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0";
}

}  // namespace

TEST_CASE("collectives: nccl-tests bus bandwidth factors") {
  using T = co::CollectiveType;
  CHECK(co::bus_bandwidth_factor(T::AllReduce, 8) == doctest::Approx(14.0 / 8));
  CHECK(co::bus_bandwidth_factor(T::AllGather, 8) == doctest::Approx(7.0 / 8));
  CHECK(co::bus_bandwidth_factor(T::ReduceScatter, 4) == doctest::Approx(3.0 / 4));
  CHECK(co::bus_bandwidth_factor(T::AllToAll, 2) == doctest::Approx(0.5));
  CHECK(co::bus_bandwidth_factor(T::Broadcast, 16) == 1.0);
  CHECK(co::bus_bandwidth_factor(T::Reduce, 16) == 1.0);
  CHECK(std::isnan(co::bus_bandwidth_factor(T::Other, 4)));
  CHECK(co::collective_type("_reduce_scatter_base") == T::ReduceScatter);
  CHECK(co::collective_type("all_gather_into_tensor_coalesced") == T::AllGather);
  CHECK(co::collective_type("barrier") == T::Other);

  // 2 GiB all-reduced by 8 ranks in one second: algbw 2 GiB/s, busbw 3.5.
  auto bw = co::bandwidth(T::AllReduce, 2048.0, 8, 1e6);
  CHECK(bw.algbw_gbps == doctest::Approx(2.0));
  CHECK(bw.busbw_gbps == doctest::Approx(3.5));
  CHECK(std::isnan(co::bandwidth(T::AllReduce, 1.0, 8, 0.0).algbw_gbps));
}

TEST_CASE("collectives: allgather divides the output size, others the input") {
  jarvis::CollectiveKernel k;
  k.dtype = jarvis::PyValue::string("BFloat16");
  k.in_msg_nelems = jarvis::PyValue::integer(1 << 20);
  k.out_msg_nelems = jarvis::PyValue::integer(8 << 20);
  CHECK(co::full_msg_size_mb(k, co::CollectiveType::AllGather) == 16.0);
  CHECK(co::full_msg_size_mb(k, co::CollectiveType::ReduceScatter) == 2.0);
  k.dtype = jarvis::PyValue::string("ComplexFloat");
  CHECK(std::isnan(co::full_msg_size_mb(k, co::CollectiveType::AllReduce)));
}

TEST_CASE("collectives: overlap on a constructed timeline") {
  std::vector<co::TimelineKernel> ks = {
      kernel(1, 100, 100, 2, true),                  // C1 [100, 200) stream 2
      kernel(2, 150, 150, 3, true),                  // C2 [150, 300) stream 3
      kernel(10, 120, 60, 1, false),                 // fully under C1 and C2
      kernel(11, 250, 100, 1, false),                // partly under C2: [250, 300)
      kernel(12, 400, 50, 1, false),                 // after every collective
      kernel(13, 100, 50, 2, false),                 // same stream as C1, before C2
      kernel(14, 100, 100, 1, false, /*device=*/1),  // another GPU
      kernel(15, 90, 220, 1, false),                 // spans both: union [100, 300)
      kernel(16, 200, 10, 1, false),                 // touches C1's end, under C2
  };
  auto ov = co::compute_overlap(ks);
  REQUIRE(ov.size() == 7);
  CHECK(ov[0].uid == 10);  // input order kept
  CHECK(find(ov, 10).overlapped_us == 60.0);
  CHECK(find(ov, 10).collectives == std::vector<Uid>{1, 2});
  CHECK(find(ov, 11).overlapped_us == 50.0);
  CHECK(find(ov, 11).collectives == std::vector<Uid>{2});
  CHECK(find(ov, 12).overlapped_us == 0.0);
  CHECK(find(ov, 12).collectives.empty());
  CHECK(find(ov, 13).overlapped_us == 0.0);
  CHECK(find(ov, 14).overlapped_us == 0.0);
  CHECK(find(ov, 15).overlapped_us == 200.0);
  CHECK(find(ov, 15).dur_us == 220.0);
  CHECK(find(ov, 16).overlapped_us == 10.0);
  CHECK(find(ov, 16).collectives == std::vector<Uid>{2});
}

TEST_CASE("collectives: overlap from a trace, names of the overlapping collectives") {
  const char* json = R"({"traceEvents": [
    {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":7,
     "ts":1000,"dur":500,"args":{"stream":7,"device":0,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":8,
     "ts":1400,"dur":200,"args":{"stream":8,"device":0,"correlation":2}},
    {"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel","pid":0,"tid":8,
     "ts":1700,"dur":50,"args":{"stream":8,"device":0,"correlation":3}}
  ]})";
  jarvis::Trace trace = jarvis::load_trace_from_json(json);
  auto ov = co::kernel_overlap(trace);
  REQUIRE(ov.size() == 2);
  CHECK(ov[0].overlapped_us == 100.0);
  CHECK(co::overlapping_collective_names(trace, ov[0]) ==
        std::vector<std::string>{"ncclKernel_AllReduce_RING_LL_Sum_float"});
  CHECK(ov[1].overlapped_us == 0.0);
}

TEST_CASE("collectives: instances of the real trace carry sequence and bandwidth") {
  const auto& fx = jarvis::testing::report_fixture(nccl_trace_dir());
  auto inst = co::collective_instances(fx.trace);
  REQUIRE(inst.size() == 21);
  for (size_t k = 0; k < inst.size(); ++k) {
    CHECK(inst[k].seq == static_cast<int64_t>(k));  // one process group
    CHECK(inst[k].group_ranks == std::vector<int64_t>{0, 1});
  }
  size_t checked = 0;
  for (const auto& i : inst) {
    if (i.kernel.dur != 2636.669) continue;  // allreduce of 6637568 floats
    CHECK(i.collective == "allreduce");
    const double mib = 6637568.0 * 4 / (1024 * 1024);
    const double algbw = mib / 1024 / (2636.669 / 1e6);
    CHECK(i.msg_size_mb == doctest::Approx(mib));
    CHECK(i.bw.algbw_gbps == doctest::Approx(algbw));
    CHECK(i.bw.busbw_gbps == doctest::Approx(algbw * 2 * (2 - 1) / 2));
    ++checked;
  }
  CHECK(checked == 1);
}

TEST_CASE("collectives: overlap tables of the real trace add up") {
  const auto& fx = jarvis::testing::report_fixture(nccl_trace_dir());
  auto ov = co::kernel_overlap(fx.trace);
  double kernel_us = 0, overlapped_us = 0;
  for (const auto& o : ov) {
    kernel_us += o.dur_us;
    overlapped_us += o.overlapped_us;
    CHECK(o.overlapped_us <= o.dur_us);
    CHECK(o.overlapped_us >= 0);
  }
  auto by_cat = co::overlap_by_category_table(fx.trace, fx.tree, ov);
  double table_kernel_us = 0, table_overlapped_us = 0;
  for (size_t r = 0; r < by_cat.rows.size(); ++r) {
    table_kernel_us += by_cat.at(r, "kernel_time_us").number();
    table_overlapped_us += by_cat.at(r, "overlapped_us").number();
  }
  CHECK(table_kernel_us == doctest::Approx(kernel_us));
  CHECK(table_overlapped_us == doctest::Approx(overlapped_us));
  auto by_op = co::overlap_by_op_table(fx.trace, fx.tree, ov);
  CHECK(!by_op.rows.empty());
}

TEST_CASE("collectives: single-trace summary") {
  const auto& fx = jarvis::testing::report_fixture(nccl_trace_dir());
  auto s = co::summarize_trace(fx.trace, fx.tree, 3);
  CHECK(s.count == 21);
  CHECK(s.total_us == doctest::Approx(fx.report.timeline.total_comm_time));
  CHECK(s.exposed_us == doctest::Approx(fx.report.timeline.exposed_comm_time));
  REQUIRE(s.top.size() == 3);
  // coll_analysis's largest group: allreduce of 2049000 floats, 11820.962 us.
  CHECK(s.top[0].collective == "allreduce");
  CHECK(s.top[0].count == 3);
  CHECK(s.top[0].total_us == doctest::Approx(11820.962));

  const auto& plain = jarvis::testing::report_fixture(jarvis::golden::conformance_dirs().front());
  CHECK(co::summarize_trace(plain.trace, plain.tree).count == 0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
