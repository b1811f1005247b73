#include "base/output_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "base/text_hash.h"

namespace jarvis {

namespace fs = std::filesystem;

namespace {

constexpr size_t kLedgerEntries = 20000;
constexpr const char* kLedgerName = "written-files";
// The markers jarvis keeps in its output directories: its own names.
constexpr std::string_view kOwnMarkers[] = {".jarvis-report", ".jarvis-output"};

struct Identity {
  uint64_t dev = 0, ino = 0;
  int64_t size = 0, mtime_ns = 0;
  auto key() const { return std::tie(dev, ino, size, mtime_ns); }
  bool operator<(const Identity& o) const { return key() < o.key(); }
};

bool identity_of(const fs::path& path, Identity& out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  out.dev = static_cast<uint64_t>(st.st_dev);
  out.ino = static_cast<uint64_t>(st.st_ino);
  out.size = static_cast<int64_t>(st.st_size);
  out.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

std::atomic<OverwriteRule> g_rule{OverwriteRule::Any};

class InputFiles {
 public:
  void add(const fs::path& path) {
    Identity id;
    if (!identity_of(path, id)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (files_.size() < kMaxInputs) files_.insert(id);
  }
  bool has(const fs::path& path) {
    Identity id;
    if (!identity_of(path, id)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return files_.count(id) > 0;
  }

 private:
  // A long-lived server remembers this many inputs, so it cannot grow
  // without end; past the bound a new input is not remembered.
  static constexpr size_t kMaxInputs = 1u << 20;
  std::mutex mutex_;
  // The whole identity, not only (device, inode): a long-lived process
  // outlives files it read, and the kernel reuses their inodes.
  std::set<Identity> files_;
};

InputFiles& inputs() {
  static InputFiles files;
  return files;
}

// The ledger file, read when it changed since this process last knew it
// (another process appended), appended line by line under an exclusive lock
// and rewritten with the newest entries once it holds twice the bound.
class Ledger {
 public:
  bool has(const fs::path& path) {
    Identity id;
    if (!identity_of(path, id)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (own_.count(id)) return true;
    refresh();
    return known_.count(id) > 0;
  }

  void add(const fs::path& path) {
    Identity id;
    if (!identity_of(path, id)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    own_.insert(id);
    append(id, fs::absolute(path).lexically_normal().string());
  }

 private:
  fs::path file() const {
    std::string dir = jarvis_cache_dir();
    return dir.empty() ? fs::path() : fs::path(dir) / kLedgerName;
  }

  static std::string line_of(const Identity& id, const std::string& path) {
    std::ostringstream s;
    s << id.dev << ' ' << id.ino << ' ' << id.size << ' ' << id.mtime_ns << ' ' << path << '\n';
    return s.str();
  }

  // A line's identity (its four numbers, each followed by a space); false
  // for a line that does not start with them.
  static bool parse_line(std::string_view line, Identity& id) {
    const char* at = line.data();
    const char* end = line.data() + line.size();
    auto field = [&](auto& value) {
      auto [next, ec] = std::from_chars(at, end, value);
      if (ec != std::errc() || next == end || *next != ' ') return false;
      at = next + 1;
      return true;
    };
    return field(id.dev) && field(id.ino) && field(id.size) && field(id.mtime_ns);
  }

  void refresh() {
    fs::path f = file();
    std::error_code ec;
    uintmax_t size = f.empty() ? 0 : fs::file_size(f, ec);
    if (ec) size = 0;  // no ledger (yet): nothing in it
    if (f == read_file_ && size == read_size_) return;
    known_.clear();
    read_file_ = f;
    read_size_ = 0;
    if (size == 0) return;
    std::ifstream in(f, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    // Whole lines only: one being appended now is read with the rest of it
    // once the file's size has changed again.
    size_t done = 0;
    for (size_t eol; (eol = text.find('\n', done)) != std::string::npos; done = eol + 1) {
      Identity id;
      if (parse_line(std::string_view(text).substr(done, eol - done), id)) known_.insert(id);
    }
    read_size_ = done;
  }

  void append(const Identity& id, const std::string& path) {
    fs::path f = file();
    if (f.empty()) return;
    std::error_code ec;
    fs::create_directories(f.parent_path(), ec);
    ::chmod(f.parent_path().c_str(), 0700);
    int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return;  // no writable cache: files written now count as the user's later
    if (::flock(fd, LOCK_EX) == 0) {
      struct stat st;
      // Whether this process knows every line so far (none appended by
      // another since it read them): then it knows the file with its own
      // line too, without reading it again. (Each file checked read the whole
      // ledger again after the last one written: critical-path at x256, its
      // 513 files written over its own, read a 24,000-line ledger 513 times,
      // 1.83 -> 1.26 s.)
      const bool up_to_date = ::fstat(fd, &st) == 0 && f == read_file_ &&
                              static_cast<uintmax_t>(st.st_size) == read_size_;
      std::string line = line_of(id, path);
      ssize_t n = ::write(fd, line.data(), line.size());
      if (up_to_date && n == static_cast<ssize_t>(line.size())) {
        known_.insert(id);
        read_size_ += line.size();
      }
      if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) > kLedgerEntries * 2 * 64) {
        compact(f);
        read_file_.clear();  // rewritten: read again when next asked
      }
      ::flock(fd, LOCK_UN);
    }
    ::close(fd);
  }

  // Keeps the newest kLedgerEntries lines (called under the file's lock).
  static void compact(const fs::path& f) {
    std::ifstream in(f);
    std::deque<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
      if (lines.size() > kLedgerEntries) lines.pop_front();
    }
    if (lines.size() < kLedgerEntries) return;  // long lines, few entries: leave it
    fs::path tmp = f;
    tmp += ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      for (const auto& line : lines) out << line << '\n';
      if (!out) return;
    }
    ::chmod(tmp.c_str(), 0600);
    std::error_code ec;
    fs::rename(tmp, f, ec);
    if (ec) fs::remove(tmp, ec);
  }

  std::mutex mutex_;
  std::set<Identity> own_;    // written by this process
  std::set<Identity> known_;  // read from the ledger file (and this process's lines after)
  fs::path read_file_;        // the ledger known_ holds, and the bytes of it known
  uintmax_t read_size_ = 0;
};

Ledger& ledger() {
  static Ledger l;
  return l;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

std::string hash_text(const fs::path& file, bool& ok) {
  std::ifstream in(file, std::ios::binary);
  ok = static_cast<bool>(in);
  if (!ok) return "";
  std::stringstream content;
  content << in.rdbuf();
  return fmt::format("{:016x}", text_hash(content.str()));
}

std::string named(const fs::path& target, const std::string& flag) {
  return flag.empty() ? fmt::format("'{}'", target.string())
                      : fmt::format("{} '{}'", flag, target.string());
}

}  // namespace

void set_overwrite_rule(OverwriteRule rule) {
  g_rule = rule;
}

OverwriteRule overwrite_rule() {
  return g_rule;
}

void note_input_file(const fs::path& path) {
  inputs().add(path);
}

bool is_input_file(const fs::path& path) {
  return inputs().has(path);
}

bool written_by_jarvis(const fs::path& path) {
  return ledger().has(path);
}

void record_written(const fs::path& path) {
  ledger().add(path);
}

bool is_trace_file_name(const fs::path& path) {
  std::string name = path.filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // A rocprofv3 `.db` is found by its first bytes (looks_like_trace_content):
  // the name alone is too common to refuse a user's forced write.
  for (std::string_view suffix : {".json.gz", ".trace.json", ".gz", ".xplane.pb", ".sqlite",
                                  ".sqlite3", ".nsys-rep", ".qdrep", ".pftrace", ".perfetto-trace"})
    if (ends_with(name, suffix)) return true;
  return false;
}

bool looks_like_trace_content(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.starts_with(std::string_view("SQLite format 3\0", 16))) return true;
  return head.find("\"traceEvents\"") != std::string::npos ||
         head.find("\"rocprofiler-sdk-tool\"") != std::string::npos ||
         head.find("\"deviceProperties\"") != std::string::npos;
}

std::string report_marker_line(const fs::path& file) {
  bool ok = false;
  std::string hash = hash_text(file, ok);
  return ok ? file.filename().string() + "\t" + hash : "";
}

std::string_view report_marker_name(std::string_view line) {
  return line.substr(0, line.find('\t'));
}

bool listed_unchanged_in_marker(const fs::path& file) {
  std::ifstream marker(file.parent_path() / ".jarvis-report");
  if (!marker) return false;
  const std::string name = file.filename().string();
  for (std::string line; std::getline(marker, line);)
    if (report_marker_name(line) == name && line.size() > name.size())
      return line == report_marker_line(file);
  return false;
}

void check_output_target(const fs::path& target, const std::string& flag) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(target, ec);
  if (ec || !fs::exists(st)) return;
  if (fs::is_directory(st))
    throw OutputRefused(named(target, flag) + " is a directory; give a file path");
  // A FIFO, a device or a socket: writing there is never what a report
  // means, and --force does not change that. (A symlink is replaced, not
  // written through: the atomic write renames over it.)
  if (!fs::is_regular_file(st) && !fs::is_symlink(st))
    throw OutputRefused(named(target, flag) +
                        " is not a regular file (a FIFO, a device or a socket); jarvis writes "
                        "only regular files: choose another path");
  if (is_input_file(target))
    throw OutputRefused(named(target, flag) +
                        " is an input of this command (the same file); jarvis never writes over "
                        "its input: choose another path");
  std::string name = target.filename().string();
  for (std::string_view marker : kOwnMarkers)
    if (name == marker) return;
  bool ours = written_by_jarvis(target) || listed_unchanged_in_marker(target);
  if (ours) return;
  if (is_trace_file_name(target))
    throw OutputRefused(named(target, flag) +
                        " is a trace (by its name) that jarvis did not write; jarvis never writes "
                        "over a trace: choose another path");
  if (fs::is_regular_file(st) && looks_like_trace_content(target))
    throw OutputRefused(named(target, flag) +
                        " is a trace or a database (by its first bytes) that jarvis did not "
                        "write; jarvis never writes over one: choose another path");
  if (overwrite_rule() == OverwriteRule::OnlyOurs)
    throw OutputRefused(named(target, flag) +
                        " already exists and is not as jarvis wrote it (another program's file, or "
                        "changed since); choose another path, or "
                        "pass --force to replace it");
}

std::string jarvis_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("JARVIS_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return (fs::path(d) / "jarvis").string();
  if (std::string d = env("HOME"); !d.empty()) return (fs::path(d) / ".cache" / "jarvis").string();
  return "";
}

}  // namespace jarvis
