#include "base/atomic_file.h"
#include "base/output_guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

namespace jarvis {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what, int err) {
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(err));
}

void fsync_path(const fs::path& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open for fsync", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); the rename stands.
  if (rc != 0 && err != EINVAL) fail(path, "fsync failed", err);
}

fs::path parent_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

// Makes the renames into target's directory durable.
void fsync_parent(const fs::path& target) {
  fsync_path(parent_of(target), O_RDONLY | O_DIRECTORY);
}

// mkstemp in the target's directory; returns the open descriptor.
int make_temp(const fs::path& target, std::string& temp) {
  fs::path dir = parent_of(target);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(target.string() + ": cannot create directory: " + ec.message());
  // Built with append: GCC 12 warns falsely (-Wrestrict) on "." + name + ...
  std::string name(".");
  name.append(target.filename().string()).append(".tmp.XXXXXX");
  std::string pattern = (dir / name).string();
  int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) fail(target, "cannot create a temp file", errno);
  temp = pattern;
  return fd;
}

void write_all(int fd, std::string_view data, const fs::path& target) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(target, "write failed", errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void rename_over(const std::string& temp, const fs::path& target) {
  if (::rename(temp.c_str(), target.c_str()) != 0) fail(target, "cannot rename into place", errno);
}

void rename_into_place(const std::string& temp, const fs::path& target) {
  rename_over(temp, target);
  fsync_parent(target);
}

// Temp files written but not yet renamed into place: closed and removed
// unless released.
class PendingTemps {
 public:
  ~PendingTemps() {
    for (Temp& t : temps_) {
      if (t.fd >= 0) ::close(t.fd);
      if (!t.placed) ::unlink(t.path.c_str());
    }
  }
  struct Temp {
    std::string path;
    int fd = -1;
    int sync_errno = 0;
    bool placed = false;
  };
  std::vector<Temp>& temps() { return temps_; }

 private:
  std::vector<Temp> temps_;
};

// fsync of every open temp at once. On a journaling file system (ext4, xfs)
// concurrent fsyncs share journal commits, where one after another each
// waits for a commit of its own: a report's 15 CSVs took 15 commits in a row.
void fsync_all(std::vector<PendingTemps::Temp>& temps) {
  constexpr size_t kMaxThreads = 8;
  size_t threads = std::min(kMaxThreads, temps.size());
  auto sync_slice = [&temps, threads](size_t first) {
    for (size_t k = first; k < temps.size(); k += threads)
      if (::fsync(temps[k].fd) != 0) temps[k].sync_errno = errno;
  };
  std::vector<std::thread> pool;
  try {
    for (size_t k = 1; k < threads; ++k) pool.emplace_back(sync_slice, k);
  } catch (const std::system_error&) {
    // No thread to spare: the slices left are synced on this thread below.
  }
  for (size_t k = pool.size() + 1; k < threads; ++k) sync_slice(k);
  if (threads > 0) sync_slice(0);
  for (std::thread& t : pool) t.join();
}

struct FileData {
  fs::path target;
  std::string_view data;
};

// Each file as write_file_atomic promises (temp, fsync, rename), in phases:
// every temp written, all fsynced at once, then renamed in order; the renames
// are made durable by one fsync of each directory after the last of them. A
// failure before the renames leaves every target untouched; a failed rename
// leaves the earlier files placed and no temp behind.
//
// Cache files (guarded false) are renamed into place without the fsyncs:
// every reader of a cache validates what it reads (a snapshot's checksum and
// MAC, a run entry's JSON and version) and rebuilds a torn or empty entry, so
// a crash costs one rebuild, while two fsyncs per file were most of a sweep's
// per-run cost (0.7 ms a run on ext4, issue 62).
void write_set(const std::vector<FileData>& files, bool guarded) {
  const bool durable = guarded;
  // Every target is checked before the first byte is written, so a refused
  // one leaves the whole set unwritten.
  if (guarded)
    for (const auto& file : files) check_output_target(file.target);
  PendingTemps pending;
  auto& temps = pending.temps();
  temps.reserve(files.size());
  for (const auto& [target, data] : files) {
    PendingTemps::Temp temp;
    temp.fd = make_temp(target, temp.path);
    temps.push_back(std::move(temp));  // capacity reserved: cannot throw
    write_all(temps.back().fd, data, target);
    if (::fchmod(temps.back().fd, 0644) != 0) fail(target, "chmod failed", errno);
  }
  if (durable) fsync_all(temps);
  for (size_t k = 0; k < temps.size(); ++k) {
    if (temps[k].sync_errno != 0) fail(files[k].target, "fsync failed", temps[k].sync_errno);
    int fd = temps[k].fd;
    temps[k].fd = -1;
    if (::close(fd) != 0) fail(files[k].target, "close failed", errno);
  }
  std::set<fs::path> dirs;
  for (size_t k = 0; k < temps.size(); ++k) {
    rename_over(temps[k].path, files[k].target);
    temps[k].placed = true;
    dirs.insert(parent_of(files[k].target));
  }
  if (durable)
    for (const fs::path& dir : dirs) fsync_path(dir, O_RDONLY | O_DIRECTORY);
  if (guarded)
    for (const auto& file : files) record_written(file.target);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view data) {
  write_set({{fs::path(path), data}}, /*guarded=*/true);
}

void write_cache_file_atomic(const std::string& path, std::string_view data) {
  write_set({{fs::path(path), data}}, /*guarded=*/false);
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<FileData> views;
  views.reserve(files.size());
  for (const auto& [path, data] : files) views.push_back({fs::path(path), data});
  write_set(views, /*guarded=*/true);
}

AtomicFile::AtomicFile(const fs::path& target, Kind kind) : target_(target), kind_(kind) {
  if (kind_ == Kind::Output) check_output_target(target_);
  int fd = make_temp(target_, temp_);
  ::fchmod(fd, 0644);
  ::close(fd);
}

AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::commit() {
  // A cache file is validated by its readers: no fsync (see write_set).
  if (kind_ == Kind::Output) fsync_path(temp_, O_RDONLY);
  // The target may have appeared while the temp was written.
  if (kind_ == Kind::Output) check_output_target(target_);
  if (kind_ == Kind::Output)
    rename_into_place(temp_, target_);
  else
    rename_over(temp_, target_);
  committed_ = true;
  if (kind_ == Kind::Output) record_written(target_);
}

std::unique_lock<std::recursive_mutex> lock_output_dir(const fs::path& dir) {
  static std::mutex registry_mutex;
  // Never erased: one mutex per distinct output directory of the process.
  static std::map<std::string, std::unique_ptr<std::recursive_mutex>> registry;
  std::error_code ec;
  fs::path key = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) key = fs::absolute(dir).lexically_normal();
  std::recursive_mutex* mutex;
  {
    std::lock_guard lock(registry_mutex);
    auto& slot = registry[key.string()];
    if (!slot) slot = std::make_unique<std::recursive_mutex>();
    mutex = slot.get();
  }
  return std::unique_lock<std::recursive_mutex>(*mutex);
}

}  // namespace jarvis
