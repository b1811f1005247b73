// Layout patterns and run discovery: the pattern is matched one directory
// level at a time, so only directories that can still lead to a run are
// listed (a sweep of hundreds of runs beside large unrelated trees stays fast).
// Segments are RE2 expressions: the pattern comes from the user (or an agent)
// and several lazy fields in one segment would make a backtracking engine
// polynomial in the name length; RE2 stays linear.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <re2/re2.h>

#include "sweep/sweep.h"
#include "trace/byte_source.h"
#include "trace/trace.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;

struct Segment {
  std::shared_ptr<const RE2> re;
  std::vector<std::string> fields;  // capture groups, in order
};

bool valid_field_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string regex_escape(char c) {
  return RE2::QuoteMeta(std::string(1, c));
}

// Converts one segment; fields capture lazily so that "perf_{channel}ch_rank{rank}"
// splits at the first literal that follows each field.
Segment compile_segment(const std::string& seg, const std::string& pattern) {
  Segment out;
  std::string re;
  for (size_t k = 0; k < seg.size(); ++k) {
    char c = seg[k];
    if (c == '{') {
      size_t close = seg.find('}', k);
      if (close == std::string::npos)
        throw SweepError(fmt::format("layout '{}': unclosed '{{' in '{}'", pattern, seg));
      std::string name = seg.substr(k + 1, close - k - 1);
      if (!valid_field_name(name))
        throw SweepError(fmt::format("layout '{}': bad field name '{}'", pattern, name));
      out.fields.push_back(name);
      re += "(.+?)";
      k = close;
    } else if (c == '*') {
      re += ".*";
    } else if (c == '?') {
      re += ".";
    } else {
      re += regex_escape(c);
    }
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_dot_nl(true);
  // File names are bytes, not necessarily UTF-8.
  options.set_encoding(RE2::Options::EncodingLatin1);
  out.re = std::make_shared<const RE2>(re, options);
  if (!out.re->ok())
    throw SweepError(
        fmt::format("layout '{}': bad segment '{}': {}", pattern, seg, out.re->error()));
  return out;
}

std::vector<std::string> split_segments(const std::string& pattern) {
  std::vector<std::string> segs;
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t slash = pattern.find('/', start);
    if (slash == std::string::npos) slash = pattern.size();
    segs.push_back(pattern.substr(start, slash - start));
    start = slash + 1;
  }
  return segs;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_trace_file(const fs::path& p) {
  std::string name = p.filename().string();
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

bool is_report_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "gpu_timeline.csv", ec) || fs::is_regular_file(p / "GEMM.csv", ec);
}

struct Walker {
  const Layout& layout;
  std::vector<Segment> segments;
  fs::path root;
  Discovery& out;
  const AdmitPath& admit;

  // The admit callback's verdict; a refusal is recorded as a failure.
  bool admitted(const fs::path& path) {
    if (!admit) return true;
    std::string reason = admit(path.string());
    if (reason.empty()) return true;
    out.failures.push_back({path.string(), reason});
    return false;
  }

  void walk(const fs::path& dir, size_t level, std::map<std::string, std::string> values) {
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e);
    for (const auto& entry : entries) visit(entry, level, values);
  }

  void visit(const fs::directory_entry& entry, size_t level,
             const std::map<std::string, std::string>& values) {
    std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] == '.') return;  // caches, temp files
    const Segment& seg = segments[level];
    std::vector<std::string> captured(seg.fields.size());
    std::vector<RE2::Arg> args(captured.size());
    std::vector<const RE2::Arg*> arg_ptrs;
    for (size_t f = 0; f < captured.size(); ++f) {
      args[f] = RE2::Arg(&captured[f]);
      arg_ptrs.push_back(&args[f]);
    }
    if (!RE2::FullMatchN(name, *seg.re, arg_ptrs.data(), static_cast<int>(arg_ptrs.size()))) return;
    auto next = values;
    for (size_t f = 0; f < seg.fields.size(); ++f) {
      auto [it, fresh] = next.emplace(seg.fields[f], captured[f]);
      if (!fresh && it->second != captured[f]) return;  // repeated field disagrees
    }
    std::error_code ec;
    bool is_dir = entry.is_directory(ec);
    if (!admitted(entry.path())) return;
    if (level + 1 < segments.size()) {
      if (is_dir) walk(entry.path(), level + 1, std::move(next));
      return;
    }
    add_run(entry.path(), is_dir, next);
  }

  void add_run(const fs::path& path, bool is_dir,
               const std::map<std::string, std::string>& values) {
    RunInput run;
    run.path = path.string();
    run.relative = fs::relative(path, root).string();
    if (!is_dir && !is_trace_file(path) && !ends_with(run.path, ".xlsx")) {
      if (ends_with(run.path, ".csv"))
        out.failures.push_back({run.path,
                                "not a run: give a trace (.json/.json.gz), a report .xlsx or a "
                                "perf_report_csvs directory"});
      return;
    }
    if (!is_dir) {
      // A FIFO or device would hold a worker forever: refused here, by the
      // check the loader makes too (the workbook reader makes none).
      try {
        struct stat st;
        open_trace_file(run.path, st);
      } catch (const TraceError& e) {
        out.failures.push_back({run.path, e.what()});
        return;
      }
    }
    if (is_dir && is_report_dir(path)) {
      run.kind = RunKind::ReportDir;
    } else if (!is_dir && is_trace_file(path)) {
      run.kind = RunKind::Trace;
    } else if (!is_dir && ends_with(run.path, ".xlsx")) {
      run.kind = RunKind::ReportXlsx;
    } else {
      if (!is_dir && ends_with(run.path, ".csv"))
        out.failures.push_back({run.path,
                                "not a run: give a trace (.json/.json.gz), a report .xlsx or a "
                                "perf_report_csvs directory"});
      return;
    }
    for (const std::string& f : layout.fields) run.values.push_back(values.at(f));
    out.runs.push_back(std::move(run));
  }
};

std::optional<double> as_number(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Numbers before text, numbers numerically: 28 < 42 < 128.
bool value_less(const std::string& a, const std::string& b) {
  auto na = as_number(a), nb = as_number(b);
  if (na && nb) return *na < *nb;
  if (na || nb) return na.has_value();
  return a < b;
}

void sort_runs(std::vector<RunInput>& runs) {
  std::sort(runs.begin(), runs.end(), [](const RunInput& a, const RunInput& b) {
    for (size_t k = 0; k < a.values.size(); ++k) {
      if (value_less(a.values[k], b.values[k])) return true;
      if (value_less(b.values[k], a.values[k])) return false;
    }
    return a.path < b.path;
  });
}

}  // namespace

Layout parse_layout(const std::string& pattern) {
  if (pattern.empty()) throw SweepError("layout pattern is empty");
  if (pattern.front() == '/') throw SweepError("layout '" + pattern + "' must be relative");
  Layout layout;
  layout.pattern = pattern;
  for (const std::string& seg : split_segments(pattern)) {
    if (seg.empty() || seg == "." || seg == "..")
      throw SweepError(fmt::format("layout '{}': empty, '.' or '..' segment", pattern));
    for (const std::string& f : compile_segment(seg, pattern).fields)
      if (std::find(layout.fields.begin(), layout.fields.end(), f) == layout.fields.end())
        layout.fields.push_back(f);
  }
  return layout;
}

const std::vector<std::string>& default_layouts() {
  static const std::vector<std::string> layouts = {
      "{threads}thread/nccl_{channel}channels/torch_profiler/rank{rank}/*.json*",
      "{threads}thread/perf_{channel}ch_rank{rank}_perf_report_csvs",
      "{threads}thread/individual_reports/perf_{channel}ch_rank{rank}_perf_report_csvs",
      "{threads}thread/individual_reports/perf_{channel}ch_rank{rank}.xlsx",
      "tracelens_analysis/{threads}thread/individual_reports/perf_{channel}ch_rank{rank}.xlsx",
  };
  return layouts;
}

Discovery discover_runs(const std::string& root, const Layout& layout, const AdmitPath& admit) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw SweepError("sweep directory not found: " + root, ErrorKind::NotFound);
  Discovery out;
  out.layout = layout;
  Walker walker{layout, {}, fs::absolute(root), out, admit};
  for (const std::string& seg : split_segments(layout.pattern))
    walker.segments.push_back(compile_segment(seg, layout.pattern));
  walker.walk(walker.root, 0, {});
  sort_runs(out.runs);
  return out;
}

Discovery discover_runs(const std::string& root, const std::string& pattern,
                        const AdmitPath& admit) {
  if (!pattern.empty()) return discover_runs(root, parse_layout(pattern), admit);
  for (const std::string& p : default_layouts()) {
    Discovery d = discover_runs(root, parse_layout(p), admit);
    if (!d.runs.empty()) return d;
  }
  std::string tried;
  for (const std::string& p : default_layouts()) tried += "\n  " + p;
  throw SweepError(fmt::format(
      "no run found under {} with the default layouts:{}\ngive the layout with --layout / "
      "layout (fields in braces, e.g. 'bs{{batch}}/rank{{rank}}/*.json.gz')",
      root, tried));
}

}  // namespace jarvis::sweep
