// rocprofv3 input: the TraceLens rocprof report against its reference CSVs
// (../shared/rocprof/mi350_aorta_train, every table and cell), the CSV set
// fixture (tests/rocprof/csv_908, made from the same JSON: see
// tests/rocprof/README.md) and its counters with derived metrics computed by
// hand here.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "rocprof/counters.h"
#include "rocprof/profile.h"
#include "rocprof/report.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

const std::string kRefDir = std::string(JARVIS_SHARED_DIR) + "/rocprof/mi350_aorta_train";
const std::string kJson = kRefDir + "/908_results.json.gz";
const std::string kCsvDir = std::string(JARVIS_SOURCE_DIR) + "/tests/rocprof/csv_908";
const std::string kGemm =
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_LDSB0_AFC0_AFEM1_AFEM1_"
    "ASEM1_CLR0_CADS0_DTLA1_DTLB1_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSU0_GSUAMB_GLS0_"
    "ISA950_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB1024_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_"
    "1_"
    "MO40_NTn1_NTA0_NTB0_NTC3_NTD1_NTM0_NEPBS10_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_"
    "SRVW0_"
    "SSO0_SVW2_SK3_SKFTR0_SKXCCM0_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_"
    "WSGRB0_WS64_WG32_8_1.kd";

bool have_reference() {
  return std::filesystem::exists(kJson);
}

const rocprof::Profile& json_profile() {
  static const rocprof::Profile p = rocprof::load_profile(kJson);
  return p;
}

const rocprof::Profile& csv_profile() {
  static const rocprof::Profile p = rocprof::load_profile(kCsvDir);
  return p;
}

// Every cell within 1e-9 relative (the reference is pandas' repr of doubles;
// only the last bits of a few sums differ), ints as ints, rows by position.
golden::Options exact() {
  golden::Options o;
  o.rel_tol = 1e-9;
  return o;
}

void check_against_reference(const Table& actual) {
  std::string ref = kRefDir + "/perf_report_csvs/" + actual.name + ".csv";
  auto result = golden::compare_tables(read_csv_file(ref), actual, exact());
  MESSAGE(actual.name << ": " << result.summary());
  CHECK(result.ok());
}

double num(const Table& t, size_t row, const char* col) {
  return t.at(row, col).number();
}

double sample_std(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

TEST_SUITE("rocprof") {
  TEST_CASE("rocprof golden: every sheet of TraceLens's rocprof report, every cell") {
    if (!have_reference()) return;
    rocprof::ReportOptions o;
    o.kernel_details = true;
    auto tables = rocprof::report_tables(json_profile(), o);
    std::vector<std::string> names;
    for (const auto& t : tables) names.push_back(t.name);
    CHECK(names == std::vector<std::string>{"gpu_timeline", "kernel_summary",
                                            "kernel_summary_by_category", "kernel_details",
                                            "short_kernels_summary", "short_kernel_histogram"});
    for (const auto& t : tables) check_against_reference(t);
  }

  TEST_CASE("rocprof golden: jarvis report auto-detects the results file and writes the CSVs") {
    if (!have_reference()) return;
    TempDir tmp;
    CliResult r = run_jarvis("report " + shell_quote(kJson) + " --kernel-details --out " +
                             shell_quote(tmp.path.string()));
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    for (std::string sheet :
         {"gpu_timeline", "kernel_summary", "kernel_summary_by_category", "kernel_details",
          "short_kernels_summary", "short_kernel_histogram"}) {
      CAPTURE(sheet);
      auto result = golden::compare_csv_files(
          kRefDir + "/perf_report_csvs/" + sheet + ".csv",
          (tmp.path / "perf_report_csvs" / (sheet + ".csv")).string(), exact());
      MESSAGE(sheet << ": " << result.summary());
      CHECK(result.ok());
    }
  }

  TEST_CASE("rocprof: --topk-kernels keeps the longest dispatches in TraceLens order") {
    if (!have_reference()) return;
    Table top = rocprof::kernel_details_table(json_profile(), 25);
    Table ref = read_csv_file(kRefDir + "/perf_report_csvs/kernel_details.csv");
    ref.rows.resize(25);
    auto result = golden::compare_tables(ref, top, exact());
    CHECK(result.ok());
  }

  TEST_CASE("rocprof: fix_units writes the times in the units the headers name") {
    if (!have_reference()) return;
    Table ref = read_csv_file(kRefDir + "/perf_report_csvs/kernel_summary.csv");
    Table fixed = rocprof::kernel_summary_table(json_profile(), /*fix_units=*/true);
    REQUIRE(fixed.rows.size() == ref.rows.size());
    double running = 0;
    for (size_t r = 0; r < ref.rows.size(); ++r) {
      CAPTURE(r);
      CHECK(fixed.at(r, "name").text() == ref.at(r, "name").text());
      for (const char* c :
           {"Mean Kernel Time (µs)", "Median Kernel Time (µs)", "Min Kernel Time (µs)",
            "Max Kernel Time (µs)", "Total Kernel Time (ms)"})
        CHECK(num(fixed, r, c) == doctest::Approx(std::stod(ref.at(r, c).text()) / 1000.0));
      // The cumulative share now runs down the written rows.
      running += std::stod(ref.at(r, "Percentage (%)").text());
      CHECK(num(fixed, r, "Cumulative Percentage (%)") == doctest::Approx(running));
    }
    CHECK(running == doctest::Approx(100.0));
    // The NCCL kernel's 1310 dispatches took 4158.756678 ms, not 4158756 ms.
    CHECK(num(fixed, 0, "Total Kernel Time (ms)") == doctest::Approx(4158.756678));
    Table cats = rocprof::kernel_summary_by_category_table(json_profile(), true);
    CHECK(num(cats, 0, "total_direct_kernel_time_ms") == doctest::Approx(4158.756678));
    Table details = rocprof::kernel_details_table(json_profile(), 1, true);
    CHECK(num(details, 0, "Kernel duration (µs)") == doctest::Approx(733003.332));
    // Short kernels are now those under 10 us: some exist in a training run.
    Table shorts = rocprof::short_kernels_summary_table(json_profile(), 10.0, true);
    CHECK(shorts.rows.size() > 0);
    for (size_t r = 0; r < shorts.rows.size(); ++r)
      CHECK(num(shorts, r, "Short Kernel duration (µs) mean") < 10.0);
  }

  TEST_CASE("rocprof CSV set: a directory and each of its files load the same dispatches") {
    const auto& dir = csv_profile();
    CHECK(dir.format == "csv");
    CHECK(dir.pid == 908);
    CHECK(dir.dispatches.size() == 21);
    CHECK(dir.kernel_names.size() == 7);
    CHECK(dir.copies.size() == 2);
    CHECK(dir.counter_names.size() == 5);
    CHECK(dir.counters.size() == 30);  // 6 dispatches x 5 counters
    CHECK(dir.kernel_stats.size() == 7);
    for (const char* f :
         {"908_kernel_trace.csv", "908_counter_collection.csv", "908_agent_info.csv"}) {
      auto p = rocprof::load_profile(kCsvDir + "/" + f);
      CHECK(p.dispatches.size() == dir.dispatches.size());
      CHECK(p.counters.size() == dir.counters.size());
    }
    const rocprof::Agent* gpu = dir.main_gpu();
    REQUIRE(gpu != nullptr);
    CHECK(gpu->product_name == "AMD Instinct MI350X");
    CHECK(gpu->cu_count == 256);
    CHECK(gpu->num_xcc == 8);
    CHECK(gpu->max_clock_mhz == 2200);
  }

  TEST_CASE("rocprof CSV set: same kernels and dispatches as the JSON results file") {
    if (!have_reference()) return;
    std::map<int64_t, const rocprof::Dispatch*> by_id;
    for (const auto& d : json_profile().dispatches) by_id[d.dispatch_id] = &d;
    const auto& csv = csv_profile();
    for (const auto& d : csv.dispatches) {
      CAPTURE(d.dispatch_id);
      REQUIRE(by_id.count(d.dispatch_id));
      const auto& j = *by_id[d.dispatch_id];
      CHECK(csv.kernel_name(d) == json_profile().kernel_name(j));
      CHECK(d.start_ns == j.start_ns);
      CHECK(d.end_ns == j.end_ns);
      CHECK(d.stream == j.stream);
      CHECK(d.grid.x == j.grid.x);
      CHECK(d.workgroup.x == j.workgroup.x);
      CHECK(d.lds_bytes == j.lds_bytes);
      CHECK(d.arch_vgpr == j.arch_vgpr);
      CHECK(d.sgpr == j.sgpr);
      // Agent "Agent 2" resolves to the GPU the JSON names by handle.
      CHECK(csv.agent(d.agent)->node_id == json_profile().agent(j.agent)->node_id);
    }
  }

  TEST_CASE("rocprof CSV set: report values computed by hand") {
    const auto& p = csv_profile();
    // NCCL dispatches 2650 / 2666 / 2682 of the kernel trace.
    std::vector<double> nccl = {63861843158766.0 - 63861843088486.0,
                                63861848170818.0 - 63861848090257.0,
                                63861850838046.0 - 63861850763086.0};
    Table ks = rocprof::kernel_summary_table(p);
    REQUIRE(ks.rows.size() == 7);
    CHECK(ks.at(0, "name").text() == "ncclDevKernel_Generic_1");
    CHECK(ks.at(0, "Count").number() == 3);
    CHECK(num(ks, 0, "Mean Kernel Time (µs)") ==
          doctest::Approx((nccl[0] + nccl[1] + nccl[2]) / 3));
    CHECK(num(ks, 0, "Median Kernel Time (µs)") == nccl[2]);
    CHECK(num(ks, 0, "Std Kernel Time (µs)") == doctest::Approx(sample_std(nccl)));
    CHECK(ks.at(0, "Min Kernel Time (µs)").number() == nccl[0]);
    CHECK(ks.at(0, "Max Kernel Time (µs)").number() == nccl[1]);
    CHECK(num(ks, 0, "Total Kernel Time (ms)") == doctest::Approx(225.801));
    CHECK(ks.at(0, "Category").text() == "COMM");
    // rocprofv3's own kernel_stats.csv agrees on calls and totals.
    for (const auto& s : p.kernel_stats) {
      bool found = false;
      for (size_t r = 0; r < ks.rows.size(); ++r)
        if (ks.at(r, "name").text() == s.name) {
          found = true;
          CHECK(ks.at(r, "Count").number() == s.calls);
          CHECK(num(ks, r, "Total Kernel Time (ms)") * 1000.0 == doctest::Approx(s.total_ns));
        }
      CHECK(found);
    }
    // Categories of the seven kernels.
    std::map<std::string, std::string> category;
    for (size_t r = 0; r < ks.rows.size(); ++r)
      category[ks.at(r, "name").text()] = ks.at(r, "Category").text();
    CHECK(category[kGemm] == "GEMM");
    CHECK(category["vectorized_elementwise_kernel"] == "Elementwise");
    CHECK(category["__amd_rocclr_copyBuffer.kd"] == "Memory");
    CHECK(category["vectorized_layer_norm_kernel"] == "Normalization");
    CHECK(category["attn_fwd.kd"] == "Attention");
    CHECK(category["reduce_kernel"] == "Reduction");

    // gpu_timeline: no init/fini in CSV, so the span runs from the first copy
    // (1000 ns before the first kernel) to the last reduce_kernel's end.
    // Copy 1 overlaps kernel 1 by 1000 ns of its 2000; copy 2 sits in a gap.
    Table tl = rocprof::gpu_timeline_table(p);
    double kernels_ns = 0;
    for (const auto& s : p.kernel_stats) kernels_ns += s.total_ns;
    double span_ns = 63868298145275.0 - 63857982591000.0;
    CHECK(num(tl, 0, "time ms") == doctest::Approx(span_ns / 1e6));
    CHECK(num(tl, 1, "time ms") == doctest::Approx(kernels_ns / 1e6));
    CHECK(num(tl, 2, "time ms") == doctest::Approx(3000 / 1e6));
    CHECK(num(tl, 3, "time ms") == doctest::Approx((kernels_ns + 2000) / 1e6));
    CHECK(num(tl, 4, "time ms") == doctest::Approx((span_ns - kernels_ns - 2000) / 1e6));
    CHECK(num(tl, 4, "percent") ==
          doctest::Approx(100.0 * (span_ns - kernels_ns - 2000) / span_ns));
  }

  TEST_CASE("rocprof counters: per dispatch x counter rows joined to launch properties") {
    Table t = rocprof::dispatch_counters_table(csv_profile());
    REQUIRE(t.rows.size() == 30);
    // Dispatch 2801 (the GEMM): the kernel trace's launch properties.
    size_t r = 0;
    while (r < t.rows.size() && t.at(r, "Dispatch_Id").number() != 2801) ++r;
    REQUIRE(r < t.rows.size());
    CHECK(t.at(r, "Kernel_Name").text() == kGemm);
    CHECK(t.at(r, "Duration_ns").number() == 63865623498052.0 - 63865623484852.0);
    CHECK(t.at(r, "Workgroup_Size").number() == 256);
    CHECK(t.at(r, "Counter_Name").text() == "GRBM_GUI_ACTIVE");
    CHECK(t.at(r, "Counter_Value").number() == 232320);
  }

  TEST_CASE("rocprof counters: aggregates and derived metrics computed by hand") {
    auto kernels = rocprof::kernel_counters(csv_profile());
    REQUIRE(kernels.size() == 7);
    const rocprof::KernelCounters* gemm = nullptr;
    const rocprof::KernelCounters* ew = nullptr;
    for (const auto& k : kernels) {
      if (k.name == kGemm) gemm = &k;
      if (k.name == "vectorized_elementwise_kernel") ew = &k;
    }
    REQUIRE(gemm);
    REQUIRE(ew);
    CHECK(gemm->dispatches == 3);
    CHECK(gemm->counted_dispatches == 3);
    CHECK(gemm->launch_configs == 1);
    CHECK(gemm->launch.workgroup.product() == 256);
    // Counter values of dispatches 2801, 2821, 2834 (counter_collection.csv).
    const double grbm[] = {232320, 700496, 178112};
    const double busy[] = {929280, 3362381, 997427};
    const double valu[] = {1000, 1010, 1020};
    const double mfma[] = {750, 757, 765};
    auto& v = gemm->counters.at("SQ_INSTS_VALU");
    CHECK(v.mean == doctest::Approx(1010));
    CHECK(v.min == 1000);
    CHECK(v.max == 1020);
    CHECK(v.samples == 3);
    // MI350X: 256 CUs, 8 XCCs. cycles = GRBM_GUI_ACTIVE / XCCs;
    // CU utilisation = 100 * 4 * SQ_BUSY_CU_CYCLES / (CUs * cycles).
    double util[3], share[3], sum_util = 0, sum_share = 0;
    for (int k = 0; k < 3; ++k) {
      util[k] = 100.0 * 4.0 * busy[k] / (256.0 * (grbm[k] / 8.0));
      share[k] = 100.0 * mfma[k] / valu[k];
      sum_util += util[k];
      sum_share += share[k];
    }
    CHECK(util[0] == doctest::Approx(50.0));
    auto& cu = gemm->derived.at(rocprof::kCuUtilization);
    CHECK(cu.mean == doctest::Approx(sum_util / 3));
    CHECK(cu.min == doctest::Approx(util[0]));
    CHECK(cu.max == doctest::Approx(std::max(util[1], util[2])));
    CHECK(gemm->derived.at(rocprof::kMfmaShare).mean == doctest::Approx(sum_share / 3));
    CHECK(gemm->derived.at(rocprof::kValuShare).mean == doctest::Approx(100 - sum_share / 3));
    // SQ_WAVES 768 per dispatch over 256 CUs.
    CHECK(gemm->derived.at(rocprof::kWavesPerCu).mean == doctest::Approx(3.0));
    // Launched waves from the geometry: the grid's workgroups x ceil(256 / 64).
    const auto& g = gemm->launch.grid;
    double launched = std::ceil(double(g.x) / 256) * 4;
    CHECK(gemm->derived.at(rocprof::kLaunchedWaves).mean == doctest::Approx(launched));
    // Elementwise kernels issue no MFMA.
    CHECK(ew->derived.at(rocprof::kMfmaShare).max == 0);
    CHECK(ew->derived.at(rocprof::kValuShare).min == 100);
    // Kernels without counters still have their launch data, no counters.
    for (const auto& k : kernels)
      if (k.name == "ncclDevKernel_Generic_1") {
        CHECK(k.counted_dispatches == 0);
        CHECK(k.counters.empty());
        CHECK(k.launch.lds_bytes == 37664);
      }
  }

  TEST_CASE("rocprof counters: the JSON's counter_collection gives the CSV's aggregates") {
    // tests/rocprof/908_subset_results.json: the fixture's dispatches and
    // counters as a results file, each value split over two instances.
    auto json = rocprof::load_profile(std::string(JARVIS_SOURCE_DIR) +
                                      "/tests/rocprof/908_subset_results.json");
    CHECK(json.format == "json");
    CHECK(json.counters.size() == 30);
    auto from_json = rocprof::kernel_counters(json);
    auto from_csv = rocprof::kernel_counters(csv_profile());
    REQUIRE(from_json.size() == from_csv.size());
    for (size_t k = 0; k < from_csv.size(); ++k) {
      CAPTURE(from_csv[k].name);
      CHECK(from_json[k].name == from_csv[k].name);
      CHECK(from_json[k].total_ns == from_csv[k].total_ns);
      CHECK(from_json[k].launch == from_csv[k].launch);
      REQUIRE(from_json[k].counters.size() == from_csv[k].counters.size());
      for (const auto& [counter_name, a] : from_csv[k].counters) {
        const std::string& name = counter_name;  // clang 14 cannot capture a binding
        CAPTURE(name);
        CHECK(from_json[k].counters.at(name).mean == a.mean);
        CHECK(from_json[k].counters.at(name).max == a.max);
      }
      for (const auto& [name, a] : from_csv[k].derived)
        CHECK(from_json[k].derived.at(name).mean == doctest::Approx(a.mean));
    }
  }

  TEST_CASE("rocprof counters: without GRBM_GUI_ACTIVE the cycles come from time x clock") {
    rocprof::Agent gpu;
    gpu.gpu = true;
    gpu.cu_count = 256;
    gpu.max_clock_mhz = 2200;
    rocprof::Dispatch d;
    d.start_ns = 0;
    d.end_ns = 10000;  // 10 us at 2200 MHz = 22000 cycles
    d.grid = {1024, 1, 1};
    d.workgroup = {256, 1, 1};
    auto m = rocprof::derived_metrics({{"SQ_BUSY_CU_CYCLES", 1408000}}, d, &gpu);
    CHECK(m.at(rocprof::kElapsedCycles) == doctest::Approx(22000));
    CHECK(m.at(rocprof::kCuUtilization) == doctest::Approx(100.0 * 4 * 1408000 / (256.0 * 22000)));
    CHECK(m.at(rocprof::kLaunchedWaves) == 16);  // 4 workgroups x 4 waves
    CHECK(m.count(rocprof::kMfmaShare) == 0);    // inputs absent
  }

  TEST_CASE("rocprof: the event store of a profile") {
    Trace t = rocprof::to_trace(csv_profile());
    CHECK(rocprof::is_rocprof_trace(t));
    CHECK(t.platform == Platform::Rocm);
    CHECK(t.gpu_name() == "AMD Instinct MI350X");
    REQUIRE(t.events.size() == 23);
    CHECK(t.events[0].cat == Cat::Kernel);
    CHECK(t.events[0].ts() == doctest::Approx(63857982592.000));
    CHECK(t.events[0].dur() == doctest::Approx(2.84));
    CHECK(t.device(t.events[0]) == 0);  // the first GPU agent
    CHECK(t.events[21].cat == Cat::GpuMemcpy);
  }

  TEST_CASE("rocprof: find_outputs lists one entry per process output") {
    CHECK(rocprof::find_outputs(kCsvDir) ==
          std::vector<std::string>{kCsvDir + "/908_kernel_trace.csv"});
    if (have_reference()) CHECK(rocprof::find_outputs(kRefDir) == std::vector<std::string>{kJson});
    // A sweep-style join: per-kernel aggregates of each output by name.
    auto kernels = rocprof::kernel_counters_from_file(rocprof::find_outputs(kCsvDir).at(0));
    CHECK(kernels.size() == 7);
    CHECK(kernels.front().name == "ncclDevKernel_Generic_1");
  }

  TEST_CASE("rocprof: gzip containers of the results file") {
    std::string json =
        read_file(std::string(JARVIS_SOURCE_DIR) + "/tests/rocprof/908_subset_results.json");
    TempDir tmp;
    // Two gzip members plus zero padding read as one file.
    auto multi = tmp.path / "908_results.json.gz";
    size_t half = json.size() / 2;
    write_file(multi, gzip_member(json.substr(0, half)) + gzip_member(json.substr(half)) +
                          std::string(64, '\0'));
    CHECK(rocprof::detect_input(multi.string()) == rocprof::InputKind::Json);
    CHECK(rocprof::load_profile(multi.string()).dispatches.size() == 21);
    // A truncated file is detected as rocprofv3 and then named truncated.
    auto cut = tmp.path / "cut_results.json.gz";
    std::string gz = gzip_member(json);
    write_file(cut, gz.substr(0, gz.size() / 2));
    CHECK(rocprof::detect_input(cut.string()) == rocprof::InputKind::Json);
    CHECK_THROWS_WITH_AS(rocprof::load_profile(cut.string()),
                         (cut.string() + ": truncated gzip data").c_str(), TraceError);
    // A gzip header naming the original file with 40 KB: the sniff reads past
    // its first 16 KiB of input and still sees the JSON.
    auto named = tmp.path / "named_results.json.gz";
    std::string member = gzip_member(json);
    REQUIRE(member.size() > 10);
    member[3] = static_cast<char>(member[3] | 0x08);  // FLG.FNAME
    member.insert(10, std::string(40000, 'n') + '\0');
    write_file(named, member);
    CHECK(rocprof::detect_input(named.string()) == rocprof::InputKind::Json);
    CHECK(rocprof::load_profile(named.string()).dispatches.size() == 21);
  }

  TEST_CASE("rocprof: detection by content and name") {
    CHECK(rocprof::detect_input(kCsvDir) == rocprof::InputKind::CsvSet);
    CHECK(rocprof::detect_input(kCsvDir + "/908_kernel_stats.csv") == rocprof::InputKind::CsvSet);
    if (have_reference()) CHECK(rocprof::detect_input(kJson) == rocprof::InputKind::Json);
    CHECK(rocprof::detect_input(std::string(JARVIS_SOURCE_DIR) +
                                "/examples/example_trace.json.gz") == rocprof::InputKind::Other);
    CHECK_THROWS_AS(rocprof::detect_input("x.pftrace"), TraceError);
  }

  TEST_CASE("rocprof: jarvis report on the CSV set writes the sheets and the counters") {
    TempDir tmp;
    CliResult r =
        run_jarvis("report " + shell_quote(kCsvDir) + " --kernel-details --topk-kernels 5 --out " +
                   shell_quote(tmp.path.string()));
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    Table details = read_csv_file((tmp.path / "perf_report_csvs/kernel_details.csv").string());
    CHECK(details.rows.size() == 5);
    CHECK(details.at(0, "name").text() == "ncclDevKernel_Generic_1");
    Table counters = read_csv_file((tmp.path / "rocprof_counters/kernel_counters.csv").string());
    CHECK(counters.rows.size() == 7);
    CHECK(counters.col("cu_utilization_pct_mean") >= 0);
    Table rows = read_csv_file((tmp.path / "rocprof_counters/dispatch_counters.csv").string());
    CHECK(rows.rows.size() == 30);
    CliResult info = run_jarvis("info " + shell_quote(kCsvDir));
    CHECK(info.exit_code == 0);
    CHECK(info.output.find("source:     rocprofv3") != std::string::npos);
    CHECK(info.output.find("kernels:    21") != std::string::npos);
    // Commands that need a PyTorch trace say why they cannot read this one.
    if (have_reference()) {
      CliResult ins = run_jarvis("insights " + shell_quote(kJson));
      CHECK(ins.exit_code == 1);
      CHECK(ins.output.find("a rocprofv3 results file, not a PyTorch profiler trace") !=
            std::string::npos);
    }
    // Kineto-only flags are refused for rocprof input, and the reverse.
    CHECK(run_jarvis("report " + shell_quote(kCsvDir) + " --html x.html").exit_code == 2);
    CHECK(
        run_jarvis("report " +
                   shell_quote(std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz") +
                   " --kernel-details --out " + shell_quote((tmp.path / "k").string()))
            .exit_code == 2);
  }
}

// ---- MCP -------------------------------------------------------------------

namespace {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

jarvis::mcp::ServerOptions rocprof_roots() {
  jarvis::mcp::ServerOptions o;
  o.roots = {std::string(JARVIS_SHARED_DIR), std::string(JARVIS_SOURCE_DIR) + "/tests"};
  return o;
}

std::string error_text(const json& reply) {
  if (!reply.contains("result") || !reply["result"].value("isError", false)) return "";
  return reply["result"]["content"][0]["text"].get<std::string>();
}

}  // namespace

TEST_SUITE("rocprof") {
  TEST_CASE("rocprof mcp: load_trace, ops_summary fallback, kernel_counters, refusals") {
    Harness h(rocprof_roots());
    h.initialize();
    json loaded = h.tool_result(1, "load_trace", {{"path", kCsvDir}});
    CHECK(loaded["source"] == "rocprofv3");
    CHECK(loaded["platform"] == "ROCm");
    CHECK(loaded["gpu_name"] == "AMD Instinct MI350X");
    CHECK(loaded["events"]["kernel"] == 21);
    CHECK(loaded["rocprof"]["format"] == "csv");
    CHECK(loaded["rocprof"]["counters"].size() == 5);
    Table tl = rocprof::gpu_timeline_table(csv_profile());
    CHECK(loaded["gpu_timeline"]["busy_time"]["time_ms"].get<double>() ==
          doctest::Approx(num(tl, 3, "time ms")));
    std::string handle = loaded["trace"];
    // Loading one of the set's files again reuses nothing (another path) but
    // loading the directory again does.
    CHECK(h.tool_result(2, "load_trace", {{"path", kCsvDir}})["reused"] == true);

    json ops = h.tool_result(3, "ops_summary", {{"trace", handle}, {"top_n", 3}});
    CHECK(ops["source"] == "kernel_summary");
    CHECK(ops["total_rows"] == 7);
    REQUIRE(ops["rows"].size() == 3);
    CHECK(ops["rows"][0]["name"] == "ncclDevKernel_Generic_1");
    CHECK(ops["rows"][0]["total_direct_kernel_time_us"].get<double>() == doctest::Approx(225.801));
    CHECK(ops["rows"][0]["categories"] == json::array({"COMM"}));
    json gemm_only = h.tool_result(4, "ops_summary", {{"trace", handle}, {"category", "gemm"}});
    REQUIRE(gemm_only["rows"].size() == 1);
    CHECK(gemm_only["rows"][0]["name"] == kGemm);
    CHECK(error_text(h.call_tool(5, "ops_summary", {{"trace", handle}, {"category", "SDPA"}}))
              .find("this trace has: Attention, COMM") != std::string::npos);

    json kc = h.tool_result(6, "kernel_counters",
                            {{"trace", handle}, {"kernel_regex", "^Cijk_.*MT64x32"}});
    CHECK(kc["matched_kernels"] == 1);
    REQUIRE(kc["kernels"].size() == 1);
    CHECK(kc["gpu"]["cu_count"] == 256);
    const json& k = kc["kernels"][0];
    CHECK(k["launch"]["Workgroup_Size"] == 256);
    CHECK(k["counters"]["SQ_INSTS_VALU"]["mean"].get<double>() == doctest::Approx(1010));
    double util0 = 100.0 * 4 * 929280 / (256.0 * 232320 / 8);
    CHECK(k["derived"]["cu_utilization_pct"]["min"].get<double>() == doctest::Approx(util0));
    json all = h.tool_result(7, "kernel_counters", {{"trace", handle}, {"top_n", 2}});
    CHECK(all["total_kernels"] == 7);
    CHECK(all["kernels"].size() == 2);
    CHECK(error_text(h.call_tool(8, "kernel_counters", {{"trace", handle}, {"kernel_regex", "("}}))
              .find("not a valid regular expression") != std::string::npos);
    json too_long = h.call_tool(9, "kernel_counters",
                                {{"trace", handle}, {"kernel_regex", std::string(300, 'a')}});
    CHECK((too_long.contains("error") || !error_text(too_long).empty()));

    // Tools that need the op tree say so.
    for (const auto& [tool_name, args] : std::vector<std::pair<std::string, json>>{
             {"parent_chain", {{"trace", handle}, {"kernel_name", "reduce_kernel"}}},
             {"insights", {{"trace", handle}}},
             {"gemm_roofline", {{"trace", handle}, {"arch", "MI355X"}}}}) {
      const std::string& tool = tool_name;  // clang 14 cannot capture a binding
      CAPTURE(tool);
      std::string text = error_text(h.call_tool(10, tool, args));
      CHECK(text.find("is a rocprofv3 kernel trace: it has no CPU op tree") != std::string::npos);
    }
  }

  TEST_CASE("rocprof mcp: the JSON results file, and kernel_counters on a Kineto trace") {
    if (!have_reference()) return;
    Harness h(rocprof_roots());
    h.initialize();
    json loaded = h.tool_result(1, "load_trace", {{"path", kJson}});
    CHECK(loaded["source"] == "rocprofv3");
    CHECK(loaded["rocprof"]["dispatches"] == 43915);
    Table ref = read_csv_file(kRefDir + "/perf_report_csvs/gpu_timeline.csv");
    for (size_t r = 0; r < ref.rows.size(); ++r) {
      std::string type = ref.at(r, "type").text();
      CAPTURE(type);
      CHECK(loaded["gpu_timeline"][type]["time_ms"].get<double>() ==
            doctest::Approx(std::stod(ref.at(r, "time ms").text())));
    }
    json kineto = h.tool_result(
        2, "load_trace",
        {{"path", std::string(JARVIS_SHARED_DIR) + "/conformance/h100_bert-small/trace.json.gz"}});
    CHECK(kineto["source"] == "kineto");
    CHECK(error_text(h.call_tool(3, "kernel_counters", {{"trace", kineto["trace"]}}))
              .find("needs rocprofv3 output") != std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
