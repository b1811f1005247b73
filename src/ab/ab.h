// `jarvis ab`: a change measured on the user's machine beside jarvis's
// prediction for it (docs/ab.md). Each arm runs in fresh processes: at least
// two timed without the profiler (clean windows of steps after a warm-up),
// then one profiled run that writes the arm's trace; clean and profiled runs
// never share a process (the profiler leaves a process slower after a
// session). The result is written as a truth.json in the format of
// ../shared/ab_pairs/truth.json, which also loads back as a result
// (load_truth), and as a table: the measured saving per step with its noise
// band, the saving jarvis predicts from arm A's trace (the finding that
// stands for the change, change_match.h, and its what-if) and their ratio.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ab/shim_run.h"

namespace jarvis::ab {

struct Arm {
  std::string key;      // truth.json's key: "A_<label>" / "B_<label>"
  std::string command;  // "" when loaded from a truth.json
  // Clean processes: each one's median window (truth.json step_ms_clean_runs)
  // and its windows.
  std::vector<double> clean_runs_ms;
  std::vector<std::vector<double>> clean_windows_ms;
  double step_ms_clean = 0;  // the mean of clean_runs_ms
  // The profiled process's steps under the profiler (step_ms_median/min/max).
  std::optional<double> step_ms_median, step_ms_min, step_ms_max;
  size_t steps_per_rep = 0, reps = 0;
  std::string trace;       // as truth.json names it (relative to its folder)
  std::string trace_path;  // resolved ("" when none)
  double shim_us_per_step = 0;
};

// jarvis's prediction for the change, from arm A's trace.
struct Prediction {
  bool available = false;
  std::string finding;  // the rule (or "host_untraced_python" on a CPU trace)
  std::string title;
  double saving_ms_per_step = 0;
  // How the saving was sized: the critical path's what-if (the finding's
  // step saving), the finding's recoverable time, or the host-only model.
  std::string method;
  nlohmann::json what_if = nullptr;  // the what_if arguments that stand for it
  std::optional<double> estimated_unprofiled_step_ms, recorded_step_ms;
  std::string calibration;  // the profiler-cost model used
  std::string note;         // why there is none, or what to read into it
  // Why this finding: "--finding" (named by the user), "arm B" (its work is
  // gone from arm B's trace, change_match.h), "top" (no finding's work is
  // gone in B, or B has no trace: the top finding), "host-only" (a CPU
  // trace); chosen_why says it with the figures.
  std::string chosen_by, chosen_why;
  // Every finding whose work is gone in arm B (share >= kGoneShare): rule,
  // a_ms_per_step, b_ms_per_step, gone_share.
  nlohmann::json gone_in_b = nlohmann::json::array();
};

struct Pair {
  std::string name;     // the experiment ("s_layout")
  std::string changed;  // what arm B changes, in words
  Arm a, b;
  Prediction prediction;
  // A - B per step, and its band over every pair of clean processes (the
  // lowest and highest A_i - B_j).
  double measured_saving_ms() const { return a.step_ms_clean - b.step_ms_clean; }
  double band_low_ms() const;
  double band_high_ms() const;
  // The saving lies outside the noise: the band does not hold 0.
  bool above_noise() const { return band_low_ms() > 0 || band_high_ms() < 0; }
  // "B faster", "B slower" (the measured saving negative, above the noise),
  // or "noise" (the band holds 0).
  std::string verdict() const;
  // The ratio measured / predicted where it means something: a prediction
  // other than 0 and arm B not slower (a negative saving over a positive
  // prediction is no ratio: B slower is said instead).
  std::optional<double> ratio() const;
};

// Loads a truth.json: every experiment with an A_ and a B_ arm that have
// clean timings; the others are listed in `skipped` with the reason.
// Throws AbError naming the file when it is not a truth.json.
std::vector<Pair> load_truth(const std::string& path, std::vector<std::string>* skipped);

struct AbOptions {
  std::string a, b;      // the arms' commands (b may equal a with other env)
  EnvList env_a, env_b;  // per-arm environment
  std::string out;       // output folder
  std::string name = "ab", label_a = "baseline", label_b = "changed", changed;
  int runs = 2;  // clean processes per arm (at least 2)
  ShimSettings shim;
  std::string finding;  // predict with this rule's finding instead of the top one
};

// Runs both arms (clean processes A, B, A, B, ... then one profiled process
// each) and returns the pair; `progress` hears each process's start.
Pair run_ab(const AbOptions& options, const std::function<void(const std::string&)>& progress);

// Fills pair.prediction from arm A's trace. The finding: `rule` when given
// ("top": the top one by ranking_saving_us); else the one whose work is gone
// from arm B's trace (change_match.h); else the top one. Never throws for a
// trace it cannot use: the prediction says why in its note.
void predict(Pair& pair, const std::string& rule = "");

// truth.json of one or more pairs (the format of ../shared/ab_pairs).
nlohmann::json truth_json(const std::vector<Pair>& pairs, const std::string& device,
                          const std::string& torch);

// The table: one row per pair, as JSON rows and as Markdown.
nlohmann::json table_json(const std::vector<Pair>& pairs);
std::string table_markdown(const std::vector<Pair>& pairs);

}  // namespace jarvis::ab
