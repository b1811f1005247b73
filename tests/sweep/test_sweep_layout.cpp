// Sweeps built in temp dirs from the shared H100 traces: another layout
// pattern (with a broken run and stray files), the per-run cache, a known
// collective injected over a GEMM kernel, a permuted sweep for the
// comparison, the rocprofv3 job parsed back, and the CLI and MCP interfaces.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collectives/collectives.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "report/xlsx.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"
#include "test_sweep_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace sw = jarvis::sweep;
namespace fs = std::filesystem;
using jarvis::Table;
using nlohmann::json;
using namespace jarvis::sweep_testing;

namespace {

std::string batch_of(const std::string& threads) {
  return threads == "256" ? "8" : "16";
}

// runs/bs{batch}_ch{channels}/torch_profiler/rank{rank}/trace.json.gz from the
// H100 traces, plus a broken trace and files the pattern must ignore.
struct LayoutSweep {
  jarvis::testing::TempDir tmp;
  std::string root, broken;
  const char* pattern = "runs/bs{batch}_ch{channels}/torch_profiler/rank{rank}/*.json.gz";
  LayoutSweep() {
    root = tmp.path + "/sweep";
    for (const auto& c : h100().configs) {
      fs::path dir = fs::path(root) / "runs" / ("bs" + batch_of(c.threads) + "_ch" + c.channel) /
                     "torch_profiler/rank0";
      fs::create_directories(dir);
      fs::copy_file(h100().trace_path(c), dir / "trace.json.gz");
    }
    fs::path bad = fs::path(root) / "runs/bs32_ch28/torch_profiler/rank0";
    fs::create_directories(bad);
    broken = (bad / "trace.json.gz").string();
    std::ofstream(broken) << "this is not a trace";
    fs::create_directories(fs::path(root) / "runs/notes");
    std::ofstream((fs::path(root) / "runs/notes/readme.txt").string()) << "notes";
    std::ofstream(
        (fs::path(root) / "runs/bs8_ch28/torch_profiler/rank0/trace.json.gz.tmp").string())
        << "partial";
  }
  sw::Sweep load(const std::string& cache = "none") const {
    sw::LoadOptions o;
    o.pattern = pattern;
    o.cache_dir = cache;
    o.jobs = 3;
    return sw::load_sweep(root, o);
  }
};

const LayoutSweep& layout_sweep() {
  static LayoutSweep s;
  return s;
}

int run(const std::string& cmd) {
  return std::system(cmd.c_str());
}

std::string slurp(const std::string& path) {
  return jarvis::testing::read_text(path);
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep layout: named fields of another pattern, broken run reported") {
    const LayoutSweep& ls = layout_sweep();
    sw::Sweep s = ls.load();
    CHECK(s.layout.fields == std::vector<std::string>{"batch", "channels", "rank"});
    REQUIRE(s.runs.size() == 6);
    REQUIRE(s.failures.size() == 1);
    CHECK(s.failures[0].path == ls.broken);
    CHECK(!s.failures[0].reason.empty());
    Table t = sw::gemm_variance_table(s, 5);
    Table ref = sw::gemm_variance_table(h100().sweep, 5);
    CHECK(std::vector<std::string>(t.columns.begin(), t.columns.begin() + 4) ==
          std::vector<std::string>{"batch", "channels", "rank", "kernel_name"});
    REQUIRE(t.rows.size() == ref.rows.size());
    for (size_t r = 0; r < t.rows.size(); ++r) {
      CHECK(t.at(r, "batch").number() ==
            std::stod(batch_of(std::to_string(static_cast<int>(ref.at(r, "threads").number())))));
      CHECK(t.at(r, "channels").number() == ref.at(r, "channel").number());
      CHECK(t.at(r, "kernel_name").text() == ref.at(r, "kernel_name").text());
      CHECK(t.at(r, "time_diff_us").number() == ref.at(r, "time_diff_us").number());
    }
    Table summary = sw::gpu_timeline_tables(s)[3];
    CHECK(summary.columns[1] == "batch");
    CHECK(summary.columns[2] == "channels");
    CHECK(summary.rows.size() == 6);
    Table failed = sw::sweep_tables(s, 5).back();
    CHECK(failed.name == "failed_runs");
    CHECK(failed.rows.size() == 1);
  }

  TEST_CASE("sweep layout: pattern errors and discovery without a match") {
    CHECK_THROWS_AS(sw::parse_layout(""), sw::SweepError);
    CHECK_THROWS_AS(sw::parse_layout("/abs/{x}"), sw::SweepError);
    CHECK_THROWS_AS(sw::parse_layout("a/{1x}/b"), sw::SweepError);
    CHECK_THROWS_AS(sw::parse_layout("a/{x"), sw::SweepError);
    CHECK_THROWS_AS(sw::parse_layout("a//b"), sw::SweepError);
    CHECK(sw::parse_layout("{a}_{b}/x{a}/*.json").fields == std::vector<std::string>{"a", "b"});
    jarvis::testing::TempDir empty;
    CHECK_THROWS_AS(sw::load_sweep(empty.path), sw::SweepError);
    // Many lazy fields against a long name: linear matching, no blow-up.
    std::ofstream(empty.path + "/" + std::string(200, 'a') + ".json") << "{}";
    auto d = sw::discover_runs(empty.path, "{a}{b}{c}{d}{e}{f}{g}{h}x.json");
    CHECK(d.runs.empty());
    d = sw::discover_runs(empty.path, "{a}{b}{c}{d}{e}{f}{g}{h}.json");
    REQUIRE(d.runs.size() == 1);
    CHECK(d.runs[0].values.front() == "a");
    CHECK(d.runs[0].values.back() == std::string(193, 'a'));
  }

  TEST_CASE("sweep layout: cache hits, and a changed file misses") {
    const LayoutSweep& ls = layout_sweep();
    jarvis::testing::TempDir cache;
    CHECK(ls.load(cache.path).cache_hits == 0);
    CHECK(ls.load(cache.path).cache_hits == 6);
    // Copy the sweep and touch one trace: only that run is analysed again.
    jarvis::testing::TempDir copy;
    fs::copy(ls.root, copy.path + "/sweep", fs::copy_options::recursive);
    sw::LoadOptions o;
    o.pattern = ls.pattern;
    o.cache_dir = cache.path;
    CHECK(sw::load_sweep(copy.path + "/sweep", o).cache_hits == 0);  // other paths
    CHECK(sw::load_sweep(copy.path + "/sweep", o).cache_hits == 6);
    fs::path one = copy.path + "/sweep/runs/bs16_ch42/torch_profiler/rank0/trace.json.gz";
    fs::last_write_time(one, fs::last_write_time(one) + std::chrono::seconds(5));
    CHECK(sw::load_sweep(copy.path + "/sweep", o).cache_hits == 5);
  }

  TEST_CASE("sweep overlap: a collective injected over a GEMM kernel") {
    const H100& h = h100();
    const Config& cfg = h.configs.front();
    Table inst = sw::gemm_timestamps_table(h.sweep, 5);
    size_t pick = inst.rows.size();
    for (size_t r = 0; r < inst.rows.size() && pick == inst.rows.size(); ++r)
      if (inst.at(r, "run").text() == h.relative(cfg) &&
          inst.at(r, "is_max").v == jarvis::Cell(true).v)
        pick = r;
    REQUIRE(pick < inst.rows.size());
    std::string kernel = inst.at(pick, "kernel_name").text();
    double start = inst.at(pick, "start_us").number(), end = inst.at(pick, "end_us").number();
    REQUIRE(end - start > 40);

    jarvis::testing::TempDir tmp;
    fs::path dir = fs::path(tmp.path) / "sweep" / h.relative(cfg);
    fs::create_directories(dir.parent_path());
    std::string script = tmp.path + "/inject.py";
    std::ofstream(script) << R"(import gzip, json, sys
src, dst, name, ts = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
d = json.load(gzip.open(src))
ev = next(e for e in d['traceEvents']
          if e.get('cat') == 'kernel' and e['name'] == name and abs(e['ts'] - ts) < 1e-3)
args = {'device': ev['args'].get('device', 0), 'stream': 7777, 'correlation': 987654321,
        'Collective name': 'allreduce', 'dtype': 'Float', 'In msg nelems': 1048576,
        'Out msg nelems': 1048576, 'Group size': 1, 'Process Group Name': '0',
        'Process Group Ranks': '[0]'}
d['traceEvents'].append({'ph': 'X', 'cat': 'kernel', 'name': 'ncclDevKernel_AllReduce_Sum_f32_RING_LL',
                         'pid': ev['pid'], 'tid': 7777, 'ts': ev['ts'] + 10, 'dur': ev['dur'] - 20,
                         'args': args})
json.dump(d, gzip.open(dst, 'wt'))
)";
    REQUIRE(run(fmt::format("python3 '{}' '{}' '{}' '{}' {:.6f}", script, h.trace_path(cfg),
                            dir.string(), kernel, start)) == 0);
    sw::LoadOptions o;
    o.cache_dir = "none";
    sw::Sweep s = sw::load_sweep(tmp.path + "/sweep", o);
    REQUIRE(s.runs.size() == 1);
    Table ov = sw::gemm_overlap_table(s, 5);
    size_t hits = 0;
    for (size_t r = 0; r < ov.rows.size(); ++r) {
      if (ov.at(r, "start_us").number() != start) {
        CHECK(ov.at(r, "overlap_us").number() == 0);
        CHECK(ov.at(r, "overlapping_collective_count").number() == 0);
        continue;
      }
      ++hits;
      double expected = (end - start) - 20;
      CHECK(ov.at(r, "overlap_us").number() == doctest::Approx(expected).epsilon(1e-6));
      CHECK(ov.at(r, "overlapping_collective_count").number() == 1);
      CHECK(ov.at(r, "overlapping_collective_names").text() ==
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
      CHECK(ov.at(r, "max_overlap_us").number() == doctest::Approx(expected).epsilon(1e-6));
      CHECK(ov.at(r, "overlap_percent").number() ==
            doctest::Approx(100 * expected / ov.at(r, "kernel_time_us").number()).epsilon(1e-6));
    }
    CHECK(hits == 1);
    Table nccl = sw::nccl_table(s);
    REQUIRE(nccl.rows.size() == 1);
    CHECK(nccl.at(0, "collective").text() == "allreduce");
    CHECK(nccl.at(0, "count").number() == 1);
    CHECK(nccl.at(0, "comm_latency_mean_us").number() ==
          doctest::Approx((end - start) - 20).epsilon(1e-6));
    CHECK(nccl.at(0, "msg_size_mb").number() == 4.0);  // 1 Mi floats
  }

  TEST_CASE("sweep rocprof: the YAML parsed back selects exactly the top kernels") {
    const H100& h = h100();
    Table top = sw::gemm_variance_table(h.sweep, 5);
    std::set<std::string> selected;
    for (size_t r = 0; r < top.rows.size(); ++r) selected.insert(top.at(r, "kernel_name").text());
    auto cfg = sw::rocprof_config({selected.begin(), selected.end()});
    jarvis::testing::TempDir tmp;
    auto files = sw::write_rocprof_config(cfg, tmp.path + "/top.yaml");
    REQUIRE(files == std::vector<std::string>{tmp.path + "/top.yaml", tmp.path + "/top.json",
                                              tmp.path + "/top_kernel_list.txt"});
    // YAML: the job's keys and the single-quoted regex.
    std::string yaml = slurp(files[0]);
    std::smatch m;
    REQUIRE(std::regex_search(yaml, m,
                              std::regex(R"(\n  - kernel_include_regex: '((?:[^']|'')*)'\n)")));
    std::string regex = std::regex_replace(m[1].str(), std::regex("''"), "'");
    for (const char* line :
         {"\n    kernel_trace: true\n", "\n    stats: true\n", "\n    output_format: [json, csv]\n",
          "\n      - SQ_BUSY_CU_CYCLES\n", "\n      - SQ_WAVES\n", "\n      - SQ_INSTS_MFMA\n",
          "\n      - SQ_INSTS_VALU\n", "\njobs:\n"})
      CHECK_MESSAGE(yaml.find(line) != std::string::npos, line);
    json j = json::parse(slurp(files[1]));
    CHECK(j["jobs"][0]["kernel_include_regex"] == regex);
    CHECK(j["jobs"][0]["pmc"].size() == 4);
    CHECK(j["jobs"][0]["kernel_trace"] == true);
    // Kernel list: the names, one per line after the comment.
    std::ifstream list(files[2]);
    std::string line;
    std::vector<std::string> listed;
    while (std::getline(list, line))
      if (!line.empty() && line[0] != '#') listed.push_back(line);
    CHECK(listed == std::vector<std::string>(selected.begin(), selected.end()));
    // Every kernel name of the sweep, read from the traces here.
    std::set<std::string> all;
    for (const auto& c : h.configs) {
      jarvis::Trace t = jarvis::load_trace(h.trace_path(c));
      for (jarvis::Uid u = 0; u < t.events.size(); ++u)
        if (t.events[u].cat == jarvis::Cat::Kernel) all.insert(std::string(t.name(u)));
    }
    REQUIRE(all.size() > 20);
    std::regex re(regex);
    for (const auto& name : all) {
      CAPTURE(name);
      CHECK(std::regex_search(name, re) == (selected.count(name) == 1));
    }
    for (const auto& k : selected) {
      std::regex one(sw::exact_kernel_regex(k));
      for (const auto& name : all) CHECK(std::regex_search(name, one) == (name == k));
    }
    // Metacharacters are literal.
    std::string odd = R"(void f<(int)2>[x]*+?.^$|{}\a)";
    std::regex odd_re(sw::exact_kernel_regex(odd));
    CHECK(std::regex_search(odd, odd_re));
    CHECK(!std::regex_search(odd + " ", odd_re));
    CHECK(!std::regex_search("void f<(int)2>[x]*+?.^$|{}\\", odd_re));
  }

  TEST_CASE("sweep compare: a permuted sweep against the original") {
    const H100& h = h100();
    jarvis::testing::TempDir tmp;
    const auto& cs = h.configs;
    for (size_t i = 0; i < cs.size(); ++i) {
      fs::path dst = fs::path(tmp.path) / "cand" / h.relative(cs[i]);
      fs::create_directories(dst.parent_path());
      fs::copy_file(h.trace_path(cs[(i + 1) % cs.size()]), dst);
    }
    sw::LoadOptions o;
    o.cache_dir = "none";
    sw::Sweep cand = sw::load_sweep(tmp.path + "/cand", o);
    auto tables = sw::compare_sweeps(h.sweep, cand);
    REQUIRE(tables.size() == 2);
    auto index_of = [&](const std::string& label) {
      for (size_t i = 0; i < cs.size(); ++i)
        if (cs[i].label == label) return i;
      return cs.size();
    };
    const Table& kt = tables[1];
    REQUIRE(kt.rows.size() > 10);
    size_t beyond = 0;
    for (size_t r = 0; r < kt.rows.size(); ++r) {
      size_t i = index_of(kt.at(r, "full_config").text());
      REQUIRE(i < cs.size());
      std::string key = kt.at(r, "op").text() + "|" + kt.at(r, "shape").text();
      auto find = [&](const Config& c) {
        for (const auto& g : read_gemm(h.report_dir.at(c.label) + "/GEMM.csv"))
          if (g.op + "|" + g.shape == key) return g;
        return GemmSheetRow{};
      };
      GemmSheetRow b = find(cs[i]), c = find(cs[(i + 1) % cs.size()]);
      CAPTURE(key);
      CHECK(kt.at(r, "base_mean_us").number() == doctest::Approx(b.mean).epsilon(1e-12));
      CHECK(kt.at(r, "cand_mean_us").number() == doctest::Approx(c.mean).epsilon(1e-12));
      CHECK(kt.at(r, "delta_us").number() == doctest::Approx(c.mean - b.mean).epsilon(1e-9));
      // One run a side: the run-to-run noise is unknown, so no verdict.
      CHECK(kt.at(r, "base_runs").number() == 1);
      CHECK(kt.at(r, "verdict").text() == "cannot tell");
      CHECK(kt.at(r, "across_run_p").missing());
      // The sanity bound: this row's max - min of the per-run means over
      // the six runs of the baseline sweep, from the six GEMM sheets.
      double lo = INFINITY, hi = -INFINITY;
      for (const auto& cfg : cs) {
        GemmSheetRow g = find(cfg);
        if (std::isnan(g.mean)) continue;
        lo = std::min(lo, g.mean);
        hi = std::max(hi, g.mean);
      }
      CHECK(kt.at(r, "sweep_spread_us").number() == doctest::Approx(hi - lo).epsilon(1e-9));
      beyond += std::fabs(c.mean - b.mean) > hi - lo ? 1 : 0;
    }
    // A permutation of the same runs: no change exceeds the sweep's own spread.
    CHECK(beyond == 0);
    const Table& tl = tables[0];
    CHECK(tl.rows.size() == 6 * 9);  // 8 timeline types and step_time
    for (size_t r = 0; r < tl.rows.size(); ++r) {
      if (tl.at(r, "type").text() != "total_time") continue;
      size_t i = index_of(tl.at(r, "full_config").text());
      auto total = [&](const Config& c) {
        Table t = jarvis::read_csv_file(h.report_dir.at(c.label) + "/gpu_timeline.csv");
        for (size_t k = 0; k < t.rows.size(); ++k)
          if (t.at(k, "type").text() == "total_time") return std::stod(t.at(k, "time ms").text());
        return std::nan("");
      };
      CHECK(tl.at(r, "delta_ms").number() ==
            doctest::Approx(total(cs[(i + 1) % cs.size()]) - total(cs[i])).epsilon(1e-9));
      CHECK(tl.at(r, "verdict").text() == "cannot tell");
      CHECK(tl.at(r, "note").text().find("cannot tell: 1 run(s) a side") == 0);
    }
    // Against itself: no change, all inside the noise.
    auto self = sw::compare_sweeps(h.sweep, h.sweep);
    const Table& same = self[1];
    CHECK(same.rows.size() > 10);
    for (size_t r = 0; r < same.rows.size(); ++r) {
      CHECK(same.at(r, "delta_us").number() == 0);
      CHECK(same.at(r, "verdict").text() == "cannot tell");
    }
  }

  TEST_CASE("sweep CLI: sweep, rocprof-config, sweep-compare") {
    const H100& h = h100();
    jarvis::testing::TempDir tmp;
    std::string bin = JARVIS_BINARY;
    std::string out = tmp.path + "/out";
    REQUIRE(run(bin + " sweep '" + h.root + "' --out '" + out + "' --cache '" + tmp.path +
                "/cache' --jobs 2 --progress plain --xlsx '" + tmp.path + "/all.xlsx' > '" +
                tmp.path + "/stdout' 2> '" + tmp.path + "/stderr'") == 0);
    CHECK(slurp(tmp.path + "/stderr").find("(6/6 runs)") != std::string::npos);
    auto tables = sw::sweep_tables(h.sweep, 5);
    for (const auto& t : tables) {
      CAPTURE(t.name);
      REQUIRE(fs::exists(out + "/" + t.name + ".csv"));
      CHECK(slurp(out + "/" + t.name + ".csv") == t.to_csv());
    }
    CHECK(fs::file_size(tmp.path + "/all.xlsx") > 1000);
    CHECK(jarvis::xlsx_sheet_names(tables).size() == tables.size());
    // Variance plots: a box and a violin per field, levels as axis labels.
    REQUIRE(run(bin + " sweep '" + h.root + "' --out '" + out + "' --cache '" + tmp.path +
                "/cache' --svg-dir '" + tmp.path + "/svg' --quiet > /dev/null") == 0);
    for (const char* f : {"box_threads", "violin_threads"}) {
      CAPTURE(f);
      std::string svg = slurp(tmp.path + "/svg/" + f + ".svg");
      CHECK(svg.rfind("<svg", 0) == 0);
      CHECK(svg.find(">256<") != std::string::npos);
      CHECK(svg.find(">512<") != std::string::npos);
    }
    std::string inter = slurp(tmp.path + "/svg/interaction_channel_threads.svg");
    for (const char* label : {">threads = 256<", ">threads = 512<", ">28<", ">42<", ">56<"})
      CHECK_MESSAGE(inter.find(label) != std::string::npos, label);
    CHECK(fs::exists(tmp.path + "/svg/box_channel.svg"));
    // The H100's kernels are NVIDIA's: refused, with the Nsight Compute command.
    CHECK(run(bin + " rocprof-config '" + out + "/gemm_variance.csv' --out '" + tmp.path +
              "/nv.yaml' > /dev/null 2> '" + tmp.path + "/rp_err'") != 0);
    CHECK(slurp(tmp.path + "/rp_err").find("ncu --target-processes all") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path + "/nv.yaml"));
    // AMD kernel names (hipBLASLt's Cijk_ GEMMs) get the rocprofv3 job.
    std::ofstream(tmp.path + "/amd.csv")
        << "kernel_name,time_diff_us\n"
        << "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1,3.5\n"
        << "Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI32x32x1,2.0\n";
    REQUIRE(run(bin + " rocprof-config '" + tmp.path + "/amd.csv' --out '" + tmp.path +
                "/rp.yaml' > /dev/null") == 0);
    std::vector<std::string> kernels = sw::kernels_from_csv(tmp.path + "/amd.csv");
    CHECK(std::string(sw::kernel_vendor(kernels)) == "amd");
    CHECK(slurp(tmp.path + "/rp.yaml") == sw::rocprof_config(kernels).yaml);
    CHECK(fs::exists(tmp.path + "/rp_kernel_list.txt"));
    CHECK(fs::exists(tmp.path + "/rp.json"));
    REQUIRE(run(bin + " sweep-compare '" + h.root + "' '" + h.root + "' --out '" + tmp.path +
                "/cmp' --cache none --quiet > /dev/null 2>&1") == 0);
    CHECK(fs::exists(tmp.path + "/cmp/compare_gemm_kernels.csv"));
    CHECK(fs::exists(tmp.path + "/cmp/compare_gpu_timeline.csv"));
    CHECK(run(bin + " sweep '" + h.root + "' > /dev/null 2>&1") != 0);  // no --out
    CHECK(run(bin + " sweep '" + h.root + "' --out x --jobs 0 > /dev/null 2>&1") != 0);
  }

  TEST_CASE("sweep MCP: load_sweep and the sweep tools") {
    const H100& h = h100();
    const LayoutSweep& ls = layout_sweep();
    jarvis::testing::TempDir tmp;
    auto options = jarvis::mcp::testing::shared_root_options();
    options.roots.push_back(tmp.path);
    options.roots.push_back(ls.root);
    jarvis::mcp::testing::Harness mcp(options);
    mcp.initialize();
    json reply = mcp.call_tool(1, "load_sweep", {{"path", h.root}, {"cache_dir", tmp.path + "/c"}},
                               {{"progressToken", "p"}});
    REQUIRE(reply.contains("result"));
    json r = reply["result"]["structuredContent"];
    CHECK(r["run_count"] == 6);
    CHECK(r["configs"].size() == 6);
    CHECK(r["failures"].empty());
    CHECK(r["fields"] == json::array({"threads", "channel", "rank"}));
    // Each trace run with its own health verdict, as run_health has it.
    Table health = sw::run_health_table(h.sweep);
    REQUIRE(r["runs"].size() == health.rows.size());
    for (size_t k = 0; k < health.rows.size(); ++k) {
      CHECK(r["runs"][k]["run"] == health.at(k, "run").text());
      CHECK(r["runs"][k]["confidence"] == health.at(k, "confidence").text());
      CHECK(r["runs"][k]["warnings"].is_array());
    }
    size_t progress = 0;
    for (const auto& n : mcp.notes) progress += n.value("method", "") == "notifications/progress";
    CHECK(progress >= 6);
    std::string handle = r["sweep"];

    json v = mcp.tool_result(2, "sweep_gemm_variance",
                             {{"sweep", handle},
                              {"instances", "overlap"},
                              {"output_dir", tmp.path + "/gv"},
                              {"max_rows", 100}});
    Table top = sw::gemm_variance_table(h.sweep, 5);
    REQUIRE(v["variance"].size() == top.rows.size());
    CHECK(v["variance"][0]["kernel_time_max_us"].get<double>() ==
          top.at(0, "kernel_time_max_us").number());
    CHECK(v["variance"][0]["threads"] == top.at(0, "threads").number());
    CHECK(v["instances"].size() == 100);
    CHECK(v["instances"][0].contains("overlap_us"));
    CHECK(v["files"].size() == 3);
    CHECK(fs::exists(tmp.path + "/gv/gemm_variance_coll_overlap.csv"));

    json g = mcp.tool_result(3, "sweep_gpu_timeline", {{"sweep", handle}});
    CHECK(g["summary_by_config"].size() == 6);
    CHECK(g["pivot_time_ms"].size() == 8);
    CHECK(g["summary_by_config"][0]["total_time_ms"].get<double>() ==
          sw::gpu_timeline_tables(h.sweep)[3].at(0, "total_time_ms").number());
    json n = mcp.tool_result(4, "sweep_nccl", {{"sweep", handle}});
    CHECK(n["row_count"] == 0);  // one rank: NCCL launched no kernel
    CHECK(n["reason"].get<std::string>().find("no collectives in this sweep") == 0);
    CHECK(r["flags"][0].get<std::string>().find("no collectives in this sweep") == 0);

    // NVIDIA kernels: no rocprofv3 job (its SQ_* counters are AMD's), the
    // Nsight Compute command instead, and nothing written.
    json rp =
        mcp.call_tool(5, "rocprof_config", {{"sweep", handle}, {"output", tmp.path + "/rp.yaml"}});
    CHECK(rp["result"]["isError"] == true);
    std::string msg = rp["result"]["content"][0]["text"];
    CHECK(msg.find("ncu ") != std::string::npos);
    CHECK(msg.find("--kernel-name regex:") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path + "/rp.yaml"));
    CHECK(v.contains("follow_up"));

    json c = mcp.tool_result(6, "compare_sweeps",
                             {{"base", handle}, {"candidate", handle}, {"limit", 100}});
    CHECK(c["gpu_timeline"].size() == 54);
    CHECK(c["gemm_kernel_verdicts"]["cannot tell"] == c["gemm_kernel_row_count"]);
    for (const auto& row : c["gemm_kernels"]) CHECK(row["delta_us"] == 0.0);

    json bad = mcp.call_tool(7, "sweep_nccl", {{"sweep", "s999"}});
    CHECK(bad["result"]["isError"] == true);
    json lay = mcp.tool_result(8, "load_sweep",
                               {{"path", ls.root}, {"layout", ls.pattern}, {"cache_dir", "none"}});
    CHECK(lay["run_count"] == 6);
    REQUIRE(lay["failures"].size() == 1);
    CHECK(lay["failures"][0]["path"] == ls.broken);
  }
}

TEST_SUITE("sweep") {
  TEST_CASE("sweep NCCL: skew across ranks equals the multi-rank collective report") {
    jarvis::testing::TempDir tmp;
    std::string dir = tmp.path + "/sweep/256thread/nccl_28channels";
    std::string src =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    REQUIRE(run("python3 '" + std::string(JARVIS_SOURCE_DIR) +
                "/tools/make_multirank_traces.py' --src '" + src + "' --out '" + dir +
                "' --ranks 2 > /dev/null") == 0);
    sw::LoadOptions o;
    o.pattern = "{threads}thread/nccl_{channel}channels/rank{rank}.json.gz";
    o.cache_dir = "none";
    sw::Sweep s = sw::load_sweep(tmp.path + "/sweep", o);
    REQUIRE(s.runs.size() == 2);
    Table nccl = sw::nccl_table(s);
    auto ref =
        jarvis::collectives::collective_report({dir + "/rank0.json.gz", dir + "/rank1.json.gz"});
    struct Acc {
      std::vector<double> skew, dur;
    };
    std::map<std::string, Acc> by_group;
    for (const auto& m : ref.report.instances) {
      Acc& a = by_group[m.collective + "|" + m.dtype + "|" + fmt::format("{}", m.msg_size_mb)];
      a.skew.push_back(m.start_skew_us);
      a.dur.insert(a.dur.end(), m.dur_us.begin(), m.dur_us.end());
    }
    REQUIRE(nccl.rows.size() == by_group.size());
    for (size_t r = 0; r < nccl.rows.size(); ++r) {
      std::string key = nccl.at(r, "collective").text() + "|" + nccl.at(r, "dtype").text() + "|" +
                        fmt::format("{}", nccl.at(r, "msg_size_mb").number());
      CAPTURE(key);
      REQUIRE(by_group.count(key) == 1);
      const Acc& a = by_group[key];
      double skew_mean = 0, dur_mean = 0;
      for (double x : a.skew) skew_mean += x / static_cast<double>(a.skew.size());
      for (double x : a.dur) dur_mean += x / static_cast<double>(a.dur.size());
      CHECK(nccl.at(r, "num_ranks").number() == 2);
      CHECK(nccl.at(r, "count").number() == a.dur.size());
      CHECK(nccl.at(r, "start_skew_us_mean").number() == doctest::Approx(skew_mean).epsilon(1e-9));
      CHECK(nccl.at(r, "start_skew_us_max").number() ==
            *std::max_element(a.skew.begin(), a.skew.end()));
      CHECK(nccl.at(r, "comm_latency_mean_us").number() == doctest::Approx(dur_mean).epsilon(1e-9));
      CHECK(nccl.at(r, "note").text().empty());
    }
  }
}

TEST_SUITE("sweep") {
  TEST_CASE("sweep xlsx: report workbooks in the seed's individual_reports layout") {
    const H100& h = h100();
    jarvis::testing::TempDir tmp;
    for (const auto& c : h.configs) {
      fs::path dir = fs::path(tmp.path) / "sweep" / (c.threads + "thread") / "individual_reports";
      fs::create_directories(dir);
      std::string cmd = std::string(JARVIS_BINARY) + " report '" + h.trace_path(c) + "' --out '" +
                        tmp.path + "/scratch' --xlsx '" +
                        (dir / ("perf_" + c.channel + "ch_rank0.xlsx")).string() + "' > /dev/null";
      REQUIRE(run(cmd) == 0);
    }
    sw::LoadOptions o;
    o.cache_dir = "none";
    sw::Sweep s = sw::load_sweep(tmp.path + "/sweep", o);
    CHECK(s.layout.pattern ==
          "{threads}thread/individual_reports/perf_{channel}ch_rank{rank}.xlsx");
    REQUIRE(s.runs.size() == 6);
    CHECK(s.runs[0].input.kind == sw::RunKind::ReportXlsx);
    Table t = sw::gemm_variance_table(s, 5), ref = sw::gemm_variance_table(h.sweep, 5);
    REQUIRE(t.rows.size() == ref.rows.size());
    for (size_t r = 0; r < t.rows.size(); ++r)
      for (const char* c : {"threads", "channel", "rank", "kernel_name", "kernel_time_min_us",
                            "kernel_time_max_us", "time_diff_us", "count", "op", "shape"}) {
        CAPTURE(c);
        CHECK(t.at(r, c).v == ref.at(r, c).v);
      }
    // The timeline and GEMM columns; steps exist in traces only (a workbook
    // has no iterations), so the step and normalisation columns differ.
    auto timeline_part = [](Table t) {
      size_t keep = static_cast<size_t>(t.col("steps"));
      t.columns.resize(keep);
      for (auto& row : t.rows) row.resize(keep);
      return t.to_csv();
    };
    CHECK(timeline_part(sw::gpu_timeline_tables(s)[3]) ==
          timeline_part(sw::gpu_timeline_tables(h.sweep)[3]));
    // Kernel names come from the kernel_summary sheet.
    CHECK(!s.runs[0].data.kernel_names.empty());
    // A file that is no workbook fails with its path.
    std::ofstream(tmp.path + "/sweep/256thread/individual_reports/perf_70ch_rank0.xlsx")
        << "no zip";
    sw::Sweep bad = sw::load_sweep(tmp.path + "/sweep", o);
    REQUIRE(bad.failures.size() == 1);
    CHECK(bad.failures[0].reason.find("not a readable xlsx workbook") != std::string::npos);
  }
}

TEST_SUITE("sweep") {
  TEST_CASE("sweep rocprof: a rocprofv3 results file is a run with TraceLens's timeline") {
    std::string src = jarvis::golden::shared_dir() + "/rocprof/mi350_aorta_train";
    jarvis::testing::TempDir tmp;
    fs::path dir = fs::path(tmp.path) / "sweep/256thread/nccl_28channels/torch_profiler/rank0";
    fs::create_directories(dir);
    fs::copy_file(src + "/908_results.json.gz", dir / "908_results.json.gz");
    sw::LoadOptions o;
    o.cache_dir = tmp.path + "/cache";
    sw::Sweep s = sw::load_sweep(tmp.path + "/sweep", o);
    REQUIRE(s.runs.size() == 1);
    CHECK(s.runs[0].data.kind == sw::RunKind::Rocprof);
    CHECK(s.runs[0].data.gemms.empty());
    Table pivot = sw::gpu_timeline_tables(s)[1];
    Table ref = jarvis::read_csv_file(src + "/perf_report_csvs/gpu_timeline.csv");
    REQUIRE(pivot.rows.size() == ref.rows.size());
    for (size_t k = 0; k < ref.rows.size(); ++k)
      CHECK(pivot_cell(pivot, ref.at(k, "type").text(), "threads=256 channel=28") ==
            doctest::Approx(std::stod(ref.at(k, "time ms").text())).epsilon(1e-12));
    Table ks = jarvis::read_csv_file(src + "/perf_report_csvs/kernel_summary.csv");
    std::set<std::string> names;
    for (size_t k = 0; k < ks.rows.size(); ++k) names.insert(ks.at(k, "name").text());
    CHECK(std::set<std::string>(s.runs[0].data.kernel_names.begin(),
                                s.runs[0].data.kernel_names.end()) == names);
    CHECK(sw::load_sweep(tmp.path + "/sweep", o).cache_hits == 1);
  }
}

TEST_SUITE("sweep") {
  TEST_CASE("sweep MCP: cancelling load_sweep stops it without a reply") {
    const H100& h = h100();
    jarvis::mcp::testing::Harness mcp;
    mcp.initialize();
    size_t progress = 0;
    jarvis::mcp::Emit cancel_on_progress = [&](const json& note) {
      if (note.value("method", "") != "notifications/progress" || progress++ > 0) return;
      mcp.session->handle({{"jsonrpc", "2.0"},
                           {"method", "notifications/cancelled"},
                           {"params", {{"requestId", 91}, {"reason", "test"}}}},
                          mcp.emit);
    };
    json request = {{"jsonrpc", "2.0"},
                    {"id", 91},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", "load_sweep"},
                      {"arguments", {{"path", h.root}, {"jobs", 1}, {"cache_dir", "none"}}},
                      {"_meta", {{"progressToken", "tok"}}}}}};
    auto reply = mcp.session->handle(request, cancel_on_progress);
    CHECK_FALSE(reply.has_value());
    CHECK(progress == 1);  // the first run's progress, then the workers stopped
    CHECK(mcp.session->in_flight() == 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
