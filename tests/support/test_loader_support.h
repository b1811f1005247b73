// Helpers shared by the loader tests: gzip in memory, temp dirs, running the
// jarvis binary.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jarvis::loader_test {

namespace fs = std::filesystem;

// data compressed by zlib; window_bits as deflateInit2 takes them (16 +
// MAX_WBITS: one gzip member; -MAX_WBITS: raw deflate, no header or trailer).
inline std::string deflate_text(std::string_view data, int level, int window_bits) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(zs.total_out);
  return out;
}

// One gzip member holding data.
inline std::string gzip_member(std::string_view data, int level = 6) {
  return deflate_text(data, level, 16 + MAX_WBITS);
}

inline std::string gunzip_file(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error("cannot open " + path);
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(gz);
  if (n < 0) throw std::runtime_error("gunzip failed: " + path);
  return text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A trace snapshot's bytes with its MAC nonce and tag (header bytes 32-63)
// zeroed: they differ on every write by design (a fresh nonce, and each cache
// its own key); the rest is the stored trace, equal for equal stores.
inline std::string snapshot_store_bytes(std::string bytes) {
  constexpr size_t kMacFieldsAt = 32, kMacFieldsEnd = 64;
  if (bytes.size() >= kMacFieldsEnd)
    std::fill(bytes.begin() + kMacFieldsAt, bytes.begin() + kMacFieldsEnd, '\0');
  return bytes;
}

// A fresh directory removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("jarvis_loader_test." + std::to_string(getpid()) + "." + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, its stdout and stderr read together (exit code
// -1 when no shell could be started).
inline CliResult run_shell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs the built jarvis binary with args (already shell-quoted where needed).
inline CliResult run_jarvis(const std::string& args) {
  return run_shell(std::string(JARVIS_BINARY) + " " + args);
}

inline std::string shell_quote(const std::string& s) {
  return "'" + s + "'";
}

// Sets environment variables for one test and restores them after.
struct EnvGuard {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvGuard() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
};

// A trace without ProfilerStep#N: the gzipped trace `src` with those
// annotations removed, written as plain JSON to dir/name.json. Throws with the
// command when python3 fails.
// A copy of a trace without the events whose names start with one of
// `prefixes` (default: the ProfilerStep#N annotations).
inline std::string strip_profiler_steps(const std::string& src, const std::string& dir,
                                        const std::string& name,
                                        const std::vector<std::string>& prefixes = {
                                            "ProfilerStep#"}) {
  const std::string out = dir + "/" + name + ".json";
  std::string cmd =
      "python3 -c \"import gzip, json, sys; d = json.load(gzip.open(sys.argv[1])); "
      "d['traceEvents'] = [e for e in d['traceEvents'] if not "
      "str(e.get('name', '')).startswith(tuple(sys.argv[3:]))]; json.dump(d, open(sys.argv[2], "
      "'w'))\" " +
      shell_quote(src) + " " + shell_quote(out);
  for (const std::string& p : prefixes) {
    cmd += ' ';
    cmd += shell_quote(p);
  }
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  return out;
}

}  // namespace jarvis::loader_test
