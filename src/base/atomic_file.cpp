#include "base/atomic_file.h"
#include "base/output_confinement.h"
#include "base/output_guard.h"

#include <fcntl.h>
#include <limits.h>
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

#include <fmt/format.h>

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

std::mutex& output_roots_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<fs::path>& output_roots_store() {
  static std::vector<fs::path> roots;
  return roots;
}

std::function<void(const fs::path&)>& output_write_hook() {
  static std::function<void(const fs::path&)> hook;
  return hook;
}

void make_parent_dirs(const fs::path& target) {
  std::error_code ec;
  fs::create_directories(parent_of(target), ec);
  if (ec) throw std::runtime_error(target.string() + ": cannot create directory: " + ec.message());
}

// The target's directory held open for a write under output roots
// (base/output_confinement.h): the temp file is created and renamed through
// `via` (/proc/self/fd/N), the directory whose place was checked.
struct HeldDir {
  int fd = -1;
  std::string via;
  HeldDir() = default;
  HeldDir(const HeldDir&) = delete;
  HeldDir& operator=(const HeldDir&) = delete;
  ~HeldDir() {
    if (fd >= 0) ::close(fd);
  }
};

bool inside_output_root(const fs::path& dir, const std::vector<fs::path>& roots) {
  for (const fs::path& root : roots) {
    const fs::path rel = dir.lexically_relative(root);
    if (!rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
}

// Opens the target's directory and checks where the directory it holds is;
// nullptr when no output roots are set.
std::unique_ptr<HeldDir> hold_target_dir(const fs::path& target,
                                         const std::vector<fs::path>& roots) {
  if (output_write_hook()) output_write_hook()(target);
  if (roots.empty()) return nullptr;
  auto held = std::make_unique<HeldDir>();
  held->fd = ::open(parent_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (held->fd < 0) fail(target, "cannot open its directory", errno);
  held->via = "/proc/self/fd/" + std::to_string(held->fd);
  char real[PATH_MAX];
  const ssize_t n = ::readlink(held->via.c_str(), real, sizeof real - 1);
  if (n <= 0) fail(target, "cannot tell where its directory is", errno);
  const fs::path dir(std::string(real, static_cast<size_t>(n)));
  if (!inside_output_root(dir, roots))
    throw OutputRefused(fmt::format(
        "{}: its directory is {}, outside the directories this server may write (a directory "
        "of the path was replaced by a symlink after the path was checked?); nothing was "
        "written",
        target.string(), dir.string()));
  return held;
}

// The target's name through its held directory, or the target.
std::string held_name(const fs::path& target, const HeldDir* held) {
  return held ? held->via + "/" + target.filename().string() : target.string();
}

// mkstemp in the target's directory (through `held` when given); returns the
// open descriptor. The directory exists (make_parent_dirs).
int make_temp(const fs::path& target, std::string& temp, const HeldDir* held = nullptr) {
  const fs::path dir = held ? fs::path(held->via) : parent_of(target);
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
  // Under output roots, each directory is held open from before its first
  // temp to after its fsync (declared before `pending`: it outlives the temps).
  const std::vector<fs::path> roots = guarded ? output_roots() : std::vector<fs::path>{};
  std::map<fs::path, std::unique_ptr<HeldDir>> held;
  std::vector<const HeldDir*> held_of(files.size(), nullptr);
  PendingTemps pending;
  auto& temps = pending.temps();
  temps.reserve(files.size());
  for (size_t k = 0; k < files.size(); ++k) {
    const auto& [target, data] = files[k];
    make_parent_dirs(target);
    if (guarded) {
      auto& slot = held[parent_of(target)];
      if (!slot) slot = hold_target_dir(target, roots);
      held_of[k] = slot.get();
    }
    PendingTemps::Temp temp;
    temp.fd = make_temp(target, temp.path, held_of[k]);
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
    if (::rename(temps[k].path.c_str(), held_name(files[k].target, held_of[k]).c_str()) != 0)
      fail(files[k].target, "cannot rename into place", errno);
    temps[k].placed = true;
    dirs.insert(parent_of(files[k].target));
  }
  if (durable)
    for (const fs::path& dir : dirs) {
      auto it = held.find(dir);
      fsync_path(it != held.end() && it->second ? fs::path(it->second->via) : dir,
                 O_RDONLY | O_DIRECTORY);
    }
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
  make_parent_dirs(target_);
  std::unique_ptr<HeldDir> held;
  if (kind_ == Kind::Output) held = hold_target_dir(target_, output_roots());
  int fd = make_temp(target_, temp_, held.get());
  ::fchmod(fd, 0644);
  ::close(fd);
  if (held) {
    held_target_ = held_name(target_, held.get());
    dir_fd_ = held->fd;
    held->fd = -1;  // kept open by this AtomicFile until it is destroyed
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(temp_.c_str());
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void AtomicFile::commit() {
  // A cache file is validated by its readers: no fsync (see write_set).
  if (kind_ == Kind::Output) fsync_path(temp_, O_RDONLY);
  // The target may have appeared while the temp was written.
  if (kind_ == Kind::Output) check_output_target(target_);
  if (dir_fd_ >= 0) {
    if (::rename(temp_.c_str(), held_target_.c_str()) != 0)
      fail(target_, "cannot rename into place", errno);
    if (::fsync(dir_fd_) != 0 && errno != EINVAL) fail(target_, "fsync failed", errno);
  } else if (kind_ == Kind::Output) {
    rename_into_place(temp_, target_);
  } else {
    rename_over(temp_, target_);
  }
  committed_ = true;
  if (kind_ == Kind::Output) record_written(target_);
}

void set_output_roots(std::vector<fs::path> roots) {
  for (fs::path& root : roots) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(fs::absolute(root), ec);
    root = ec ? fs::absolute(root).lexically_normal() : canonical;
  }
  std::lock_guard<std::mutex> lock(output_roots_mutex());
  output_roots_store() = std::move(roots);
}

void set_output_write_hook(std::function<void(const fs::path&)> hook) {
  output_write_hook() = std::move(hook);
}

std::vector<fs::path> output_roots() {
  std::lock_guard<std::mutex> lock(output_roots_mutex());
  return output_roots_store();
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
