// Small zip archives built in memory, for the xlsx reader's tests and its
// fuzzer (fuzz/fuzz_xlsx.cpp): stored or raw-deflated entries with real
// CRC-32s, and a field to make the headers lie about an entry's size.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jarvis::tiny_zip {

struct Entry {
  std::string name;
  std::string data;
  bool deflate = false;
  // The uncompressed size both headers declare, when not the data's own.
  std::optional<uint32_t> declared_size;
};

inline std::string deflate_raw(std::string_view in) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

inline void put16(std::string& out, uint32_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}

inline void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}

// A zip of `entries` in order: local headers and data, the central
// directory, and its end record.
inline std::string build(const std::vector<Entry>& entries) {
  std::string out, central;
  for (const Entry& e : entries) {
    std::string data = e.deflate ? deflate_raw(e.data) : e.data;
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    uint32_t size = e.declared_size.value_or(static_cast<uint32_t>(e.data.size()));
    uint32_t method = e.deflate ? 8 : 0;
    uint32_t local_at = static_cast<uint32_t>(out.size());
    auto common = [&](std::string& h) {  // version needed .. extra length
      put16(h, 20);
      put16(h, 0);  // flags
      put16(h, method);
      put32(h, 0);  // DOS time and date
      put32(h, crc);
      put32(h, static_cast<uint32_t>(data.size()));
      put32(h, size);
      put16(h, static_cast<uint32_t>(e.name.size()));
      put16(h, 0);  // extra
    };
    put32(out, 0x04034b50);
    common(out);
    out += e.name;
    out += data;
    put32(central, 0x02014b50);
    put16(central, 20);  // version made by
    common(central);
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, local_at);
    central += e.name;
  }
  uint32_t central_at = static_cast<uint32_t>(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint32_t>(entries.size()));
  put16(out, static_cast<uint32_t>(entries.size()));
  put32(out, static_cast<uint32_t>(central.size()));
  put32(out, central_at);
  put16(out, 0);
  return out;
}

inline const char* const kWorkbookXml =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" "
    "xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\">"
    "<sheets><sheet name=\"s1\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>";

inline const char* const kWorkbookRels =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">"
    "<Relationship Id=\"rId1\" "
    "Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" "
    "Target=\"worksheets/sheet1.xml\"/></Relationships>";

inline const char* const kContentTypes =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
    "<Default Extension=\"xml\" ContentType=\"application/xml\"/></Types>";

// A <worksheet> around `rows` (the <row> elements).
inline std::string sheet_xml(std::string_view rows) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
         "<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">"
         "<sheetData>" +
         std::string(rows) + "</sheetData></worksheet>";
}

// The parts of a one-sheet workbook ("s1"): the sheet's XML as given, and
// xl/sharedStrings.xml when given.
inline std::vector<Entry> workbook_entries(std::string sheet,
                                           std::optional<std::string> shared_strings = {},
                                           bool deflate = false) {
  std::vector<Entry> entries = {{"[Content_Types].xml", kContentTypes, deflate, {}},
                                {"xl/workbook.xml", kWorkbookXml, deflate, {}},
                                {"xl/_rels/workbook.xml.rels", kWorkbookRels, deflate, {}},
                                {"xl/worksheets/sheet1.xml", std::move(sheet), deflate, {}}};
  if (shared_strings)
    entries.push_back({"xl/sharedStrings.xml", std::move(*shared_strings), deflate, {}});
  return entries;
}

inline std::string workbook(std::string sheet, std::optional<std::string> shared_strings = {},
                            bool deflate = false) {
  return build(workbook_entries(std::move(sheet), std::move(shared_strings), deflate));
}

}  // namespace jarvis::tiny_zip
