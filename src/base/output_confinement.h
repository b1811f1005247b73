// Where the MCP server may write (issue 74 point 9: writers under symlink
// races). The server checks an output path against its roots once, by
// resolving every symlink (mcp/path_policy.h); a directory of that path
// replaced by a symlink to elsewhere between that check and the write would
// send the write out of the roots. With output roots set, every output write
// (base/atomic_file.h: write_file_atomic, write_files_atomic, AtomicFile;
// not the caches) opens the target's directory first, checks where the
// directory it holds really is (its /proc/self/fd link), and creates its temp
// file and renames it into place through that held directory: the directory
// checked is the directory written, whatever is swapped in after.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

namespace jarvis {

// Process-wide; `jarvis serve` sets its roots and the cache directory (the
// agents' gate baselines) once before serving. Empty (the CLI, and the
// default): outputs go where their paths lead.
void set_output_roots(std::vector<std::filesystem::path> roots);
std::vector<std::filesystem::path> output_roots();

// For tests: called with each output target after it was checked and
// before its directory is opened (where a race would swap a directory for a
// symlink). Empty by default.
void set_output_write_hook(std::function<void(const std::filesystem::path&)> hook);

}  // namespace jarvis
