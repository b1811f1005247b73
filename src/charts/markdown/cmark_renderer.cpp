// MarkdownRenderer with cmark-gfm: the module libjarvis_markdown.so
// (markdown_renderer.h says why it is a module).
#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "charts/markdown_renderer.h"

namespace jarvis::charts {
namespace {

std::string alt_text(cmark_node* image) {
  std::string alt;
  for (cmark_node* c = cmark_node_first_child(image); c; c = cmark_node_next(c))
    if (const char* literal = cmark_node_get_literal(c)) alt += literal;
  return alt;
}

class CmarkRenderer final : public MarkdownRenderer {
 public:
  // tagfilter defuses <script>, <iframe>, ... even if raw HTML were ever
  // enabled; the default safe mode already drops raw HTML.
  std::string render(const std::string& markdown, const ImageMarkup& image_markup) const override {
    cmark_gfm_core_extensions_ensure_registered();
    // The parser owns the extension list the renderer needs: it lives until
    // the end of this function.
    // VALIDATE_UTF8: a byte of the findings that starts no valid UTF-8
    // sequence becomes U+FFFD; the page is UTF-8 (issue 74 point 9: a
    // findings file with 0xff reached the page as it was).
    std::unique_ptr<cmark_parser, decltype(&cmark_parser_free)> parser(
        cmark_parser_new(CMARK_OPT_DEFAULT | CMARK_OPT_VALIDATE_UTF8), cmark_parser_free);
    for (const char* name : {"table", "strikethrough", "autolink", "tagfilter"})
      if (cmark_syntax_extension* ext = cmark_find_syntax_extension(name))
        cmark_parser_attach_syntax_extension(parser.get(), ext);
    cmark_parser_feed(parser.get(), markdown.data(), markdown.size());
    std::unique_ptr<cmark_node, decltype(&cmark_node_free)> doc(cmark_parser_finish(parser.get()),
                                                                cmark_node_free);
    if (!doc) throw std::runtime_error("cmark-gfm could not parse the markdown");
    std::vector<cmark_node*> images;
    cmark_iter* iter = cmark_iter_new(doc.get());
    for (cmark_event_type ev; (ev = cmark_iter_next(iter)) != CMARK_EVENT_DONE;)
      if (ev == CMARK_EVENT_ENTER &&
          cmark_node_get_type(cmark_iter_get_node(iter)) == CMARK_NODE_IMAGE)
        images.push_back(cmark_iter_get_node(iter));
    cmark_iter_free(iter);
    for (cmark_node* image : images) {
      const char* url = cmark_node_get_url(image);
      // A custom inline is emitted verbatim even in cmark's safe mode; its
      // markup comes from image_markup, built from escaped text only.
      cmark_node* replacement = cmark_node_new(CMARK_NODE_CUSTOM_INLINE);
      cmark_node_set_on_enter(replacement, image_markup(url ? url : "", alt_text(image)).c_str());
      cmark_node_set_on_exit(replacement, "");
      cmark_node_replace(image, replacement);
      cmark_node_free(image);
    }
    char* html = cmark_render_html(doc.get(), CMARK_OPT_DEFAULT,
                                   cmark_parser_get_syntax_extensions(parser.get()));
    if (!html) throw std::runtime_error("cmark-gfm could not render the markdown");
    std::string out(html);
    std::free(html);
    return out;
  }
};

}  // namespace
}  // namespace jarvis::charts

extern "C" const jarvis::charts::MarkdownRenderer* jarvis_markdown_renderer() {
  static const jarvis::charts::CmarkRenderer renderer;
  return &renderer;
}
static_assert(
    std::is_same_v<decltype(&jarvis_markdown_renderer), jarvis::charts::MarkdownModuleEntry>);
