// The memory timeline chart and pages (src/charts/memory_page.h): the chart's
// points are samples of the trace and its peak the peak of the raw [memory]
// events, parsed here on their own (nlohmann over the gunzipped file); a
// trace without memory events gets no memory section in the report.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "charts/memory_page.h"
#include "charts/report_page.h"
#include "golden.h"
#include "memory/memory.h"
#include "report/report.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/memory_events.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using nlohmann::json;

namespace {

struct RawPoint {
  double ts_us;
  int64_t allocated, reserved;
};

struct RawTimeline {
  std::vector<RawPoint> points;  // time order (file order among equal times)
  RawPoint peak{};               // the first largest Total Allocated
  size_t steps = 0;              // ProfilerStep#N user annotations
};

RawTimeline raw_timeline(const std::string& path, int device_type, int device_id) {
  json events = json::parse(loader_test::gunzip_file(path))["traceEvents"];
  RawTimeline t;
  for (const json& e : events) {
    std::string name = e.value("name", "");
    if (name.starts_with("ProfilerStep#") && e.value("cat", "") == "user_annotation") ++t.steps;
    if (name != "[memory]" || !e.contains("args")) continue;
    const json& a = e["args"];
    if (a["Device Type"].get<int>() != device_type || a["Device Id"].get<int>() != device_id)
      continue;
    t.points.push_back({e["ts"].get<double>(), a["Total Allocated"].get<int64_t>(),
                        a["Total Reserved"].get<int64_t>()});
  }
  std::stable_sort(t.points.begin(), t.points.end(),
                   [](const RawPoint& a, const RawPoint& b) { return a.ts_us < b.ts_us; });
  REQUIRE(!t.points.empty());
  t.peak = t.points.front();
  for (const RawPoint& p : t.points)
    if (p.allocated > t.peak.allocated) t.peak = p;
  return t;
}

// The first number of `attribute` on the element of class `cls` in the SVG.
double svg_attribute(const std::string& svg, const std::string& cls, const std::string& attribute) {
  std::regex element("<[a-z]+ [^>]*class=\"" + cls + "\"[^>]*>");
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, element));
  std::string tag = m.str();
  std::smatch v;
  REQUIRE(std::regex_search(tag, v, std::regex(attribute + "=\"([^\"]+)\"")));
  return std::stod(v.str(1));
}

Report report_of(const Trace& trace) {
  CallTree tree(trace, TreeOptions{});
  return build_report(trace, tree, ReportOptions{});
}

}  // namespace

TEST_CASE("memory chart: the points are the trace's samples and the peak is the raw peak") {
  std::string path = golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz";
  RawTimeline raw = raw_timeline(path, kDeviceTypeCuda, 0);
  REQUIRE(raw.points.size() == 2250);
  memory::MemoryAnalysis analysis = memory::analyse_memory(load_trace(path));
  const memory::DeviceMemory* cuda = analysis.find("cuda:0");
  REQUIRE(cuda);

  constexpr size_t kPoints = 100;
  charts::MemoryTimelineChart chart = charts::memory_timeline_chart(*cuda, kPoints);
  REQUIRE(chart.points.size() <= kPoints);
  REQUIRE(chart.points.size() >= kPoints / 2);
  // Every point drawn is one sample's totals, in time order, first and last kept.
  size_t next = 0;
  for (const charts::MemoryPoint& p : chart.points) {
    while (next < raw.points.size() && !(std::fabs(raw.points[next].ts_us - p.ts_us) < 1e-3 &&
                                         double(raw.points[next].allocated) == p.allocated_bytes &&
                                         double(raw.points[next].reserved) == p.reserved_bytes))
      ++next;
    CHECK_MESSAGE(next < raw.points.size(), fmt::format("point at {} µs", p.ts_us));
  }
  CHECK(chart.points.front().ts_us == doctest::Approx(raw.points.front().ts_us));
  CHECK(chart.points.back().allocated_bytes == double(raw.points.back().allocated));
  // The peak is drawn and marked, at the raw peak's bytes and time.
  double top = 0;
  for (const charts::MemoryPoint& p : chart.points) top = std::max(top, p.allocated_bytes);
  CHECK(top == double(raw.peak.allocated));
  CHECK(chart.peak_bytes == double(raw.peak.allocated));
  CHECK(chart.peak_ts_us == doctest::Approx(raw.peak.ts_us).epsilon(1e-12));
  CHECK(chart.peak_label ==
        fmt::format("peak {:.2f} GiB", double(raw.peak.allocated) / double(1 << 30)));
  CHECK(chart.steps.size() == raw.steps);

  std::string svg = charts::to_svg(chart);
  CHECK(svg_attribute(svg, "mark peak", "data-y") == double(raw.peak.allocated));
  CHECK(svg_attribute(svg, "mark peak", "data-x") == doctest::Approx(raw.peak.ts_us));
  CHECK(svg_attribute(svg, "series allocated", "data-points") == double(chart.points.size()));
  CHECK(svg_attribute(svg, "series reserved", "data-points") == double(chart.points.size()));
  CHECK(svg.find(">" + chart.peak_label + "</text>") != std::string::npos);
  // The text summary names the same peak the chart labels.
  CHECK(memory::memory_summary_text(analysis).starts_with("cuda:0: " + chart.peak_label + " "));

  // The page: one chart per device, each with its table of holders.
  charts::MemoryPageOptions options;
  options.trace_path = path;
  std::string html = charts::memory_html(analysis, options);
  CHECK(html.find("<section id=\"memory_cuda_0\">") != std::string::npos);
  CHECK(html.find("<section id=\"memory_cpu\">") != std::string::npos);
  CHECK(html.find("Held at the peak, by op") != std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.size() < 400'000);  // 2,450 samples drawn as at most 1,000 points per device
}

TEST_CASE("memory chart: a generated timeline longer than the cap keeps its peak") {
  memory::DeviceMemory d;
  d.device = "cuda:0";
  d.device_type = kDeviceTypeCuda;
  // A saw-tooth of 10,001 samples whose single peak sits between two run boundaries.
  for (int64_t k = 0; k <= 10'000; ++k)
    d.timeline.push_back({k * 1000, (k % 7) * 1000 + (k == 5003 ? 50'000 : 0), 100'000});
  d.peak_allocated = 5003 % 7 * 1000 + 50'000;
  d.peak_ts_ns = 5003 * 1000;
  charts::MemoryTimelineChart chart = charts::memory_timeline_chart(d, 64);
  REQUIRE(chart.points.size() == 64);
  size_t peaks = 0;
  for (const charts::MemoryPoint& p : chart.points)
    peaks += p.allocated_bytes == double(d.peak_allocated) && p.ts_us == 5003.0;
  CHECK(peaks == 1);
  CHECK(chart.peak_label == "peak 53.7 KiB");  // 55,000 B
}

TEST_CASE("memory chart: the report has a memory section only when the trace has [memory]") {
  std::string kernel =
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":20,)"
      R"("args":{"External id":1}},)"
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":12,)"
      R"("dur":5,"args":{"correlation":7,"External id":1}},)"
      R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":20,"dur":30,)"
      R"("args":{"correlation":7,"External id":1,"device":0,"stream":7}})";
  std::string memory =
      R"(,{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":11,)"
      R"("args":{"Total Reserved":2097152,"Total Allocated":1048576,"Bytes":1048576,"Addr":16,)"
      R"("Device Id":0,"Device Type":1}})";
  charts::ReportPageOptions page;
  page.trace_path = "t.json";

  Trace without = load_trace_from_json(R"({"traceEvents":[)" + kernel + "]}");
  CHECK_FALSE(memory::analyse_memory_if_recorded(without).has_value());
  Report r1 = report_of(without);
  auto charts1 = charts::report_charts(without, r1, page);
  for (const auto& c : charts1)
    CHECK_FALSE(std::holds_alternative<charts::MemoryTimelineChart>(c.chart));
  std::string html1 = charts::report_html(without, r1, charts1, page);
  CHECK(html1.find("id=\"memory") == std::string::npos);
  CHECK(html1.find("mark peak") == std::string::npos);

  Trace with = load_trace_from_json(R"({"traceEvents":[)" + kernel + memory + "]}");
  Report r2 = report_of(with);
  auto charts2 = charts::report_charts(with, r2, page);
  REQUIRE(charts2.size() == charts1.size() + 1);
  CHECK(charts2.back().name == "memory_cuda_0");
  const auto& chart = std::get<charts::MemoryTimelineChart>(charts2.back().chart);
  REQUIRE(chart.points.size() == 1);
  CHECK(chart.peak_bytes == 1048576);
  CHECK(chart.peak_label == "peak 1.0 MiB");
  std::string html2 = charts::report_html(with, r2, charts2, page);
  CHECK(html2.find("<section id=\"memory\">") != std::string::npos);
  CHECK(html2.find("class=\"mark peak\"") != std::string::npos);
  CHECK(html2.find("<td>aten::mm</td>") != std::string::npos);  // the holder of the peak
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
