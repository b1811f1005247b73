// The per-iteration path files (path_iterationN.csv) are written straight
// from the segments (detail::path_csv); the text must be what the generic
// table writer gives for the same rows (Table::to_csv, the rows made here),
// on real traces' recorded and un-profiled paths, where kernel names hold
// commas and quotes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "golden.h"
#include "report/table.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;

// The path as a table of the columns the files have, one row per segment.
jarvis::Table path_table(const cp::IterationResult& it) {
  jarvis::Table t("path_iteration",
                  {"iteration", "start_us", "dur_us", "rank", "kind", "category", "op", "kernel"});
  for (const cp::Segment& seg : it.path) {
    auto& row = t.add_row();
    row = {it.name,
           seg.start_us,
           seg.dur_us,
           seg.rank,
           std::string(seg.kind()),
           std::string(seg.category()),
           std::string(seg.op()),
           std::string(seg.kernel())};
  }
  return t;
}

size_t check_paths(const cp::Analysis& a) {
  size_t segments = 0;
  for (const cp::IterationResult& it : a.iterations) {
    CAPTURE(it.name);
    CHECK(cp::detail::path_csv(it) == path_table(it).to_csv());
    segments += it.path.size();
  }
  return segments;
}

TEST_CASE("critical path: the path files written directly equal the table writer's text") {
  const std::string shared = jarvis::golden::shared_dir();
  const std::vector<std::string> traces = {
      shared + "/conformance/h100_qwen1.5-0.5b/trace.json.gz",
      shared + "/hw_pairs/gpt2_train/h100.json.gz",
      shared + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz",
  };
  for (const std::string& trace : traces) {
    CAPTURE(trace);
    const cp::Loaded loaded = cp::load_graph({trace});
    const cp::Analysis recorded = cp::analyse(loaded.graph);
    const cp::Analysis unprofiled = cp::analyse_unprofiled(loaded.graph);
    REQUIRE(!recorded.iterations.empty());
    const size_t segments = check_paths(recorded) + check_paths(unprofiled);
    CHECK(segments > 100);
  }
  // A kernel name with the CSV's separators is quoted as the table quotes it.
  cp::Label label{0, "aten::mm", "gemm<\"a\",b>\nc", "GEMM"};
  cp::IterationResult it;
  it.name = "iteration,1";
  it.path.push_back({&label, "gpu", 1.5, 2.25, 0, 0, 0});
  it.path.push_back({nullptr, "untraced", 3.75, 0.1, 1, 0, cp::Segment::kNoLabel});
  const std::string csv = cp::detail::path_csv(it);
  CHECK(csv == path_table(it).to_csv());
  CHECK(csv ==
        "iteration,start_us,dur_us,rank,kind,category,op,kernel\n"
        "\"iteration,1\",1.5,2.25,0,gpu,GEMM,aten::mm,\"gemm<\"\"a\"\",b>\nc\"\n"
        "\"iteration,1\",3.75,0.1,1,untraced,untraced,,\n");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
