// jarvis ab --a CMD --b CMD --out DIR [--runs N] [--warmup N] [--window N]
//           [--windows K] [--step-fn mod:fn] [--env-a K=V ...] [--env-b K=V ...]
// jarvis ab --truth truth.json [--out DIR]
//
// A change measured on this machine beside jarvis's prediction for it
// (docs/ab.md). Runs the user's commands: a CLI command only, never an MCP
// tool (docs/security.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct AbArgs {
  engine::AbOptions options;
  std::vector<std::string> env_a, env_b, only;
  std::string profiler = "record_shapes";
  std::string truth, json, calibration;
  bool quiet = false;
};

std::vector<std::string> profiler_flags(const std::string& text) {
  std::vector<std::string> flags;
  if (text == "plain" || text.empty()) return flags;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = text.find(',', from);
    std::string flag =
        text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (flag != "record_shapes" && flag != "with_stack" && flag != "profile_memory")
      throw UsageError(
          fmt::format("--profiler {}: expected plain or a comma list of record_shapes, with_stack, "
                      "profile_memory",
                      text));
    flags.push_back(flag);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return flags;
}

void write_table(const std::vector<engine::AbPair>& pairs, const std::string& dir,
                 const std::string& json) {
  const std::string md = engine::table_markdown(pairs);
  std::fputs(md.c_str(), stdout);
  for (const auto& p : pairs) {
    const auto& pr = p.prediction;
    if (p.verdict() == "B slower")
      fmt::print(
          "{}: B slower: A {:.3f} ms, B {:.3f} ms a step without the profiler (B {:.3f} ms slower; "
          "every pair of clean processes {:.3f} to {:.3f} ms slower): no saving to compare, no "
          "ratio\n",
          p.name, p.a.step_ms_clean, p.b.step_ms_clean, -p.measured_saving_ms(), -p.band_high_ms(),
          -p.band_low_ms());
    if (pr.available)
      fmt::print("{}: predicted from {}, chosen by {}: {} ({}){}{}\n", p.name, pr.finding,
                 pr.chosen_by, pr.chosen_why, pr.method,
                 pr.calibration.empty() ? "" : "; profiler costs: " + pr.calibration,
                 pr.note.empty() ? "" : "; " + pr.note);
    else
      fmt::print("{}: no prediction: {}\n", p.name, pr.note);
  }
  const std::string table = engine::table_json(pairs).dump(1) + "\n";
  if (!dir.empty()) {
    write_file_atomic((std::filesystem::path(dir) / "ab_table.md").string(), md);
    write_file_atomic((std::filesystem::path(dir) / "ab_table.json").string(), table);
  }
  if (!json.empty()) write_file_atomic(json, table);
}

int run_ab_command(AbArgs& a) {
  if (!a.calibration.empty()) engine::force_calibration(a.calibration);
  if (!a.truth.empty()) {
    if (!a.options.a.empty() || !a.options.b.empty())
      throw UsageError("--truth loads recorded pairs: it takes no --a / --b");
    std::vector<std::string> skipped;
    auto pairs = engine::load_truth(a.truth, &skipped);
    if (!a.only.empty())
      std::erase_if(pairs, [&](const engine::AbPair& p) {
        return std::find(a.only.begin(), a.only.end(), p.name) == a.only.end();
      });
    if (pairs.empty()) throw UsageError(fmt::format("{}: no pair left to show", a.truth));
    for (auto& p : pairs) {
      if (!a.quiet)
        std::fprintf(stderr, "jarvis ab: predicting %s from %s\n", p.name.c_str(),
                     p.a.trace.c_str());
      engine::predict(p, a.options.finding);
    }
    if (!a.options.out.empty()) std::filesystem::create_directories(a.options.out);
    write_table(pairs, a.options.out, a.json);
    for (const auto& s : skipped) fmt::print("skipped {}\n", s);
    return 0;
  }
  if (a.options.a.empty()) throw UsageError("--a CMD is required (or --truth FILE)");
  if (a.options.out.empty()) throw UsageError("--out DIR is required with --a");
  if (a.options.b.empty()) {
    if (a.env_b.empty() && a.env_a.empty())
      throw UsageError("--b CMD, or --env-a / --env-b for one command in two environments");
    a.options.b = a.options.a;
  }
  for (const auto& e : a.env_a)
    a.options.env_a.push_back(engine::parse_env_assignment(e, "--env-a"));
  for (const auto& e : a.env_b)
    a.options.env_b.push_back(engine::parse_env_assignment(e, "--env-b"));
  a.options.shim.profiler = profiler_flags(a.profiler);
  auto pair = engine::run_ab(a.options, [&](const std::string& what) {
    if (!a.quiet) std::fprintf(stderr, "jarvis ab: %s\n", what.c_str());
  });
  engine::predict(pair, a.options.finding);
  std::string device, torch;
  {
    // The host and torch the runs reported (the profiled run's result).
    std::ifstream in(std::filesystem::path(a.options.out) / "A" / "profiled.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("host") && j["host"].is_object()) {
      device = j["host"].value("device", "");
      torch = j["host"].value("torch", "");
    }
  }
  const std::vector<engine::AbPair> pairs{pair};
  write_file_atomic((std::filesystem::path(a.options.out) / "truth.json").string(),
                    engine::truth_json(pairs, device, torch).dump(1) + "\n");
  write_table(pairs, a.options.out, a.json);
  fmt::print("wrote {}/truth.json, ab_table.md, ab_table.json, A/trace.json.gz, B/trace.json.gz\n",
             a.options.out);
  return 0;
}

}  // namespace

Runner add_ab(CLI::App& app) {
  auto a = std::make_shared<AbArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ab", "run two variants of a job and report the measured saving beside jarvis's prediction");
  auto& o = a->options;
  cmd->add_option("--a", o.a, "arm A's command (the baseline), run by /bin/sh -c");
  cmd->add_option("--b", o.b, "arm B's command (the change); default: arm A's, with --env-b");
  cmd->add_option("--out", o.out, "output folder: A/, B/, truth.json, ab_table.md/.json")
      ->check(output_directory());
  cmd->add_option("--env-a", a->env_a, "NAME=VALUE for arm A's processes (repeatable)");
  cmd->add_option("--env-b", a->env_b, "NAME=VALUE for arm B's processes (repeatable)");
  cmd->add_option("--runs", o.runs, "clean (un-profiled) processes per arm, at least 2")
      ->default_str("2");
  cmd->add_option("--warmup", o.shim.warmup, "steps before timing or profiling")->default_str("3");
  cmd->add_option("--window", o.shim.window, "steps per timed window")->default_str("10");
  cmd->add_option("--windows", o.shim.windows, "timed windows per clean process")->default_str("3");
  cmd->add_option("--profile-steps", o.shim.profile_steps, "profiled steps")->default_str("3");
  cmd->add_option("--profiler", a->profiler,
                  "the profiled run's settings: plain, or a comma list of record_shapes, "
                  "with_stack, profile_memory")
      ->default_str("record_shapes");
  cmd->add_option("--step-fn", o.shim.step_fn,
                  "module:function (or module:Class.method) that is one step, for loops "
                  "without optimizer.step() or torch.profiler steps");
  cmd->add_option("--timeout", o.shim.timeout_s, "seconds one process may run")
      ->default_str("1800");
  cmd->add_flag("--keep-running", o.shim.keep_running,
                "let each process run to its end after the measurement (default: it exits)");
  cmd->add_option("--name", o.name, "the experiment's name in truth.json")->default_str("ab");
  cmd->add_option("--label-a", o.label_a, "arm A's label (truth.json key A_<label>)")
      ->default_str("baseline");
  cmd->add_option("--label-b", o.label_b, "arm B's label (truth.json key B_<label>)")
      ->default_str("changed");
  cmd->add_option("--changed", o.changed, "what arm B changes, in words (truth.json)");
  cmd->add_option(
      "--finding", o.finding,
      "predict with this rule's finding (e.g. host_sync; `top`: the top one) instead of "
      "the one whose ops and kernels are gone in arm B's trace");
  cmd->add_option("--truth", a->truth,
                  "load recorded pairs (a truth.json, e.g. ../shared/ab_pairs/truth.json) "
                  "instead of running: the same table, from their clean timings and arm A traces");
  cmd->add_option("--only", a->only, "with --truth: only these experiments (repeatable)");
  cmd->add_option("--json", a->json, "also write the table's JSON to FILE");
  cmd->add_option("--calibration", a->calibration,
                  "profiler-cost calibration FILE for the prediction (default: this host's, "
                  "when the trace names it; `jarvis calibrate`)");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  cmd->footer(
      "Each arm: --runs processes timed without the profiler (windows of --window steps after\n"
      "--warmup; a step ends at optimizer.step(), a torch.profiler step or --step-fn), then one\n"
      "profiled process that writes DIR/<arm>/trace.json.gz. A step timer (a Python shim on\n"
      "PYTHONPATH, DIR/.shim) does the timing; the script is not edited. Runs user commands: a\n"
      "CLI command only, never an MCP tool. docs/ab.md.");
  return [a] { return run_ab_command(*a); };
}

}  // namespace jarvis::cli
