#include "charts/html.h"
#include "charts/svg_common.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace jarvis::charts {

namespace {

constexpr const char* kStyle = R"CSS(
body{font-family:Helvetica,Arial,sans-serif;color:#222;margin:0 auto;max-width:1240px;padding:16px 24px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:28px}
.subtitle{color:#555;margin:0 0 12px}nav ul{columns:2;font-size:14px}
figure{margin:12px 0}figcaption{font-size:13px;color:#555;max-width:900px}
figure>svg{width:100%;height:auto}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:12px;margin:8px 0;max-width:100%}
th,td{border:1px solid #d5d5d5;padding:2px 4px;text-align:left;vertical-align:top;font-size:11.5px}
td.n{white-space:nowrap}
td.long>div{display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden;min-width:7em;overflow-wrap:anywhere}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;background:#f2f2f2;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
.note{font-size:13px;color:#555}.findings img{max-width:100%}
.findings pre{background:#f6f6f6;padding:8px;overflow-x:auto}
)CSS";

// Sorts a table body by the clicked column: data-v (numbers) first, then text.
constexpr const char* kSortScript = R"JS(
document.querySelectorAll('table.sortable th').forEach(function (th) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    var key = function (row) {
      var cell = row.cells[col];
      if (!cell || cell.textContent === '') return null;
      return cell.dataset.v !== undefined ? parseFloat(cell.dataset.v) : cell.textContent;
    };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1);
      var r = (typeof x === 'number' && typeof y === 'number') ? x - y
            : String(x).localeCompare(String(y));
      return asc ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
)JS";

// A number as a reader takes it in: three significant digits, never in
// exponent form for the magnitudes a report holds (68.0641 -> 68.1,
// 7.68e-07 -> 0.000000768); integers above 100 whole. The cell's data-v
// keeps the full value, which sorting uses, as the CSVs keep it.
std::string readable_number(double v) {
  double magnitude = std::fabs(v);
  if (magnitude == 0) return "0";
  if (magnitude < 1e-9) return fmt::format("{:.2g}", v);
  int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
  std::string text = fmt::format("{:.{}f}", v, std::min(decimals, 11));
  return text == "-0" ? "0" : text;
}

// Characters past which a text cell is clamped to two lines.
constexpr size_t kLongText = 24;

// A column name that may break after its '_' and '/' (long snake_case
// headers would otherwise set the column's width).
std::string header_html(std::string_view name) {
  std::string out;
  for (char c : html_escape(name)) {
    out += c;
    if (c == '_' || c == '/') out += "<wbr>";
  }
  return out;
}

std::string cell_html(const Cell& c) {
  if (c.missing()) return "<td></td>";
  if (c.is_bool()) return std::string("<td>") + (std::get<bool>(c.v) ? "True" : "False") + "</td>";
  if (c.is_number()) {
    double v = c.number();
    if (!std::isfinite(v)) return "<td class=\"n\">" + fmt::format("{}", v) + "</td>";
    std::string shown = c.is_int() ? std::to_string(std::get<int64_t>(c.v)) : readable_number(v);
    return fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", v, shown);
  }
  // Long text (kernel names, explanations, paths) shows two lines; the
  // whole text is the cell's tooltip, so rows stay compact.
  if (c.text().size() > kLongText)
    return "<td class=\"long\" title=\"" + html_escape(c.text()) + "\"><div>" +
           html_escape(c.text()) + "</div></td>";
  return "<td>" + html_escape(c.text()) + "</td>";
}

}  // namespace

// HTML text and attribute values need what XML needs (control characters
// are parse errors in HTML too): one escaper for both.
std::string html_escape(std::string_view text) {
  return detail::xml_escape(text);
}

std::string html_page(std::string_view title, std::string_view subtitle,
                      const std::vector<HtmlSection>& sections) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // An empty data: icon keeps browsers from requesting favicon.ico.
  out += "<link rel=\"icon\" href=\"data:,\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n";
  out += "<body>\n<h1>" + html_escape(title) + "</h1>\n";
  if (!subtitle.empty()) out += "<p class=\"subtitle\">" + html_escape(subtitle) + "</p>\n";
  out += "<nav><ul>\n";
  for (const auto& s : sections)
    out +=
        fmt::format("<li><a href=\"#{}\">{}</a></li>\n", html_escape(s.id), html_escape(s.heading));
  out += "</ul></nav>\n";
  for (const auto& s : sections)
    out += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n{}\n</section>\n", html_escape(s.id),
                       html_escape(s.heading), s.html);
  out += "<script>" + std::string(kSortScript) + "</script>\n</body>\n</html>\n";
  return out;
}

std::string html_figure(std::string_view svg, std::string_view caption) {
  std::string out = "<figure>\n";
  // The SVG has no XML prolog, so the file's text is valid inline HTML as is.
  out += svg;
  if (!caption.empty()) out += "<figcaption>" + html_escape(caption) + "</figcaption>\n";
  return out + "</figure>\n";
}

std::string html_table(const Table& table, size_t max_rows,
                       const std::vector<std::string>& columns) {
  std::vector<size_t> picked;
  if (columns.empty()) {
    for (size_t c = 0; c < table.columns.size(); ++c) picked.push_back(c);
  } else {
    for (const auto& name : columns)
      if (int c = table.col(name); c >= 0) picked.push_back(static_cast<size_t>(c));
  }
  std::string out = "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>";
  for (size_t c : picked) out += "<th>" + header_html(table.columns[c]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  size_t shown = std::min(max_rows, table.rows.size());
  for (size_t r = 0; r < shown; ++r) {
    out += "<tr>";
    for (size_t c : picked)
      out += c < table.rows[r].size() ? cell_html(table.rows[r][c]) : "<td></td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  if (shown < table.rows.size())
    out += fmt::format("<p class=\"note\">First {} of {} rows (sheet {}).</p>\n", shown,
                       table.rows.size(), html_escape(table.name));
  return out;
}

}  // namespace jarvis::charts
