#include "replay/replay_zip.h"

#include <zlib.h>

#include <cstdint>
#include <ctime>
#include <limits>
#include <stdexcept>

namespace jarvis::replay {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint16_t kVersion = 20;  // 2.0: deflate
constexpr uint16_t kMethodStore = 0;
constexpr uint16_t kMethodDeflate = 8;
constexpr uint16_t kFlagUtf8Names = 1u << 11;

void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}

void put32(std::string& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

// Raw deflate (no zlib header), as the zip format wants.
std::string deflate_raw(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zip: deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zip: deflate failed");
  return out;
}

// MS-DOS date and time of "now" (local time, 2-second resolution).
std::pair<uint16_t, uint16_t> dos_time_date() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  int year = tm.tm_year + 1900 < 1980 ? 1980 : tm.tm_year + 1900;
  auto time = static_cast<uint16_t>((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
  auto date = static_cast<uint16_t>(((year - 1980) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
  return {time, date};
}

struct Entry {
  uint32_t crc = 0;
  uint32_t compressed = 0;
  uint32_t size = 0;
  uint16_t method = kMethodStore;
  uint32_t offset = 0;
};

uint32_t checked32(size_t v, const std::string& what) {
  if (v > std::numeric_limits<uint32_t>::max())
    throw std::runtime_error("zip: " + what + " exceeds 4 GiB (ZIP64 not supported)");
  return static_cast<uint32_t>(v);
}

// Fields shared by the local and the central header, from "version needed" on.
void put_common_header(std::string& out, const Entry& e, uint16_t name_len, uint16_t time,
                       uint16_t date) {
  put16(out, kVersion);
  put16(out, kFlagUtf8Names);
  put16(out, e.method);
  put16(out, time);
  put16(out, date);
  put32(out, e.crc);
  put32(out, e.compressed);
  put32(out, e.size);
  put16(out, name_len);
  put16(out, 0);  // extra field length
}

}  // namespace

std::string make_zip(const std::vector<ZipMember>& members) {
  if (members.size() > 0xffff) throw std::runtime_error("zip: too many members");
  auto [time, date] = dos_time_date();
  std::string out;
  std::vector<Entry> entries;
  for (const ZipMember& m : members) {
    if (m.name.empty() || m.name.size() > 0xffff) throw std::runtime_error("zip: bad member name");
    Entry e;
    e.size = checked32(m.data.size(), m.name);
    e.crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                        reinterpret_cast<const Bytef*>(m.data.data()),
                                        static_cast<uInt>(m.data.size())));
    std::string packed = deflate_raw(m.data);
    bool deflated = packed.size() < m.data.size();
    e.method = deflated ? kMethodDeflate : kMethodStore;
    e.compressed = checked32(deflated ? packed.size() : m.data.size(), m.name);
    e.offset = checked32(out.size(), "archive");
    put32(out, kLocalHeaderSig);
    put_common_header(out, e, static_cast<uint16_t>(m.name.size()), time, date);
    out += m.name;
    out += deflated ? packed : m.data;
    entries.push_back(e);
  }
  uint32_t central_offset = checked32(out.size(), "archive");
  for (size_t k = 0; k < members.size(); ++k) {
    put32(out, kCentralHeaderSig);
    put16(out, (3u << 8) | kVersion);  // made by: Unix, so the mode below is honoured
    put_common_header(out, entries[k], static_cast<uint16_t>(members[k].name.size()), time, date);
    put16(out, 0);               // comment length
    put16(out, 0);               // disk number start
    put16(out, 0);               // internal attributes
    put32(out, 0100644u << 16);  // external attributes: regular file, rw-r--r--
    put32(out, entries[k].offset);
    out += members[k].name;
  }
  uint32_t central_size = checked32(out.size() - central_offset, "archive");
  put32(out, kEndOfCentralDirSig);
  put16(out, 0);  // this disk
  put16(out, 0);  // disk with the central directory
  put16(out, static_cast<uint16_t>(members.size()));
  put16(out, static_cast<uint16_t>(members.size()));
  put32(out, central_size);
  put32(out, central_offset);
  put16(out, 0);  // comment length
  return out;
}

}  // namespace jarvis::replay
