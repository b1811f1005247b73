// Self-contained HTML pages of a sweep and of two compared sweeps (the seed's
// create_embeded_html_report: variance plots, GPU timeline by config, NCCL by
// config, top-variance kernels), from the sweep's own tables and the chart
// layer. Inline SVG and CSS only: the page opens offline and can be mailed.
#include <fmt/format.h>

#include <cmath>
#include <map>

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

// Timeline split per config (mean over ranks), stacked, from Summary_By_Config.
charts::BarChart timeline_chart(const Table& summary) {
  charts::BarChart chart;
  chart.title = "GPU time per step by configuration (mean over ranks)";
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
      any_part = any_part || std::isfinite(v);
      chart.series[s].values.push_back(v);
    }
  }
  if (any_part) return chart;
  // Kernel-only (rocprof-style) reports have busy and total time only.
  chart.series = {{"busy", {}}, {"idle", {}}};
  for (size_t r = 0; r < summary.rows.size(); ++r) {
    double busy = number_or_nan(summary.at(r, "busy_time_ms")) * 1e3;
    double total = number_or_nan(summary.at(r, "total_time_ms")) * 1e3;
    chart.series[0].values.push_back(busy);
    chart.series[1].values.push_back(total - busy);
  }
  return chart;
}

std::string figures(const std::vector<charts::NamedChart>& charts) {
  std::string html;
  for (const auto& c : charts) html += charts::html_figure(charts::to_svg(c.chart), c.caption);
  return html;
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

}  // namespace

std::string sweep_html_page(const Sweep& sweep, const std::vector<Table>& tables) {
  std::vector<charts::HtmlSection> sections;
  sections.push_back({"summary", "Summary", summary_html(sweep)});
  for (auto& section : what_changed_sections(sweep, tables)) sections.push_back(std::move(section));
  if (const Table* v = find_table(tables, "gemm_variance")) {
    sections.push_back({"variance", "GEMM time variance", figures(variance_charts(sweep, *v))});
    sections.push_back({"top-kernels", "Top-variance GEMM kernels", charts::html_table(*v, 100)});
  }
  if (const Table* s = find_table(tables, "gpu_timeline_Summary_By_Config")) {
    std::string html = charts::html_figure(
        charts::to_svg(timeline_chart(*s)),
        "Computation, exposed communication, exposed memcpy and idle time per configuration.");
    sections.push_back(
        {"timeline", "GPU timeline by configuration", html + charts::html_table(*s, 200)});
  }
  if (const Table* n = find_table(tables, "nccl_by_config"); n && !n->rows.empty())
    sections.push_back({"nccl", "Collectives by configuration", charts::html_table(*n, 200)});
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
