#include "categories/final_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/atomic_file.h"
#include "categories/category_analysis_common.h"
#include "categories/category_insights.h"
#include "categories/findings_check.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> number_attr(const std::string& text) {
  if (text == "null") return std::nullopt;
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

constexpr const char* kHeadroomMarker = "<!-- tuning-headroom pct=";
constexpr const char* kWhatIfMarker = "<!-- what-if-saving pct=";
// A system P-item's step saving (findings.cpp's system draft): microseconds
// over the trace's steps, the what-if insights ranks by.
constexpr const char* kStepSavingMarker = "<!-- step-saving us_total=";

// The number after `marker` on `line`, if the marker is there.
std::optional<double> marker_value(const std::string& line, std::string_view marker) {
  size_t at = line.find(marker);
  if (at == std::string::npos) return std::nullopt;
  size_t from = at + marker.size();
  size_t end = line.find_first_of(" -", from);
  return number_attr(line.substr(from, end - from));
}

// The P-items of a checked findings file: number, title, p_item impact,
// tuning headroom.
std::vector<FinalReportItem> p_items_of(const std::string& markdown) {
  static const std::regex p_re(R"(^###\s+P(\d+):\s*(.+?)\s*$)");
  static const std::regex impact_re(
      R"(<!--\s*impact-begin\s+kind=p_item\s+low=(\S+)\s+mid=(\S+)\s+high=(\S+)\s*-->)");
  std::vector<FinalReportItem> items;
  std::istringstream in(markdown);
  std::string line;
  bool in_recommendations = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("## ")) in_recommendations = line == "## Recommendations";
    if (!in_recommendations) continue;
    std::smatch m;
    if (std::regex_match(line, m, p_re)) {
      FinalReportItem item;
      item.p_item = std::stoi(m[1].str());
      item.title = m[2].str();
      items.push_back(item);
    } else if (auto headroom = marker_value(line, kHeadroomMarker); !items.empty() && headroom) {
      items.back().tuning_headroom_pct = headroom;
    } else if (auto saving = marker_value(line, kWhatIfMarker); !items.empty() && saving) {
      items.back().what_if_saving_pct = saving;
    } else if (auto step = marker_value(line, kStepSavingMarker); !items.empty() && step) {
      items.back().step_saving_ms = *step / 1e3;
    } else if (!items.empty() && std::regex_search(line, m, impact_re)) {
      items.back().impact_low = number_attr(m[1].str());
      items.back().impact_mid = number_attr(m[2].str());
      items.back().impact_high = number_attr(m[3].str());
    }
  }
  return items;
}

std::string pct(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}", *v) : std::string("—");
}

std::string md_cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

std::string links(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + fmt::format("[{}]({})", p, p);
  return out;
}

nlohmann::json item_json(const FinalReportItem& i, size_t rank) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  nlohmann::json j = {{"category", i.category},
                      {"tier", i.tier},
                      {"p_item", i.p_item},
                      {"title", i.title},
                      {"impact_low", opt(i.impact_low)},
                      {"impact_mid", opt(i.impact_mid)},
                      {"impact_high", opt(i.impact_high)},
                      {"tuning_headroom_pct", opt(i.tuning_headroom_pct)},
                      {"what_if_saving_pct", opt(i.what_if_saving_pct)},
                      {"recoverable_pct", opt(i.recoverable_pct)},
                      {"recoverable_basis", i.recoverable_basis},
                      {"recoverable_ms", opt(i.recoverable_ms)},
                      {"step_saving_ms", opt(i.step_saving_ms)},
                      {"findings_path", i.findings_path},
                      {"evidence", i.evidence}};
  if (rank > 0) j["rank"] = rank;
  return j;
}

std::string render_markdown(const FinalReport& r) {
  std::string md = "# Final performance report\n\n";
  md += fmt::format(
      "{} findings file(s) checked: {} ranked recommendation(s), {} system finding(s), {} file(s) "
      "left out.{}\n\n",
      r.findings_files, r.ranked.size(), r.system.size(), r.skipped.size(),
      r.total_time_ms ? fmt::format(" Total trace time {:.3f} ms.", *r.total_time_ms) : "");
  if (r.trace_health.is_object() &&
      !r.trace_health.value("warnings", nlohmann::json::array()).empty()) {
    std::vector<std::string> warnings;
    for (const auto& w : r.trace_health["warnings"]) warnings.push_back(w.get<std::string>());
    md += fmt::format(
        "> **Caution — trace confidence {}:** {}. The conclusions below rest on this trace; "
        "repeat this caveat with them.\n\n",
        r.trace_health.value("confidence", std::string("?")), fmt::join(warnings, "; "));
  }
  md += "## Ranked recommendations\n\n";
  if (r.ranked.empty()) {
    md += "No quantified recommendation.\n\n";
  } else {
    md +=
        "Ranked by recoverable time: impact mid (% of end-to-end time, as in each category's "
        "category_findings), capped where the draft's Regime line shows latency-bound ops that "
        "kernel tuning cannot take below the latency floor; system findings with a step saving "
        "(a host-bound step, host syncs: the what-if on the un-profiled step, as insights ranks "
        "them) by that saving as a share of the trace's time.\n\n";
    md +=
        "| Rank | Category | Recommendation | Impact % E2E (low–high) | Recoverable % E2E | "
        "Recoverable (ms, whole trace) | Evidence |\n|---|---|---|---|---|---|---|\n";
    for (size_t k = 0; k < r.ranked.size(); ++k) {
      const FinalReportItem& i = r.ranked[k];
      md += fmt::format("| {} | {} | P{}: {} | {} ({}–{}) | {}{} | {} | {} |\n", k + 1, i.category,
                        i.p_item, md_cell(i.title), pct(i.impact_mid), pct(i.impact_low),
                        pct(i.impact_high), pct(i.recoverable_pct),
                        i.recoverable_basis == "latency floor cap" ? " (floor cap)"
                        : i.recoverable_basis == "what-if cap"     ? " (what-if cap)"
                        : i.recoverable_basis == "step saving"     ? " (step saving)"
                                                                   : "",
                        i.recoverable_ms ? fmt::format("{:.3f}", *i.recoverable_ms) : "—",
                        links(i.evidence));
    }
    md += "\n";
  }
  md += "## System-level findings\n\n";
  if (r.system.empty()) md += "None.\n";
  for (const auto& i : r.system)
    md += fmt::format("- {} P{}: {} (impact not quantifiable from trace data; {})\n", i.category,
                      i.p_item, i.title, links(i.evidence));
  md += "\n## Left out\n\n";
  if (r.skipped.empty()) md += "None: every findings file passed the check.\n";
  for (const auto& s : r.skipped) {
    md += fmt::format("- {} ([{}]({})): {} problem(s) in the findings check", s.category,
                      s.findings_path, s.findings_path, s.problems.size());
    if (!s.problems.empty()) md += "; first: " + s.problems.front();
    md += "\n";
  }
  return md;
}

}  // namespace

nlohmann::json FinalReport::to_json() const {
  nlohmann::json ranked_json = nlohmann::json::array(), system_json = nlohmann::json::array(),
                 skipped_json = nlohmann::json::array();
  for (size_t k = 0; k < ranked.size(); ++k) ranked_json.push_back(item_json(ranked[k], k + 1));
  for (const auto& i : system) system_json.push_back(item_json(i, 0));
  for (const auto& s : skipped)
    skipped_json.push_back(
        {{"category", s.category}, {"findings_path", s.findings_path}, {"problems", s.problems}});
  return {{"output_dir", output_dir},
          {"total_time_ms", total_time_ms ? nlohmann::json(*total_time_ms) : nlohmann::json()},
          {"findings_files", findings_files},
          {"trace_health", trace_health},
          {"ranked", ranked_json},
          {"system", system_json},
          {"skipped", skipped_json}};
}

FinalReport build_final_report(const std::string& output_dir) {
  if (!fs::is_directory(output_dir))
    throw std::invalid_argument("output directory '" + output_dir + "' does not exist");
  FinalReport r;
  r.output_dir = output_dir;
  const fs::path root(output_dir);
  fs::path idle = root / "category_data" / "cpu_idle_metrics.json";
  if (fs::is_regular_file(idle)) {
    ojson m = read_json_file(idle.string());
    if (m.contains("gpu_utilization") && m["gpu_utilization"].contains("total_time_ms") &&
        m["gpu_utilization"]["total_time_ms"].is_number())
      r.total_time_ms = m["gpu_utilization"]["total_time_ms"].get<double>();
  }
  std::vector<fs::path> files;
  for (const char* sub : {"category_findings", "system_findings"}) {
    fs::path dir = root / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string name = e.path().filename().string();
      if (e.is_regular_file() && !e.is_symlink() && name.ends_with("_findings.md"))
        files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw std::invalid_argument(
        "no findings under " + output_dir +
        " (category_findings/*_findings.md, system_findings/*_findings.md): write them with "
        "write_findings first");
  r.findings_files = files.size();
  r.trace_health = nlohmann::json(prepared_trace_health(output_dir));
  for (const fs::path& file : files) {
    std::string name = file.filename().string();
    std::string category = name.substr(0, name.size() - std::string("_findings.md").size());
    std::string rel = fs::path(file).lexically_relative(root).generic_string();
    std::string markdown = read_all(file);
    FindingsValidation check = validate_findings_in(output_dir, category, markdown);
    if (!check.valid()) {
      r.skipped.push_back({category, rel, check.problems});
      continue;
    }
    std::vector<std::string> evidence = {rel};
    for (const std::string& e :
         {"category_data/" + category + "_metrics.json", "category_data/" + category + "_ops.csv",
          "metadata/" + category + "_metadata.json"})
      if (fs::is_regular_file(root / e)) evidence.push_back(e);
    bool system = rel.starts_with("system_findings/");
    for (FinalReportItem item : p_items_of(markdown)) {
      item.category = category;
      item.tier = system ? "system" : "compute";
      item.findings_path = rel;
      item.evidence = evidence;
      // System findings (cpu_idle: a host-bound step) rank with the compute
      // ones when they carry an impact: one ranking by what each fix saves.
      if (item.impact_mid) {
        item.recoverable_pct = item.impact_mid;
        item.recoverable_basis = "impact mid";
        if (item.tuning_headroom_pct && *item.tuning_headroom_pct < *item.recoverable_pct) {
          item.recoverable_pct = item.tuning_headroom_pct;
          item.recoverable_basis = "latency floor cap";
        }
        // The dependency graph's word last: time the step cannot give back
        // (kernels hidden behind a host that runs ahead) is not recoverable.
        if (item.what_if_saving_pct && *item.what_if_saving_pct < *item.recoverable_pct) {
          item.recoverable_pct = item.what_if_saving_pct;
          item.recoverable_basis = "what-if cap";
        }
        if (r.total_time_ms) item.recoverable_ms = *item.recoverable_pct / 100.0 * *r.total_time_ms;
      } else if (item.step_saving_ms) {
        // A system finding with the step saving insights ranks by (a
        // host-bound step, host syncs): ranked with the kernel findings by
        // that saving, as a share of the trace's time (issue 73 point 10).
        item.recoverable_ms = item.step_saving_ms;
        item.recoverable_basis = "step saving";
        if (r.total_time_ms && *r.total_time_ms > 0)
          item.recoverable_pct = std::min(100.0, *item.step_saving_ms / *r.total_time_ms * 100.0);
        r.ranked.push_back(std::move(item));
        continue;
      }
      (!item.impact_mid ? r.system : r.ranked).push_back(std::move(item));
    }
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(),
                   [](const FinalReportItem& a, const FinalReportItem& b) {
                     return a.recoverable_pct.value_or(0) > b.recoverable_pct.value_or(0);
                   });
  r.markdown = render_markdown(r);
  return r;
}

std::vector<std::string> write_final_report(const FinalReport& report) {
  std::string md = report.output_dir + "/final_report.md";
  std::string js = report.output_dir + "/final_report.json";
  write_file_atomic(md, report.markdown);
  write_file_atomic(js, report.to_json().dump(2) + "\n");
  return {md, js};
}

}  // namespace jarvis::analysis
