// One HTML page from the findings an agent wrote: every
// <output_dir>/category_findings/*.md and system_findings/*.md, rendered by
// cmark-gfm (CommonMark + GitHub tables; raw HTML and unsafe link schemes
// suppressed), with the local images they reference (SVG, PNG inside
// output_dir) embedded as data: URIs so the page stays one self-contained file.
#pragma once

#include <string>
#include <vector>

namespace jarvis::charts {

struct FindingsPage {
  std::string html;
  std::vector<std::string> files;  // markdown files rendered, page order
  size_t images_embedded = 0;
  std::vector<std::string> images_missing;  // local references with no file
  std::vector<std::string> images_refused;  // remote URLs, paths outside output_dir, other types
};

// Throws std::invalid_argument when output_dir is not a directory or holds
// no findings markdown.
FindingsPage render_findings_page(const std::string& output_dir);

}  // namespace jarvis::charts
