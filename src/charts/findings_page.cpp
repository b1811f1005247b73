#include "charts/findings_page.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "base/module_loader.h"
#include "charts/html.h"
#include "charts/markdown_renderer.h"
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

// The markdown as HTML (markdown_renderer.h), its images embedded by
// image_markup.
std::string render_markdown(const std::string& markdown, const fs::path& md_dir,
                            const fs::path& root, FindingsPage& page) {
  static const MarkdownRenderer* renderer = reinterpret_cast<MarkdownModuleEntry>(
      load_module_entry("libjarvis_markdown.so", kMarkdownModuleEntry))();
  return renderer->render(markdown, [&](const std::string& url, const std::string& alt) {
    return image_markup(url, alt, md_dir, root, page);
  });
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
