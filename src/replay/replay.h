// Event replay: turn chosen ops of a trace into a standalone reproducer
// package for a kernel team (spec compare-and-replay.md Part 2).
//
// The package holds
//   replay_ir.json  one entry per unique op + argument signature: the four
//                   recorded arg lists (Input Dims / Strides / type /
//                   Concrete Inputs), a typed decoding of each argument, the
//                   occurrence count and the GPU kernel time measured in the
//                   trace, and why an op cannot be replayed when that is
//                   already clear from the recorded args;
//   replay.py       a runner that needs only PyTorch: it matches each entry to
//                   an operator schema of the installed PyTorch with
//                   TraceLens's rules (§2.3), rebuilds tensors with the
//                   recorded shapes / strides / dtypes, times the op and
//                   prints trace time next to replay time;
//   README.md       what is inside, how to run it, how to read the results;
//   replay_package.zip  the three files above.
//
// Design decision (spec §2.7): schema matching happens in the runner, against
// the registry of the PyTorch that will execute the op, exactly where
// TraceLens does it. The C++ side has no schema table, so it never guesses
// overloads for a PyTorch version it cannot see; it only rejects what no
// PyTorch could rebuild (tensor lists, unknown dtypes, missing shapes).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "trace/trace.h"

namespace jarvis {
class CallTree;
}

namespace jarvis::replay {

// Bad selection or arguments (unknown UID, op absent from the trace, ...);
// what() says what to pass instead.
class ReplayError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// Which ops go into the package. Exactly one mode is used.
struct Selection {
  enum class Mode { Uids, OpName, Category };
  Mode mode = Mode::Uids;
  std::vector<Uid> uids;              // Mode::Uids: cpu_op UIDs
  std::string op_name;                // Mode::OpName: exact op name, e.g. "aten::mm"
  std::optional<PyValue> input_dims;  // Mode::OpName: keep only this Input Dims
  std::string category;               // Mode::Category: op category, e.g. "GEMM"
  size_t top_n = 10;                  // Mode::Category: rows to keep

  static Selection by_uids(std::vector<Uid> uids);
  static Selection by_op(std::string name, std::optional<PyValue> dims = std::nullopt);
  static Selection by_category(std::string category, size_t top_n);
  std::string describe() const;  // one line, for the README and the IR
};

// Parses an Input Dims filter written as JSON or as a Python tuple repr
// ("[[8944, 1024], [1024, 2816]]" or "((8944, 1024), (1024, 2816))").
// Throws ReplayError.
PyValue parse_dims(const std::string& text);

// GPU time statistics over the occurrences of an op that launched GPU work
// (busy time of each occurrence's subtree GPU events, µs).
struct GpuTimeStats {
  size_t n = 0;  // occurrences with GPU work
  double mean = 0, median = 0, min = 0, max = 0, sum = 0;
};

// One unique op + argument signature of the package.
struct ReplayOp {
  size_t id = 0;  // position in the package
  std::string name;
  std::string category;  // TraceLens op category ("" when unknown)
  PyValue input_dims, input_type, input_strides, concrete_inputs;
  std::vector<Uid> uids;                 // every cpu_op of the trace with this signature, UID order
  std::optional<GpuTimeStats> gpu_time;  // nullopt: no GPU work recorded
  std::vector<std::string> kernels;      // kernel names of the first occurrence, ts order
  std::string not_replayable;            // why no PyTorch can rebuild it ("" = try it)
  std::string tracelens_rejects;         // why TraceLens's EventReplayer would refuse it
};

struct ReplayPlan {
  std::string selection;  // Selection::describe()
  std::vector<ReplayOp> ops;
};

// Chooses the ops (ordering: the given UIDs' order; by total GPU time for the
// other modes) and gathers their signatures and trace timings.
// Throws ReplayError for a selection that matches nothing.
ReplayPlan plan_replay(const Trace& trace, const CallTree& tree, const Selection& selection);

// The replay IR document written as replay_ir.json.
nlohmann::ordered_json replay_ir_json(const Trace& trace, const ReplayPlan& plan);

// The runner script and the README text of a package.
const std::string& runner_script();
std::string readme_text(const Trace& trace, const ReplayPlan& plan);

struct PackageFiles {
  std::string dir;
  std::string ir;      // <dir>/replay_ir.json
  std::string runner;  // <dir>/replay.py
  std::string readme;  // <dir>/README.md
  std::string zip;     // <dir>/replay_package.zip
};

// Writes the package into out_dir (created if needed); every file is written
// atomically. Throws std::runtime_error on I/O failure.
PackageFiles write_replay_package(const Trace& trace, const ReplayPlan& plan,
                                  const std::string& out_dir);

// plan_replay + write_replay_package.
struct ReplayResult {
  ReplayPlan plan;
  PackageFiles files;
};
ReplayResult make_replay(const Trace& trace, const CallTree& tree, const Selection& selection,
                         const std::string& out_dir);

// A summary of a result for agents and the CLI (ops, counts, times, files,
// what cannot be replayed).
nlohmann::ordered_json replay_summary_json(const ReplayResult& result);

}  // namespace jarvis::replay
