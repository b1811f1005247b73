// Helpers of the security regression tests: scratch roots, resident memory.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_loader_support.h"

namespace jarvis::testing {

// A fresh directory under the system temp dir, removed at the end.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "jarvis-sec-XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (!made) throw std::runtime_error("mkdtemp failed");
    path = std::filesystem::canonical(made);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The example trace of the repository (24 KB, H100), copied to `to`.
inline void copy_example_trace(const std::filesystem::path& to) {
  std::filesystem::create_directories(to.parent_path());
  std::filesystem::copy_file(std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz", to,
                             std::filesystem::copy_options::overwrite_existing);
}

// Resident set size of this process in bytes (VmRSS).
inline uint64_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return 0;
}

// A path quoted for the shell.
inline std::string q(const std::filesystem::path& p) {
  return jarvis::loader_test::shell_quote(p);
}

// `jarvis ARGS` (the binary under test): its exit code and its stderr.
struct CliRun {
  int exit_code = -1;
  std::string err;
};

inline CliRun jarvis_cli(const std::string& args) {
  ScratchDir tmp;
  const std::string cmd =
      std::string(JARVIS_BINARY) + " " + args + " >/dev/null 2>" + q(tmp / "err") + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = read_text(tmp / "err");
  return r;
}

}  // namespace jarvis::testing
