// Pieces shared by the subcommands: progress on stderr, output-path rules and
// common CLI11 option helpers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

namespace jarvis::cli {

// --progress auto|bar|plain|none (and --quiet = none). `auto` draws a live
// line when stderr is a terminal and stays silent otherwise, so logs and
// pipes never fill with carriage returns.
enum class ProgressMode { Auto, Bar, Plain, None };

struct ProgressFlags {
  std::string mode = "auto";
  bool quiet = false;
  ProgressMode resolve() const;
};
void add_progress_flags(CLI::App* cmd, ProgressFlags& flags);

// Named phases of a long command ("load", "report", "prepare") and, for
// sweeps, a done/total bar. Bar mode redraws one stderr line every 0.2 s with
// the elapsed time, so a silent 8 s step still shows it is alive; plain mode
// prints one line per finished phase: its wall time and the CPU time the
// process spent in it (all threads), which shows how well a phase uses the
// cores.
class Progress {
 public:
  Progress(ProgressMode mode, std::string command);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void phase(const std::string& name);
  void count(size_t done, size_t total, const std::string& unit);
  void finish();

 private:
  void end_phase();
  void draw();
  void tick();

  ProgressMode mode_;
  std::string command_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  std::chrono::steady_clock::time_point phase_start_, start_;
  double phase_cpu_start_ = 0;  // process CPU seconds when the phase began
  size_t done_ = 0, total_ = 0;
  std::string unit_;
  bool stop_ = false;
  std::thread ticker_;
};

// An output FILE whose directory does not exist is a usage error unless
// `mkdirs` (--mkdirs) asks for it: a typo must not create a directory tree.
// An empty `file` (the flag was not given) is nothing to check.
void check_output_parent(const std::string& file, bool mkdirs, const std::string& flag);

// The check of an option that names an output directory (--out DIR,
// --csv-dir, --svg-dir): an existing path that is not a directory (a trace
// given by mistake) is a usage error naming it, before any work.
CLI::Validator output_directory();

// An --xlsx FILE: check_output_parent, then the workbook module is loaded, so
// that a missing module fails before the work rather than after it.
void check_xlsx_output(const std::string& file, bool mkdirs);

// Where a command takes one trace per rank: each argument that is a directory
// stands for the traces in it (*.json, *.json.gz; in its subdirectories when
// it holds none itself, the rank<N>/ layout), in natural name order (rank2
// before rank10). A directory with no trace is an input error naming it.
std::vector<std::string> expand_rank_traces(const std::vector<std::string>& args);

// "1 row", "2 rows": a count with its noun in the right number (`plural`
// defaults to the noun + "s").
std::string count_text(size_t n, std::string_view noun, std::string_view plural = {});

// The canonical error text for "this flag needs that one".
[[noreturn]] void usage_error(const std::string& message);

}  // namespace jarvis::cli
