// PathPolicy: which files tools may read and write (docs/security.md).
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/output_guard.h"
#include "engine/engine.h"
#include "mcp/tool.h"
#include "pycompat/text.h"

namespace jarvis::mcp {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = ".jarvis-output";
constexpr size_t kMaxScannedEntries = 20000;
constexpr uintmax_t kMaxArchFileBytes = 1u << 20;

bool is_inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

bool inside_any(const fs::path& path, const std::vector<fs::path>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const fs::path& root) { return is_inside(path, root); });
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

// Names profiler traces carry; tools never write over one.
bool is_trace_name(const fs::path& path) {
  return is_trace_file_name(path);
}

struct Resolved {
  fs::path path;
  bool exists = false;     // the whole path exists
  bool last_link = false;  // the last component was a symlink
  bool broken = false;     // ".." after a missing component, or a dangling symlink
};

// Resolves like path lookup in the kernel: every existing component is
// followed (symlinks included) before the next is applied, so
// "<root>/missing/../link" cannot use a lexical ".." to skip the link.
Resolved resolve_components(const fs::path& absolute) {
  Resolved r;
  r.path = absolute.root_path();
  bool missing = false;
  for (const auto& part : absolute.relative_path()) {
    r.last_link = false;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (missing) r.broken = true;  // the kernel fails here with ENOENT
      r.path = r.path.parent_path();
      continue;
    }
    fs::path next = r.path / part;
    std::error_code ec;
    fs::file_status st = missing ? fs::file_status{} : fs::symlink_status(next, ec);
    if (missing || ec || st.type() == fs::file_type::not_found) {
      missing = true;
      r.path = next;
      continue;
    }
    if (fs::is_symlink(st)) {
      r.last_link = true;
      fs::path target = fs::canonical(next, ec);
      if (ec) {  // dangling: writing would create the file wherever it points
        r.broken = true;
        missing = true;
        r.path = next;
        continue;
      }
      r.path = target;
    } else {
      r.path = next;
    }
  }
  r.exists = !missing;
  return r;
}

std::string roots_text(const std::vector<fs::path>& roots) {
  std::vector<std::string> names;
  for (const auto& r : roots) names.push_back(r.string());
  return fmt::format("{}", fmt::join(names, ", "));
}

// A marker file in `dir` or one of its parents up to a root: a directory a
// jarvis tool created for its outputs.
bool in_output_dir(fs::path dir, const std::vector<fs::path>& roots) {
  std::error_code ec;
  for (int depth = 0; depth < 64 && inside_any(dir, roots); ++depth) {
    if (fs::is_regular_file(dir / kMarker, ec)) return true;
    if (!dir.has_relative_path()) break;
    dir = dir.parent_path();
  }
  return false;
}

// Refuses a directory holding symlinks (they could lead a later write out of
// the roots) or traces (an output must never replace one). Returns how many
// files in it `ours` does not claim.
size_t check_tree(const fs::path& dir, const std::string& given,
                  const std::function<bool(const fs::path&)>& ours) {
  std::error_code ec;
  size_t seen = 0, foreign = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (++seen > kMaxScannedEntries)
      throw ToolError(
          fmt::format("output directory '{}' holds more than {} entries; use a new directory",
                      given, kMaxScannedEntries));
    if (it->is_symlink(ec))
      throw ToolError(
          fmt::format("output directory '{}' contains a symlink ({}); refusing to write through it",
                      given, it->path().string()));
    if (!it->is_regular_file(ec)) continue;
    if (is_trace_name(it->path()))
      throw ToolError(fmt::format(
          "output directory '{}' contains a trace ({}); write outputs to a directory of their own",
          given, it->path().string()));
    if (it->path().filename() != kMarker && !ours(it->path())) ++foreign;
  }
  if (ec)
    throw ToolError(fmt::format("cannot read output directory '{}': {}", given, ec.message()));
  return foreign;
}

}  // namespace

PathPolicy::PathPolicy(const std::vector<std::string>& roots,
                       const std::vector<std::string>& arch_dirs) {
  auto add = [](const std::string& dir, const char* flag, std::vector<fs::path>& out,
                std::vector<fs::path>* given) {
    std::error_code ec;
    fs::path canonical = fs::canonical(fs::absolute(dir), ec);
    if (ec || !fs::is_directory(canonical))
      throw std::runtime_error(fmt::format("{} {}: not an existing directory", flag, dir));
    out.push_back(canonical);
    if (given) given->push_back(fs::absolute(dir).lexically_normal());
  };
  for (const auto& root : roots) add(root, "--root", roots_, &given_);
  for (const auto& dir : arch_dirs) add(dir, "--arch-dir", arch_dirs_, nullptr);
}

PathPolicy& PathPolicy::operator=(const PathPolicy& o) {
  if (this != &o) {
    roots_ = o.roots_;
    given_ = o.given_;
    arch_dirs_ = o.arch_dirs_;
  }
  return *this;
}

fs::path PathPolicy::resolve(const std::string& path, bool must_exist, bool for_write) const {
  if (roots_.empty()) throw ToolError("no directory is allowed: start the server with --root DIR");
  if (path.empty()) throw ToolError("empty path: give a file path under " + roots_[0].string());
  if (path.find('\0') != std::string::npos) throw ToolError("path contains a NUL character");
  fs::path given(path);
  fs::path absolute = (given.is_absolute() ? given : roots_[0] / given).lexically_normal();
  auto outside = [&] {
    return ToolError(fmt::format(
        "path '{}' is outside the allowed directories ({}); use a path inside one of them, or "
        "restart the server with --root for the directory you need",
        path, roots_text(roots_)));
  };
  // Spelled outside every root: refuse without touching the file system.
  if (!inside_any(absolute, roots_) && !inside_any(absolute, given_)) throw outside();
  Resolved r = resolve_components(absolute);
  if (!inside_any(r.path, roots_)) throw outside();
  if (r.broken)
    throw ToolError(
        fmt::format("'{}' does not exist (a missing directory or a dangling symlink)", path),
        ErrorKind::NotFound);
  if (must_exist && !r.exists)
    throw ToolError(fmt::format("'{}' does not exist (resolved to {})", path, r.path.string()),
                    ErrorKind::NotFound);
  if (for_write) {
    if (r.last_link)
      throw ToolError(fmt::format("refusing to write through the symlink '{}'", path));
    std::error_code ec;
    fs::path parent = r.path.parent_path();
    if (!fs::is_directory(parent, ec))
      throw ToolError(
          fmt::format("cannot write '{}': directory {} does not exist", path, parent.string()));
  }
  return r.path;
}

fs::path PathPolicy::output_file(const std::string& path, std::string_view extension,
                                 bool overwrite) const {
  fs::path resolved = resolve(path, /*must_exist=*/false, /*for_write=*/false);
  std::string name = resolved.filename().string();
  if (!ends_with(name, extension) || is_trace_name(resolved))
    throw ToolError(fmt::format("'{}' must be a file name ending in {}", path, extension));
  fs::path spelled = fs::path(path).is_absolute() ? fs::path(path) : roots_[0] / path;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(spelled.lexically_normal(), ec)))
    throw ToolError(fmt::format("refusing to write through the symlink '{}'", path));
  fs::file_status st = fs::symlink_status(resolved, ec);
  if (fs::exists(st)) {
    if (!fs::is_regular_file(st))
      throw ToolError(fmt::format("'{}' exists and is not a regular file", path));
    if (!overwrite && !written_by_us(resolved) && !in_output_dir(resolved.parent_path(), roots_))
      throw ToolError(fmt::format(
          "'{}' already exists and was not written by jarvis; choose a new file name, or pass "
          "overwrite: true to replace it",
          path));
  }
  return resolved;
}

fs::path PathPolicy::output_dir(const std::string& path, bool overwrite) const {
  fs::path dir = resolve(path, /*must_exist=*/false, /*for_write=*/true);
  // Claimed by a call of this server (it may still be writing, marker not
  // yet there): its files are ours. Concurrent sessions share outputs so.
  auto claim = [&] {
    std::lock_guard<std::mutex> lock(written_mutex_);
    claimed_.insert(dir.lexically_normal().string());
    return dir;
  };
  bool claimed;
  {
    std::lock_guard<std::mutex> lock(written_mutex_);
    claimed = claimed_.count(dir.lexically_normal().string()) > 0;
  }
  std::error_code ec;
  if (!fs::exists(dir, ec)) return claim();  // the tool creates it
  if (!fs::is_directory(dir, ec))
    throw ToolError(fmt::format("output directory '{}' exists and is not a directory", path));
  size_t foreign = check_tree(dir, path, [this](const fs::path& p) { return written_by_us(p); });
  if (foreign > 0 && !overwrite && !claimed && !in_output_dir(dir, roots_))
    throw ToolError(fmt::format(
        "output directory '{}' holds {} files jarvis did not write (and no {} marker); use a "
        "new directory, or pass overwrite: true to write into it",
        path, foreign, kMarker));
  return claim();
}

void PathPolicy::mark_output_dir(const fs::path& dir) const {
  std::error_code ec;
  fs::path marker = dir / kMarker;
  if (fs::is_directory(dir, ec) && !fs::exists(marker, ec))
    std::ofstream(marker) << "Written by jarvis tools; they may replace files here.\n";
}

fs::path PathPolicy::trace_path(const std::string& given) const {
  fs::path path = resolve(given, /*must_exist=*/true, /*for_write=*/false);
  std::string name = path.filename().string();
  std::error_code ec;
  bool csv_dir = fs::is_directory(path, ec);  // a rocprofv3 CSV set; the loader checks
  // Nsight Systems: the .sqlite export is read; a .nsys-rep / .qdrep report
  // passes here so the loader answers with the `nsys export` command.
  if (!csv_dir && !ends_with(name, ".json") && !ends_with(name, ".json.gz") &&
      !ends_with(name, ".gz") && !ends_with(name, ".csv") && !ends_with(name, ".sqlite") &&
      !ends_with(name, ".nsys-rep") && !ends_with(name, ".qdrep") && !ends_with(name, ".xplane.pb"))
    throw ToolError(fmt::format(
        "'{}' is not a trace file name: load_trace reads .json / .json.gz Kineto traces, "
        "rocprofv3 results (.json, a CSV directory or its *_kernel_trace.csv), Nsight "
        "Systems SQLite exports (.sqlite) and JAX XPlane protobufs (.xplane.pb)",
        given));
  if (written_by_us(path))
    throw ToolError(fmt::format("'{}' was written by a jarvis tool and is not a trace", given));
  return path;
}

void PathPolicy::note_written(const fs::path& path) const {
  std::lock_guard<std::mutex> lock(written_mutex_);
  written_.insert(path.lexically_normal().string());
}

PathPolicy::WrittenState PathPolicy::written_state() const {
  std::lock_guard<std::mutex> lock(written_mutex_);
  return {written_, claimed_};
}

void PathPolicy::merge_written_state(const WrittenState& added) const {
  std::lock_guard<std::mutex> lock(written_mutex_);
  written_.insert(added.written.begin(), added.written.end());
  claimed_.insert(added.claimed.begin(), added.claimed.end());
}

bool PathPolicy::written_by_us(const fs::path& path) const {
  {
    std::lock_guard<std::mutex> lock(written_mutex_);
    if (written_.count(path.lexically_normal().string()) > 0) return true;
  }
  // Written by an earlier jarvis process (the CLI, a server before a
  // restart) and unchanged since: the ledger of base/output_guard.h.
  return written_by_jarvis(path);
}

std::string PathPolicy::resolve_arch(const std::string& arch) const {
  if (arch.empty() || arch == "none") return arch;
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<std::string> names = engine::bundled_gpu_arch_names();
  for (const auto& name : names)
    if (upper(name) == upper(arch)) return name;
  std::string known = fmt::format("{}", fmt::join(names, ", "));
  if (!ends_with(arch, ".json"))
    throw ToolError(fmt::format(
        "unknown GPU arch '{}': use a bundled arch ({}), 'none', or an arch .json file under the "
        "allowed directories",
        arch, known));
  fs::path file;
  try {
    file = resolve(arch, /*must_exist=*/true, /*for_write=*/false);
  } catch (const ToolError&) {
    // Not under a root: an --arch-dir may hold it (same lexical-first rule).
    fs::path absolute = fs::path(arch).lexically_normal();
    std::error_code ec;
    fs::path canonical = fs::canonical(absolute, ec);
    if (!absolute.is_absolute() || !inside_any(absolute, arch_dirs_) || ec ||
        !inside_any(canonical, arch_dirs_))
      throw;
    file = canonical;
  }
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > kMaxArchFileBytes)
    throw ToolError(fmt::format("arch file '{}' is not a regular file of at most 1 MiB", arch));
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    GpuArch parsed = engine::parse_gpu_arch(text, file.string());
    if (!(parsed.mem_bw_gbps > 0) && parsed.max_achievable_tflops.empty())
      throw engine::GpuArchError("no peaks");
  } catch (const std::exception&) {
    // The parser's message may quote the file; say only what is wrong in kind.
    throw ToolError(fmt::format(
        "arch file '{}' is not a GPU arch JSON file (see arch/*.json for the format)", arch));
  }
  return file.string();
}

}  // namespace jarvis::mcp
