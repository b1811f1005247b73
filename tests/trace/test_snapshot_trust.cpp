// Issue 49 point 6: the snapshot cache cannot be poisoned. Each case plays an
// attack on the cache directory and checks the refusal: an edited snapshot
// (kernel names changed, CRC-32 fixed up) or one copied from another cache is
// not trusted and the trace's own names come back; a directory another user
// could have written is not used (one warning); what the cache writes is the
// user's alone (0700 directories, 0600 snapshots and key).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/snapshot.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

// The snapshot header (src/trace/snapshot.cpp): the payload starts at 64 and
// its CRC-32 (gzip polynomial, as crc32_gzip_refl) sits at offset 24.
constexpr size_t kHeaderBytes = 64;
constexpr size_t kPayloadCrcAt = 24;

// A cache directory of its own and the reasons its loads logged.
struct Cache {
  fs::path dir;
  std::vector<std::string> reasons;
  SnapshotOptions options() {
    SnapshotOptions o;
    o.cache_dir = dir.string();
    o.log = [this](std::string_view r) { reasons.emplace_back(r); };
    return o;
  }
  Trace load(const fs::path& trace) {
    reasons.clear();
    return load_trace(trace.string(), LoadOptions{}, options());
  }
  fs::path snapshot_of(const fs::path& trace) const {
    return snapshot_path(dir.string(), snapshot_key(trace.string()));
  }
  std::string all_reasons() const {
    std::string out;
    for (const auto& r : reasons) out += r + "\n";
    return out;
  }
};

fs::path copy_trace(const TempDir& tmp) {
  fs::path trace = tmp.path / "trace.json.gz";
  fs::copy_file(golden::shared_dir() + "/conformance/h100_bert-small/trace.json.gz", trace);
  return trace;
}

// The names of the trace's kernels, in event order.
std::vector<std::string> kernel_names(const Trace& t) {
  std::vector<std::string> names;
  for (Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == Cat::Kernel) names.emplace_back(t.name(u));
  return names;
}

// Replaces `from` (once, in the string table) by `to` of the same length and
// fixes the payload's CRC-32 up the way the format computes it: what an
// attacker who can write the snapshot file does.
void poison(const fs::path& snapshot, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  std::string bytes = read_file(snapshot.string());
  // The string table entry: a u64 length, then the bytes.
  uint64_t length = from.size();
  std::string entry(reinterpret_cast<const char*>(&length), sizeof length);
  entry += from;
  size_t at = bytes.find(entry, kHeaderBytes);
  REQUIRE(at != std::string::npos);
  bytes.replace(at + sizeof length, from.size(), to);
  uint32_t crc =
      crc32_gzip_refl(0, reinterpret_cast<const unsigned char*>(bytes.data()) + kHeaderBytes,
                      bytes.size() - kHeaderBytes);
  std::memcpy(bytes.data() + kPayloadCrcAt, &crc, sizeof crc);
  write_file(snapshot, bytes);
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_SUITE("snapshot_trust") {
  TEST_CASE("an edited snapshot with a fixed-up CRC-32 is not trusted: the trace's names return") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    Cache cache{tmp.path / "cache", {}};
    Trace reference = cache.load(trace);
    const std::vector<std::string> real = kernel_names(reference);
    REQUIRE_FALSE(real.empty());
    const std::string victim = real.front();
    const std::string evil = ("EVIL" + std::string(victim.size(), '_')).substr(0, victim.size());
    fs::path snapshot = cache.snapshot_of(trace);
    REQUIRE(fs::exists(snapshot));
    poison(snapshot, victim, evil);

    Trace after = cache.load(trace);
    CAPTURE(cache.all_reasons());
    CHECK(kernel_names(after) == real);
    CHECK_FALSE(after.events.is_view());  // parsed from the trace, not the snapshot
    REQUIRE(cache.reasons.size() == 1);
    CHECK(cache.reasons[0].find("not trusted: its MAC does not match") != std::string::npos);
    // The bad snapshot was replaced: the next load reads it, silently, with real names.
    Trace again = cache.load(trace);
    CHECK(cache.reasons.empty());
    CHECK(again.events.is_view());
    CHECK(kernel_names(again) == real);
  }

  TEST_CASE("a snapshot copied from another cache (another key) is not trusted") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    Cache theirs{tmp.path / "theirs", {}}, mine{tmp.path / "mine", {}};
    Trace reference = theirs.load(trace);
    std::string problem;
    REQUIRE(open_snapshot_cache(mine.dir.string(), problem));  // my cache and key exist
    fs::copy_file(theirs.snapshot_of(trace), mine.snapshot_of(trace));
    CHECK(read_file((theirs.dir / "key").string()) != read_file((mine.dir / "key").string()));

    Trace t = mine.load(trace);
    CAPTURE(mine.all_reasons());
    CHECK_FALSE(t.events.is_view());
    CHECK(kernel_names(t) == kernel_names(reference));
    REQUIRE(mine.reasons.size() == 1);
    CHECK(mine.reasons[0].find("not trusted") != std::string::npos);
    mine.load(trace);
    CHECK(mine.reasons.empty());  // rewritten under my key
  }

  TEST_CASE("a world-writable cache directory is not used: one warning, loads go on") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    Cache cache{tmp.path / "cache", {}};
    fs::create_directory(cache.dir);
    fs::permissions(cache.dir, fs::perms::all);  // 0777, as a pre-created trap would be
    Trace first = cache.load(trace);
    CHECK(first.events.size() > 100);
    REQUIRE(cache.reasons.size() == 1);
    CHECK(cache.reasons[0] == "cache directory " + cache.dir.string() +
                                  " not used: it is writable by others (mode 0777); traces are "
                                  "loaded from their files");
    Trace second = cache.load(trace);
    CHECK(cache.reasons.empty());  // warned once per process
    CHECK_FALSE(second.events.is_view());
    CHECK_FALSE(fs::exists(cache.dir / "snapshots"));
    CHECK_FALSE(fs::exists(cache.dir / "key"));

    // Group-writable snapshots/ inside a private directory: refused as well.
    Cache group{tmp.path / "group", {}};
    fs::create_directories(group.dir / "snapshots");
    fs::permissions(group.dir, fs::perms::owner_all);
    fs::permissions(group.dir / "snapshots", fs::perms::owner_all | fs::perms::group_write);
    group.load(trace);
    REQUIRE(group.reasons.size() == 1);
    CHECK(
        group.reasons[0].find("its snapshots directory: it is writable by its group (mode 0720)") !=
        std::string::npos);
    CHECK_FALSE(fs::exists(group.dir / "key"));
  }

  TEST_CASE("a cache directory that is a symbolic link or another user's is not used") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    fs::create_directory(tmp.path / "real");
    fs::permissions(tmp.path / "real", fs::perms::owner_all);
    fs::create_directory_symlink(tmp.path / "real", tmp.path / "link");
    Cache link{tmp.path / "link", {}};
    link.load(trace);
    REQUIRE(link.reasons.size() == 1);
    CHECK(link.reasons[0].find("not used: it is a symbolic link") != std::string::npos);
    CHECK(fs::is_empty(tmp.path / "real"));

    if (::geteuid() != 0) return;  // only root can give a directory away
    Cache foreign{tmp.path / "foreign", {}};
    fs::create_directory(foreign.dir);
    fs::permissions(foreign.dir, fs::perms::owner_all);
    REQUIRE(::chown(foreign.dir.c_str(), 65534, 65534) == 0);
    foreign.load(trace);
    REQUIRE(foreign.reasons.size() == 1);
    CHECK(foreign.reasons[0].find("not used: it is owned by uid 65534, not by this user (uid 0)") !=
          std::string::npos);
    CHECK(fs::is_empty(foreign.dir));
  }

  TEST_CASE("a snapshot or key file another user could have written is refused") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    Cache cache{tmp.path / "cache", {}};
    const std::vector<std::string> real = kernel_names(cache.load(trace));
    fs::path snapshot = cache.snapshot_of(trace);
    fs::permissions(snapshot,
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write);
    Trace t = cache.load(trace);
    REQUIRE(cache.reasons.size() == 1);
    CHECK(cache.reasons[0].find("not trusted: writable by others (mode 0602)") !=
          std::string::npos);
    CHECK_FALSE(t.events.is_view());
    CHECK(mode_of(snapshot) == 0600);  // rewritten

    Cache loose_key{tmp.path / "loose", {}};
    std::string problem;
    REQUIRE(open_snapshot_cache(loose_key.dir.string(), problem));
    fs::permissions(loose_key.dir / "key",
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    Trace u = loose_key.load(trace);
    CHECK(kernel_names(u) == real);
    REQUIRE(loose_key.reasons.size() == 1);
    CHECK(loose_key.reasons[0].find("its key " + (loose_key.dir / "key").string() +
                                    " is readable by others (mode 0444)") != std::string::npos);
    CHECK(fs::is_empty(loose_key.dir / "snapshots"));
  }

  TEST_CASE("a fresh cache is the user's alone: directories 0700, snapshot and key 0600") {
    TempDir tmp;
    fs::path trace = copy_trace(tmp);
    mode_t old_umask = ::umask(0);  // the modes must not depend on a permissive umask
    Cache cache{tmp.path / "parent" / "cache", {}};
    cache.load(trace);
    ::umask(old_umask);
    CHECK(cache.reasons.empty());
    CHECK(mode_of(cache.dir) == 0700);
    CHECK(mode_of(cache.dir / "snapshots") == 0700);
    CHECK(mode_of(cache.dir / "key") == 0600);
    CHECK(fs::file_size(cache.dir / "key") == 32);
    CHECK(mode_of(cache.snapshot_of(trace)) == 0600);
    // The key stays: a second cache user in this process gets the same one.
    std::string key = read_file((cache.dir / "key").string());
    std::string problem;
    CHECK(open_snapshot_cache(cache.dir.string(), problem));
    CHECK(problem.empty());
    CHECK(read_file((cache.dir / "key").string()) == key);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
