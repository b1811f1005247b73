// Self-contained HTML pages of a sweep and of two compared sweeps (the seed's
// create_embeded_html_report: variance plots, GPU timeline by config, NCCL by
// config, top-variance kernels), from the sweep's own tables and the chart
// layer. Inline SVG and CSS only: the page opens offline and can be mailed.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "charts/charts.h"
#include "charts/html.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

const Table* find_table(const std::vector<Table>& tables, std::string_view name) {
  for (const Table& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

double number_or_nan(const Cell& c) {
  return c.is_number() ? c.number() : NAN;
}

// Profiled steps of a Summary_By_Config row (0 when the table has none).
double steps_of(const Table& summary, size_t r) {
  if (summary.col("steps") < 0) return 0;
  double steps = number_or_nan(summary.at(r, "steps"));
  return std::isfinite(steps) && steps > 0 ? steps : 0;
}

// Whether every row has its step count: then the values are shown per step.
bool per_step(const Table& summary) {
  for (size_t r = 0; r < summary.rows.size(); ++r)
    if (steps_of(summary, r) == 0) return false;
  return !summary.rows.empty();
}

// Timeline split per config (mean over ranks), stacked, from Summary_By_Config:
// per step when every row knows its steps, else over the profiled window.
charts::BarChart timeline_chart(const Table& summary) {
  charts::BarChart chart;
  const bool step = per_step(summary);
  chart.title = step ? "GPU time per step by configuration (mean over ranks and steps)"
                     : "GPU time of the profiled window by configuration (mean over ranks)";
  chart.value_label = "Time";
  chart.unit = charts::Unit::Microseconds;
  chart.stacked = true;
  const std::pair<const char*, const char*> parts[] = {
      {"computation_time_ms", "computation"},
      {"exposed_comm_time_ms", "exposed communication"},
      {"exposed_memcpy_time_ms", "exposed memcpy"},
      {"idle_time_ms", "idle"}};
  for (const auto& [column, label] : parts) chart.series.push_back({label, {}});
  bool any_part = false;
  for (size_t r = 0; r < summary.rows.size(); ++r) {
    chart.categories.push_back(summary.at(r, "full_config").to_csv_text(false));
    for (size_t s = 0; s < std::size(parts); ++s) {
      int c = summary.col(parts[s].first);
      double v = c < 0 ? NAN : number_or_nan(summary.rows[r][c]) * 1e3;
      if (step) v /= steps_of(summary, r);
      any_part = any_part || std::isfinite(v);
      chart.series[s].values.push_back(v);
    }
  }
  if (any_part) return chart;
  // Kernel-only (rocprof-style) reports have busy and total time only.
  chart.series = {{"busy", {}}, {"idle", {}}};
  for (size_t r = 0; r < summary.rows.size(); ++r) {
    double per = step ? steps_of(summary, r) : 1.0;
    double busy = number_or_nan(summary.at(r, "busy_time_ms")) * 1e3 / per;
    double total = number_or_nan(summary.at(r, "total_time_ms")) * 1e3 / per;
    chart.series[0].values.push_back(busy);
    chart.series[1].values.push_back(total - busy);
  }
  return chart;
}

std::string summary_html(const Sweep& sweep) {
  std::map<std::string, size_t> configs;
  for (const Run& run : sweep.runs) ++configs[sweep.config_label(run)];
  std::string fields;
  for (const auto& f : sweep.layout.fields) fields += (fields.empty() ? "" : ", ") + f;
  return fmt::format(
      "<p>{} runs in {} configurations; {} failed to load. Layout <code>{}</code> (fields: {}). "
      "Variance is the max - min of a GEMM row's kernel time across its instances within one "
      "run; compare it with the spread between runs of the same configuration before calling "
      "it a configuration effect.</p>",
      sweep.runs.size(), configs.size(), sweep.failures.size(),
      charts::html_escape(sweep.layout.pattern), charts::html_escape(fields));
}

// Trace runs carry a health verdict; a sweep of report inputs has none.
bool has_verdict(const Table& run_health) {
  int c = run_health.col("confidence");
  for (const auto& row : run_health.rows)
    if (c >= 0 && row[c].is_text()) return true;
  return false;
}

// What changes between configurations, the page's lead after the summary
// (issue 55): what_changed (busy / idle / communication per configuration and
// whether the configuration can explain it) and what_changed_kernels (the
// kernels that moved against the reference, with the rank test's verdict,
// "cannot tell" included). One function, so that the page's other sections
// can be reordered without touching it.
std::vector<charts::HtmlSection> what_changed_sections(const Sweep& sweep,
                                                       const std::vector<Table>& tables) {
  std::vector<charts::HtmlSection> out;
  if (const Table* w = find_table(tables, "what_changed"); w && !w->rows.empty())
    out.push_back(
        {"what-changed", "What changed per configuration",
         "<p>Each configuration against the median one: total, busy, idle, communication and "
         "GEMM time, the spread of steps inside one run, and whether the configuration can "
         "explain the difference (<code>explanation</code>).</p>" +
             charts::html_table(*w, 200)});
  const Table* k = find_table(tables, "what_changed_kernels");
  if (!k) return out;
  std::string html;
  if (k->rows.empty()) {
    std::string why = kernel_changes_empty_reason(sweep);
    html = fmt::format("<p>No kernel changes: {}.</p>",
                       charts::html_escape(why.empty() ? "no kernel changed" : why));
  } else {
    std::map<std::string, size_t> verdicts;
    for (size_t r = 0; r < k->rows.size(); ++r) ++verdicts[k->at(r, "verdict").text()];
    std::string counts;
    for (const auto& [verdict, n] : verdicts)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, verdict);
    html = fmt::format(
        "<p>{}.</p><p>Top kernels per configuration by change of GPU time per unit of work "
        "against the reference configuration. Verdicts ({}): the Mann-Whitney rank test at "
        "alpha 0.05 divided by the kernels compared (Bonferroni), on the per-run values when "
        "the runs can reach it, else on the per-iteration values (<code>noise</code> says "
        "which); <b>cannot tell</b> means neither has enough samples for any difference to be "
        "told from noise.</p>",
        charts::html_escape(kernel_changes_summary(*k)), charts::html_escape(counts));
    html += charts::html_table(*k, 200);
  }
  out.push_back({"what-changed-kernels", "Kernels that changed (vs the reference)", html});
  return out;
}

// Milliseconds as a reader takes them in: three significant digits.
std::string ms_text(double v) {
  return std::fabs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

// What the page leads with: which part of the GPU time changes across the
// configurations and by how much (per step when the steps are known), what
// stays flat, and whether run-to-run noise can be told from it.
std::string changes_html(const Sweep& sweep, const Table& summary, const Table* what_changed) {
  if (summary.rows.size() < 2)
    return "<p>One configuration: nothing to compare across configurations.</p>\n";
  const bool step = per_step(summary);
  const std::string unit = step ? "ms per step" : "ms over the profiled window";
  struct Part {
    const char* column;
    const char* label;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    std::string lo_config{}, hi_config{};
    size_t n = 0;
  };
  std::vector<Part> parts = {{"computation_time_ms", "computation"},
                             {"exposed_comm_time_ms", "exposed communication"},
                             {"exposed_memcpy_time_ms", "exposed memcpy"},
                             {"idle_time_ms", "idle"},
                             {"busy_time_ms", "busy"},
                             {"total_time_ms", "total"}};
  for (Part& p : parts) {
    if (summary.col(p.column) < 0) continue;
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      double v = number_or_nan(summary.at(r, p.column));
      if (!std::isfinite(v)) continue;
      if (step) v /= steps_of(summary, r);
      std::string config = summary.at(r, "full_config").to_csv_text(false);
      if (v < p.lo) p.lo = v, p.lo_config = config;
      if (v > p.hi) p.hi = v, p.hi_config = config;
      p.sum += v, ++p.n;
    }
  }
  std::erase_if(parts, [](const Part& p) { return p.n == 0; });
  if (parts.empty()) return "";
  // The parts of the step (not busy / total), largest change first.
  std::vector<const Part*> split;
  for (const Part& p : parts)
    if (std::string_view(p.label) != "busy" && std::string_view(p.label) != "total")
      split.push_back(&p);
  std::stable_sort(split.begin(), split.end(),
                   [](const Part* a, const Part* b) { return a->hi - a->lo > b->hi - b->lo; });
  std::string out;
  if (!split.empty()) {
    const Part& top = *split.front();
    out += fmt::format(
        "<p class=\"lead\"><b>{} changes most: {} &rarr; {} {} across the {} "
        "configurations</b> (lowest {}, highest {})",
        charts::html_escape(std::string(1, static_cast<char>(std::toupper(top.label[0]))) +
                            (top.label + 1)),
        ms_text(top.lo), ms_text(top.hi), unit, summary.rows.size(),
        charts::html_escape(top.lo_config), charts::html_escape(top.hi_config));
    std::string flat;
    for (size_t k = 1; k < split.size(); ++k) {
      const Part& p = *split[k];
      if (p.hi <= 0) continue;
      flat += fmt::format("{}{} {}-{}", flat.empty() ? "" : ", ", p.label, ms_text(p.lo),
                          ms_text(p.hi));
    }
    if (!flat.empty()) out += fmt::format("; the rest moves less: {} {}", flat, unit);
    out += ".</p>\n";
  }
  Table t("changes",
          {"part of the GPU time", "lowest (" + unit + ")", "lowest in", "highest (" + unit + ")",
           "highest in", "range (" + unit + ")", "range (% of the mean)"});
  std::vector<const Part*> rows = split;
  for (const Part& p : parts)
    if (std::find(rows.begin(), rows.end(), &p) == rows.end()) rows.push_back(&p);
  for (const Part* p : rows) {
    auto& row = t.add_row();
    double mean = p->sum / static_cast<double>(p->n);
    row = {std::string(p->label),
           p->lo,
           p->lo_config,
           p->hi,
           p->hi_config,
           p->hi - p->lo,
           mean > 0 ? Cell(100 * (p->hi - p->lo) / mean) : Cell()};
  }
  out += charts::html_table(t, 20);
  // Noise: runs per configuration, and the steps' spread inside one run.
  std::map<std::string, size_t> runs;
  for (const Run& run : sweep.runs) ++runs[sweep.config_label(run)];
  size_t most = 0;
  for (const auto& [config, n] : runs) most = std::max(most, n);
  double spread = 0;
  if (what_changed && what_changed->col("step_spread_in_run_ms") >= 0)
    for (size_t r = 0; r < what_changed->rows.size(); ++r) {
      double v = number_or_nan(what_changed->at(r, "step_spread_in_run_ms"));
      if (std::isfinite(v)) spread = std::max(spread, v);
    }
  if (most <= 1)
    out += fmt::format(
        "<p class=\"warnings\"><b>Noise cannot be judged: one run per configuration.</b> A "
        "difference between configurations may be run-to-run noise; repeat each configuration "
        "(two runs or more) to tell them apart.{}</p>\n",
        spread > 0
            ? fmt::format(" Inside one run, steps already differ by up to {} ms.", ms_text(spread))
            : std::string());
  else
    out += fmt::format(
        "<p>Up to {} runs per configuration: the comparisons below (and `jarvis sweep-compare`) "
        "test configuration effects against the spread between runs.</p>\n",
        most);
  return out;
}

// The variance charts of fields that take more than one value in the table
// (a "by rank" plot of one rank shows nothing); the others are named.
std::string variance_figures(const Sweep& sweep, const Table& v) {
  std::string skipped, html;
  std::vector<std::string> single;
  for (const auto& field : sweep.layout.fields) {
    int c = v.col(field);
    if (c < 0) continue;
    std::set<std::string> values;
    for (const auto& row : v.rows)
      if (static_cast<size_t>(c) < row.size()) values.insert(row[c].to_csv_text(false));
    if (values.size() <= 1) single.push_back(field);
  }
  if (int c = v.col("rank"); c >= 0) {
    std::set<std::string> values;
    for (const auto& row : v.rows)
      if (static_cast<size_t>(c) < row.size()) values.insert(row[c].to_csv_text(false));
    if (values.size() <= 1 && std::find(single.begin(), single.end(), "rank") == single.end())
      single.push_back("rank");
  }
  for (const auto& c : variance_charts(sweep, v)) {
    bool drop = false;
    for (const auto& f : single) drop = drop || c.name == "box_" + f || c.name == "violin_" + f;
    if (!drop) html += charts::html_figure(charts::to_svg(c.chart), c.caption);
  }
  if (!single.empty()) {
    std::string names;
    for (const auto& f : single) names += (names.empty() ? "" : ", ") + f;
    html += "<p class=\"note\">No chart by " + charts::html_escape(names) +
            ": one value in this sweep.</p>\n";
  }
  return html;
}

}  // namespace

std::string sweep_html_page(const Sweep& sweep, const std::vector<Table>& tables) {
  std::vector<charts::HtmlSection> sections;
  sections.push_back({"summary", "Summary", summary_html(sweep)});
  // Lead with what changes across configurations, then the tables behind it
  // (per configuration, and the kernels that moved), then the timeline it
  // comes from; the GEMM variance within runs follows.
  const Table* by_config = find_table(tables, "gpu_timeline_Summary_By_Config");
  if (by_config)
    sections.push_back({"changes", "What changes across configurations",
                        changes_html(sweep, *by_config, find_table(tables, "what_changed"))});
  for (auto& section : what_changed_sections(sweep, tables)) sections.push_back(std::move(section));
  if (const Table* s = by_config) {
    std::string html = charts::html_figure(
        charts::to_svg(timeline_chart(*s)),
        per_step(*s) ? "Computation, exposed communication, exposed memcpy and idle time per "
                       "step (the profiled window divided by its steps) per configuration."
                     : "Computation, exposed communication, exposed memcpy and idle time over "
                       "the profiled window per configuration (its steps are not known).");
    sections.push_back(
        {"timeline", "GPU timeline by configuration", html + charts::html_table(*s, 200)});
  }
  if (const Table* n = find_table(tables, "nccl_by_config"); n && !n->rows.empty())
    sections.push_back({"nccl", "Collectives by configuration", charts::html_table(*n, 200)});
  else if (std::string why = nccl_empty_reason(sweep); n && !why.empty())
    sections.push_back({"nccl", "Collectives by configuration",
                        "<p class=\"note\">None (nccl_by_config.csv has no rows): " +
                            charts::html_escape(why) + ".</p>\n"});
  if (const Table* v = find_table(tables, "gemm_variance")) {
    sections.push_back({"variance", "GEMM time variance within runs", variance_figures(sweep, *v)});
    sections.push_back({"top-kernels", "Top-variance GEMM kernels", charts::html_table(*v, 100)});
  }
  if (const Table* k = find_table(tables, "gemm_variance_by_kernel"); k && !k->rows.empty())
    sections.push_back({"spread", "GEMM kernels across runs", charts::html_table(*k, 100)});
  if (const Table* c = find_table(tables, "gemm_counters"))
    sections.push_back(
        {"counters", "rocprofv3 counters of the top kernels", charts::html_table(*c, 200)});
  if (const Table* h = find_table(tables, "run_health"); h && has_verdict(*h))
    sections.push_back({"health", "Trace health per run (can it carry a conclusion?)",
                        charts::html_table(*h, 200)});
  if (const Table* f = find_table(tables, "failed_runs"); f && !f->rows.empty())
    sections.push_back({"failures", "Runs that failed to load", charts::html_table(*f, 200)});
  return charts::html_page("Sweep report", sweep.root, sections);
}

std::string sweep_compare_html_page(const Sweep& base, const Sweep& cand,
                                    const std::vector<Table>& comparison,
                                    const std::string& base_label, const std::string& cand_label) {
  std::vector<charts::HtmlSection> sections;
  sections.push_back(
      {"summary", "Summary",
       fmt::format("<p><b>{}</b>: {} ({} runs). <b>{}</b>: {} ({} runs). Each change has a "
                   "verdict from a Mann-Whitney test on the per-run values of each side (runs "
                   "are the unit: the claim is about configurations); with too few runs a side "
                   "the verdict is \"cannot tell\". The within-run p (instances or steps) and "
                   "the baseline sweep's own spread across its runs are shown beside it.</p>",
                   charts::html_escape(base_label), charts::html_escape(base.root),
                   base.runs.size(), charts::html_escape(cand_label),
                   charts::html_escape(cand.root), cand.runs.size())});
  // Side by side: each sweep's timeline per config, then the differences.
  std::string side;
  for (const auto& [sweep, label] : {std::pair{&base, base_label}, std::pair{&cand, cand_label}}) {
    for (const Table& t : gpu_timeline_tables(*sweep))
      if (t.name == "Summary_By_Config") {
        charts::BarChart chart = timeline_chart(t);
        chart.title = label + ": GPU time by configuration";
        side += charts::html_figure(charts::to_svg(chart), label);
      }
  }
  sections.push_back({"side-by-side", "Side by side", side});
  if (const Table* t = find_table(comparison, "compare_gpu_timeline")) {
    // Total time per config, both sweeps as bars side by side.
    charts::BarChart chart;
    chart.title = "Total GPU time per step by configuration";
    chart.value_label = "Time";
    chart.unit = charts::Unit::Microseconds;
    chart.series = {{base_label, {}}, {cand_label, {}}};
    for (size_t r = 0; r < t->rows.size(); ++r) {
      if (t->at(r, "type").to_csv_text(false) != "total_time") continue;
      chart.categories.push_back(t->at(r, "full_config").to_csv_text(false));
      chart.series[0].values.push_back(number_or_nan(t->at(r, "base_ms")) * 1e3);
      chart.series[1].values.push_back(number_or_nan(t->at(r, "cand_ms")) * 1e3);
    }
    std::string html;
    if (!chart.categories.empty())
      html = charts::html_figure(charts::to_svg(chart), "Total time, baseline vs candidate.");
    sections.push_back(
        {"timeline-changes", "GPU timeline changes", html + charts::html_table(*t, 300)});
  }
  if (const Table* k = find_table(comparison, "compare_gemm_kernels"))
    sections.push_back({"kernel-changes", "GEMM kernel changes", charts::html_table(*k, 200)});
  return charts::html_page("Sweep comparison: " + base_label + " vs " + cand_label, "", sections);
}

}  // namespace jarvis::sweep
