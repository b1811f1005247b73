#include "charts/findings_page.h"

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "charts/html.h"
#include "pycompat/text.h"

namespace jarvis::charts {

namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxImageBytes = 8u << 20;
constexpr uintmax_t kMaxMarkdownBytes = 4u << 20;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::string alt_text(cmark_node* image) {
  std::string alt;
  for (cmark_node* c = cmark_node_first_child(image); c; c = cmark_node_next(c))
    if (const char* literal = cmark_node_get_literal(c)) alt += literal;
  return alt;
}

bool inside(const fs::path& root, const fs::path& path) {
  auto r = root.begin(), p = path.begin();
  for (; r != root.end(); ++r, ++p)
    if (p == path.end() || *r != *p) return false;
  return true;
}

// The markup replacing one image reference, and its bookkeeping.
std::string image_markup(const std::string& url, const std::string& alt, const fs::path& md_dir,
                         const fs::path& root, FindingsPage& page) {
  auto refused = [&](const std::string& why) {
    page.images_refused.push_back(url);
    // The URL itself is left out: a page must not carry remote addresses.
    return fmt::format("<span class=\"note\">[image \"{}\" not embedded: {}]</span>",
                       html_escape(alt), why);
  };
  if (url.find("://") != std::string::npos || url.starts_with("data:") || url.starts_with("/"))
    return refused("only relative paths to files inside the output directory are embedded");
  std::string ext = pycompat::ascii_lower(fs::path(url).extension().string());
  const char* mime = ext == ".svg" ? "image/svg+xml" : ext == ".png" ? "image/png" : nullptr;
  if (!mime) return refused("only .svg and .png images are embedded");
  std::error_code ec;
  fs::path target = fs::weakly_canonical(md_dir / url, ec);
  if (ec || !inside(root, target)) return refused("the path leaves the output directory");
  if (!fs::is_regular_file(target, ec)) {
    page.images_missing.push_back(url);
    return fmt::format("<span class=\"note\">[missing image {}]</span>", html_escape(url));
  }
  if (fs::file_size(target, ec) > kMaxImageBytes) return refused("larger than 8 MiB");
  ++page.images_embedded;
  // An <img> (not inline SVG) so any script inside the file never runs.
  return fmt::format("<img src=\"data:{};base64,{}\" alt=\"{}\" title=\"{}\">", mime,
                     base64(read_file(target)), html_escape(alt), html_escape(url));
}

// CommonMark plus the GitHub extensions findings use: tables, strikethrough,
// autolinks, and tagfilter (defuses <script>, <iframe>, ... even if raw HTML
// were ever enabled; the default safe mode already drops raw HTML).
std::string render_markdown(const std::string& markdown, const fs::path& md_dir,
                            const fs::path& root, FindingsPage& page) {
  cmark_gfm_core_extensions_ensure_registered();
  // The parser owns the extension list the renderer needs: it lives until
  // the end of this function.
  std::unique_ptr<cmark_parser, decltype(&cmark_parser_free)> parser(
      cmark_parser_new(CMARK_OPT_DEFAULT), cmark_parser_free);
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
    // markup is built here from escaped text and file bytes only.
    cmark_node* replacement = cmark_node_new(CMARK_NODE_CUSTOM_INLINE);
    cmark_node_set_on_enter(
        replacement, image_markup(url ? url : "", alt_text(image), md_dir, root, page).c_str());
    cmark_node_set_on_exit(replacement, "");
    cmark_node_replace(image, replacement);
    cmark_node_free(image);
  }
  char* html = cmark_render_html(doc.get(), CMARK_OPT_DEFAULT,
                                 cmark_parser_get_syntax_extensions(parser.get()));
  std::string out(html);
  std::free(html);
  return out;
}

std::vector<fs::path> findings_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (const char* sub : {"category_findings", "system_findings"}) {
    std::vector<fs::path> here;
    std::error_code ec;
    for (fs::directory_iterator it(root / sub, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".md" && it->is_regular_file()) here.push_back(it->path());
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

}  // namespace

FindingsPage render_findings_page(const std::string& output_dir) {
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec))
    throw std::invalid_argument("output_dir " + output_dir + " is not a directory");
  fs::path root = fs::canonical(output_dir);
  FindingsPage page;
  std::vector<HtmlSection> sections;
  for (const fs::path& file : findings_files(root)) {
    if (fs::file_size(file) > kMaxMarkdownBytes)
      throw std::invalid_argument(file.string() + " is larger than 4 MiB");
    std::string stem = file.stem().string();
    std::string body = render_markdown(read_file(file), file.parent_path(), root, page);
    sections.push_back({stem, stem, "<div class=\"findings\">\n" + body + "</div>"});
    page.files.push_back(file.string());
  }
  if (sections.empty())
    throw std::invalid_argument("no findings in " + output_dir +
                                " (expected category_findings/*.md or system_findings/*.md; "
                                "write them with write_findings)");
  page.html =
      html_page("jarvis findings: " + root.filename().string(),
                fmt::format("{} findings files from {}", sections.size(), root.string()), sections);
  return page;
}

}  // namespace jarvis::charts
