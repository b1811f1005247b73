// Self-contained HTML pages: inline CSS, inline SVG charts, sortable tables
// and no external resource of any kind, so a page opens offline and can be
// mailed as one file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"

namespace jarvis::charts {

std::string html_escape(std::string_view text);

struct HtmlSection {
  std::string id;       // anchor for the table of contents ([a-z0-9_-])
  std::string heading;  // plain text
  std::string html;     // body markup
};

// A whole page: title, optional subtitle line, contents list, sections.
std::string html_page(std::string_view title, std::string_view subtitle,
                      const std::vector<HtmlSection>& sections);

// An inline chart with a caption (svg from charts::to_svg).
std::string html_figure(std::string_view svg, std::string_view caption);

// A table whose header cells sort it on click (numbers numerically, text
// alphabetically, empty cells last). Shows the first max_rows rows and says
// how many were left out; `columns` picks and orders columns (all when empty;
// unknown names are skipped).
std::string html_table(const Table& table, size_t max_rows,
                       const std::vector<std::string>& columns = {});

}  // namespace jarvis::charts
