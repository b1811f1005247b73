#include "trace/loader.h"

#include <zlib.h>

#include <simdjson.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <string_view>

namespace jarvis {

namespace {

namespace od = simdjson::ondemand;

// ---------------------------------------------------------------------------
// Byte sources: plain file, gzip file (multi-member), memory.

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to cap bytes; returns 0 at end of data. Throws TraceError.
  virtual size_t read(char* dst, size_t cap) = 0;
};

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

class PlainFileSource : public ByteSource {
 public:
  PlainFileSource(FilePtr file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}
  size_t read(char* dst, size_t cap) override {
    size_t n = std::fread(dst, 1, cap, file_.get());
    if (n == 0 && std::ferror(file_.get()))
      throw TraceError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    return n;
  }

 private:
  FilePtr file_;
  std::string path_;
};

class GzipFileSource : public ByteSource {
 public:
  GzipFileSource(FilePtr file, std::string path)
      : file_(std::move(file)), path_(std::move(path)), in_(kInChunk) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK)
      throw TraceError(fmt::format("{}: cannot initialise zlib", path_));
  }
  ~GzipFileSource() override { inflateEnd(&zs_); }

  size_t read(char* dst, size_t cap) override {
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(cap, 1u << 30));
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !refill()) {
        if (in_member_)
          throw TraceError(fmt::format("{}: truncated gzip data (file ends inside a member)", path_));
        break;
      }
      if (!in_member_) {
        // A new gzip member starts (multi-member files are concatenations).
        in_member_ = true;
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
        inflateReset(&zs_);
        continue;
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more input; loop refills
      if (rc != Z_OK)
        throw TraceError(fmt::format("{}: corrupt gzip data ({})", path_,
                                     zs_.msg ? zs_.msg : "inflate failed"));
    }
    return cap - zs_.avail_out;
  }

 private:
  static constexpr size_t kInChunk = 1 << 20;

  bool refill() {
    size_t n = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (n == 0) {
      if (std::ferror(file_.get()))
        throw TraceError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
      return false;
    }
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(n);
    return true;
  }

  FilePtr file_;
  std::string path_;
  std::vector<char> in_;
  z_stream zs_;
  bool in_member_ = false;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  size_t read(char* dst, size_t cap) override {
    size_t n = std::min(cap, data_.size() - pos_);
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// A sliding window over the decompressed text, always followed by simdjson's
// padding so any complete value inside it can be parsed in place.

class Window {
 public:
  explicit Window(ByteSource& src) : src_(src) { buf_.resize(kInitial + simdjson::SIMDJSON_PADDING); }

  // Ensures at least n bytes are available at pos (or the data ends). Returns
  // the number available (may be < n only at end of data).
  size_t ensure(size_t n) {
    while (end_ - pos_ < n && !eof_) fill();
    return end_ - pos_;
  }
  const char* at(size_t off) const { return buf_.data() + pos_ + off; }
  size_t capacity_from(size_t off) const { return buf_.size() - (pos_ + off); }
  void advance(size_t n) {
    pos_ += n;
    consumed_ += n;
  }
  uint64_t consumed() const { return consumed_; }
  bool eof() const { return eof_ && pos_ == end_; }

 private:
  static constexpr size_t kInitial = 8 << 20;
  static constexpr size_t kRead = 4 << 20;

  void fill() {
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    size_t usable = buf_.size() - simdjson::SIMDJSON_PADDING;
    if (usable - end_ < kRead / 2) {
      buf_.resize(std::max(buf_.size() * 2, end_ + kRead + simdjson::SIMDJSON_PADDING));
      usable = buf_.size() - simdjson::SIMDJSON_PADDING;
    }
    size_t n = src_.read(buf_.data() + end_, usable - end_);
    if (n == 0) eof_ = true;
    end_ += n;
    std::memset(buf_.data() + end_, 0, simdjson::SIMDJSON_PADDING);
  }

  ByteSource& src_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
};

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// ---------------------------------------------------------------------------

enum class KeepPolicy : uint8_t { Nothing, AllButHot, Launch, Gpu };

Cat parse_cat(std::string_view c) {
  if (c == "cpu_op") return Cat::CpuOp;
  if (c == "python_function") return Cat::PythonFunction;
  if (c == "kernel") return Cat::Kernel;
  if (c == "cuda_runtime") return Cat::CudaRuntime;
  if (c == "ac2g") return Cat::Ac2g;
  if (c == "cuda_driver") return Cat::CudaDriver;
  if (c == "gpu_memcpy") return Cat::GpuMemcpy;
  if (c == "gpu_memset") return Cat::GpuMemset;
  if (c == "user_annotation") return Cat::UserAnnotation;
  if (c == "gpu_user_annotation") return Cat::GpuUserAnnotation;
  if (c == "fwdbwd") return Cat::FwdBwd;
  if (c == "cpu_instant_event") return Cat::CpuInstantEvent;
  if (c == "Trace") return Cat::Trace;
  return Cat::Other;
}

Phase parse_phase(std::string_view p) {
  if (p == "X") return Phase::Complete;
  if (p == "i" || p == "I") return Phase::Instant;
  if (p == "s") return Phase::FlowStart;
  if (p == "f") return Phase::FlowEnd;
  if (p == "M") return Phase::Metadata;
  return Phase::Other;
}

KeepPolicy keep_policy(Cat c) {
  switch (c) {
    case Cat::CpuOp:
    case Cat::UserAnnotation:
    case Cat::PythonFunction:
      return KeepPolicy::AllButHot;
    case Cat::CudaRuntime:
    case Cat::CudaDriver:
      return KeepPolicy::Launch;
    case Cat::Kernel:
    case Cat::GpuMemcpy:
    case Cat::GpuMemset:
      return KeepPolicy::Gpu;
    default:
      return KeepPolicy::Nothing;
  }
}

bool keep_arg(KeepPolicy policy, std::string_view key) {
  switch (policy) {
    case KeepPolicy::Nothing:
      return false;
    case KeepPolicy::AllButHot:
      return !(key == "Ev Idx" || key == "Record function id" || key == "finished" ||
               key == "Python id" || key == "Python parent id" || key == "External id" ||
               key == "Sequence number");
    case KeepPolicy::Launch:
      return key == "kernel" || key == "grid" || key == "block" || key == "shared memory" ||
             key == "bytes";
    case KeepPolicy::Gpu:
      return key == "grid" || key == "block" || key == "bytes" || key == "kind" ||
             key == "shared memory";
  }
  return false;
}

class EventParser {
 public:
  EventParser(Trace& trace, std::string label) : trace_(trace), label_(std::move(label)) {}

  void parse(const char* text, size_t len, size_t capacity, size_t index) {
    index_ = index;
    auto doc_result = parser_.iterate(text, len, capacity);
    if (doc_result.error()) fail(doc_result.error());
    od::document& doc = doc_result.value_unsafe();
    od::object obj;
    if (auto err = doc.get_object().get(obj)) fail(err, "is not a JSON object");
    Event ev;
    bool has_ph = false;
    pending_args_.clear();
    int64_t int_val;
    for (auto field_result : obj) {
      od::field field;
      if (auto err = std::move(field_result).get(field)) fail(err);
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) fail(err);
      od::value value = field.value();
      if (key == "ph") {
        ev.ph = parse_phase(get_string(value, "ph"));
        has_ph = true;
      } else if (key == "cat") {
        std::string_view c = get_string(value, "cat");
        ev.cat = parse_cat(c);
        ev.cat_name = trace_.strings.intern(c);
      } else if (key == "name") {
        ev.name = trace_.strings.intern(get_string(value, "name"));
      } else if (key == "ts") {
        ev.ts = get_number(value, "ts");
      } else if (key == "dur") {
        ev.dur = get_number(value, "dur");
      } else if (key == "pid") {
        ev.pid = get_proc_id(value, "pid");
      } else if (key == "tid") {
        ev.tid = get_proc_id(value, "tid");
      } else if (key == "id") {
        if (get_int(value, int_val)) ev.flow_id = int_val;
      } else if (key == "bp") {
        std::string_view bp;
        if (!value.get_string().get(bp)) ev.bp_enclosing = bp == "e";
      } else if (key == "args") {
        od::object args;
        if (value.get_object().get(args)) fail_field("args", "must be an object");
        ev.has_args = true;
        read_args(args);
      }
    }
    if (!has_ph) fail_plain("has no 'ph' (phase) member");
    if (ev.cat == Cat::None && ev.cat_name == 0) ev.cat_name = trace_.strings.intern("");
    if (ev.has_ts() && ev.has_dur()) ev.t_end = ev.ts + ev.dur;
    apply_args(ev);
    trace_.events.push_back(std::move(ev));
  }

 private:
  [[noreturn]] void fail(simdjson::error_code err, std::string_view what = "") {
    throw TraceError(fmt::format("{}: traceEvents[{}] {}{}", label_, index_,
                                 what.empty() ? "is not valid JSON: " : what,
                                 what.empty() ? simdjson::error_message(err) : ""));
  }
  [[noreturn]] void fail_field(std::string_view field, std::string_view what) {
    throw TraceError(
        fmt::format("{}: traceEvents[{}]: field '{}' {}", label_, index_, field, what));
  }
  [[noreturn]] void fail_plain(std::string_view what) {
    throw TraceError(fmt::format("{}: traceEvents[{}] {}", label_, index_, what));
  }

  std::string_view get_string(od::value& v, std::string_view field) {
    std::string_view s;
    if (v.get_string().get(s)) fail_field(field, "must be a string");
    return s;
  }
  double get_number(od::value& v, std::string_view field) {
    double d;
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) fail_field(field, "must be a number");
    if (v.get_double().get(d)) fail_field(field, "must be a number");
    return d;
  }
  bool get_int(od::value& v, int64_t& out) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) return false;
    if (!v.get_int64().get(out)) return true;
    double d;
    if (v.get_double().get(d)) return false;
    out = static_cast<int64_t>(d);
    return static_cast<double>(out) == d;
  }
  ProcId get_proc_id(od::value& v, std::string_view field) {
    od::json_type type;
    if (v.type().get(type)) fail_field(field, "is malformed");
    ProcId p;
    if (type == od::json_type::number) {
      int64_t i;
      if (!get_int(v, i)) fail_field(field, "must be an integer or a string");
      p.value = i;
    } else if (type == od::json_type::string) {
      p.value = trace_.strings.intern(get_string(v, field));
      p.is_string = true;
    } else {
      fail_field(field, "must be an integer or a string");
    }
    return p;
  }

  PyValue to_py(od::value v) {
    od::json_type type;
    if (v.type().get(type)) fail_plain("has a malformed value in args");
    switch (type) {
      case od::json_type::null:
        return PyValue::none();
      case od::json_type::boolean: {
        bool b = false;
        if (v.get_bool().get(b)) fail_plain("has a malformed boolean in args");
        return PyValue::boolean(b);
      }
      case od::json_type::number: {
        od::number_type nt;
        if (v.get_number_type().get(nt)) fail_plain("has a malformed number in args");
        if (nt == od::number_type::signed_integer) {
          int64_t i = 0;
          if (v.get_int64().get(i)) fail_plain("has a malformed integer in args");
          return PyValue::integer(i);
        }
        double d = 0;
        if (v.get_double().get(d)) fail_plain("has a malformed number in args");
        return PyValue::real(d);
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s)) fail_plain("has a malformed string in args");
        return PyValue::string(std::string(s));
      }
      case od::json_type::array: {
        std::vector<PyValue> items;
        od::array arr;
        if (v.get_array().get(arr)) fail_plain("has a malformed array in args");
        for (auto item : arr) {
          od::value iv;
          if (std::move(item).get(iv)) fail_plain("has a malformed array in args");
          items.push_back(to_py(iv));
        }
        return PyValue::make_list(std::move(items));
      }
      case od::json_type::object: {
        // Rare (no Kineto arg used by reports is an object): keep as a list
        // of [key, value] pairs so nothing is lost.
        std::vector<PyValue> pairs;
        od::object obj;
        if (v.get_object().get(obj)) fail_plain("has a malformed object in args");
        for (auto f : obj) {
          od::field field;
          if (std::move(f).get(field)) fail_plain("has a malformed object in args");
          std::string_view k;
          if (field.unescaped_key().get(k)) fail_plain("has a malformed key in args");
          std::vector<PyValue> pair;
          pair.push_back(PyValue::string(std::string(k)));
          pair.push_back(to_py(field.value()));
          pairs.push_back(PyValue::make_list(std::move(pair)));
        }
        return PyValue::make_list(std::move(pairs));
      }
    }
    return PyValue::none();
  }

  // Args are read before we necessarily know the event's cat (member order is
  // free), so they are staged and filtered in apply_args.
  void read_args(od::object& args) {
    for (auto field_result : args) {
      od::field field;
      if (std::move(field_result).get(field)) fail_plain("has malformed args");
      std::string_view key;
      if (field.unescaped_key().get(key)) fail_plain("has a malformed key in args");
      pending_args_.emplace_back(std::string(key), to_py(field.value()));
    }
  }

  static int64_t as_int(const PyValue& v) {
    if (v.kind == PyValue::Kind::Int) return v.i;
    if (v.kind == PyValue::Kind::Float && v.f == static_cast<double>(static_cast<int64_t>(v.f)))
      return static_cast<int64_t>(v.f);
    return kNoInt;
  }

  void apply_args(Event& ev) {
    if (pending_args_.empty()) return;
    if (ev.ph == Phase::Metadata) {
      apply_metadata(ev);
      return;
    }
    KeepPolicy policy = keep_policy(ev.cat);
    ArgList kept;
    for (auto& [key, value] : pending_args_) {
      if (key == "External id") {
        ev.external_id = as_int(value);
      } else if (key == "correlation") {
        ev.correlation = as_int(value);
      } else if (key == "stream") {
        ev.stream = as_int(value);
      } else if (key == "device") {
        ev.device = as_int(value);
      } else if (key == "Sequence number") {
        ev.sequence_number = as_int(value);
      } else if (key == "Python id") {
        ev.python_id = as_int(value);
      } else if (key == "Python parent id") {
        ev.python_parent_id = as_int(value);
      }
      if (keep_arg(policy, key)) kept.emplace_back(trace_.strings.intern(key), std::move(value));
    }
    if (!kept.empty()) {
      ev.args = static_cast<int32_t>(trace_.arg_lists.size());
      trace_.arg_lists.push_back(std::move(kept));
    }
  }

  void apply_metadata(const Event& ev) {
    std::string_view what = trace_.strings.view(ev.name);
    for (auto& [key, value] : pending_args_) {
      if (value.kind != PyValue::Kind::String) continue;
      bool process_level = ev.tid.value == 0 && !ev.tid.is_string;
      if (what == "process_name" && key == "name" && process_level)
        trace_.metadata.process_name[ev.pid] = value.s;
      else if (what == "process_labels" && key == "labels" && process_level)
        trace_.metadata.process_labels[ev.pid] = value.s;
      else if (what == "thread_name" && key == "name")
        trace_.metadata.thread_name[{ev.pid, ev.tid}] = value.s;
    }
  }

  Trace& trace_;
  std::string label_;
  od::parser parser_;
  size_t index_ = 0;
  std::vector<std::pair<std::string, PyValue>> pending_args_;
};

// Streams the top-level object and feeds each traceEvents element to the
// EventParser.
class TraceReader {
 public:
  TraceReader(ByteSource& src, Trace& trace, std::string label, const LoadOptions& options)
      : win_(src), trace_(trace), label_(std::move(label)), events_(trace, label_),
        options_(options) {}

  void run() {
    skip_ws();
    if (win_.ensure(1) == 0) fail("file is empty");
    if (peek() != '{') fail("not a JSON object (a Kineto trace starts with '{')");
    win_.advance(1);
    bool saw_events = false;
    skip_ws();
    if (need_char() == '}') {
      win_.advance(1);
    } else {
      for (;;) {
        skip_ws();
        if (need_char() != '"') fail("expected a member name in the top-level object");
        size_t key_len = scan_extent();
        std::string key(win_.at(1), key_len - 2);
        win_.advance(key_len);
        skip_ws();
        if (need_char() != ':') fail("expected ':' after a member name");
        win_.advance(1);
        skip_ws();
        if (key == "traceEvents") {
          read_events();
          saw_events = true;
        } else {
          size_t len = scan_extent();
          trace_.top_level_json.emplace_back(key, std::string(win_.at(0), len));
          win_.advance(len);
        }
        skip_ws();
        char c = need_char();
        win_.advance(1);
        if (c == '}') break;
        if (c != ',') fail("expected ',' or '}' in the top-level object");
      }
    }
    skip_ws();
    if (win_.ensure(1) != 0) fail("unexpected data after the top-level JSON object");
    trace_.json_bytes = win_.consumed();
    if (!saw_events) fail("no 'traceEvents' array (not a Kineto/Chrome trace)");
    if (trace_.events.empty()) fail("'traceEvents' is empty: the trace has no events");
  }

 private:
  [[noreturn]] void fail(std::string_view what) {
    throw TraceError(fmt::format("{}: {}", label_, what));
  }

  char peek() { return *win_.at(0); }
  char need_char() {
    if (win_.ensure(1) == 0) fail("unexpected end of data (truncated JSON)");
    return peek();
  }
  void skip_ws() {
    for (;;) {
      size_t avail = win_.ensure(1);
      if (avail == 0) return;
      size_t k = 0;
      while (k < avail && is_ws(*win_.at(k))) ++k;
      win_.advance(k);
      if (k < avail) return;
    }
  }

  // Length of the JSON value starting at the window position (a string,
  // object, array or scalar), loading more data as needed.
  size_t scan_extent() {
    size_t off = 0;
    int depth = 0;
    bool in_string = false;
    char first = need_char();
    bool scalar = first != '{' && first != '[' && first != '"';
    for (;;) {
      size_t avail = win_.ensure(off + 1);
      if (avail <= off) {
        if (scalar && off > 0) return off;
        fail("unexpected end of data (truncated JSON)");
      }
      const char* p = win_.at(0);
      for (; off < avail; ++off) {
        char c = p[off];
        if (in_string) {
          if (c == '\\') {
            if (off + 1 >= avail) break;  // need the escaped byte too
            ++off;
          } else if (c == '"') {
            in_string = false;
            if (depth == 0) return off + 1;
          }
          continue;
        }
        if (scalar) {
          if (c == ',' || c == '}' || c == ']' || is_ws(c)) return off;
          continue;
        }
        switch (c) {
          case '"':
            in_string = true;
            break;
          case '{':
          case '[':
            ++depth;
            break;
          case '}':
          case ']':
            if (--depth == 0) return off + 1;
            if (depth < 0) fail("unbalanced brackets in JSON");
            break;
          default:
            break;
        }
      }
    }
  }

  void read_events() {
    if (need_char() != '[') fail("'traceEvents' is not an array");
    win_.advance(1);
    skip_ws();
    if (need_char() == ']') {
      win_.advance(1);
      return;
    }
    size_t index = 0;
    for (;;) {
      skip_ws();
      if (need_char() != '{')
        fail(fmt::format("traceEvents[{}] is not a JSON object", index));
      size_t len = scan_extent();
      events_.parse(win_.at(0), len, win_.capacity_from(0), index);
      win_.advance(len);
      ++index;
      if (options_.progress && (index & 0x3fff) == 0 &&
          !options_.progress(win_.consumed(), index))
        fail("load cancelled");
      skip_ws();
      char c = need_char();
      win_.advance(1);
      if (c == ']') return;
      if (c != ',') fail(fmt::format("expected ',' or ']' after traceEvents[{}]", index - 1));
    }
  }

  Window win_;
  Trace& trace_;
  std::string label_;
  EventParser events_;
  const LoadOptions& options_;
};

Platform detect_platform(const Trace& trace) {
  for (auto& [key, _] : trace.top_level_json) {
    if (key == "roctracer_version" || key.rfind("hip_", 0) == 0) return Platform::Rocm;
    if (key == "cupti_version" || key.rfind("cuda_", 0) == 0) return Platform::Cuda;
  }
  for (const Event& e : trace.events) {
    if (!e.is_runtime()) continue;
    std::string_view n = trace.strings.view(e.name);
    if (n.rfind("hip", 0) == 0) return Platform::Rocm;
    if (n.rfind("cuda", 0) == 0 || n.rfind("cu", 0) == 0) return Platform::Cuda;
  }
  return Platform::Unknown;
}

void finish(Trace& trace) {
  trace.platform = detect_platform(trace);
  trace.events.shrink_to_fit();
  trace.arg_lists.shrink_to_fit();
}

}  // namespace

Trace load_trace(const std::string& path, const LoadOptions& options) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) throw TraceError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, file.get());
  std::fseek(file.get(), 0, SEEK_END);
  long size = std::ftell(file.get());
  std::fseek(file.get(), 0, SEEK_SET);
  if (size <= 0) throw TraceError(fmt::format("{}: file is empty", path));
  bool gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  bool gz_name = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz_name && !gzip) throw TraceError(fmt::format("{}: not a gzip file (bad magic bytes)", path));

  Trace trace;
  trace.path = path;
  trace.file_bytes = static_cast<uint64_t>(size);
  std::unique_ptr<ByteSource> src;
  if (gzip)
    src = std::make_unique<GzipFileSource>(std::move(file), path);
  else
    src = std::make_unique<PlainFileSource>(std::move(file), path);
  TraceReader reader(*src, trace, path, options);
  reader.run();
  finish(trace);
  return trace;
}

Trace load_trace_from_json(std::string_view json, const std::string& label) {
  Trace trace;
  trace.path = label;
  trace.file_bytes = json.size();
  MemorySource src(json);
  LoadOptions options;
  TraceReader reader(src, trace, label, options);
  reader.run();
  finish(trace);
  return trace;
}

}  // namespace jarvis
