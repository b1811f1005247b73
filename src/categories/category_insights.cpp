#include "categories/category_insights.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/duration_text.h"
#include "categories/category_analysis.h"
#include "pycompat/text.h"

namespace jarvis::analysis {
namespace {

// The analysis kind an insight belongs to (see analysis_kind()).
std::string kind_of_insight(const ojson& insight) {
  if (insight.value("scope", std::string()) == "trace") return "cpu_idle";
  std::string c = pycompat::ascii_lower(insight.value("category", std::string()));
  if (c.starts_with("gemm")) return "gemm";
  if (c.starts_with("sdpa")) return "sdpa";
  if (c.starts_with("norm")) return "norm";
  if (c.starts_with("conv")) return "convolution";
  if (c == "elementwise" || c == "reduce") return c;
  return "other";
}

ojson insights_document(const std::string& output_dir) {
  std::ifstream in(std::filesystem::path(output_dir) / "category_data" / "insights.json");
  if (!in) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  return ojson::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

ojson prepared_trace_health(const std::string& output_dir) {
  ojson doc = insights_document(output_dir);
  if (!doc.is_object() || !doc.contains("trace_health") || !doc["trace_health"].is_object())
    return nullptr;
  return doc["trace_health"];
}

ojson prepared_idle(const std::string& output_dir) {
  ojson doc = insights_document(output_dir);
  if (!doc.is_object() || !doc.contains("idle") || !doc["idle"].is_object()) return nullptr;
  return doc["idle"];
}

ojson category_insights(const std::string& output_dir, const std::string& category) {
  ojson out = ojson::array();
  ojson doc = insights_document(output_dir);
  if (!doc.is_object() || !doc.contains("insights") || !doc["insights"].is_array()) return out;
  std::string kind = analysis_kind(category);
  for (const auto& i : doc["insights"]) {
    if (!i.is_object()) continue;
    // Elementwise chains and unfused activation epilogues are fusion
    // candidates too (TraceLens's kernel_fusion only looks at module-level
    // candidates): the kernel_fusion analysis lists them beside its own, in
    // its insights, not in its metrics file.
    std::string rule = i.value("rule", std::string());
    bool fusion =
        kind == "kernel_fusion" && (rule == "elementwise_chain" || rule == "epilogue_fusion");
    if (kind_of_insight(i) == kind || fusion) out.push_back(i);
  }
  return out;
}

std::string insights_markdown(const ojson& insights) {
  if (!insights.is_array() || insights.empty()) return "";
  std::string md = "## Insights (beyond TraceLens)\n\n";
  for (const auto& i : insights) {
    md += fmt::format("- **[{}] {}**: {}\n", i.value("severity", std::string()),
                      i.value("rule", std::string()), i.value("title", std::string()));
    if (i.contains("recoverable_us_total") && i["recoverable_us_total"].is_number()) {
      double high = i["recoverable_us_total"].get<double>();
      std::string method = i.value("recoverable_method", std::string());
      if (high < 0.05)
        md += "  - Recoverable: nothing left after the findings above claim the same time (" +
              method + ")\n";
      else
        md += fmt::format("  - Recoverable: {} over the whole trace ({})\n",
                          duration_range_text(i.value("recoverable_low_us_total", 0.0), high),
                          method);
    }
    md += "  - Path A (model): " + i.value("action_model", std::string()) + "\n";
    md += "  - Path B (kernel): " + i.value("action_kernel", std::string()) + "\n";
    md += "  - Verify: " + i.value("verify", std::string()) + "\n";
  }
  return md + "\n";
}

}  // namespace jarvis::analysis
