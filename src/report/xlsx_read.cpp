// A small xlsx reader: zip central directory -> entries (zlib raw inflate),
// workbook.xml + its rels -> sheet files, sharedStrings.xml, and a linear scan
// of each wanted sheet's <row>/<c> elements. Report workbooks are a few MB,
// so each entry is inflated whole.
//
// Hostile input (issue 49): every offset and length read from the zip is
// checked against the data's end before use, a search that finds nothing is
// an error rather than an index (no `npos + k`), every loop moves past what
// it read, and sizes are bounded by xlsx_limits. The zip is parsed here and
// not by libzip because libzip lives in a module (libjarvis_zip.so) kept off
// the engine's start-up path, and the reader needs only a bounded walk of
// the central directory.
#include "report/xlsx_read.h"
#include "pycompat/text.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace jarvis {
namespace {

using namespace xlsx_limits;
using XlsxError = std::runtime_error;
constexpr size_t npos = std::string_view::npos;

// Input text quoted in an error, cut short: a crafted attribute may be MBs.
std::string quote_input(std::string_view s) {
  constexpr size_t kMaxQuoted = 40;
  if (s.size() <= kMaxQuoted) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kMaxQuoted)) + "...\" (" + std::to_string(s.size()) +
         " chars)";
}

std::string mib(size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// ---- zip --------------------------------------------------------------------

// Little-endian fields of the zip's bytes, each checked against the end.
class ZipBytes {
 public:
  explicit ZipBytes(std::string_view data) : data_(data) {}
  size_t size() const { return data_.size(); }
  uint32_t u16(size_t at) const { return field(at, 2); }
  uint32_t u32(size_t at) const { return field(at, 4); }
  std::string_view span(size_t at, size_t n, const char* what) const {
    if (at > data_.size() || n > data_.size() - at)
      throw XlsxError(std::string("truncated zip: ") + what + " runs past the end of the file");
    return data_.substr(at, n);
  }

 private:
  uint32_t field(size_t at, size_t n) const {
    std::string_view b = span(at, n, "a header");
    uint32_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[k]);
    return v;
  }
  std::string_view data_;
};

constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kCentralEntrySig = 0x02014b50;
constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr size_t kEndOfCentralDirBytes = 22;
constexpr size_t kCentralEntryBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kMaxZipComment = 0xFFFF;
constexpr uint32_t kZip64Marker = 0xFFFFFFFF;
constexpr uint32_t kMethodStored = 0;
constexpr uint32_t kMethodDeflated = 8;
constexpr uint32_t kFlagEncrypted = 1;

struct ZipEntry {
  uint32_t flags = 0;
  uint32_t method = 0;
  uint32_t crc = 0;
  size_t compressed = 0;
  size_t size = 0;
  size_t local_header = 0;
};

class ZipArchive {
 public:
  explicit ZipArchive(std::string_view data) : bytes_(data) {
    size_t end_record = find_end_record();
    if (bytes_.u16(end_record + 4) != 0 || bytes_.u16(end_record + 6) != 0)
      throw XlsxError("multi-disk zip archives are not supported");
    size_t count = bytes_.u16(end_record + 10);
    size_t dir_size = bytes_.u32(end_record + 12);
    size_t dir_at = bytes_.u32(end_record + 16);
    if (count == 0xFFFF || dir_size == kZip64Marker || dir_at == kZip64Marker)
      throw XlsxError("zip64 archives are not supported");
    if (dir_at > end_record || dir_size > end_record - dir_at)
      throw XlsxError("zip central directory lies outside the file");
    if (count > dir_size / kCentralEntryBytes)
      throw XlsxError("zip central directory claims " + std::to_string(count) + " entries in " +
                      std::to_string(dir_size) + " bytes");
    read_central_directory(dir_at, dir_at + dir_size, count);
  }

  bool has(const std::string& name) const { return entries_.count(name) != 0; }

  // The entry's uncompressed bytes; refused before any allocation when its
  // declared size breaks a limit, and checked against the size and CRC-32
  // declared after inflating into a buffer of exactly that size.
  std::string read(const std::string& name) {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw XlsxError("missing zip entry " + name);
    const ZipEntry& e = it->second;
    check_entry(name, e);
    std::string_view stored = stored_bytes(name, e);
    std::string out;
    if (e.method == kMethodStored) {
      if (e.size != e.compressed)
        throw XlsxError("stored zip entry " + name + " declares " + std::to_string(e.size) +
                        " bytes but holds " + std::to_string(e.compressed));
      out.assign(stored);
    } else {
      out = inflate_exactly(stored, e.size, name);
    }
    if (crc32(0, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())) !=
        e.crc)
      throw XlsxError("zip entry " + name + " fails its CRC-32 check");
    inflated_ += out.size();
    return out;
  }

 private:
  // The end-of-central-directory record: in the last 22 bytes plus at most a
  // 64 KiB comment.
  size_t find_end_record() const {
    if (bytes_.size() < kEndOfCentralDirBytes)
      throw XlsxError("not a zip file (" + std::to_string(bytes_.size()) + " bytes)");
    size_t last = bytes_.size() - kEndOfCentralDirBytes;
    size_t first = last > kMaxZipComment ? last - kMaxZipComment : 0;
    for (size_t at = last + 1; at-- > first;)
      if (bytes_.u32(at) == kEndOfCentralDirSig) return at;
    throw XlsxError("not a zip file (no end of central directory)");
  }

  void read_central_directory(size_t at, size_t end, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      if (end - at < kCentralEntryBytes || bytes_.u32(at) != kCentralEntrySig)
        throw XlsxError("bad zip central directory entry " + std::to_string(k));
      ZipEntry e;
      e.flags = bytes_.u16(at + 8);
      e.method = bytes_.u16(at + 10);
      e.crc = bytes_.u32(at + 16);
      e.compressed = bytes_.u32(at + 20);
      e.size = bytes_.u32(at + 24);
      size_t name_len = bytes_.u16(at + 28);
      size_t record = kCentralEntryBytes + name_len + bytes_.u16(at + 30) + bytes_.u16(at + 32);
      e.local_header = bytes_.u32(at + 42);
      if (record > end - at) throw XlsxError("zip central directory entry runs past its end");
      std::string name(bytes_.span(at + kCentralEntryBytes, name_len, "an entry name"));
      if (e.compressed == kZip64Marker || e.size == kZip64Marker || e.local_header == kZip64Marker)
        throw XlsxError("zip64 entry " + name + " is not supported");
      if (!entries_.emplace(name, e).second) throw XlsxError("duplicate zip entry " + name);
      at += record;
    }
  }

  std::string_view stored_bytes(const std::string& name, const ZipEntry& e) const {
    size_t local = e.local_header;
    if (bytes_.u32(local) != kLocalHeaderSig) throw XlsxError("bad zip local header for " + name);
    size_t start = local + kLocalHeaderBytes + bytes_.u16(local + 26) + bytes_.u16(local + 28);
    return bytes_.span(start, e.compressed, "an entry's data");
  }

  void check_entry(const std::string& name, const ZipEntry& e) const {
    if (e.flags & kFlagEncrypted) throw XlsxError("zip entry " + name + " is encrypted");
    if (e.method != kMethodStored && e.method != kMethodDeflated)
      throw XlsxError("zip entry " + name + " uses compression method " + std::to_string(e.method) +
                      " (only stored and deflated are read)");
    if (e.size > kMaxEntryBytes)
      throw XlsxError("zip entry " + name + " declares " + std::to_string(e.size) +
                      " bytes, more than the " + mib(kMaxEntryBytes) + " limit");
    if (e.method == kMethodDeflated && e.size > e.compressed * kMaxDeflateRatio + 1024)
      throw XlsxError("zip entry " + name + " declares " + std::to_string(e.size) + " bytes from " +
                      std::to_string(e.compressed) + " compressed: more than deflate can produce");
    if (e.size > kMaxInflatedBytes - inflated_)
      throw XlsxError("zip entries inflate to more than the " + mib(kMaxInflatedBytes) +
                      " limit of a workbook");
  }

  // One spare byte of output room tells a stream longer than declared from
  // one of exactly that size.
  static std::string inflate_exactly(std::string_view in, size_t size, const std::string& name) {
    std::string out(size + 1, '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw XlsxError("zlib init failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    size_t produced = z.total_out;
    inflateEnd(&z);
    if (produced > size)
      throw XlsxError("zip entry " + name + " inflates to more than the " + std::to_string(size) +
                      " bytes it declares");
    if (rc != Z_STREAM_END)
      throw XlsxError("cannot inflate zip entry " + name + ": corrupt or truncated data");
    if (produced != size)
      throw XlsxError("zip entry " + name + " inflates to " + std::to_string(produced) +
                      " bytes, not the " + std::to_string(size) + " it declares");
    out.resize(size);
    return out;
  }

  ZipBytes bytes_;
  std::map<std::string, ZipEntry> entries_;
  size_t inflated_ = 0;
};

// ---- XML scanning -------------------------------------------------------------

// Appends the text of an XML character reference ("#65", "#x41") to `out`.
void append_char_ref(std::string& out, std::string_view ref) {
  bool hex = ref.size() > 1 && (ref[1] == 'x' || ref[1] == 'X');
  std::string_view digits = ref.substr(hex ? 2 : 1);
  bool ok = !digits.empty() && digits.size() <= 8;
  uint32_t cp = 0;
  for (size_t k = 0; ok && k < digits.size(); ++k) {
    char ch = digits[k];
    int d = ch >= '0' && ch <= '9'          ? ch - '0'
            : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                            : -1;
    ok = d >= 0;
    cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(ok ? d : 0);
  }
  if (!ok || cp == 0 || cp > 0x10FFFF)
    throw XlsxError("bad character reference " + quote_input("&" + std::string(ref) + ";"));
  pycompat::append_utf8(out, cp);
}

// Resolves the five named entities and character references. An '&' not
// followed within a few characters by ';' is kept as written: looking only
// that far keeps the scan linear.
std::string unescape(std::string_view s) {
  constexpr size_t kLongestEntity = 12;  // "&#x0010FFFF;"
  std::string out;
  out.reserve(s.size());
  for (size_t k = 0; k < s.size(); ++k) {
    size_t semi = s[k] == '&' ? s.substr(k, kLongestEntity).find(';') : npos;
    if (semi == npos) {
      out += s[k];
      continue;
    }
    std::string_view ent = s.substr(k + 1, semi - 1);
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
    else if (!ent.empty() && ent[0] == '#')
      append_char_ref(out, ent);
    else
      out.append(s.substr(k, semi + 1));
    k += semi;
  }
  return out;
}

// The value of attribute `name` in a start tag's text, or "".
std::string attr(std::string_view tag, std::string_view name) {
  for (size_t at = tag.find(name); at != npos; at = tag.find(name, at + 1)) {
    bool starts = at > 0 && (tag[at - 1] == ' ' || tag[at - 1] == '\t' || tag[at - 1] == '\n' ||
                             tag[at - 1] == '\r');
    size_t eq = at + name.size();
    if (!starts || eq + 1 >= tag.size() || tag[eq] != '=') continue;
    char q = tag[eq + 1];
    if (q != '"' && q != '\'') continue;
    size_t end = tag.find(q, eq + 2);
    if (end == npos) return "";
    return unescape(tag.substr(eq + 2, end - eq - 2));
  }
  return "";
}

// Position of the next start tag `open` ("<row") at or after `from` whose
// name ends there ("<row>", "<row r=..", "<row/>", not "<rowBreaks"), or npos.
size_t next_start_tag(std::string_view xml, std::string_view open, size_t from) {
  for (size_t at = xml.find(open, from); at != npos; at = xml.find(open, at + 1)) {
    size_t after = at + open.size();
    if (after == xml.size()) return at;  // cut off: read_element says so
    char ch = xml[after];
    if (ch == '>' || ch == '/' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') return at;
  }
  return npos;
}

struct Element {
  std::string_view tag;   // the start tag's text after '<', without '>' or '/>'
  std::string_view body;  // between the start and the end tag
  size_t end = 0;         // position just after the element
};

// The element whose start tag `open` begins at `at`, up to its end tag
// `close`; a start tag without '>' or an element without its end tag is an
// error naming where it starts.
Element read_element(std::string_view xml, size_t at, std::string_view open,
                     std::string_view close) {
  auto where = [at] { return " (at byte " + std::to_string(at) + ")"; };
  size_t gt = xml.find('>', at);
  if (gt == npos) throw XlsxError("unterminated " + std::string(open) + " start tag" + where());
  Element e;
  if (xml[gt - 1] == '/') {
    e.tag = xml.substr(at + 1, gt - 1 - (at + 1));
    e.end = gt + 1;
    return e;
  }
  e.tag = xml.substr(at + 1, gt - (at + 1));
  size_t end_tag = xml.find(close, gt + 1);
  if (end_tag == npos)
    throw XlsxError(std::string(open) + "> without " + std::string(close) + where());
  e.body = xml.substr(gt + 1, end_tag - (gt + 1));
  e.end = end_tag + close.size();
  return e;
}

// Appends the unescaped text of every <t>...</t> inside `xml` to `out`.
void append_t_text(std::string_view xml, std::string& out) {
  for (size_t at = next_start_tag(xml, "<t", 0); at != npos;) {
    Element t = read_element(xml, at, "<t", "</t>");
    out += unescape(t.body);
    at = next_start_tag(xml, "<t", t.end);
  }
}

std::string all_t_text(std::string_view xml) {
  std::string out;
  append_t_text(xml, out);
  return out;
}

// ---- workbook parts ---------------------------------------------------------------

// xl/sharedStrings.xml, kept as one text with end offsets: a string object
// per entry would cost 32 bytes for each 9-byte "<si></si>".
class SharedStrings {
 public:
  explicit SharedStrings(ZipArchive& zip) {
    if (!zip.has("xl/sharedStrings.xml")) return;
    std::string xml = zip.read("xl/sharedStrings.xml");
    std::string_view v(xml);
    for (size_t at = next_start_tag(v, "<si", 0); at != npos;) {
      Element si = read_element(v, at, "<si", "</si>");
      if (ends_.size() == kMaxSharedStrings)
        throw XlsxError("more than " + std::to_string(kMaxSharedStrings) + " shared strings");
      append_t_text(si.body, text_);
      ends_.push_back(text_.size());
      at = next_start_tag(v, "<si", si.end);
    }
  }

  // The string of a cell's <v>index</v>.
  std::string_view at(std::string_view index) const {
    size_t k = 0;
    bool ok = !index.empty() && index.size() <= 10;
    for (char ch : index) {
      if (ch < '0' || ch > '9' || !ok) {
        ok = false;
        break;
      }
      k = k * 10 + static_cast<size_t>(ch - '0');
    }
    if (!ok || k >= ends_.size())
      throw XlsxError("shared string index " + quote_input(index) + " is not one of the " +
                      std::to_string(ends_.size()) + " shared strings");
    size_t begin = k == 0 ? 0 : ends_[k - 1];
    return std::string_view(text_).substr(begin, ends_[k] - begin);
  }

 private:
  std::string text_;
  std::vector<size_t> ends_;
};

// (sheet name, entry path) in workbook order, through workbook.xml and its
// relationships.
std::vector<std::pair<std::string, std::string>> sheet_files(ZipArchive& zip) {
  std::map<std::string, std::string> target_of;
  std::string rels = zip.read("xl/_rels/workbook.xml.rels");
  std::string_view r(rels);
  for (size_t at = next_start_tag(r, "<Relationship", 0); at != npos;) {
    Element rel = read_element(r, at, "<Relationship", "</Relationship>");
    std::string target = attr(rel.tag, "Target");
    target = target.rfind('/', 0) == 0 ? target.substr(1) : "xl/" + target;
    target_of[attr(rel.tag, "Id")] = target;
    at = next_start_tag(r, "<Relationship", rel.end);
  }
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> files;
  std::string wb = zip.read("xl/workbook.xml");
  std::string_view w(wb);
  for (size_t at = next_start_tag(w, "<sheet", 0); at != npos;) {
    Element sheet = read_element(w, at, "<sheet", "</sheet>");
    auto it = target_of.find(attr(sheet.tag, "r:id"));
    if (it != target_of.end() && zip.has(it->second)) {
      // Each sheet is read once: a workbook naming one file many times
      // would multiply the work of reading it.
      if (!files.insert(it->second).second)
        throw XlsxError("xl/workbook.xml lists " + it->second + " twice");
      out.emplace_back(attr(sheet.tag, "name"), it->second);
    }
    at = next_start_tag(w, "<sheet", sheet.end);
  }
  return out;
}

// Zero-based column of an A1-style cell reference ("B7" -> 1). Rows are taken
// in document order; the row number is checked, not used.
size_t column_of_reference(std::string_view ref) {
  size_t k = 0, col = 0;
  for (; k < ref.size() && ref[k] >= 'A' && ref[k] <= 'Z' && col <= kMaxColumns; ++k)
    col = col * 26 + static_cast<size_t>(ref[k] - 'A' + 1);
  if (k == 0) throw XlsxError("cell reference " + quote_input(ref) + " has no column letters");
  if (col > kMaxColumns)
    throw XlsxError("cell reference " + quote_input(ref) + " is beyond column XFD (" +
                    std::to_string(kMaxColumns) + " columns)");
  size_t row = 0, digits = ref.size() - k;
  bool ok = digits >= 1 && digits <= 7;
  for (; ok && k < ref.size(); ++k) {
    ok = ref[k] >= '0' && ref[k] <= '9';
    row = row * 10 + static_cast<size_t>(ref[k] - '0');
  }
  if (!ok || row == 0 || row > kMaxRows)
    throw XlsxError("cell reference " + quote_input(ref) + " has no row number from 1 to " +
                    std::to_string(kMaxRows));
  return col - 1;
}

// How many cells and bytes of text the tables built so far may hold: grows
// with the sheet XML read, up to the absolute caps (see xlsx_limits).
class TableBudget {
 public:
  void add_xml(size_t bytes) { xml_bytes_ += bytes; }

  void take_cells(size_t n, const std::string& sheet) {
    size_t allowed = std::min(kMaxCells, kCellSlack + kCellsPerXmlByte * xml_bytes_);
    if (n > allowed - cells_)
      throw XlsxError("sheet " + sheet + " would take the workbook past " +
                      std::to_string(allowed) + " cells (rows x columns; limit " +
                      std::to_string(kCellSlack) + " + " + std::to_string(kCellsPerXmlByte) +
                      " per byte of sheet XML, at most " + std::to_string(kMaxCells) + ")");
    cells_ += n;
  }

  void take_text(size_t n, const std::string& sheet) {
    size_t allowed = std::min(kMaxTextBytes, kTextSlack + kTextPerXmlByte * xml_bytes_);
    if (n > allowed - text_)
      throw XlsxError("sheet " + sheet + " would take the workbook's cell text past " +
                      std::to_string(allowed) + " bytes (limit " + mib(kTextSlack) + " + " +
                      std::to_string(kTextPerXmlByte) + " per byte of sheet XML, at most " +
                      mib(kMaxTextBytes) + ")");
    text_ += n;
  }

 private:
  size_t xml_bytes_ = 0, cells_ = 0, text_ = 0;
};

// The text of one cell element; "" = missing.
std::string cell_value(const Element& cell, const SharedStrings& strings) {
  std::string type = attr(cell.tag, "t");
  if (type == "inlineStr") return all_t_text(cell.body);
  size_t v = next_start_tag(cell.body, "<v", 0);
  if (v == npos) return "";
  std::string raw = unescape(read_element(cell.body, v, "<v", "</v>").body);
  if (type == "s") return std::string(strings.at(raw));
  if (type == "b") return raw == "1" ? "True" : "False";
  return raw;  // numbers and formula strings as written
}

// Calls on_cell(column, element) for each <c> of a row's body, in order.
template <class OnCell>
void for_each_cell(std::string_view row, OnCell on_cell) {
  size_t next_col = 0;
  for (size_t at = next_start_tag(row, "<c", 0); at != npos;) {
    Element cell = read_element(row, at, "<c", "</c>");
    std::string ref = attr(cell.tag, "r");
    size_t col = ref.empty() ? next_col : column_of_reference(ref);
    if (col >= kMaxColumns)
      throw XlsxError("a row has more than " + std::to_string(kMaxColumns) + " cells");
    on_cell(col, cell);
    next_col = col + 1;
    at = next_start_tag(row, "<c", cell.end);
  }
}

Table parse_sheet(std::string_view xml, const SharedStrings& strings, const std::string& name,
                  TableBudget& budget) {
  budget.add_xml(xml.size());
  Table t(name, {});
  size_t rows = 0;
  for (size_t at = next_start_tag(xml, "<row", 0); at != npos;) {
    Element row = read_element(xml, at, "<row", "</row>");
    if (++rows > kMaxRows)
      throw XlsxError("sheet " + name + " has more than " + std::to_string(kMaxRows) + " rows");
    if (rows == 1) {  // the header: as wide as its last cell
      for_each_cell(row.body, [&](size_t col, const Element& cell) {
        if (t.columns.size() <= col) t.columns.resize(col + 1);
        t.columns[col] = cell_value(cell, strings);
        budget.take_text(t.columns[col].size(), name);
      });
      budget.take_cells(t.columns.size(), name);
    } else {
      budget.take_cells(std::max<size_t>(t.columns.size(), 1), name);
      auto& cells = t.add_row();
      for_each_cell(row.body, [&](size_t col, const Element& cell) {
        if (col >= cells.size()) return;  // no header names it
        std::string value = cell_value(cell, strings);
        budget.take_text(value.size(), name);
        cells[col] = value.empty() ? Cell() : Cell(std::move(value));
      });
    }
    at = next_start_tag(xml, "<row", row.end);
  }
  return t;
}

std::vector<Table> read_workbook(std::string_view bytes,
                                 const std::optional<std::vector<std::string>>& only) {
  ZipArchive zip(bytes);
  auto files = sheet_files(zip);
  SharedStrings strings(zip);
  TableBudget budget;
  std::vector<Table> out;
  for (const auto& [name, file] : files) {
    if (only && std::find(only->begin(), only->end(), name) == only->end()) continue;
    std::string xml = zip.read(file);
    out.push_back(parse_sheet(xml, strings, name, budget));
  }
  return out;
}

// The whole file, refused beyond kMaxFileBytes: checked up front for a
// regular file, and while reading for anything else (a pipe, /dev/zero).
std::string read_file_bounded(const std::string& path) {
  std::error_code ec;
  size_t expected = 0;
  if (std::filesystem::is_regular_file(path, ec)) {
    expected = std::filesystem::file_size(path, ec);
    if (ec) expected = 0;
    if (expected > kMaxFileBytes)
      throw XlsxError("file is larger than the " + mib(kMaxFileBytes) + " limit");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw XlsxError("cannot open " + path);
  std::string data;
  data.reserve(expected);
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > kMaxFileBytes)
      throw XlsxError("file is larger than the " + mib(kMaxFileBytes) + " limit");
  }
  if (in.bad()) throw XlsxError("cannot read " + path);
  return data;
}

}  // namespace

std::map<std::string, Table> read_xlsx_sheets(const std::string& path,
                                              const std::vector<std::string>& sheets) {
  std::map<std::string, Table> out;
  for (Table& t : read_xlsx_workbook(path, sheets)) out.emplace(t.name, std::move(t));
  return out;
}

std::vector<Table> read_xlsx_workbook_from_memory(
    std::string_view bytes, const std::string& label,
    const std::optional<std::vector<std::string>>& only) {
  try {
    return read_workbook(bytes, only);
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": not a readable xlsx workbook: " + e.what());
  }
}

std::vector<Table> read_xlsx_workbook(const std::string& path,
                                      const std::optional<std::vector<std::string>>& only) {
  std::string bytes;
  try {
    bytes = read_file_bounded(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a readable xlsx workbook: " + e.what());
  }
  return read_xlsx_workbook_from_memory(bytes, path, only);
}

}  // namespace jarvis
