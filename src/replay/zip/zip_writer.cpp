// The zip module, libjarvis_zip.so (cmake/replay.cmake): the replay package
// archive written with libzip. libzip brings libcrypto, bzip2, lzma and zstd,
// whose loading and relocation cost every jarvis start about 1.5 ms; as a
// module they load only when a package is written.
#include <zip.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "replay/replay_zip.h"

namespace jarvis::replay {
namespace {

// 1980-01-01 00:00:00, the earliest MS-DOS time: a fixed timestamp keeps the
// archive independent of when it was written.
constexpr uint16_t kDosTime = 0;
constexpr uint16_t kDosDate = (0u << 9) | (1u << 5) | 1u;
// External attributes of a Unix regular file, rw-r--r--.
constexpr uint32_t kUnixFileMode = 0100644u << 16;

[[noreturn]] void fail(const std::string& what, zip_error_t* error) {
  std::string message = "zip: " + what + ": " + zip_error_strerror(error);
  zip_error_fini(error);
  throw std::runtime_error(message);
}

[[noreturn]] void fail(const std::string& what, zip_t* archive) {
  throw std::runtime_error("zip: " + what + ": " + zip_strerror(archive));
}

struct SourceFree {
  void operator()(zip_source_t* s) const { zip_source_free(s); }
};
using SourcePtr = std::unique_ptr<zip_source_t, SourceFree>;

void add_member(zip_t* archive, const ZipMember& m) {
  zip_source_t* data = zip_source_buffer(archive, m.data.data(), m.data.size(), 0);
  if (data == nullptr) fail("cannot add " + m.name, archive);
  zip_int64_t index = zip_file_add(archive, m.name.c_str(), data, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    zip_source_free(data);
    fail("cannot add " + m.name, archive);
  }
  auto k = static_cast<zip_uint64_t>(index);
  if (zip_set_file_compression(archive, k, ZIP_CM_DEFLATE, 9) != 0 ||
      zip_file_set_dostime(archive, k, kDosTime, kDosDate, 0) != 0 ||
      zip_file_set_external_attributes(archive, k, 0, ZIP_OPSYS_UNIX, kUnixFileMode) != 0)
    fail("cannot set the attributes of " + m.name, archive);
}

// The bytes of a finished in-memory archive.
std::string read_back(zip_source_t* source) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(source, &st) != 0 || (st.valid & ZIP_STAT_SIZE) == 0)
    fail("cannot size the archive", zip_source_error(source));
  std::string out(static_cast<size_t>(st.size), '\0');
  if (zip_source_open(source) != 0) fail("cannot reopen the archive", zip_source_error(source));
  zip_int64_t got = zip_source_read(source, out.data(), st.size);
  zip_source_close(source);
  if (got < 0 || static_cast<zip_uint64_t>(got) != st.size)
    fail("cannot read the archive back", zip_source_error(source));
  return out;
}

std::string write_zip(const std::vector<ZipMember>& members) {
  zip_error_t error;
  zip_error_init(&error);
  SourcePtr source(zip_source_buffer_create(nullptr, 0, 0, &error));
  if (!source) fail("cannot create the archive buffer", &error);
  zip_t* archive = zip_open_from_source(source.get(), ZIP_TRUNCATE, &error);
  if (archive == nullptr) fail("cannot open the archive buffer", &error);
  zip_error_fini(&error);
  // zip_close/zip_discard release the source; keep it to read the bytes back.
  zip_source_keep(source.get());
  for (const ZipMember& m : members) {
    if (m.name.empty()) {
      zip_discard(archive);
      throw std::runtime_error("zip: empty member name");
    }
    try {
      add_member(archive, m);
    } catch (...) {
      zip_discard(archive);
      throw;
    }
  }
  if (zip_close(archive) != 0) {
    std::string message = std::string("zip: cannot finish the archive: ") + zip_strerror(archive);
    zip_discard(archive);
    throw std::runtime_error(message);
  }
  return read_back(source.get());
}

}  // namespace
}  // namespace jarvis::replay

extern "C" void jarvis_make_zip(const std::vector<jarvis::replay::ZipMember>& members,
                                std::string& out) {
  out = jarvis::replay::write_zip(members);
}
static_assert(std::is_same_v<decltype(&jarvis_make_zip), jarvis::replay::ZipModuleEntry>);
