// Valid traces: .json, .json.gz, multi-member gzip and in-memory text load to
// the same Trace, and the loaded fields match an independent JSON parser
// (nlohmann::json) event by event on the conformance traces.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "golden.h"
#include "pycompat/repr.h"
#include "test_loader_support.h"
#include "trace/gzip_inflate.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

void put_le32(std::string& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

uint32_t crc_of(std::string_view s) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

// One gzip member written field by field (RFC 1952), with the optional
// header fields: FEXTRA, FNAME, FCOMMENT and FHCRC (the header's CRC-16).
// The trailer's CRC-32 and ISIZE are passed in so tests can break them.
std::string gzip_member_with_header_fields(std::string_view data, uint32_t crc, uint32_t isize) {
  std::string h = {'\x1f', '\x8b', 8, 2 | 4 | 8 | 16, 0, 0, 0, 0, 0, 3};
  h += std::string{6, 0} + "ab\x01\x02" + "cd";  // XLEN = 6, one subfield
  h += std::string("trace.json") + '\0';
  h += std::string("recorded by a test") + '\0';
  uint32_t hcrc = crc_of(h);
  h.push_back(static_cast<char>(hcrc & 0xff));
  h.push_back(static_cast<char>((hcrc >> 8) & 0xff));
  std::string out = h + deflate_text(data, 6, -MAX_WBITS);
  put_le32(out, crc);
  put_le32(out, isize);
  return out;
}

std::string conformance_trace(const std::string& name) {
  return jarvis::golden::shared_dir() + "/conformance/" + name + "/trace.json.gz";
}

// Everything the loader stores about one event, as text, for comparison.
std::string describe(const Trace& t, Uid uid) {
  const Event& e = t.events[uid];
  std::string s = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(e.ph), t.cat_name(uid),
                              t.name(uid), pycompat::py_float_repr(e.ts()),
                              pycompat::py_float_repr(e.dur()), pycompat::py_float_repr(e.end()),
                              t.proc_id_text(t.pid(e)), t.proc_id_text(t.tid(e)));
  for (int64_t v : {t.external_id(e), t.correlation(e), t.flow_id(e), t.stream(e), t.device(e),
                    t.sequence_number(e), t.python_id(e), t.python_parent_id(e)})
    s += fmt::format("|{}", v);
  s += e.has_args ? "|args" : "|-";
  s += e.bp_enclosing ? "|e" : "|-";
  if (e.args >= 0)
    for (const auto& [key, value] : t.arg_lists[static_cast<size_t>(e.args)])
      s += fmt::format("|{}={}", t.str(key), value.repr_tuple());
  return s;
}

void check_same(const Trace& a, const Trace& b) {
  REQUIRE(a.events.size() == b.events.size());
  CHECK(a.platform == b.platform);
  CHECK(a.json_bytes == b.json_bytes);
  CHECK(a.top_level_json == b.top_level_json);
  CHECK(a.gpu_name() == b.gpu_name());
  size_t mismatches = 0;
  for (Uid u = 0; u < a.events.size() && mismatches < 5; ++u) {
    std::string da = describe(a, u), db = describe(b, u);
    if (da != db) {
      ++mismatches;
      CHECK(da == db);
    }
  }
  CHECK(mismatches == 0);
  CHECK(a.metadata.process_name == b.metadata.process_name);
  CHECK(a.metadata.process_labels == b.metadata.process_labels);
  CHECK(a.metadata.thread_name == b.metadata.thread_name);
}

// Splits text into n pieces and gzips each as its own member.
std::string multi_member_gzip(const std::string& text, size_t n) {
  std::string out;
  size_t step = text.size() / n + 1;
  for (size_t pos = 0; pos < text.size(); pos += step)
    out += gzip_member(std::string_view(text).substr(pos, step), pos == 0 ? 9 : 1);
  return out;
}

}  // namespace

TEST_CASE("loader: .json, .json.gz, multi-member gzip and memory load identically") {
  for (const char* name : {"mi300_qwen1.5-0.5b", "h100_bert-small"}) {
    CAPTURE(name);
    std::string gz = conformance_trace(name);
    std::string text = gunzip_file(gz);
    TempDir tmp;
    auto plain = tmp.path / "trace.json";
    auto multi = tmp.path / "multi.json.gz";
    auto one_member = tmp.path / "single.json.gz";
    write_file(plain, text);
    write_file(multi, multi_member_gzip(text, 7));
    write_file(one_member, gzip_member(text, 1));

    Trace from_gz = load_trace(gz);
    CHECK(from_gz.json_bytes == text.size());
    CHECK(from_gz.file_bytes == fs::file_size(gz));
    check_same(from_gz, load_trace(plain.string()));
    check_same(from_gz, load_trace(multi.string()));
    check_same(from_gz, load_trace(one_member.string()));
    check_same(from_gz, load_trace_from_json(text, "memory"));
  }
}

TEST_CASE("loader: a gzip-compressed file without the .gz suffix is still read as gzip") {
  std::string text = gunzip_file(conformance_trace("mi300_compile_triton"));
  TempDir tmp;
  auto path = tmp.path / "trace.json";
  write_file(path, gzip_member(text));
  check_same(load_trace(path.string()), load_trace_from_json(text));
}

namespace {

// Compares one loaded event against the same element parsed by nlohmann.
void check_event_against_json(const Trace& t, Uid uid, const nlohmann::json& j) {
  const Event& e = t.events[uid];
  CAPTURE(uid);
  CHECK(t.name(uid) == j.value("name", std::string()));
  CHECK(t.cat_name(uid) == j.value("cat", std::string()));
  if (j.contains("ts")) {
    CHECK(e.ts() == j["ts"].get<double>());  // bit-exact: both correctly rounded
  } else {
    CHECK_FALSE(e.has_ts());
  }
  if (j.contains("dur")) {
    CHECK(e.dur() == j["dur"].get<double>());
    CHECK(e.end() == j["ts"].get<double>() + j["dur"].get<double>());
  } else {
    CHECK_FALSE(e.has_dur());
  }
  for (const char* field : {"pid", "tid"}) {
    const ProcId& p = field[0] == 'p' ? t.pid(e) : t.tid(e);
    if (!j.contains(field)) {
      CHECK_FALSE(p.present());
    } else if (j[field].is_number_integer()) {
      CHECK(t.proc_id_text(p) == std::to_string(j[field].get<int64_t>()));
    } else {
      CHECK(t.proc_id_text(p) == j[field].get<std::string>());
    }
  }
  if (j.contains("id")) CHECK(t.flow_id(e) == j["id"].get<int64_t>());
  if (!j.contains("args") || j["ph"] == "M") return;
  const auto& args = j["args"];
  auto int_arg = [&](const char* key) -> int64_t {
    return args.contains(key) && args[key].is_number_integer() ? args[key].get<int64_t>() : kNoInt;
  };
  CHECK(t.external_id(e) == int_arg("External id"));
  CHECK(t.correlation(e) == int_arg("correlation"));
  CHECK(t.stream(e) == int_arg("stream"));
  CHECK(t.device(e) == int_arg("device"));
  CHECK(t.sequence_number(e) == int_arg("Sequence number"));
  CHECK(t.python_id(e) == int_arg("Python id"));
  for (const char* key : {"Input Dims", "Input type", "Input Strides", "Concrete Inputs", "grid",
                          "block", "kernel", "bytes", "shared memory"}) {
    const PyValue* v = t.arg(uid, key);
    if (!v) continue;  // not kept for this category
    CAPTURE(key);
    REQUIRE(args.contains(key));
    CHECK(nlohmann::json::parse(v->to_json()) == args[key]);
  }
}

}  // namespace

TEST_CASE("loader: every event matches an independent parse of the conformance traces") {
  for (const char* name : {"mi300_qwen1.5-0.5b", "h100_qwen1.5-0.5b"}) {
    CAPTURE(name);
    std::string gz = conformance_trace(name);
    Trace t = load_trace(gz);
    nlohmann::json doc = nlohmann::json::parse(gunzip_file(gz));
    const auto& events = doc["traceEvents"];
    REQUIRE(events.size() == t.events.size());
    size_t with_dims = 0;
    for (Uid u = 0; u < t.events.size(); ++u) {
      check_event_against_json(t, u, events[u]);
      if (t.arg(u, "Input Dims")) ++with_dims;
    }
    CHECK(with_dims > 1000);  // shapes really were kept and compared
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      if (it.key() == "traceEvents") continue;
      bool found = false;
      for (const auto& [key, json] : t.top_level_json)
        if (key == it.key()) found = nlohmann::json::parse(json) == it.value();
      CHECK_MESSAGE(found, it.key());
    }
  }
}

TEST_CASE("loader: spot checks of known events (trace-format.md section 9)") {
  Trace t = load_trace(conformance_trace("mi300_qwen1.5-0.5b"));
  // The ROCm aten::mm example of the spec: find it by its External id.
  bool found = false;
  for (Uid u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (e.cat != Cat::CpuOp || t.external_id(e) != 20712 || t.name(u) != "aten::mm") continue;
    found = true;
    CHECK(e.ts() == 2241346144971.224);
    CHECK(e.dur() == 92.572);
    CHECK(e.end() == 2241346144971.224 + 92.572);
    REQUIRE(t.arg(u, "Input Dims"));
    CHECK(t.arg(u, "Input Dims")->repr_tuple() == "((8944, 1024), (1024, 2816))");
    CHECK(t.arg(u, "Input type")->repr_tuple() == "('c10::BFloat16', 'c10::BFloat16')");
    CHECK(t.arg(u, "Ev Idx") == nullptr);  // dropped
  }
  CHECK(found);
  CHECK(t.platform == Platform::Rocm);
}

TEST_CASE("loader: identical kept args are stored once and shared") {
  std::string events;
  for (int k = 0; k < 100; ++k) {
    if (k) events += ",";
    events += R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":)" +
              std::to_string(k) + R"(.0,"dur":1.0,"args":{"External id":)" + std::to_string(k) +
              R"(,"Input Dims":[[2,3],[3,)" + std::to_string(k % 2) + "]]}}";
  }
  Trace t = load_trace_from_json(R"({"traceEvents":[)" + events + "]}");
  CHECK(t.arg_lists.size() == 2);
  CHECK(t.events[0].args == t.events[2].args);
  CHECK(t.events[0].args != t.events[1].args);
  CHECK(t.external_id(t.events[3]) == 3);
  CHECK(t.arg(3, "Input Dims")->repr_tuple() == "((2, 3), (3, 1))");
}

TEST_CASE("loader: hot integer args accept integral floats and ignore non-numbers") {
  Trace t = load_trace_from_json(
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2.0,)"
      R"("args":{"correlation":12.0,"stream":"7","device":1e0,"External id":3.5}}]})");
  const Event& e = t.events[0];
  CHECK(t.correlation(e) == 12);
  CHECK(t.stream(e) == kNoInt);
  CHECK(t.device(e) == 1);
  CHECK(t.external_id(e) == kNoInt);
}

TEST_CASE("loader: hot integer args: signs and the 18/19-digit boundary") {
  // Up to 18 digits take the digit loop, longer ones from_chars; both give
  // the exact value, and 20 digits (past int64) are no integer at all.
  Trace t = load_trace_from_json(
      R"({"traceEvents":[)"
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{)"
      R"("correlation":-42,"External id":123456789012345678,"device":70,)"
      R"("stream":1234567890123456789}},)"
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":3,"dur":2,"args":{)"
      R"("correlation":-1234567890123456789,"External id":12345678901234567890,)"
      R"("stream":-0}}]})");
  const Event& a = t.events[0];
  CHECK(t.correlation(a) == -42);
  CHECK(t.external_id(a) == 123456789012345678);
  CHECK(t.device(a) == 70);
  CHECK(t.stream(a) == 1234567890123456789);
  const Event& b = t.events[1];
  CHECK(t.correlation(b) == -1234567890123456789);
  CHECK(t.external_id(b) == kNoInt);
  CHECK(t.stream(b) == 0);
}

TEST_CASE("loader: every gzip inflate mode loads the identical Trace") {
  const std::pair<const char*, GzipInflate> modes[] = {
      {"isal", GzipInflate::IsalStream},
      {"isal pipelined", GzipInflate::IsalPipelined},
      {"zlib pipelined", GzipInflate::ZlibPipelined},
      {"libdeflate", GzipInflate::Libdeflate},
      {"auto", GzipInflate::Auto},
  };
  auto dirs = jarvis::golden::conformance_dirs();
  REQUIRE_FALSE(dirs.empty());
  for (const auto& dir : dirs) {
    CAPTURE(dir);
    Trace serial = load_trace(dir + "/trace.json.gz", {}, GzipInflate::ZlibStream);
    for (const auto& [label, mode] : modes) {
      std::string mode_name = label;
      CAPTURE(mode_name);
      check_same(serial, load_trace(dir + "/trace.json.gz", {}, mode));
    }
  }

  // Multi-member gzip (libdeflate grows its buffer past the last member's
  // ISIZE) with trailing zero padding, and an uncompressed file.
  std::string text = gunzip_file(conformance_trace("h100_bert-small"));
  TempDir tmp;
  auto multi = tmp.path / "multi.json.gz";
  auto plain = tmp.path / "trace.json";
  write_file(multi, multi_member_gzip(text, 9) + std::string(512, '\0'));
  write_file(plain, text);
  Trace serial = load_trace(multi.string(), {}, GzipInflate::ZlibStream);
  CHECK(serial.json_bytes == text.size());
  check_same(serial, load_trace_from_json(text, "memory"));
  for (const auto& [label, mode] : modes) {
    std::string mode_name = label;
    CAPTURE(mode_name);
    check_same(serial, load_trace(multi.string(), {}, mode));
    check_same(serial, load_trace(plain.string(), {}, mode));
  }

  // Data libdeflate refuses falls back to zlib, which words the error: the
  // same message in every mode.
  auto truncated = tmp.path / "truncated.json.gz";
  std::string member = gzip_member(text);
  write_file(truncated, member.substr(0, member.size() / 2));
  auto message = [&](GzipInflate mode) {
    try {
      load_trace(truncated.string(), {}, mode);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string expected = message(GzipInflate::ZlibStream);
  CHECK(expected.find("truncated gzip data") != std::string::npos);
  for (const auto& [label, mode] : modes) {
    std::string mode_name = label;
    CAPTURE(mode_name);
    CHECK(message(mode) == expected);
  }
}

TEST_CASE("loader: ISA-L and zlib read the same gzip headers and refuse the same broken members") {
  const std::pair<const char*, GzipInflate> streaming[] = {
      {"isal", GzipInflate::IsalStream},
      {"isal pipelined", GzipInflate::IsalPipelined},
      {"zlib", GzipInflate::ZlibStream},
      {"zlib pipelined", GzipInflate::ZlibPipelined},
  };
  std::string text = gunzip_file(conformance_trace("h100_bert-small"));
  const auto size = static_cast<uint32_t>(text.size());
  TempDir tmp;
  auto outcome = [&](const std::string& name, const std::string& bytes, GzipInflate mode) {
    auto path = tmp.path / name;
    write_file(path, bytes);
    try {
      Trace t = load_trace(path.string(), {}, mode);
      return fmt::format("{} events, {} bytes", t.events.size(), t.json_bytes);
    } catch (const TraceError& e) {
      std::string msg = e.what();
      // The reason in parentheses is each library's own wording.
      return msg.substr(0, msg.find(" ("));
    }
  };
  const Trace reference = load_trace_from_json(text, "memory");
  const std::string loaded =
      fmt::format("{} events, {} bytes", reference.events.size(), text.size());
  std::string good = gzip_member_with_header_fields(text, crc_of(text), size);
  struct Case {
    const char* what;
    std::string bytes;
    std::string expected;  // after the path and ": "
  };
  std::string bad_crc = gzip_member_with_header_fields(text, crc_of(text) ^ 1, size);
  std::string bad_size = gzip_member_with_header_fields(text, crc_of(text), size + 1);
  std::string bad_header = good;
  const size_t header_crc_at = 10 + 2 + 6 + 11 + 19;  // fixed part, XLEN, extra, name, comment
  bad_header[header_crc_at] = static_cast<char>(bad_header[header_crc_at] ^ 1);
  const size_t half = text.size() / 2;
  std::string two_members =
      gzip_member_with_header_fields(text.substr(0, half), crc_of(text.substr(0, half)),
                                     static_cast<uint32_t>(half)) +
      gzip_member_with_header_fields(text.substr(half), crc_of(text.substr(half)),
                                     static_cast<uint32_t>(text.size() - half));
  const Case cases[] = {
      {"name, comment, extra field and header CRC", good, loaded},
      {"two such members, the text split between them", two_members, loaded},
      {"CRC-32 mismatch", bad_crc, "corrupt gzip data"},
      {"length mismatch", bad_size, "corrupt gzip data"},
      {"header CRC mismatch", bad_header, "corrupt gzip data"},
      {"trailer cut short", good.substr(0, good.size() - 3), "truncated gzip data"},
      {"a lone magic byte after the member", good + "\x1f", "truncated gzip data"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    std::string name = fmt::format("case{}.json.gz", &c - cases);
    for (const auto& [label, mode] : streaming) {
      std::string mode_name = label;
      CAPTURE(mode_name);
      std::string got = outcome(name, c.bytes, mode);
      if (c.expected == loaded) {
        CHECK(got == loaded);
      } else {
        CHECK(got == (tmp.path / name).string() + ": " + c.expected);
      }
    }
  }
  // The header-field member loads to the same Trace as the text itself.
  auto path = tmp.path / "fields.json.gz";
  write_file(path, good);
  for (const auto& [label, mode] : streaming)
    check_same(reference, load_trace(path.string(), {}, mode));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
