// Output files that appear whole or not at all, safe when several threads,
// HTTP sessions or processes write the same path at once.
//
// Each writer gets its own temp file in the target's directory (mkstemp, so
// two writers never share one), fsyncs it, renames it over the target and
// fsyncs the directory, so a crash leaves the old file or the new one, never a
// torn one. Writers of a set of files (a report directory) hold the
// directory's lock so that concurrent writers of the same set take turns.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jarvis {

// Writes data to path atomically; creates missing parent directories.
// Throws std::runtime_error naming the path on failure (the temp is removed).
// Every writer here follows the overwrite rule of base/output_guard.h: the
// target is checked first (OutputRefused) and recorded as jarvis's after.
void write_file_atomic(const std::string& path, std::string_view data);

// The same for jarvis's caches (snapshots, per-run sweep results): files no
// user owns, neither checked nor recorded, and not fsynced (their readers
// validate them and rebuild a torn one; atomic_file.cpp says why).
void write_cache_file_atomic(const std::string& path, std::string_view data);

// Writes each (path, data) as write_file_atomic does (temp, fsync, rename),
// in phases: every temp written, all fsynced at once (concurrent fsyncs share
// the file system's journal commits), renamed in order, then one fsync per
// distinct directory. A failure while writing or syncing leaves every target
// untouched; a failed rename leaves the files before it placed and the rest
// untouched. No temp file is left behind either way.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

// A unique temp file beside `target` for writers that need a path of their
// own (libxlsxwriter): write temp_path(), then commit(). Destroyed without
// commit(), the temp file is removed.
class AtomicFile {
 public:
  // A cache file (a snapshot) is neither checked nor recorded (see
  // write_cache_file_atomic).
  enum class Kind { Output, Cache };
  explicit AtomicFile(const std::filesystem::path& target, Kind kind = Kind::Output);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temp_path() const { return temp_; }
  void commit();  // fsync, rename over the target, fsync the directory (a cache: rename only)

 private:
  std::filesystem::path target_;
  std::string temp_;
  Kind kind_;
  bool committed_ = false;
  // Under output roots (base/output_confinement.h): the target's directory,
  // held open, and the target's name through it ("/proc/self/fd/N/name").
  int dir_fd_ = -1;
  std::string held_target_;
};

// The process-wide lock of one output directory (by its absolute, normalised
// path). Recursive, so a set writer holding it can call write_file_atomic.
std::unique_lock<std::recursive_mutex> lock_output_dir(const std::filesystem::path& dir);

}  // namespace jarvis
