// The one rule for every file jarvis writes, from every command and tool
// (docs/security.md "Writes"):
//
//   * never over an input: a file this process read as data (a trace, a
//     workbook, a CSV) is refused as a target, compared by device, inode,
//     size and modification time, so another name for the same file (a hard
//     link, a path through a symlink) is caught too, and a new file that
//     reuses a deleted input's inode is not;
//   * never over a trace: an existing file named like one (.json.gz, .gz,
//     .trace.json, .xplane.pb, .sqlite, ...) or whose first bytes say it
//     is one (or an SQLite database) is refused unless jarvis wrote it;
//   * never anything but a regular file (a FIFO, a device, a socket);
//   * over any other existing file only when jarvis wrote it and nobody
//     changed it since (the write ledger below, or the report marker of its
//     directory listing it with a hash of its current content), or when the
//     caller forces it (the
//     CLI's --force; the MCP server decides per call in its PathPolicy and
//     runs with the rule `Any` here).
//
// The write ledger records each file jarvis wrote by its identity (device,
// inode, size, modification time) in `<cache dir>/written-files` (the same
// directory as the trace snapshots: JARVIS_CACHE_DIR, else
// $XDG_CACHE_HOME/jarvis, else ~/.cache/jarvis), so a later run, of the CLI
// or of the server, may replace it; an edit, a copy over it or a new file
// under the same name changes the identity and makes it the user's again.
// The ledger keeps the newest 20,000 entries.
//
// write_file_atomic, write_files_atomic and AtomicFile (base/atomic_file.h)
// call check_output_target before they write and record_written after; the
// caches (snapshots, per-run sweep results) use the *_cache variants, which
// do neither.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/error.h"

namespace jarvis {

// A target the rule refuses: exit code 2 in the CLI (choose another path or
// pass --force), an isError result naming the path in the server.
class OutputRefused : public UsageError {
 public:
  using UsageError::UsageError;
};

enum class OverwriteRule {
  OnlyOurs,  // the CLI without --force
  Any,       // the CLI with --force; the server (its PathPolicy has decided)
};

// Process-wide; the CLI sets it once before a command runs.
void set_overwrite_rule(OverwriteRule rule);
OverwriteRule overwrite_rule();

// Records a file read as input data (after it opened); ignores missing files.
void note_input_file(const std::filesystem::path& path);
// Whether `path` is the same unchanged file as an input read so far.
bool is_input_file(const std::filesystem::path& path);

// Whether the ledger holds `path` with its current identity.
bool written_by_jarvis(const std::filesystem::path& path);
// Adds `path` (as it is now, after the write) to the ledger.
void record_written(const std::filesystem::path& path);

// A file name profiler traces carry, in any format jarvis reads or a
// profiler writes (.json.gz, .gz, .trace.json, .xplane.pb, .sqlite,
// .nsys-rep, .qdrep, .pftrace, ...).
bool is_trace_file_name(const std::filesystem::path& path);
// A file whose first 4 KB say it is a trace or a database: an SQLite file
// (Nsight Systems and rocprofv3 exports), a Kineto trace ("traceEvents",
// "deviceProperties") or rocprofv3 results ("rocprofiler-sdk-tool"),
// whatever its name.
bool looks_like_trace_content(const std::filesystem::path& path);

// A report directory's marker (`.jarvis-report`, report/report.h) lists
// the files jarvis wrote there, one a line: the name, a tab and the XXH3 of
// the content written ("GEMM.csv\t0123456789abcdef"), so a directory moved,
// copied or written with another cache still says which files are jarvis's
// as written. A line of the file as it is now ("" when it cannot be read):
std::string report_marker_line(const std::filesystem::path& file);
// The name a marker line lists.
std::string_view report_marker_name(std::string_view line);
// Whether the marker of the file's directory lists it with the hash of its
// current content (an edited file, or a line without a hash, does not count).
bool listed_unchanged_in_marker(const std::filesystem::path& file);

// Throws OutputRefused when the rule forbids writing `target` (see the top
// of this file); a missing target is always fine. `flag` names where the
// path came from in the message ("--xlsx"), may be empty.
void check_output_target(const std::filesystem::path& target, const std::string& flag = "");

// The ledger's directory as the environment names it ("" when none); also
// the snapshot cache's default.
std::string jarvis_cache_dir();

}  // namespace jarvis
