#include "categories/findings_check.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace jarvis::analysis {

namespace {

bool is_system_category(const std::string& c) {
  return c == "cpu_idle" || c == "multi_kernel" || c == "kernel_fusion";
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

const std::vector<std::string>& standalone_columns() {
  static const std::vector<std::string> c = {"Operation",  "Args", "Kernel Path", "Kernel Name",
                                             "Time (ms)",  "%E2E", "Count",       "FLOPS/Byte",
                                             "Efficiency", "Bound"};
  return c;
}

const std::vector<std::string>& comparative_columns() {
  static const std::vector<std::string> c = {
      "Operation",         "Args (T1)",         "Kernel Path",   "Kernel Name",
      "Trace 1 Time (ms)", "Trace 2 Time (ms)", "Count (T1/T2)", "Difference (ms)",
      "FLOPS/Byte (T1)",   "Bound (T1)"};
  return c;
}

std::vector<std::string> table_cells(const std::string& line) {
  std::string s = trim(line);
  if (s.starts_with("|")) s.erase(0, 1);
  if (s.ends_with("|")) s.pop_back();
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    size_t bar = s.find('|', start);
    cells.push_back(
        trim(s.substr(start, bar == std::string::npos ? std::string::npos : bar - start)));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return cells;
}

// A cited number and the rounding it was written with ("4.06" -> 0.005).
struct Cited {
  double value = 0;
  double tolerance = 0;
};

std::optional<Cited> parse_cited(std::string s) {
  s = trim(s);
  while (!s.empty() && (s.back() == '%' || s.back() == ' ')) s.pop_back();
  std::string digits;
  for (char c : s)
    if (c != ',') digits += c;
  static const std::regex number(R"(^-?\d+(\.(\d+))?$)");
  std::smatch m;
  if (!std::regex_match(digits, m, number)) return std::nullopt;
  size_t decimals = m[2].matched ? m[2].length() : 0;
  return Cited{std::stod(digits), 0.5 * std::pow(10.0, -static_cast<double>(decimals)) + 1e-9};
}

bool matches(const Cited& c, const ojson& v) {
  return v.is_number() && std::fabs(v.get<double>() - c.value) <= c.tolerance;
}

// `<!-- impact-begin kind=K a=b ... -->` on this line: kind and attributes.
std::optional<std::pair<std::string, std::map<std::string, std::string>>> impact_marker(
    const std::string& line) {
  static const std::regex marker(R"(<!--\s*impact-begin\s+kind=(\w+)((?:\s+\w+=\S+)*)\s*-->)");
  std::smatch m;
  if (!std::regex_search(line, m, marker)) return std::nullopt;
  std::map<std::string, std::string> attrs;
  static const std::regex attr(R"((\w+)=(\S+))");
  std::string rest = m[2].str();
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), attr); it != std::sregex_iterator();
       ++it)
    attrs[(*it)[1].str()] = (*it)[2].str();
  return std::make_pair(m[1].str(), attrs);
}

struct Block {
  size_t begin = 0, end = 0;  // line range [begin, end)
  std::string title;
  int number = 0;
  std::string tier;
};

bool block_has(const std::vector<std::string>& lines, const Block& b, const std::string& text) {
  for (size_t k = b.begin; k < b.end; ++k)
    if (lines[k].find(text) != std::string::npos) return true;
  return false;
}

std::string fmt_num(const ojson& v) {
  return v.is_number() ? v.dump() : std::string("null");
}

class Checker {
 public:
  Checker(const std::string& category, const std::string& markdown, const ojson& metrics)
      : category_(category), lines_(split_lines(markdown)), metrics_(metrics) {
    system_ = is_system_category(category);
    out_.metrics_found = metrics.is_object();
    if (metrics.is_object() && metrics.contains("category_findings") &&
        metrics["category_findings"].is_array())
      findings_ = &metrics["category_findings"];
  }

  FindingsValidation run() {
    std::string status = metrics_.is_object() ? metrics_.value("status", std::string()) : "";
    bool says_error = false;
    for (const auto& l : lines_)
      says_error = says_error || l.find("Status: ERROR") != std::string::npos;
    if (says_error) {
      if (status != "ERROR")
        problem("E1", fmt::format("the file says `Status: ERROR` but the {} analysis status is {}; "
                                  "write the findings, or leave out that line",
                                  category_, status.empty() ? "unknown" : status));
      else
        return out_;  // a failed analysis: the file records the error, nothing else to check
    }
    if (!out_.metrics_found)
      out_.warnings.push_back(fmt::format(
          "no category_data/{}_metrics.json: numbers were not checked against the data (run "
          "analyze_category first)",
          category_));
    sections();
    p_items();
    reasoning_blocks();
    return out_;
  }

 private:
  void problem(const char* rule, const std::string& message) {
    out_.problems.push_back(fmt::format("{}: {}", rule, message));
  }

  // Index of the line `## <name>` (exact heading), or npos.
  size_t heading(const std::string& name) const {
    for (size_t k = 0; k < lines_.size(); ++k)
      if (trim(lines_[k]) == "## " + name) return k;
    return std::string::npos;
  }
  size_t next_h2(size_t from) const {
    for (size_t k = from; k < lines_.size(); ++k)
      if (lines_[k].starts_with("## ")) return k;
    return lines_.size();
  }

  void sections() {
    recommendations_ = heading("Recommendations");
    detailed_ = heading("Detailed Analysis");
    if (recommendations_ == std::string::npos)
      problem("S1",
              "missing the section `## Recommendations` (TraceLens's validator requires it, "
              "holding the P-items, followed by `## Detailed Analysis`)");
    if (detailed_ == std::string::npos)
      problem("S1",
              "missing the section `## Detailed Analysis` (one reasoning-candidate block per "
              "P-item)");
    if (recommendations_ != std::string::npos && detailed_ != std::string::npos &&
        detailed_ < recommendations_)
      problem("S1", "`## Detailed Analysis` must come after `## Recommendations`");
  }

  const ojson* finding(size_t number) const {
    if (!findings_ || number == 0 || number > findings_->size()) return nullptr;
    return &(*findings_)[number - 1];
  }

  void p_items() {
    if (recommendations_ == std::string::npos) return;
    size_t end = next_h2(recommendations_ + 1);
    static const std::regex p_re(R"(^###\s+P(\d+):\s*(.+?)\s*$)");
    std::vector<Block> items;
    for (size_t k = recommendations_ + 1; k < end; ++k) {
      std::smatch m;
      if (lines_[k].starts_with("### ")) {
        if (!items.empty() && items.back().end == 0) items.back().end = k;
        if (std::regex_match(lines_[k], m, p_re)) {
          Block b;
          b.begin = k;
          b.number = std::stoi(m[1].str());
          b.title = m[2].str();
          items.push_back(b);
        } else {
          problem("S2", fmt::format("heading `{}` under Recommendations: P-items are written "
                                    "`### P<N>: <title>`",
                                    trim(lines_[k])));
        }
      }
    }
    if (!items.empty() && items.back().end == 0) items.back().end = end;
    out_.p_items = items.size();
    for (size_t i = 0; i < items.size(); ++i) {
      const Block& b = items[i];
      if (b.number != static_cast<int>(i + 1))
        problem("S2", fmt::format("P-item `P{}` is number {} in the list: number them P1, P2, ... "
                                  "in rank order",
                                  b.number, i + 1));
      for (const char* label : {"**Insight**", "**Action**"})
        if (!block_has(lines_, b, label))
          problem("S3", fmt::format("P{} has no {} line", b.number, label));
      if (!block_has(lines_, b, "<!-- impact-end -->"))
        problem("S3", fmt::format("P{} has no `<!-- impact-end -->` after its impact", b.number));
      std::optional<std::map<std::string, std::string>> attrs;
      for (size_t k = b.begin; k < b.end && !attrs; ++k)
        if (auto m = impact_marker(lines_[k]); m && m->first == "p_item") attrs = m->second;
      if (!attrs) {
        problem("S3", fmt::format("P{} has no `<!-- impact-begin kind=p_item low=.. mid=.. "
                                  "high=.. -->` marker",
                                  b.number));
        continue;
      }
      check_impact(
          b, *attrs,
          {{"low", "impact_score_low"}, {"mid", "impact_score"}, {"high", "impact_score_high"}});
      if (!system_) {
        const ojson* f = finding(static_cast<size_t>(b.number));
        // The bullets TraceLens's compute template requires of a P-item.
        for (const char* label :
             {"**Time:**", "**Issue:**", "**Path A", "**Path B", "**Priority:**"})
          if (!block_has(lines_, b, label))
            problem("S3", fmt::format("P{} has no `- {}` line", b.number, label));
        if (f) check_time_line(b, *f);
        if (f && (*f).contains("library") && (*f)["library"].is_string()) {
          std::string lib = (*f)["library"].get<std::string>();
          if (lib != "Unknown" && !lib.empty() && !b.title.ends_with("(" + lib + ")"))
            problem("S2", fmt::format("P{}'s title must end with `({})`, its library in "
                                      "category_findings",
                                      b.number, lib));
        }
      }
    }
    if (!system_ && findings_ && items.size() < findings_->size())
      out_.warnings.push_back(
          fmt::format("{} P-item(s) for {} category_findings entries: one P-item per entry, in "
                      "rank order",
                      items.size(), findings_->size()));
  }

  // A P-item's "- **Time:** X ms (Y % of ..., ...)" line against its data:
  // X is the time of one of its ops or their total, and every percentage is
  // a share one of them (or the finding) has; an invented line is named.
  void check_time_line(const Block& b, const ojson& f) {
    // A missing key reads as null (const operator[] would not).
    auto field = [](const ojson& j, const char* key) -> const ojson& {
      static const ojson kNull;
      return j.is_object() && j.contains(key) ? j[key] : kNull;
    };
    static const std::regex time_re(R"(\*\*Time:\*\*\s*([-\d.,]+)\s*ms(.*))");
    static const std::regex pct_re(R"(([-\d.,]+)\s*%)");
    std::smatch m;
    size_t k = b.begin;
    for (; k < b.end; ++k)
      if (std::regex_search(lines_[k], m, time_re)) break;
    if (k == b.end) return;
    const std::string rest = m[2].str();
    std::vector<double> times, pcts;
    double member_total = 0, ops_pct_total = 0;
    std::set<std::string> names;
    if (f.contains("members") && field(f, "members").is_array())
      for (const auto& mem : field(f, "members")) {
        if (field(mem, "time_ms").is_number()) {
          times.push_back(field(mem, "time_ms").get<double>());
          member_total += times.back();
        }
        if (field(mem, "percent_of_total").is_number())
          pcts.push_back(field(mem, "percent_of_total").get<double>());
        if (field(mem, "operation").is_string())
          names.insert(field(mem, "operation").get<std::string>());
      }
    times.push_back(member_total);
    if (field(f, "percent_of_total").is_number())
      pcts.push_back(field(f, "percent_of_total").get<double>());
    if (metrics_.contains("operations"))
      for (const auto& o : metrics_["operations"]) {
        if (!field(o, "name").is_string() || !names.count(field(o, "name").get<std::string>()))
          continue;
        for (const char* key : {"percent_of_total", "percent_of_category"})
          if (field(o, key).is_number()) pcts.push_back(field(o, key).get<double>());
        // The members' own rows (same name and time) make the P-item's total share.
        bool member = false;
        static const ojson kNoMembers = ojson::array();
        for (const auto& mem : f.contains("members") ? field(f, "members") : kNoMembers)
          member =
              member || (field(mem, "operation") == field(o, "name") &&
                         field(mem, "time_ms").is_number() && field(o, "time_ms").is_number() &&
                         std::fabs(field(mem, "time_ms").get<double>() -
                                   field(o, "time_ms").get<double>()) < 1e-9);
        if (member && field(o, "percent_of_total").is_number())
          ops_pct_total += field(o, "percent_of_total").get<double>();
      }
    pcts.push_back(ops_pct_total);
    auto known = [](const Cited& c, const std::vector<double>& values) {
      for (double v : values)
        if (std::fabs(v - c.value) <= c.tolerance) return true;
      return false;
    };
    if (auto t = parse_cited(m[1].str()); t && !known(*t, times))
      problem("N1", fmt::format("P{}'s Time line cites {} ms, which is neither the time of one of "
                                "its ops nor their total ({} ms)",
                                b.number, m[1].str(), fmt_num(ojson(member_total))));
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), pct_re);
         it != std::sregex_iterator(); ++it) {
      auto p = parse_cited((*it)[1].str());
      if (p && !known(*p, pcts))
        problem("N1", fmt::format("P{}'s Time line cites {} %, a share none of its ops has in "
                                  "the data",
                                  b.number, (*it)[1].str()));
    }
  }

  // Impact marker attributes against category_findings[number - 1] (null on
  // the system tier).
  void check_impact(const Block& b, const std::map<std::string, std::string>& attrs,
                    const std::vector<std::pair<std::string, std::string>>& keys) {
    if (system_) {
      for (const auto& [attr, _] : keys) {
        auto it = attrs.find(attr);
        if (it == attrs.end() || it->second != "null") {
          const std::string name = attr;
          problem("N1",
                  fmt::format("{} {}: system findings write {}=null (impact not "
                              "quantifiable from trace data)",
                              b.tier.empty() ? fmt::format("P{}", b.number)
                                             : fmt::format("reasoning block rank={}", b.number),
                              name, name));
        }
      }
      return;
    }
    if (!metrics_.is_object()) return;
    const ojson* f = finding(static_cast<size_t>(b.number));
    std::string what = b.tier.empty() ? fmt::format("P{}", b.number)
                                      : fmt::format("reasoning block rank={}", b.number);
    if (!f) {
      problem("N1", fmt::format("{} has no entry in {}_metrics.json's category_findings ({} "
                                "entries): do not invent P-items; mention extras under "
                                "Additional Notes",
                                what, category_, findings_ ? findings_->size() : 0));
      return;
    }
    for (const auto& [attr, key] : keys) {
      auto it = attrs.find(attr);
      const ojson& want = (*f).contains(key) ? (*f)[key] : ojson();
      std::optional<double> given;
      if (it != attrs.end()) {
        try {
          size_t used = 0;
          given = std::stod(it->second, &used);
          if (used != it->second.size()) given.reset();
        } catch (const std::exception&) {
          given.reset();
        }
      }
      if (!want.is_number()) continue;
      if (!given || std::fabs(*given - want.get<double>()) > 0.005 + 1e-9) {
        const std::string a = attr, k = key;
        problem("N1", fmt::format("{} {}={} but category_findings[{}].{} is {}: copy the impact "
                                  "numbers verbatim",
                                  what, a, it == attrs.end() ? "(missing)" : it->second,
                                  b.number - 1, k, fmt_num(want)));
      }
    }
  }

  void reasoning_blocks() {
    static const std::regex marker(R"(<!--\s*reasoning-candidate\s+tier=(\w+)\s+rank=(\d+)\s*-->)");
    std::vector<Block> blocks;
    size_t end = detailed_ == std::string::npos ? lines_.size() : next_h2(detailed_ + 1);
    for (size_t k = 0; k < lines_.size(); ++k) {
      std::smatch m;
      if (!std::regex_search(lines_[k], m, marker)) continue;
      if (!blocks.empty() && blocks.back().end == 0) blocks.back().end = k;
      Block b;
      b.begin = k;
      b.tier = m[1].str();
      b.number = std::stoi(m[2].str());
      if (detailed_ == std::string::npos || k < detailed_ || k >= end)
        problem("S4", fmt::format("reasoning-candidate rank={} lies outside `## Detailed "
                                  "Analysis`",
                                  b.number));
      blocks.push_back(b);
    }
    if (!blocks.empty() && blocks.back().end == 0)
      blocks.back().end = std::max(end, blocks.back().begin + 1);
    if (blocks.size() != out_.p_items)
      problem("S4", fmt::format("{} reasoning-candidate block(s) for {} P-item(s): write one "
                                "`<!-- reasoning-candidate tier={} rank=<N> -->` block per P-item",
                                blocks.size(), out_.p_items, system_ ? "system" : "compute"));
    const std::string tier = system_ ? "system" : "compute";
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Block& b = blocks[i];
      if (b.tier != tier)
        problem("S4", fmt::format("reasoning block rank={} says tier={}; {} is a {} category",
                                  b.number, b.tier, category_, tier));
      if (b.number != static_cast<int>(i + 1))
        problem("S4", fmt::format("reasoning block rank={} is block {}: ranks go 1, 2, ... like "
                                  "the P-items",
                                  b.number, i + 1));
      bool titled = false;
      for (size_t k = b.begin; k < b.end; ++k) titled = titled || lines_[k].starts_with("#### ");
      if (!titled)
        problem("S4", fmt::format("reasoning block rank={} has no `#### <title>`", b.number));
      for (const char* label : {"**Identification:**", "**Data:**", "**Reasoning for Slowdown:**",
                                "**Resolution:**", "**Impact estimate:**"})
        if (!block_has(lines_, b, label))
          problem("S4", fmt::format("reasoning block rank={} has no {} label", b.number, label));
      if (!system_) {
        std::optional<std::map<std::string, std::string>> attrs;
        for (size_t k = b.begin; k < b.end && !attrs; ++k)
          if (auto m = impact_marker(lines_[k]); m && m->first == "detail_estimate")
            attrs = m->second;
        if (!attrs)
          problem("S4", fmt::format("reasoning block rank={} has no `<!-- impact-begin "
                                    "kind=detail_estimate low=.. high=.. -->` marker",
                                    b.number));
        else
          check_impact(b, *attrs, {{"low", "impact_score_low"}, {"high", "impact_score_high"}});
        data_tables(b);
      }
    }
  }

  void data_tables(const Block& b) {
    for (size_t k = b.begin; k < b.end; ++k) {
      if (!trim(lines_[k]).starts_with("|")) continue;
      std::vector<std::string> header = table_cells(lines_[k]);
      bool standalone = header == standalone_columns();
      bool comparative = header == comparative_columns();
      size_t row = k + 1;
      if (row < b.end && trim(lines_[row]).starts_with("|") &&
          lines_[row].find("---") != std::string::npos)
        ++row;
      for (; row < b.end && trim(lines_[row]).starts_with("|"); ++row)
        if (standalone || comparative) data_row(b, table_cells(lines_[row]), standalone);
      if (!standalone && !comparative)
        problem("N2", fmt::format("reasoning block rank={}: the Data table's columns must be `{}`",
                                  b.number, fmt::join(standalone_columns(), " | ")));
      k = row;
    }
  }

  void data_row(const Block& b, const std::vector<std::string>& cells, bool standalone) {
    if (!metrics_.is_object() || !metrics_.contains("operations")) return;
    ++out_.data_rows_checked;
    const std::string& op = cells.empty() ? std::string() : cells[0];
    std::vector<const ojson*> same_name;
    for (const auto& o : metrics_["operations"])
      if (o.contains("name") && o["name"] == op) same_name.push_back(&o);
    if (same_name.empty()) {
      problem("N2", fmt::format("reasoning block rank={}: operation `{}` is not in {}_metrics.json "
                                "(cite the operation names of the category's data)",
                                b.number, op, category_));
      return;
    }
    if (!standalone || cells.size() < standalone_columns().size()) return;
    auto cited_time = parse_cited(cells[4]);
    std::vector<const ojson*> rows = same_name;
    if (cited_time) {
      std::vector<const ojson*> kept;
      for (const ojson* o : rows)
        if (matches(*cited_time, (*o)["time_ms"])) kept.push_back(o);
      if (kept.empty()) {
        std::vector<std::string> known;
        for (const ojson* o : same_name) known.push_back(fmt_num((*o)["time_ms"]));
        problem("N2", fmt::format("reasoning block rank={}: {} Time (ms) {} matches none of its "
                                  "rows in the data ({} ms)",
                                  b.number, op, cells[4], fmt::join(known, ", ")));
        // The row's other numbers are still checked, against every row of the op.
      } else {
        rows = kept;
      }
    }
    if (auto pct = parse_cited(cells[5])) {
      bool ok = false;
      for (const ojson* o : rows) ok = ok || matches(*pct, (*o)["percent_of_total"]);
      if (!ok)
        problem("N2", fmt::format("reasoning block rank={}: {} %E2E {} matches no row of the data "
                                  "(percent_of_total)",
                                  b.number, op, cells[5]));
    }
    if (auto count = parse_cited(cells[6])) {
      bool ok = false;
      for (const ojson* o : rows)
        ok = ok || ((*o)["count"].is_number() && (*o)["count"].get<double>() == count->value);
      if (!ok)
        problem("N2", fmt::format("reasoning block rank={}: {} Count {} matches no row of the data",
                                  b.number, op, cells[6]));
    }
  }

  std::string category_;
  std::vector<std::string> lines_;
  const ojson& metrics_;
  const ojson* findings_ = nullptr;
  bool system_ = false;
  size_t recommendations_ = std::string::npos;
  size_t detailed_ = std::string::npos;
  FindingsValidation out_;
};

}  // namespace

nlohmann::json FindingsValidation::to_json() const {
  return {{"valid", valid()},
          {"problems", problems},
          {"warnings", warnings},
          {"p_items", p_items},
          {"data_rows_checked", data_rows_checked},
          {"metrics_found", metrics_found}};
}

FindingsValidation validate_findings(const std::string& category, const std::string& markdown,
                                     const ojson& metrics) {
  return Checker(category, markdown, metrics).run();
}

FindingsValidation validate_findings_in(const std::string& output_dir, const std::string& category,
                                        const std::string& markdown) {
  std::string path = output_dir + "/category_data/" + category + "_metrics.json";
  ojson metrics;
  if (std::filesystem::is_regular_file(path)) metrics = read_json_file(path);
  return validate_findings(category, markdown, metrics);
}

}  // namespace jarvis::analysis
