// write_findings safety and the rule-based findings draft.
#include <doctest/doctest.h>

#include <filesystem>

#include "categories/category_analysis.h"
#include "categories/findings.h"
#include "test_analysis_support.h"

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;

TEST_CASE("findings: atomic write inside the output dir only") {
  TempDir tmp;
  std::string path = analysis::write_findings(tmp.path, "gemm", "# GEMM\n");
  CHECK(path == tmp.path + "/category_findings/gemm_findings.md");
  CHECK(read_text(path) == "# GEMM\n");
  CHECK(analysis::write_findings(tmp.path, "cpu_idle", "x") ==
        tmp.path + "/system_findings/cpu_idle_findings.md");
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "../gemm", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "GEMM", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm/x", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm", "  \n"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path + "/missing", "gemm", "x"),
                  std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm", std::string((1 << 20) + 1, 'x')),
                  std::invalid_argument);
  // A symlinked findings directory pointing elsewhere is refused.
  TempDir other;
  TempDir out2;
  fs::create_directory_symlink(other.path, out2.path + "/category_findings");
  CHECK_THROWS_WITH_AS(analysis::write_findings(out2.path, "gemm", "x"),
                       doctest::Contains("outside"), std::invalid_argument);
  CHECK_FALSE(fs::exists(other.path + "/gemm_findings.md"));
  CHECK(read_text(path) == "# GEMM\n");  // earlier file untouched
}

TEST_CASE("findings: draft follows the template with the metrics' numbers") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  TempDir tmp;
  prepare_from_reference(dir, tmp.path);
  auto res = analysis::analyze_category(tmp.path, "gemm");
  std::string md = analysis::draft_findings("gemm", res.metrics, "GEMM");
  CHECK(md.starts_with(
      "# GEMM Analysis Summary\n\n## Overview\nGEMM accounts for 35.15% of GPU time (11.65 ms"));
  CHECK(md.find("## Key Bottlenecks") != std::string::npos);
  CHECK(md.find("### 1. aten::mm ((8944,1024) bf16<br>(1024,2816) bf16)\n- **Time:** 5.31 ms "
                "(16.02% of compute, 48 calls)") != std::string::npos);
  CHECK(md.find("- **Efficiency:** 65.94% of 708.00 TFLOPS MAF") != std::string::npos);
  CHECK(md.find("- **Priority:** High") != std::string::npos);
  CHECK(md.find("- **Path A:**") != std::string::npos);
  CHECK(md.find("- **Path B:**") != std::string::npos);
  CHECK(md.find("## Additional Notes\n- Missing perf models: 0\n- Quantized GEMMs detected: 0") !=
        std::string::npos);
  auto mk = analysis::analyze_category(tmp.path, "multi_kernel");
  CHECK(analysis::draft_findings("multi_kernel", mk.metrics).find("Memcpy: 1 transfers") !=
        std::string::npos);
}
