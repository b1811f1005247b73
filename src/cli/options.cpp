#include "cli/options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "base/error.h"
#include "base/process_stats.h"
#include "cli/commands.h"
#include "engine/engine.h"

namespace jarvis::cli {

ProgressMode ProgressFlags::resolve() const {
  if (quiet || mode == "none") return ProgressMode::None;
  if (mode == "plain") return ProgressMode::Plain;
  if (mode == "bar") return ProgressMode::Bar;
  return ::isatty(STDERR_FILENO) ? ProgressMode::Bar : ProgressMode::None;
}

void add_progress_flags(CLI::App* cmd, ProgressFlags& flags) {
  cmd->add_option("--progress", flags.mode,
                  "progress on stderr: auto (a live line on a terminal, else nothing), bar, "
                  "plain (one line per step, for logs), none")
      ->check(CLI::IsMember({"auto", "bar", "plain", "none"}))
      ->default_str("auto");
  cmd->add_flag("-q,--quiet", flags.quiet, "no progress on stderr (= --progress none)");
}

Progress::Progress(ProgressMode mode, std::string command)
    : mode_(mode), command_(std::move(command)), start_(std::chrono::steady_clock::now()) {
  phase_start_ = start_;
  if (mode_ == ProgressMode::Bar) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  finish();
}

void Progress::tick() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    draw();
    wake_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

// Called with mutex_ held.
void Progress::draw() {
  if (mode_ != ProgressMode::Bar || phase_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  double phase_s = std::chrono::duration<double>(now - phase_start_).count();
  std::string line = fmt::format("{}: {} {:.1f} s", command_, phase_, phase_s);
  if (total_ > 0) {
    constexpr size_t kWidth = 24;
    size_t filled = done_ * kWidth / total_;
    line += fmt::format(" [{}{}] {}/{} {}", std::string(filled, '#'),
                        std::string(kWidth - filled, '.'), done_, total_, unit_);
    if (done_ > 0 && done_ < total_)
      line += fmt::format(", ETA {:.0f} s", phase_s / static_cast<double>(done_) *
                                                static_cast<double>(total_ - done_));
  }
  std::fprintf(stderr, "\r%-78s", line.c_str());
  std::fflush(stderr);
}

// Called with mutex_ held.
void Progress::end_phase() {
  if (phase_.empty()) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - phase_start_).count();
  if (mode_ == ProgressMode::Plain) {
    std::string counted = total_ ? fmt::format(" ({}/{} {})", done_, total_, unit_) : "";
    std::fprintf(stderr, "%s: %s%s %.2f s (CPU %.2f s)\n", command_.c_str(), phase_.c_str(),
                 counted.c_str(), s, process_cpu_s() - phase_cpu_start_);
  } else if (mode_ == ProgressMode::Bar) {
    draw();
  }
  phase_.clear();
}

void Progress::phase(const std::string& name) {
  if (mode_ == ProgressMode::None) return;
  std::lock_guard lock(mutex_);
  end_phase();
  phase_ = name;
  phase_start_ = std::chrono::steady_clock::now();
  if (mode_ == ProgressMode::Plain) phase_cpu_start_ = process_cpu_s();
  done_ = total_ = 0;
  draw();
}

void Progress::count(size_t done, size_t total, const std::string& unit) {
  if (mode_ == ProgressMode::None) return;
  std::lock_guard lock(mutex_);
  done_ = done;
  total_ = total;
  unit_ = unit;
  if (mode_ == ProgressMode::Bar) draw();
}

void Progress::finish() {
  {
    std::lock_guard lock(mutex_);
    if (stop_) return;
    end_phase();
    stop_ = true;
    if (mode_ == ProgressMode::Bar) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fprintf(stderr, "\r%-78s\r", fmt::format("{}: done in {:.1f} s", command_, s).c_str());
      std::fputc('\n', stderr);
    }
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void check_output_parent(const std::string& file, bool mkdirs, const std::string& flag) {
  namespace fs = std::filesystem;
  if (file.empty()) return;
  fs::path parent = fs::path(file).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return;
  if (fs::exists(parent, ec))
    usage_error(fmt::format("{} {}: {} is not a directory", flag, file, parent.string()));
  if (!mkdirs)
    usage_error(fmt::format("{} {}: directory {} does not exist (create it, or pass --mkdirs)",
                            flag, file, parent.string()));
  fs::create_directories(parent);
}

CLI::Validator output_directory() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty() || !std::filesystem::exists(path, ec) ||
            std::filesystem::is_directory(path, ec))
          return {};
        return fmt::format("'{}' is a file, not a directory: give a directory to write into", path);
      },
      "");
}

void check_xlsx_output(const std::string& file, bool mkdirs) {
  check_output_parent(file, mkdirs, "--xlsx");
  if (!file.empty()) engine::load_xlsx_writer();
}

namespace {

bool is_trace_name(const std::string& name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

// "rank2" before "rank10": digit runs compare by value.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string_view da(a.data() + i, ei - i), db(b.data() + j, ej - j);
      da.remove_prefix(std::min(da.find_first_not_of('0'), da.size()));
      db.remove_prefix(std::min(db.find_first_not_of('0'), db.size()));
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> traces_in(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && is_trace_name(entry.path().filename().string()))
      found.push_back(entry.path().string());
  std::sort(found.begin(), found.end(), natural_less);
  return found;
}

}  // namespace

std::vector<std::string> expand_rank_traces(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      out.push_back(arg);
      continue;
    }
    std::vector<std::string> found = traces_in(arg);
    if (found.empty()) {
      std::vector<std::string> subdirs;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_directory()) subdirs.push_back(entry.path().string());
      std::sort(subdirs.begin(), subdirs.end(), natural_less);
      for (const std::string& sub : subdirs)
        for (std::string& t : traces_in(sub)) found.push_back(std::move(t));
    }
    if (found.empty())
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: a directory with no trace in it or in its subdirectories "
                              "(*.json, *.json.gz)",
                              arg));
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

void usage_error(const std::string& message) {
  throw UsageError(message);
}

std::string count_text(size_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  if (plural.empty()) return fmt::format("{} {}s", n, noun);
  return fmt::format("{} {}", n, plural);
}

}  // namespace jarvis::cli
