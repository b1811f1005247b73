#include "explore/input_format.h"

#include <array>
#include <filesystem>

#include <fmt/format.h>

#include "explore/rocprof_trace.h"
#include "explore/trace_store.h"
#include "nsys/export.h"
#include "rocprof/profile.h"
#include "trace/loader.h"
#include "xplane/space.h"

namespace jarvis {

namespace {

namespace fs = std::filesystem;

// One reader per non-Kineto format. `sniff` judges the content (null when
// detect_input_format decides the format another way); `load` reads it.
struct InputReader {
  InputFormat format;
  std::string_view name;
  bool (*sniff)(const std::string& path);
  LoadedInput (*load)(const std::string& path);
};

LoadedInput load_rocprof(const std::string& path) {
  auto profile = std::make_shared<rocprof::Profile>(rocprof::load_profile(path));
  LoadedInput in{rocprof::to_trace(*profile), {}};
  // The profile stays with the loaded trace for the rocprof-only tools.
  in.attach = [profile](const LoadedTrace& loaded) {
    analysis::attach_rocprof_profile(loaded, std::move(*profile));
  };
  return in;
}

LoadedInput load_nsys(const std::string& path) {
  return LoadedInput{nsys::to_trace(nsys::load_export(path)), {}};
}

LoadedInput load_xplane(const std::string& path) {
  return LoadedInput{xplane::to_trace(xplane::load_space(path)), {}};
}

// Sniffed in this order, after the names that are refused outright.
const std::array<InputReader, 4>& readers() {
  static const std::array<InputReader, 4> table = {{
      {InputFormat::RocprofJson, "rocprofv3 JSON results", nullptr, load_rocprof},
      {InputFormat::RocprofCsv, "rocprofv3 CSV set", nullptr, load_rocprof},
      // Any SQLite file: the reader says why one is not an export.
      {InputFormat::NsysSqlite, "Nsight Systems SQLite export", nsys::is_nsys_input, load_nsys},
      {InputFormat::Xplane, "XPlane (XSpace protobuf)", xplane::is_xplane_input, load_xplane},
  }};
  return table;
}

const InputReader* reader_for(InputFormat format) {
  for (const auto& reader : readers())
    if (reader.format == format) return &reader;
  return nullptr;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Inputs jarvis knows but reads through an export, refused with the command.
void refuse_known_unreadable(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (ends_with(name, ".nsys-rep") || ends_with(name, ".qdrep"))
    throw TraceError(fmt::format(
        "{}: an Nsight Systems report; jarvis reads its SQLite export — run `nsys export "
        "--type sqlite --output {}.sqlite {}` and give the .sqlite file",
        path, fs::path(path).stem().string(), path));
}

}  // namespace

std::string_view input_format_name(InputFormat format) {
  switch (format) {
    case InputFormat::KinetoJson:
      return "Kineto JSON";
    case InputFormat::RocprofJson:
      return "rocprofv3 JSON results";
    case InputFormat::RocprofCsv:
      return "rocprofv3 CSV set";
    case InputFormat::Xplane:
      return "XPlane (XSpace protobuf)";
    case InputFormat::NsysSqlite:
      return "Nsight Systems SQLite export";
  }
  return "unknown";
}

InputFormat detect_input_format(const std::string& path) {
  refuse_known_unreadable(path);
  switch (rocprof::detect_input(path)) {  // throws for a .pftrace, with the fix
    case rocprof::InputKind::Json:
      return InputFormat::RocprofJson;
    case rocprof::InputKind::CsvSet:
      return InputFormat::RocprofCsv;
    case rocprof::InputKind::Other:
      break;
  }
  for (const auto& reader : readers())
    if (reader.sniff && reader.sniff(path)) return reader.format;
  return InputFormat::KinetoJson;
}

LoadedInput load_non_kineto_input(const std::string& path, InputFormat format) {
  const InputReader* reader = reader_for(format);
  if (!reader)
    throw TraceError(
        fmt::format("{}: {} input has no reader in this build", path, input_format_name(format)));
  return reader->load(path);
}

Trace load_any_trace(const std::string& path) {
  InputFormat format = detect_input_format(path);
  // rocprofv3 output has kernels but no host ops: the commands that ask for
  // a trace with ops get the Kineto loader's answer, which names the input
  // and the commands that read it.
  if (format == InputFormat::KinetoJson || format == InputFormat::RocprofJson ||
      format == InputFormat::RocprofCsv)
    return load_trace(path);
  return load_non_kineto_input(path, format).trace;
}

std::vector<Trace> load_rank_traces(const std::string& path) {
  if (detect_input_format(path) == InputFormat::NsysSqlite)
    return nsys::to_rank_traces(nsys::load_export(path));
  std::vector<Trace> out;
  out.push_back(load_any_trace(path));
  return out;
}

}  // namespace jarvis
