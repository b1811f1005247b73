// The findings markdown renderer behind render_findings_page
// (findings_page.h): cmark-gfm lives in the module libjarvis_markdown.so
// (src/charts/markdown/, cmake/charts.cmake), loaded by the commands that
// render findings, because loading its two libraries cost every jarvis start
// (a snapshot load of a small trace included) a few percent. The engine
// decides what an image becomes (embedded, refused, missing); the module
// parses and renders.
#pragma once

#include <functional>
#include <string>

namespace jarvis::charts {

// The HTML replacing one image reference, from its URL and alt text. It is
// emitted verbatim (it must be built from escaped text only).
using ImageMarkup = std::function<std::string(const std::string& url, const std::string& alt)>;

class MarkdownRenderer {
 public:
  virtual ~MarkdownRenderer() = default;
  // CommonMark plus the GitHub extensions findings use (tables,
  // strikethrough, autolinks, tagfilter) as HTML in cmark's safe mode (raw
  // HTML dropped); every image becomes image_markup(url, alt). Throws
  // std::runtime_error when cmark-gfm fails.
  virtual std::string render(const std::string& markdown,
                             const ImageMarkup& image_markup) const = 0;
};

// The module's entry point (extern "C", so dlsym finds it by this name): the
// renderer, which lives as long as the process.
inline constexpr const char* kMarkdownModuleEntry = "jarvis_markdown_renderer";
using MarkdownModuleEntry = const MarkdownRenderer* (*)();

}  // namespace jarvis::charts
