// Charts and HTML pages: every chart kind from constructed data and from the
// shared H100 BERT trace, checked through a real XML parser (tests/charts/svg_facts.py:
// well-formed SVG, one class="mark" per data row, axis domains covering the
// data), the pages checked for offline-ness, and the CLI / MCP entry points.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "charts/charts.h"
#include "charts/findings_page.h"
#include "charts/html.h"
#include "charts/report_page.h"
#include "charts/timeline_view.h"
#include "charts/variance_charts.h"
#include "critical_path/critical_path.h"
#include "golden.h"
#include "mcp_harness.h"
#include "perf/gpu_arch.h"
#include "report/report.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::charts;
using jarvis::mcp::json;
using jarvis::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kBert = jarvis::golden::shared_dir() + "/conformance/h100_bert-small";

// Facts of every SVG in the files (tests/charts/svg_facts.py); fails on bad XML.
json svg_facts(const std::vector<std::string>& files) {
  std::string cmd = "python3 " + std::string(JARVIS_SOURCE_DIR) + "/tests/charts/svg_facts.py";
  for (const auto& f : files) cmd += " '" + f + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  REQUIRE(pclose(pipe) == 0);
  json facts = json::parse(out);
  INFO(out);
  REQUIRE_FALSE(facts.contains("error"));
  return facts["charts"];
}

json chart_facts(const std::string& svg, const TempDir& dir) {
  static int counter = 0;
  std::string path = dir.path + "/chart" + std::to_string(counter++) + ".svg";
  write_file_atomic(path, svg);
  json charts = svg_facts({path});
  REQUIRE(charts.size() == 1);
  return charts[0];
}

// Every http(s):// in a page must be an XML namespace name, never a resource.
void check_offline(const std::string& html) {
  std::regex url("https?://");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), url); it != std::sregex_iterator();
       ++it) {
    size_t at = static_cast<size_t>(it->position());
    std::string before = html.substr(at >= 7 ? at - 7 : 0, at >= 7 ? 7 : at);
    INFO(html.substr(at >= 40 ? at - 40 : 0, 100));
    CHECK(before == "xmlns=\"");
  }
}

double num(const Table& t, size_t r, const char* col) {
  const std::string& s = t.at(r, col).missing() ? std::string() : t.at(r, col).text();
  return s.empty() ? NAN : std::stod(s);
}

}  // namespace

TEST_SUITE("charts") {
  TEST_CASE("bar charts: one mark per drawn value, value axis covers the bars") {
    TempDir dir;
    BarChart grouped{"Grouped",
                     "Kernel time",
                     Unit::Microseconds,
                     {"a", "b", "c"},
                     {{"s1", {1, 2, 3}}, {"s2", {4, NAN, 600}}},
                     false};
    json g = chart_facts(to_svg(grouped), dir);
    CHECK(g["marks"] == 5);
    CHECK(g["plot"]["x_min"].get<double>() <= 0);
    CHECK(g["plot"]["x_max"].get<double>() >= 600);
    BarChart stacked{
        "Stacked", "Time", Unit::Microseconds, {"a", "b"}, {{"s1", {1, 2}}, {"s2", {3, 0}}}, true};
    json s = chart_facts(to_svg(stacked), dir);
    CHECK(s["marks"] == 3);  // the zero segment is not drawn
    CHECK(s["plot"]["x_max"].get<double>() >= 4);
    // Tick formatting picks the unit from the magnitude.
    CHECK(format_value(1500, Unit::Microseconds) == "1.5 ms");
    CHECK(format_value(2.5e6, Unit::Microseconds) == "2.5 s");
    CHECK(format_value(12, Unit::TflopsPerSec) == "12 TFLOPS/s");
  }

  TEST_CASE("histogram: one mark per bin, axes cover bins and counts") {
    TempDir dir;
    HistogramChart h{"Hist", "Duration", Unit::Microseconds, {{1, 2, 5}, {2, 3, 0}, {3, 4, 17}}};
    json f = chart_facts(to_svg(h), dir);
    CHECK(f["marks"] == 3);
    CHECK(f["plot"]["x_min"].get<double>() <= 1);
    CHECK(f["plot"]["x_max"].get<double>() >= 4);
    CHECK(f["plot"]["y_max"].get<double>() >= 17);
  }

  TEST_CASE("box statistics follow numpy's linear quantiles and Tukey whiskers") {
    BoxStats s = box_stats({4, 1, 100, 3, 2, NAN});
    CHECK(s.count == 5);
    CHECK(s.q1 == doctest::Approx(2));
    CHECK(s.median == doctest::Approx(3));
    CHECK(s.q3 == doctest::Approx(4));
    CHECK(s.whisker_low == doctest::Approx(1));
    CHECK(s.whisker_high == doctest::Approx(4));  // 100 is an outlier
    BoxStats even = box_stats({1, 2, 3, 4});
    CHECK(even.q1 == doctest::Approx(1.75));
    CHECK(even.median == doctest::Approx(2.5));
    CHECK(even.q3 == doctest::Approx(3.25));
  }

  TEST_CASE("variance charts from a plain table: box, violin, interaction") {
    TempDir dir;
    Table runs("runs", {"threads", "channels", "time_us"});
    std::map<std::pair<int, std::string>, std::vector<double>> by_cell;
    double lo = INFINITY, hi = -INFINITY;
    for (int threads : {1024, 256, 512})
      for (std::string channels : {"8", "4"})
        for (int rep = 0; rep < 5; ++rep) {
          double v =
              100.0 + threads / 16.0 + (channels == "8" ? 30 : 0) * (threads == 512) + rep * 1.5;
          auto& row = runs.add_row();
          row[0] = Cell(threads);
          row[1] = Cell(channels);
          row[2] = Cell(v);
          by_cell[{threads, channels}].push_back(v);
          lo = std::min(lo, v), hi = std::max(hi, v);
        }
    auto groups = group_by_field(runs, "threads", "time_us");
    REQUIRE(groups.size() == 3);
    CHECK(groups[0].label == "256");  // numeric order, not first appearance
    CHECK(groups[2].label == "1024");
    CHECK(groups[1].values.size() == 10);
    CHECK_THROWS_AS(group_by_field(runs, "ranks", "time_us"), std::invalid_argument);

    VarianceSpec spec{"time_us", "GEMM time", Unit::Microseconds, {"threads", "channels"},
                      "threads", "channels"};
    auto charts = variance_charts(runs, spec);
    REQUIRE(charts.size() == 5);
    for (size_t i = 0; i < 4; ++i) {
      json f = chart_facts(to_svg(charts[i].chart), dir);
      CHECK(f["marks"] == (i < 2 ? 3 : 2));  // one box / violin per level
      CHECK(f["plot"]["y_min"].get<double>() <= lo);
      CHECK(f["plot"]["y_max"].get<double>() >= hi);
    }
    json inter = chart_facts(to_svg(charts[4].chart), dir);
    CHECK(inter["marks"] == 6);
    // Means in line order (channels 4, 8) then x order (threads 256, 512, 1024).
    std::vector<double> expected;
    for (std::string ch : {"4", "8"})
      for (int t : {256, 512, 1024}) {
        auto& v = by_cell[{t, ch}];
        double sum = 0;
        for (double x : v) sum += x;
        expected.push_back(sum / static_cast<double>(v.size()));
      }
    auto values = inter["mark_values"].get<std::vector<double>>();
    REQUIRE(values.size() == expected.size());
    for (size_t i = 0; i < values.size(); ++i) CHECK(values[i] == doctest::Approx(expected[i]));
  }

  TEST_CASE("roofline and timeline charts: marks and log / time domains") {
    TempDir dir;
    RooflineChart r{"Roof",
                    3.35,
                    {{"matrix_bf16", 989}},
                    {{"a", "GEMM", 50, 100, 10},
                     {"b", "GEMM", 0.5, 0.2, 3},
                     {"c", "elementwise", 0.25, 0.1, 1},
                     {"no model", "other", 0, 0, 5}}};
    json f = chart_facts(to_svg(r), dir);
    CHECK(f["marks"] == 3);
    for (const auto& xy : f["mark_xy"]) {
      CHECK(xy[0].get<double>() >= f["plot"]["x_min"].get<double>());
      CHECK(xy[0].get<double>() <= f["plot"]["x_max"].get<double>());
      CHECK(xy[1].get<double>() >= f["plot"]["y_min"].get<double>());
      CHECK(xy[1].get<double>() <= f["plot"]["y_max"].get<double>());
    }
    CHECK(f["plot"]["y_max"].get<double>() >= 989);         // the compute roof
    CHECK(f["plot"]["x_max"].get<double>() >= 989 / 3.35);  // its ridge point

    TimelineChart t{"Strip",
                    {"stream 7", "stream 8"},
                    {{"stream 7", "k1", "compute kernel", 100, 110},
                     {"stream 8", "k2", "memcpy", 105, 130},
                     {"stream 7", "late", "compute kernel", 500, 510}},
                    100,
                    130};
    json tf = chart_facts(to_svg(t), dir);
    CHECK(tf["marks"] == 2);  // the bar after the window is not drawn
    CHECK(tf["plot"]["x_min"].get<double>() <= 100);
    CHECK(tf["plot"]["x_max"].get<double>() >= 130);
  }

  TEST_CASE("report page of the H100 BERT trace: charts match the TraceLens sheets") {
    TempDir dir;
    Trace trace = load_trace(kBert + "/trace.json.gz");
    CallTree tree(trace, TreeOptions{});
    GpuArch arch = perf::load_gpu_arch("H100");
    ReportOptions options;
    options.arch = &arch;
    Report report = build_report(trace, tree, options);
    ReportPageOptions page;
    page.trace_path = kBert + "/trace.json.gz";
    page.arch_name = "H100";
    page.arch = analysis::load_arch_json("H100");
    auto charts = report_charts(trace, report, page);

    std::map<std::string, const NamedChart*> by_name;
    for (const auto& c : charts) by_name[c.name] = &c;
    for (const char* name :
         {"gpu_timeline", "categories", "top_ops", "top_ops_efficiency", "roofline",
          "gemm_roofline", "short_kernels", "timeline", "memory_cuda_0", "memory_cpu"})
      REQUIRE_MESSAGE(by_name.count(name), name);

    // Expected marks, counted from the TraceLens reference CSVs.
    std::string csvs = kBert + "/perf_report_csvs/";
    Table ref_timeline = read_csv_file(csvs + "gpu_timeline.csv");
    Table ref_categories = read_csv_file(csvs + "ops_summary_by_category.csv");
    Table ref_unified = read_csv_file(csvs + "unified_perf_summary.csv");
    Table ref_short = read_csv_file(csvs + "short_kernel_histogram.csv");
    size_t split_marks = 0;
    for (size_t r = 0; r < ref_timeline.rows.size(); ++r) {
      std::string type = ref_timeline.at(r, "type").text();
      if ((type == "computation_time" || type == "exposed_comm_time" ||
           type == "exposed_memcpy_time" || type == "idle_time") &&
          num(ref_timeline, r, "time ms") > 0)
        ++split_marks;
    }
    std::vector<size_t> order(ref_unified.rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return num(ref_unified, a, "Kernel Time (µs)_sum") >
             num(ref_unified, b, "Kernel Time (µs)_sum");
    });
    size_t top = std::min<size_t>(20, order.size()), efficiency = 0, roof = 0, gemm_roof = 0;
    for (size_t i = 0; i < top; ++i)
      if (std::isfinite(num(ref_unified, order[i], "Pct Roofline_mean"))) ++efficiency;
    for (size_t r = 0; r < ref_unified.rows.size(); ++r)
      if (num(ref_unified, r, "FLOPS/Byte") > 0 && num(ref_unified, r, "TFLOPS/s_mean") > 0) {
        ++roof;
        if (ref_unified.at(r, "op category").text() == "GEMM") ++gemm_roof;
      }
    size_t gpu_events = 0;
    for (const Event& e : trace.events) gpu_events += e.is_gpu() && e.has_ts() && e.has_dur();
    std::map<std::string, size_t> expected = {{"gpu_timeline", split_marks},
                                              {"categories", ref_categories.rows.size()},
                                              {"top_ops", top},
                                              {"top_ops_efficiency", efficiency},
                                              {"roofline", roof},
                                              {"gemm_roofline", gemm_roof},
                                              {"short_kernels", ref_short.rows.size()},
                                              {"timeline", gpu_events},
                                              // the trace has [memory] events: one peak each
                                              {"memory_cuda_0", 1},
                                              {"memory_cpu", 1}};

    auto paths = write_chart_svgs(charts, dir.path + "/svg");
    json facts = svg_facts(paths);
    REQUIRE(facts.size() == charts.size());
    for (size_t i = 0; i < charts.size(); ++i) {
      INFO(charts[i].name);
      CHECK(facts[i]["marks"].get<size_t>() == expected.at(charts[i].name));
      for (double v : facts[i]["mark_values"].get<std::vector<double>>())
        if (charts[i].name != "short_kernels") CHECK(v <= facts[i]["plot"]["x_max"].get<double>());
      for (const auto& xy : facts[i]["mark_xy"]) {
        CHECK(xy[0].get<double>() >= facts[i]["plot"]["x_min"].get<double>());
        CHECK(xy[1].get<double>() <= facts[i]["plot"]["y_max"].get<double>());
      }
    }
    // The category bars carry TraceLens's numbers (ms -> µs), largest first.
    const auto& cat = std::get<BarChart>(by_name["categories"]->chart);
    for (size_t r = 0; r < ref_categories.rows.size(); ++r) {
      INFO(ref_categories.at(r, "op category").text());
      CHECK(cat.categories[r] == ref_categories.at(r, "op category").text());
      CHECK(cat.series[0].values[r] ==
            doctest::Approx(num(ref_categories, r, "total_direct_kernel_time_ms") * 1e3));
    }

    std::string html = report_html(trace, report, charts, page);
    write_file_atomic(dir.path + "/report.html", html);
    // Every chart inline but the SVG timeline strip: the page draws the
    // interactive timeline (charts/timeline_view.h) in its place.
    CHECK(svg_facts({dir.path + "/report.html"}).size() == charts.size() - 1);
    CHECK(by_name.count("timeline") == 1);
    CHECK(html.find("<section id=\"timeline_view\">") != std::string::npos);
    check_offline(html);
    CHECK(html.find("<table class=\"sortable\">") != std::string::npos);
    CHECK(html.find("<section id=\"memory\">") != std::string::npos);
    CHECK(html.size() < 1'000'000);
  }

  TEST_CASE("report page: one GPU event count per meaning (H100 Qwen: unlinked kernels)") {
    // The timeline counts the GPU events linked to a launch (TraceLens's
    // gpu_timeline); trace health counts them all. The raw JSON gives both.
    const std::string path =
        jarvis::golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz";
    const auto raw = nlohmann::json::parse(jarvis::loader_test::gunzip_file(path));
    size_t all = 0;
    for (const auto& e : raw["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      all += (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") ? 1 : 0;
    }
    Trace trace = load_trace(path);
    CallTree tree(trace, TreeOptions{});
    GpuArch arch = perf::load_gpu_arch("H100");
    ReportOptions options;
    options.arch = &arch;
    Report report = build_report(trace, tree, options);
    REQUIRE(report.timeline.event_count < all);
    ReportPageOptions page;
    page.trace_path = path;
    page.arch_name = "H100";
    const std::string html = report_html(trace, report, report_charts(trace, report, page), page);
    const std::string linked = fmt::format("{} GPU events linked to a launch (of {} in the trace)",
                                           report.timeline.event_count, all);
    CHECK(html.find(linked) != std::string::npos);
    CHECK(html.find(fmt::format("{} GPU events, ", report.timeline.event_count)) ==
          std::string::npos);
  }

  TEST_CASE("jarvis report --html and --svg-dir from the command line") {
    TempDir dir;
    std::string cmd = std::string(JARVIS_BINARY) + " report '" + kBert +
                      "/trace.json.gz' --html '" + dir.path + "/r.html' --svg-dir '" + dir.path +
                      "/svg' > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK(fs::file_size(dir.path + "/r.html") > 10000);
    CHECK(fs::exists(dir.path + "/svg/gemm_roofline.svg"));  // arch detected from the trace
    std::string bad = std::string(JARVIS_BINARY) + " report '" + kBert +
                      "/trace.json.gz' --svg-dir x 2> /dev/null";
    CHECK(WEXITSTATUS(std::system(bad.c_str())) == 2);
  }

  TEST_CASE("findings page: cmark-gfm markdown, local charts embedded, nothing remote") {
    TempDir dir;
    fs::create_directories(dir.path + "/category_findings");
    fs::create_directories(dir.path + "/charts");
    BarChart chart{"Chart", "Time", Unit::Microseconds, {"a"}, {{"s", {1}}}, false};
    write_file_atomic(dir.path + "/charts/c.svg", to_svg(chart));
    write_file_atomic(dir.path + "/category_findings/gemm_findings.md",
                      "# GEMM findings\n\n| Priority | Op |\n|---|---|\n| High | addmm |\n\n"
                      "![roofline](../charts/c.svg)\n\n![gone](../charts/none.svg)\n\n"
                      "![remote](https://example.com/x.svg)\n\n<script>alert(1)</script>\n");
    FindingsPage page = render_findings_page(dir.path);
    CHECK(page.files.size() == 1);
    CHECK(page.images_embedded == 1);
    CHECK(page.images_missing == std::vector<std::string>{"../charts/none.svg"});
    CHECK(page.images_refused == std::vector<std::string>{"https://example.com/x.svg"});
    CHECK(page.html.find("<table>") != std::string::npos);  // GitHub table extension
    CHECK(page.html.find("<script>alert") == std::string::npos);
    CHECK(page.html.find("data:image/svg+xml;base64,") != std::string::npos);
    check_offline(page.html);
    TempDir empty;
    CHECK_THROWS_AS(render_findings_page(empty.path), std::invalid_argument);
  }

  TEST_CASE("MCP render_report and render_findings") {
    TempDir dir;
    mcp::ServerOptions options;
    options.roots = {jarvis::golden::shared_dir(), dir.path};
    mcp::testing::Harness h(options);
    h.initialize();
    json loaded = h.tool_result(1, "load_trace", {{"path", kBert + "/trace.json.gz"}});
    json r = h.tool_result(2, "render_report",
                           {{"trace", loaded["trace"]},
                            {"output", dir.path + "/report.html"},
                            {"svg_dir", dir.path + "/charts"}});
    CHECK(r["arch"] == "H100");
    CHECK(r["bytes"].get<size_t>() == fs::file_size(dir.path + "/report.html"));
    REQUIRE(r["charts"].size() == 8 + 2);  // + the memory charts of cuda:0 and the CPU
    for (const auto& c : r["charts"]) CHECK(fs::exists(c["svg_path"].get<std::string>()));
    // The annotated trace beside the page, linked from it, with the critical
    // path of the trace's dependency graph (as `jarvis critical-path` has it).
    const std::string annotated = r["annotated_trace"].get<std::string>();
    CHECK(fs::path(annotated).filename() == "report.annotated.json.gz");
    std::ifstream page_in(dir.path + "/report.html");
    CHECK(std::string(std::istreambuf_iterator<char>(page_in), {})
              .find("href=\"report.annotated.json.gz\"") != std::string::npos);
    json doc = json::parse(jarvis::loader_test::gunzip_file(annotated));
    size_t path_slices = 0;
    for (const auto& e : doc["traceEvents"])
      if (e.value("cat", "") == "jarvis.critical_path") ++path_slices;
    auto cp = jarvis::critical_path::load_graph({kBert + "/trace.json.gz"});
    size_t segments = 0;
    for (const auto& it : jarvis::critical_path::analyse(cp.graph).iterations)
      segments += it.path.size();
    CHECK(segments > 0);
    CHECK(path_slices == segments);
    // A file of the user's under that name is never replaced.
    fs::remove(annotated);
    std::ofstream(annotated) << "mine";
    json refused = h.call_tool(7, "render_report",
                               {{"trace", loaded["trace"]}, {"output", dir.path + "/report.html"}});
    CHECK(refused["result"]["isError"] == true);
    CHECK_MESSAGE(refused["result"]["content"][0]["text"].get<std::string>().find(
                      "jarvis did not write") != std::string::npos,
                  refused.dump());
    std::ifstream kept(annotated);
    CHECK(std::string(std::istreambuf_iterator<char>(kept), {}) == "mine");
    json bad =
        h.call_tool(3, "render_report", {{"trace", "t99"}, {"output", dir.path + "/x.html"}});
    CHECK(bad["result"]["isError"] == true);
    json outside = h.call_tool(4, "render_report",
                               {{"trace", loaded["trace"]}, {"output", "/etc/jarvis_x.html"}});
    CHECK(outside["result"]["isError"] == true);
    // Issue 50: never over an input, by inode, even with overwrite: a hard
    // link to a loaded trace under an .html name is refused, the trace kept.
    fs::copy_file(kBert + "/trace.json.gz", dir.path + "/own.json.gz");
    fs::create_hard_link(dir.path + "/own.json.gz", dir.path + "/alias.html");
    const auto own_size = fs::file_size(dir.path + "/own.json.gz");
    json own = h.tool_result(8, "load_trace", {{"path", dir.path + "/own.json.gz"}});
    json onto_input = h.call_tool(
        9, "render_report",
        {{"trace", own["trace"]}, {"output", dir.path + "/alias.html"}, {"overwrite", true}});
    CHECK(onto_input["result"]["isError"] == true);
    CHECK_MESSAGE(onto_input["result"]["content"][0]["text"].get<std::string>().find("input") !=
                      std::string::npos,
                  onto_input.dump());
    CHECK(fs::file_size(dir.path + "/own.json.gz") == own_size);
    CHECK(fs::hard_link_count(dir.path + "/own.json.gz") == 2);

    fs::create_directories(dir.path + "/category_findings");
    write_file_atomic(dir.path + "/category_findings/gemm_findings.md",
                      "# GEMM\n\n![GEMM roofline](../charts/gemm_roofline.svg)\n");
    json f = h.tool_result(5, "render_findings", {{"output_dir", dir.path}});
    CHECK(f["images_embedded"] == 1);
    CHECK(f["path"] == (fs::canonical(dir.path) / "findings.html").string());
    CHECK(fs::exists(f["path"].get<std::string>()));
    TempDir empty;
    json none = h.call_tool(6, "render_findings", {{"output_dir", empty.path}});
    CHECK(none["result"]["isError"] == true);
  }

  TEST_CASE("timeline of a long trace: whole steps, the last ones, counted from the raw JSON") {
    // The page draws at most N slices. It used to show the middle N and cut
    // the last step; now whole ProfilerStep#N steps ending with the last (a
    // step's slices run from its start to the next step's start).
    const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_tf32_A_fp32.json.gz";
    const auto raw = nlohmann::json::parse(jarvis::loader_test::gunzip_file(path));
    const std::set<std::string> cats = {"kernel",          "gpu_memcpy",   "gpu_memset", "cpu_op",
                                        "user_annotation", "cuda_runtime", "cuda_driver"};
    std::vector<double> starts;           // every candidate slice's start (us)
    std::map<double, std::string> steps;  // step start -> name
    for (const auto& e : raw["traceEvents"]) {
      if (e.value("ph", "") != "X" || !e.contains("dur") || !cats.count(e.value("cat", "")))
        continue;
      starts.push_back(e["ts"].get<double>());
      const std::string name = e.value("name", "");
      if (e["cat"] == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0)
        steps[e["ts"].get<double>()] = name;
    }
    REQUIRE(steps.size() >= 3);
    auto from = [&](double t) {
      return static_cast<size_t>(
          std::count_if(starts.begin(), starts.end(), [&](double s) { return s >= t; }));
    };
    const auto last = std::prev(steps.end()), second = std::prev(last);
    const size_t last_one = from(last->first), last_two = from(second->first);
    REQUIRE(last_two < starts.size());
    Trace trace = load_trace(path);
    {
      const auto all = charts::timeline_view_data(trace, nullptr, starts.size());
      CHECK(all.slices == starts.size());
      CHECK(all.total == starts.size());
    }
    for (size_t max : {last_two, last_two + 1}) {
      const auto v = charts::timeline_view_data(trace, nullptr, max);
      CHECK(v.total == starts.size());
      CHECK(v.slices == last_two);
      CHECK(v.window_start_us == doctest::Approx(second->first));
      CHECK(v.window_label.find(second->second + " to " + last->second) != std::string::npos);
      CHECK(charts::timeline_view_html(v).find(html_escape(v.window_label)) != std::string::npos);
    }
    {
      const auto v = charts::timeline_view_data(trace, nullptr, last_two - 1);
      CHECK(v.slices == last_one);
      CHECK(v.window_start_us == doctest::Approx(last->first));
      CHECK(v.window_label.find(last->second + " (whole steps") != std::string::npos);
    }
    {
      const auto v = charts::timeline_view_data(trace, nullptr, last_one - 1);
      CHECK(v.slices == last_one - 1);
      CHECK(v.window_start_us == doctest::Approx(last->first));
      CHECK(v.window_label.find(fmt::format("the first {} slices of {}", last_one - 1,
                                            last->second)) != std::string::npos);
    }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
