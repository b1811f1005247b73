// A small xlsx reader: zip central directory -> entries (zlib raw inflate),
// workbook.xml + its rels -> sheet files, sharedStrings.xml, and a linear scan
// of each wanted sheet's <row>/<c> elements. Report workbooks are a few MB,
// so each entry is inflated whole.
#include "report/xlsx_read.h"
#include "pycompat/text.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace jarvis {
namespace {

using Bytes = std::string;

uint32_t le(const Bytes& b, size_t at, int n) {
  if (at + n > b.size()) throw std::runtime_error("truncated zip");
  uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[at + k]);
  return v;
}

struct Zip {
  Bytes data;
  std::map<std::string, std::pair<size_t, size_t>> central;  // name -> (header offset, method)

  explicit Zip(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream s;
    s << in.rdbuf();
    data = s.str();
    size_t eocd = std::string::npos;
    for (size_t k = data.size() >= 22 ? data.size() - 22 : 0;; --k) {
      if (le(data, k, 4) == 0x06054b50) {
        eocd = k;
        break;
      }
      if (k == 0 || data.size() - k > 65557) break;
    }
    if (eocd == std::string::npos) throw std::runtime_error("not a zip file");
    size_t count = le(data, eocd + 10, 2), at = le(data, eocd + 16, 4);
    for (size_t e = 0; e < count; ++e) {
      if (le(data, at, 4) != 0x02014b50) throw std::runtime_error("bad zip central directory");
      size_t name_len = le(data, at + 28, 2), extra = le(data, at + 30, 2),
             comment = le(data, at + 32, 2);
      central[data.substr(at + 46, name_len)] = {le(data, at + 42, 4), le(data, at + 10, 2)};
      sizes[data.substr(at + 46, name_len)] = {le(data, at + 20, 4), le(data, at + 24, 4)};
      at += 46 + name_len + extra + comment;
    }
  }

  bool has(const std::string& name) const { return central.count(name) != 0; }

  Bytes read(const std::string& name) const {
    auto it = central.find(name);
    if (it == central.end()) throw std::runtime_error("missing zip entry " + name);
    size_t local = it->second.first;
    if (le(data, local, 4) != 0x04034b50) throw std::runtime_error("bad zip entry " + name);
    size_t start = local + 30 + le(data, local + 26, 2) + le(data, local + 28, 2);
    auto [csize, usize] = sizes.at(name);
    if (start + csize > data.size()) throw std::runtime_error("truncated zip entry " + name);
    if (it->second.second == 0) return data.substr(start, csize);
    if (it->second.second != 8) throw std::runtime_error("unsupported zip method in " + name);
    return inflate_raw(std::string_view(data).substr(start, csize), usize, name);
  }

  std::map<std::string, std::pair<size_t, size_t>> sizes;  // name -> (compressed, size)

  static Bytes inflate_raw(std::string_view in, size_t size, const std::string& name) {
    Bytes out(size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw std::runtime_error("zlib init failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    inflateEnd(&z);
    if (rc != Z_STREAM_END) throw std::runtime_error("cannot inflate " + name);
    return out;
  }
};

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] != '&') {
      out += s[k];
      continue;
    }
    size_t semi = s.find(';', k);
    if (semi == std::string_view::npos) {
      out += s[k];
      continue;
    }
    std::string_view ent = s.substr(k + 1, semi - k - 1);
    if (ent == "amp")
      out += '&';
    else if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      unsigned long cp = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X')
                             ? std::stoul(std::string(ent.substr(2)), nullptr, 16)
                             : std::stoul(std::string(ent.substr(1)));
      pycompat::append_utf8(out, static_cast<uint32_t>(cp));
    } else {
      out.append(s.substr(k, semi - k + 1));
    }
    k = semi;
  }
  return out;
}

// The value of attribute `name` in a start tag's text, or "".
std::string attr(std::string_view tag, std::string_view name) {
  for (size_t at = tag.find(name); at != std::string_view::npos; at = tag.find(name, at + 1)) {
    bool starts = at == 0 || tag[at - 1] == ' ' || tag[at - 1] == '\t' || tag[at - 1] == '\n';
    size_t eq = at + name.size();
    if (!starts || eq + 1 >= tag.size() || tag[eq] != '=') continue;
    char q = tag[eq + 1];
    size_t end = tag.find(q, eq + 2);
    if (end == std::string_view::npos) return "";
    return unescape(tag.substr(eq + 2, end - eq - 2));
  }
  return "";
}

// Concatenated text of every <t>...</t> (or <t xml:space=..>) inside `xml`.
std::string all_t_text(std::string_view xml) {
  std::string out;
  for (size_t at = xml.find("<t"); at != std::string_view::npos; at = xml.find("<t", at + 2)) {
    if (at + 2 < xml.size() && xml[at + 2] != '>' && xml[at + 2] != ' ') continue;  // <tag..>
    size_t open_end = xml.find('>', at);
    if (open_end == std::string_view::npos || xml[open_end - 1] == '/') continue;
    size_t close = xml.find("</t>", open_end);
    if (close == std::string_view::npos) break;
    out += unescape(xml.substr(open_end + 1, close - open_end - 1));
    at = close;
  }
  return out;
}

std::vector<std::string> shared_strings(const Zip& zip) {
  std::vector<std::string> out;
  if (!zip.has("xl/sharedStrings.xml")) return out;
  Bytes xml = zip.read("xl/sharedStrings.xml");
  std::string_view v(xml);
  for (size_t at = v.find("<si>"); at != std::string_view::npos; at = v.find("<si>", at + 4)) {
    size_t end = v.find("</si>", at);
    if (end == std::string_view::npos) break;
    out.push_back(all_t_text(v.substr(at + 4, end - at - 4)));
  }
  return out;
}

// (sheet name, entry path) in workbook order, through workbook.xml and its
// relationships.
std::vector<std::pair<std::string, std::string>> sheet_files(const Zip& zip) {
  std::map<std::string, std::string> target_of;
  Bytes rels = zip.read("xl/_rels/workbook.xml.rels");
  std::string_view r(rels);
  for (size_t at = r.find("<Relationship "); at != std::string_view::npos;
       at = r.find("<Relationship ", at + 1)) {
    std::string_view tag = r.substr(at, r.find('>', at) - at);
    std::string target = attr(tag, "Target");
    target = target.rfind('/', 0) == 0 ? target.substr(1) : "xl/" + target;
    target_of[attr(tag, "Id")] = target;
  }
  std::vector<std::pair<std::string, std::string>> out;
  Bytes wb = zip.read("xl/workbook.xml");
  std::string_view w(wb);
  for (size_t at = w.find("<sheet "); at != std::string_view::npos;
       at = w.find("<sheet ", at + 1)) {
    std::string_view tag = w.substr(at, w.find('>', at) - at);
    auto it = target_of.find(attr(tag, "r:id"));
    if (it != target_of.end() && zip.has(it->second))
      out.emplace_back(attr(tag, "name"), it->second);
  }
  return out;
}

size_t column_index(const std::string& ref) {
  size_t c = 0;
  for (char ch : ref) {
    if (ch < 'A' || ch > 'Z') break;
    c = c * 26 + static_cast<size_t>(ch - 'A' + 1);
  }
  return c - 1;
}

// The text of one <c ...>...</c> (or self-closed) cell; "" = missing.
std::string cell_value(std::string_view tag, std::string_view body,
                       const std::vector<std::string>& strings) {
  std::string type = attr(tag, "t");
  if (type == "inlineStr") return all_t_text(body);
  size_t v = body.find("<v>");
  if (v == std::string_view::npos) return "";
  std::string raw = unescape(body.substr(v + 3, body.find("</v>", v) - v - 3));
  if (type == "s") {
    size_t k = std::stoul(raw);
    return k < strings.size() ? strings[k] : "";
  }
  if (type == "b") return raw == "1" ? "True" : "False";
  return raw;  // numbers and formula strings as written
}

Table parse_sheet(std::string_view xml, const std::vector<std::string>& strings, std::string name) {
  std::vector<std::vector<std::string>> rows;
  for (size_t at = xml.find("<row"); at != std::string_view::npos; at = xml.find("<row", at + 4)) {
    size_t open_end = xml.find('>', at);
    if (xml[open_end - 1] == '/') {
      rows.emplace_back();
      continue;
    }
    size_t end = xml.find("</row>", open_end);
    std::string_view row = xml.substr(open_end + 1, end - open_end - 1);
    std::vector<std::string> cells;
    size_t next_col = 0;
    for (size_t c = row.find("<c"); c != std::string_view::npos; c = row.find("<c", c + 2)) {
      if (c + 2 < row.size() && row[c + 2] != ' ' && row[c + 2] != '>') continue;
      size_t tag_end = row.find('>', c);
      std::string_view tag = row.substr(c, tag_end - c);
      bool closed = tag.back() == '/';
      size_t body_end = closed ? tag_end : row.find("</c>", tag_end);
      std::string_view body =
          closed ? std::string_view() : row.substr(tag_end + 1, body_end - tag_end - 1);
      std::string ref = attr(tag, "r");
      size_t col = ref.empty() ? next_col : column_index(ref);
      if (cells.size() <= col) cells.resize(col + 1);
      cells[col] = cell_value(tag, body, strings);
      next_col = col + 1;
      c = body_end;
    }
    rows.push_back(std::move(cells));
    at = end;
  }
  Table t(std::move(name), rows.empty() ? std::vector<std::string>{} : rows.front());
  for (size_t r = 1; r < rows.size(); ++r) {
    auto& row = t.add_row();
    for (size_t c = 0; c < row.size() && c < rows[r].size(); ++c)
      if (!rows[r][c].empty()) row[c] = Cell(rows[r][c]);
  }
  return t;
}

}  // namespace

std::map<std::string, Table> read_xlsx_sheets(const std::string& path,
                                              const std::vector<std::string>& sheets) {
  std::map<std::string, Table> out;
  for (Table& t : read_xlsx_workbook(path, sheets)) out.emplace(t.name, std::move(t));
  return out;
}

std::vector<Table> read_xlsx_workbook(const std::string& path,
                                      const std::optional<std::vector<std::string>>& only) {
  try {
    Zip zip(path);
    auto files = sheet_files(zip);
    auto strings = shared_strings(zip);
    std::vector<Table> out;
    for (const auto& [name, file] : files) {
      if (only && std::find(only->begin(), only->end(), name) == only->end()) continue;
      Bytes xml = zip.read(file);
      out.push_back(parse_sheet(xml, strings, name));
    }
    return out;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a readable xlsx workbook: " + e.what());
  }
}

}  // namespace jarvis
