#include "trace/loader.h"

#include <simdjson.h>
#include <sys/stat.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "base/output_guard.h"
#include "trace/byte_source.h"
#include "trace/gzip_inflate.h"
#include "trace/memory_events.h"
#include "trace/numeric.h"
#include "trace/snapshot.h"

namespace jarvis {

namespace {

namespace od = simdjson::ondemand;

// ---------------------------------------------------------------------------
// A sliding window over the decompressed text, always followed by simdjson's
// padding so any complete value inside it can be parsed in place.

class Window {
 public:
  explicit Window(ByteSource& src) : src_(src) {
    // A small document in memory (an MCP argument, a fuzz input) gets a window
    // just larger than itself instead of 2 MiB zero-filled per load.
    size_t hint = src.remaining_hint();
    if (hint > 0 && hint < kInitial) read_size_ = std::max<size_t>(hint + 1, 4096);
    allocate(std::min(kInitial, 2 * read_size_) + simdjson::SIMDJSON_PADDING);
    std::memset(buf_.get(), 0, simdjson::SIMDJSON_PADDING);
  }

  // Ensures at least n bytes are available at pos (or the data ends). Returns
  // the number available (may be < n only at end of data).
  size_t ensure(size_t n) {
    while (end_ - pos_ < n && !eof_) fill();
    return end_ - pos_;
  }
  const char* at(size_t off) const { return buf_.get() + pos_ + off; }
  size_t capacity_from(size_t off) const { return size_ - (pos_ + off); }
  void advance(size_t n) {
    pos_ += n;
    consumed_ += n;
  }
  uint64_t consumed() const { return consumed_; }

 private:
  static constexpr size_t kInitial = 512 << 10;
  static constexpr size_t kRead = 256 << 10;
  size_t read_size_ = kRead;

  // The buffer is not zero-filled (2 MiB of memset per load): only the
  // padding after the data is, and nothing reads beyond it.
  void allocate(size_t bytes) {
    auto grown = std::make_unique_for_overwrite<char[]>(bytes);
    if (end_ > 0) std::memcpy(grown.get(), buf_.get(), end_);
    buf_ = std::move(grown);
    size_ = bytes;
  }

  void fill() {
    if (pos_ > 0) {
      std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    size_t usable = size_ - simdjson::SIMDJSON_PADDING;
    if (usable - end_ < read_size_ / 2) {
      allocate(std::max(size_ * 2, end_ + read_size_ + simdjson::SIMDJSON_PADDING));
      usable = size_ - simdjson::SIMDJSON_PADDING;
    }
    size_t n = src_.read(buf_.get() + end_, usable - end_);
    if (n == 0) eof_ = true;
    end_ += n;
    std::memset(buf_.get() + end_, 0, simdjson::SIMDJSON_PADDING);
  }

  ByteSource& src_;
  std::unique_ptr<char[]> buf_;
  size_t size_ = 0;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
};

// The structural bytes of 64 bytes of JSON text as bit masks (bit k: byte k):
// quotes, opening brackets ('{', '['), closing brackets ('}', ']'). SSE2 (every
// x86-64) does 16 bytes per compare. Reads all 64 bytes: the Window keeps
// SIMDJSON_PADDING (64) readable bytes after its data.
struct BlockMasks {
  uint64_t quote = 0;
  uint64_t open = 0;
  uint64_t close = 0;
  uint64_t backslash = 0;
};

// Bit k of the result: the XOR of bits 0..k of x (with x the quotes of a
// block, the bits inside strings, opening quote included).
inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

BlockMasks block_masks(const char* p) {
  BlockMasks m;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i lower = _mm_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    __m128i folded = _mm_or_si128(v, lower);
    auto bits = [](__m128i x) {
      return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(x)));
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote)) << (16 * k);
    m.open |= bits(_mm_cmpeq_epi8(folded, open)) << (16 * k);
    m.close |= bits(_mm_cmpeq_epi8(folded, close)) << (16 * k);
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash)) << (16 * k);
  }
#else
  for (int k = 0; k < 64; ++k) {
    uint64_t bit = uint64_t{1} << k;
    char c = p[k];
    if (c == '"') m.quote |= bit;
    if (c == '{' || c == '[') m.open |= bit;
    if (c == '}' || c == ']') m.close |= bit;
    if (c == '\\') m.backslash |= bit;
  }
#endif
  return m;
}

// The first '"' or '\\' in [p, end), or end. Reads up to 15 bytes past end:
// callers pass text simdjson holds with its padding behind it.
const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    auto hits = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
    if (hits != 0) return std::min(p + __builtin_ctz(hits), end);
  }
  return end;
#else
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
#endif
}

bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// ---------------------------------------------------------------------------
// Classification of events and of the args kept for them.

// `text == literal` with the literal's length known at compile time, so the
// compiler turns the memcmp into an integer compare or two; string_view's ==
// calls compare() and memcmp for every same-length key (7 % of a parse's
// CPU went there).
template <size_t N>
inline bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}

enum class KeepPolicy : uint8_t { Nothing, AllButHot, Launch, Gpu, StreamWait, MemorySample };

Cat parse_cat(std::string_view c) {
  if (is(c, "cpu_op")) return Cat::CpuOp;
  if (is(c, "python_function")) return Cat::PythonFunction;
  if (is(c, "kernel")) return Cat::Kernel;
  if (is(c, "cuda_runtime")) return Cat::CudaRuntime;
  if (is(c, "ac2g")) return Cat::Ac2g;
  if (is(c, "cuda_driver")) return Cat::CudaDriver;
  if (is(c, "gpu_memcpy")) return Cat::GpuMemcpy;
  if (is(c, "gpu_memset")) return Cat::GpuMemset;
  if (is(c, "user_annotation")) return Cat::UserAnnotation;
  if (is(c, "gpu_user_annotation")) return Cat::GpuUserAnnotation;
  if (is(c, "fwdbwd")) return Cat::FwdBwd;
  if (is(c, "cpu_instant_event")) return Cat::CpuInstantEvent;
  if (is(c, "Trace")) return Cat::Trace;
  // Older Kineto schemas (PyTorch <= 1.9): capitalised categories and
  // launch flows named async_cpu_to_gpu. TraceLens reads none of them and
  // finds no GPU events; see docs/deviations.md.
  if (is(c, "Operator")) return Cat::CpuOp;
  if (is(c, "Kernel")) return Cat::Kernel;
  if (is(c, "Runtime")) return Cat::CudaRuntime;
  if (is(c, "Memcpy")) return Cat::GpuMemcpy;
  if (is(c, "Memset")) return Cat::GpuMemset;
  if (is(c, "async_cpu_to_gpu")) return Cat::Ac2g;
  return Cat::Other;
}

Phase parse_phase(std::string_view p) {
  if (is(p, "X")) return Phase::Complete;
  if (is(p, "i") || is(p, "I")) return Phase::Instant;
  if (is(p, "s")) return Phase::FlowStart;
  if (is(p, "f")) return Phase::FlowEnd;
  if (is(p, "M")) return Phase::Metadata;
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
    // profile_memory=True [memory] samples (src/memory reads them back).
    case Cat::CpuInstantEvent:
      return KeepPolicy::MemorySample;
    default:
      return KeepPolicy::Nothing;
  }
}

// Collective kernels carry their process group and message metadata
// (coll_analysis and the multi-rank collective report read them).
bool is_collective_metadata_key(std::string_view key) {
  return is(key, "Collective name") || is(key, "Process Group Name") ||
         is(key, "Process Group Ranks") || is(key, "Process Group Description") ||
         is(key, "Group size") || is(key, "dtype") || is(key, "In msg nelems") ||
         is(key, "Out msg nelems") || is(key, "In split size") || is(key, "Out split size");
}

bool keep_arg(KeepPolicy policy, std::string_view key) {
  switch (policy) {
    case KeepPolicy::Nothing:
      return false;
    case KeepPolicy::AllButHot:
      return !(is(key, "Ev Idx") || is(key, "Record function id") || is(key, "finished") ||
               is(key, "Python id") || is(key, "Python parent id") || is(key, "External id") ||
               is(key, "Sequence number"));
    case KeepPolicy::Launch:
      return is(key, "kernel") || is(key, "grid") || is(key, "block") || is(key, "shared memory") ||
             is(key, "bytes");
    case KeepPolicy::Gpu:
      return is(key, "grid") || is(key, "block") || is(key, "bytes") || is(key, "kind") ||
             is(key, "shared memory") || is_collective_metadata_key(key);
    case KeepPolicy::StreamWait:
      return is(key, "cuda_sync_kind") || is(key, "wait_on_stream") ||
             is(key, "wait_on_cuda_event_record_corr_id");
    case KeepPolicy::MemorySample:
      return is_memory_sample_arg(key);
  }
  return false;
}

// Typed hot args: stored on Event, parsed straight from their JSON text.
int64_t EventFields::*hot_field(std::string_view key) {
  switch (key.size()) {
    case 6:
      if (is(key, "stream")) return &EventFields::stream;
      if (is(key, "device")) return &EventFields::device;
      return nullptr;
    case 9:
      return is(key, "Python id") ? &EventFields::python_id : nullptr;
    case 11:
      if (is(key, "External id")) return &EventFields::external_id;
      if (is(key, "correlation")) return &EventFields::correlation;
      return nullptr;
    case 15:
      return is(key, "Sequence number") ? &EventFields::sequence_number : nullptr;
    case 16:
      return is(key, "Python parent id") ? &EventFields::python_parent_id : nullptr;
    default:
      return nullptr;
  }
}

// The integer a JSON number denotes, as TraceLens would use it as a key: an
// integer literal, or a float literal with an integral value. kNoInt for
// anything else. Returns false when the text is not a valid number.
bool int_from_number_text(std::string_view text, int64_t& out) {
  out = kNoInt;
  const char* end = text.data() + text.size();
  {
    // The common case, ids and counters: an optional '-' and up to 18 digits
    // (no overflow possible), read without from_chars's general machinery.
    const char* p = text.data();
    bool negative = p != end && *p == '-';
    if (negative) ++p;
    if (end - p >= 1 && end - p <= 18) {
      int64_t v = 0;
      for (; p != end; ++p) {
        auto digit = static_cast<unsigned>(*p - '0');
        if (digit > 9) break;
        v = v * 10 + digit;
      }
      if (p == end) {
        out = negative ? -v : v;
        return true;
      }
    }
  }
  {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec == std::errc() && p == end) {  // the common case: a plain integer
      out = v;
      return true;
    }
    bool integer_literal = std::none_of(text.begin(), text.end(),
                                        [](char c) { return c == '.' || c == 'e' || c == 'E'; });
    if (integer_literal && (ec != std::errc::result_out_of_range || p != end)) return false;
  }
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), end, d);
  if (p != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) return false;
  if (ec == std::errc())
    if (auto exact = exact_int64(d)) out = *exact;
  return true;
}

// ---------------------------------------------------------------------------
// Parses one traceEvents element (a complete JSON object in the window).
//
// Args are staged as (key, raw JSON text) views and only turned into
// PyValues when this exact kept set has not been seen before: repeated
// iterations of a model produce the same shapes/dtypes/geometry over and
// over, and those events then share one ArgList instead of building and
// storing the same nested lists again.

class EventParser {
 public:
  EventParser(Trace& trace, std::string label) : trace_(&trace), label_(std::move(label)) {
    scratch_.reserve(4096);
  }

  // Parses the following events into another trace (a parallel load's part),
  // forgetting what was cached for the previous one. When arg_keys is set,
  // each new arg list's identity text is appended to it (TraceJoiner). An
  // arg list that `joined` (the whole's joiner) already holds is not built
  // again: the event names it by its whole id (TraceJoiner::joined_arg).
  void bind(Trace& trace, std::vector<std::string>* arg_keys, const TraceJoiner* joined) {
    // An arg list the previous part took from the same joiner keeps its whole
    // id (the joiner's index only grows), so those entries stay: the next
    // part finds them without the joiner's lock and hash. Ids local to the
    // previous part mean nothing in this one.
    if (joined == nullptr || joined != joined_ || arg_cache_.size() > kMaxKeptArgCache)
      arg_cache_.clear();
    else
      std::erase_if(arg_cache_, [](const auto& entry) { return entry.second >= 0; });
    trace_ = &trace;
    arg_keys_ = arg_keys;
    joined_ = joined;
    last_cat_ = LastCategory{};
    empty_id_ = kUnset;
  }

  void parse(const char* text, size_t len, size_t capacity, size_t index) {
    index_ = index;
    text_end_ = text + len;
    auto doc_result = parser_.iterate(text, len, capacity);
    if (doc_result.error()) fail(doc_result.error());
    od::document& doc = doc_result.value_unsafe();
    od::object obj;
    if (auto err = doc.get_object().get(obj)) fail(err, "is not a JSON object");
    read_event(obj);
  }

  // Parses `count` events written as one JSON array, events[first_index...],
  // in one simdjson pass rather than one per 300-byte event: 5 % less CPU
  // and wall on a 2-worker load of gpt2_x32 (21 interleaved runs). False,
  // with some of the events added, on any error: the caller parses them
  // again one by one (parse()), which raises that event's own error.
  bool parse_array(const char* text, size_t len, size_t capacity, size_t first_index,
                   size_t count) {
    try {
      text_end_ = text + len;
      auto doc_result = parser_.iterate(text, len, capacity);
      if (doc_result.error()) return false;
      od::array events;
      if (doc_result.value_unsafe().get_array().get(events)) return false;
      size_t k = 0;
      for (auto element : events) {
        od::object obj;
        if (element.error() || k == count || element.value_unsafe().get_object().get(obj))
          return false;
        index_ = first_index + k++;
        read_event(obj);
      }
      return k == count;
    } catch (const TraceError&) {
      return false;
    }
  }

 private:
  void read_event(od::object& obj) {
    EventFields ev;
    bool has_ph = false;
    staged_.clear();
    for (auto field_result : obj) {
      // The field and its value are used in place: copying them (get(field),
      // a value by value) read back 16 bytes just written in two stores, a
      // store-forwarding stall per member that was a tenth of the parse.
      if (auto err = field_result.error()) fail(err);
      od::field& field = field_result.value_unsafe();
      std::string_view key;
      if (auto err = key_of(field, key)) fail(err);
      read_member(ev, key, field.value(), has_ph);
    }
    if (!has_ph) fail_plain("has no 'ph' (phase) member");
    if (ev.cat == Cat::None && ev.cat_name == 0) ev.cat_name = empty_id();
    if (!staged_.empty()) apply_args(ev);
    trace_->add_event(ev);
  }

  struct StagedArg {
    std::string_view key;  // unescaped; valid while this event's document lives
    std::string_view raw;  // the value's JSON text
    od::json_type type;
  };

  void read_member(EventFields& ev, std::string_view key, od::value& value, bool& has_ph) {
    switch (key.size()) {
      case 2:
        if (is(key, "ph")) {
          ev.ph = parse_phase(get_string(value, "ph"));
          has_ph = true;
        } else if (is(key, "ts")) {
          ev.ts_ns = get_ns(value, "ts");
        } else if (is(key, "id")) {
          int64_t v;
          if (get_int(value, v)) ev.flow_id = v;
        } else if (is(key, "bp")) {
          std::string_view bp;
          if (!value.get_string().get(bp)) ev.bp_enclosing = bp == "e";
        }
        return;
      case 3:
        if (is(key, "cat")) {
          std::string_view c = get_string(value, "cat");
          if (last_cat_.id == kUnset || c != last_cat_.text) {
            last_cat_.id = trace_->strings.intern(c);
            last_cat_.text.assign(c);
            last_cat_.cat = parse_cat(c);
          }
          ev.cat = last_cat_.cat;
          ev.cat_name = last_cat_.id;
        } else if (is(key, "dur")) {
          ev.dur_ns = get_ns(value, "dur");
        } else if (is(key, "pid")) {
          ev.pid = get_proc_id(value, "pid");
        } else if (is(key, "tid")) {
          ev.tid = get_proc_id(value, "tid");
        }
        return;
      case 4:
        if (is(key, "name")) ev.name = trace_->strings.intern(get_string(value, "name"));
        if (is(key, "args")) {
          od::object args;
          if (value.get_object().get(args)) fail_field("args", "must be an object");
          ev.has_args = true;
          stage_args(ev, args);
        }
        return;
      default:
        return;
    }
  }

  // A member's key as a view into the event's text when it holds no escape
  // (Kineto's keys never do), else simdjson's unescaped copy: the view skips
  // the copy into simdjson's string buffer that unescaped_key() makes for
  // every key.
  simdjson::error_code key_of(od::field& field, std::string_view& key) {
    const char* start = field.key().raw();
    const char* end = find_quote_or_backslash(start, text_end_);
    if (end < text_end_ && *end == '"') {
      key = std::string_view(start, static_cast<size_t>(end - start));
      return simdjson::SUCCESS;
    }
    return field.unescaped_key().get(key);
  }

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

  uint32_t empty_id() {
    if (empty_id_ == kUnset) empty_id_ = trace_->strings.intern("");
    return empty_id_;
  }
  // Consecutive events mostly share a category: skip its hash lookup and
  // classification then.
  struct LastCategory {
    std::string text;
    uint32_t id = kUnset;
    Cat cat = Cat::None;
  };

  std::string_view get_string(od::value& v, std::string_view field) {
    std::string_view s;
    if (v.get_string().get(s)) fail_field(field, "must be a string");
    return s;
  }
  // A ts / dur in µs as int64 ns: exact from the number's text when it has
  // no digits below 1 ns, else the correctly rounded double rounded to the
  // nearest ns (docs/deviations.md).
  int64_t get_ns(od::value& v, std::string_view field) {
    double d;
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) fail_field(field, "must be a number");
    std::string_view raw = trim_right(v.raw_json_token());
    int64_t ns = kNoTime;
    // decimal_us_to_ns accepts only JSON's number grammar, so a success
    // needs no parse into a double.
    if (decimal_us_to_ns(raw, ns)) return ns;
    if (v.get_double().get(d)) fail_field(field, "must be a number");
    if (!us_to_ns(d, ns)) fail_field(field, "is out of range (more than 2^63 ns, or not finite)");
    return ns;
  }
  bool get_int(od::value& v, int64_t& out) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) return false;
    if (!v.get_int64().get(out)) return true;
    double d;
    if (v.get_double().get(d)) return false;
    auto exact = exact_int64(d);
    if (!exact) return false;
    out = *exact;
    return true;
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
      p.value = trace_->strings.intern(get_string(v, field));
      p.is_string = true;
    } else {
      fail_field(field, "must be an integer or a string");
    }
    return p;
  }

  // Records every arg as (key, raw text); hot integer args also go straight
  // into their Event fields.
  void stage_args(EventFields& ev, od::object& args) {
    for (auto field_result : args) {
      if (field_result.error()) fail_plain("has malformed args");
      od::field& field = field_result.value_unsafe();  // in place, as in parse()
      std::string_view key;
      if (key_of(field, key)) fail_plain("has a malformed key in args");
      od::value& value = field.value();
      od::json_type type;
      if (value.type().get(type)) fail_arg(key, "is malformed");
      std::string_view raw = raw_text(value, type, key);
      if (int64_t EventFields::*hot = hot_field(key)) {
        if (type == od::json_type::number && !int_from_number_text(raw, ev.*hot))
          fail_arg(key, "is not a valid number");
      }
      staged_.push_back({key, raw, type});
    }
  }

  std::string_view raw_text(od::value& value, od::json_type type, std::string_view key) {
    std::string_view raw;
    simdjson::error_code err = simdjson::SUCCESS;
    if (type == od::json_type::array) {
      od::array arr;
      err = value.get_array().get(arr);
      if (!err) err = arr.raw_json().get(raw);
    } else if (type == od::json_type::object) {
      od::object obj;
      err = value.get_object().get(obj);
      if (!err) err = obj.raw_json().get(raw);
    } else {
      raw = value.raw_json_token();
    }
    if (err) fail_arg(key, fmt::format("is not valid JSON: {}", simdjson::error_message(err)));
    return trim_right(raw);
  }

  [[noreturn]] void fail_arg(std::string_view key, std::string_view what) {
    throw TraceError(fmt::format("{}: traceEvents[{}]: args['{}'] {}", label_, index_, key, what));
  }

  void apply_args(EventFields& ev) {
    if (ev.ph == Phase::Metadata) {
      apply_metadata(ev);
      return;
    }
    KeepPolicy policy = keep_policy(ev.cat);
    // Kineto's recorded stream waits (cat "cuda_sync", written with
    // enable_cuda_sync_events): the critical path links the waiting stream to
    // the recording one through them.
    if (ev.cat == Cat::Other && trace_->strings.view(ev.cat_name) == "cuda_sync")
      policy = KeepPolicy::StreamWait;
    kept_key_.clear();
    for (const StagedArg& a : staged_) {
      if (!keep_arg(policy, a.key)) {
        check_dropped(a);
        continue;
      }
      kept_key_.append(a.key);
      kept_key_.push_back('\0');
      kept_key_.append(a.raw);
      kept_key_.push_back('\x01');
    }
    if (kept_key_.empty()) return;
    // [memory] samples almost never repeat (address and running totals), so
    // looking them up found nothing and caching their texts was most of their
    // load time (perf: 40% of a trace with 150,000 samples).
    bool shared = policy != KeepPolicy::MemorySample;
    auto it = shared ? arg_cache_.find(std::string_view(kept_key_)) : arg_cache_.end();
    if (it != arg_cache_.end()) {
      ev.args = it->second;
      return;
    }
    // Repeated iterations of a model repeat their arg lists across batches;
    // parsing them again costs more than the whole parse of their events.
    if (joined_ && shared) {
      if (int32_t whole_id = joined_->find_arg_list(kept_key_); whole_id >= 0) {
        ev.args = TraceJoiner::joined_arg(whole_id);
        arg_cache_.emplace(kept_key_, ev.args);
        return;
      }
    }
    ArgList kept;
    for (const StagedArg& a : staged_)
      if (keep_arg(policy, a.key)) kept.emplace_back(trace_->strings.intern(a.key), to_value(a));
    ev.args = static_cast<int32_t>(trace_->arg_lists.size());
    trace_->arg_lists.push_back(std::move(kept));
    if (!shared) {
      // A key no other list has, so that the joiner keeps every sample's
      // list as the sequential parse does.
      if (arg_keys_) arg_keys_->push_back(fmt::format("{}\x02{}", kept_key_, index_));
      return;
    }
    arg_cache_.emplace(kept_key_, ev.args);
    if (arg_keys_) arg_keys_->push_back(kept_key_);
  }

  // Values that are not kept are still checked, so malformed JSON anywhere in
  // an event is reported. Plain scalars are checked from their text; the
  // rare containers and escaped strings go through the full parse.
  void check_dropped(const StagedArg& a) {
    int64_t unused;
    switch (a.type) {
      case od::json_type::number:
        if (!int_from_number_text(a.raw, unused)) fail_arg(a.key, "is not a valid number");
        return;
      case od::json_type::boolean:
        if (a.raw != "true" && a.raw != "false") fail_arg(a.key, "is not a valid literal");
        return;
      case od::json_type::null:
        if (a.raw != "null") fail_arg(a.key, "is not a valid literal");
        return;
      case od::json_type::string:
        if (a.raw.find('\\') == std::string_view::npos) return;
        break;
      default:
        break;
    }
    to_value(a);
  }

  // Full parse of one staged value (wrapped in [ ] so scalars parse as values).
  PyValue to_value(const StagedArg& a) {
    scratch_.clear();
    scratch_.push_back('[');
    scratch_.append(a.raw);
    scratch_.push_back(']');
    size_t len = scratch_.size();
    scratch_.append(simdjson::SIMDJSON_PADDING, '\0');
    auto doc_result = value_parser_.iterate(scratch_.data(), len, scratch_.size());
    od::array arr;
    if (doc_result.error() || doc_result.value_unsafe().get_array().get(arr))
      fail_arg(a.key, "is not valid JSON");
    for (auto item : arr) {
      if (item.error()) fail_arg(a.key, "is not valid JSON");
      current_arg_ = a.key;
      return to_py(item.value_unsafe(), 0);
    }
    fail_arg(a.key, "is not valid JSON");
  }

  [[noreturn]] void fail_value(std::string_view what) { fail_arg(current_arg_, what); }

  // Kineto args nest at most three levels (lists of shapes of a TensorList);
  // anything much deeper is not a trace and would only risk the stack.
  static constexpr int kMaxArgDepth = 100;

  PyValue to_py(od::value& v, int depth) {
    if (depth > kMaxArgDepth)
      fail_value(fmt::format("is nested too deeply (more than {} levels)", kMaxArgDepth));
    od::json_type type;
    if (v.type().get(type)) fail_value("has a malformed value");
    switch (type) {
      case od::json_type::null:
        return PyValue::none();
      case od::json_type::boolean: {
        bool b = false;
        if (v.get_bool().get(b)) fail_value("has a malformed boolean");
        return PyValue::boolean(b);
      }
      case od::json_type::number: {
        od::number_type nt;
        if (v.get_number_type().get(nt)) fail_value("has a malformed number");
        if (nt == od::number_type::signed_integer) {
          int64_t i = 0;
          if (v.get_int64().get(i)) fail_value("has a malformed integer");
          return PyValue::integer(i);
        }
        double d = 0;
        if (v.get_double().get(d)) fail_value("has a malformed number");
        return PyValue::real(d);
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s)) fail_value("has a malformed string");
        return PyValue::string(std::string(s));
      }
      case od::json_type::array: {
        std::vector<PyValue> items;
        od::array arr;
        if (v.get_array().get(arr)) fail_value("has a malformed array");
        for (auto item : arr) {
          if (item.error()) fail_value("has a malformed array");
          items.push_back(to_py(item.value_unsafe(), depth + 1));
        }
        return PyValue::make_list(std::move(items));
      }
      case od::json_type::object: {
        // Rare (no Kineto arg used by reports is an object): keep as a list
        // of [key, value] pairs so nothing is lost.
        std::vector<PyValue> pairs;
        od::object obj;
        if (v.get_object().get(obj)) fail_value("has a malformed object");
        for (auto f : obj) {
          if (f.error()) fail_value("has a malformed object");
          od::field& field = f.value_unsafe();
          std::string_view k;
          if (field.unescaped_key().get(k)) fail_value("has a malformed key");
          std::vector<PyValue> pair;
          pair.push_back(PyValue::string(std::string(k)));
          pair.push_back(to_py(field.value(), depth + 1));
          pairs.push_back(PyValue::make_list(std::move(pair)));
        }
        return PyValue::make_list(std::move(pairs));
      }
    }
    return PyValue::none();
  }

  void apply_metadata(const EventFields& ev) {
    std::string_view what = trace_->strings.view(ev.name);
    // Kineto writes process metadata with tid 0; other Chrome trace writers
    // (XProf's trace viewer JSON) leave tid out.
    bool process_level = !ev.tid.present() || (ev.tid.value == 0 && !ev.tid.is_string);
    for (const StagedArg& a : staged_) {
      if (a.type != od::json_type::string) {
        check_dropped(a);
        continue;
      }
      PyValue value = to_value(a);
      if (what == "process_name" && a.key == "name" && process_level)
        trace_->metadata.process_name[ev.pid] = value.s;
      else if (what == "process_labels" && a.key == "labels" && process_level)
        trace_->metadata.process_labels[ev.pid] = value.s;
      else if (what == "thread_name" && a.key == "name")
        trace_->metadata.thread_name[{ev.pid, ev.tid}] = value.s;
    }
  }

  static constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();

  Trace* trace_;
  std::vector<std::string>* arg_keys_ = nullptr;
  const TraceJoiner* joined_ = nullptr;
  std::string label_;
  od::parser parser_;        // one event at a time
  od::parser value_parser_;  // staged arg values (cache misses)
  size_t index_ = 0;
  std::vector<StagedArg> staged_;
  std::string kept_key_;
  std::string scratch_;
  std::string_view current_arg_;
  ArgListIndex arg_cache_;
  // Bounds what bind() keeps across parts on traces whose arg lists never repeat.
  static constexpr size_t kMaxKeptArgCache = 1 << 16;
  LastCategory last_cat_;
  const char* text_end_ = nullptr;  // end of the event being parsed
  uint32_t empty_id_ = kUnset;
};

// ---------------------------------------------------------------------------
// Parses traceEvents on worker threads. The reading thread finds each event's
// extent and copies its text into a batch; a worker parses a whole batch into
// a Trace of its own (a part); parts are joined into the whole trace in batch
// order (TraceJoiner), so the result equals the sequential parse. The join
// runs on the workers, not the reading thread, which is the load's critical
// path: the worker that finishes the oldest unjoined batch joins it and every
// finished batch after it, one worker at a time. An error comes out as the
// sequential parse raises it: that of the first failing event in array
// order, before any error found further on.

class ParallelEventParse {
 public:
  // Batches of `batch_bytes` of JSON text, `large_batch_bytes` once
  // `large_after` bytes have been queued.
  ParallelEventParse(Trace& trace, const std::string& label, unsigned workers, size_t batch_bytes,
                     size_t large_batch_bytes, size_t large_after)
      : joiner_(trace),
        batch_bytes_(batch_bytes),
        large_batch_bytes_(std::max(batch_bytes, large_batch_bytes)),
        large_after_(large_after),
        max_in_flight_(2 * size_t{workers} + 2) {
    // Fewer threads than asked when the system refuses more (none: the
    // caller parses on its own thread).
    try {
      for (unsigned k = 0; k < workers; ++k) workers_.emplace_back([this, label] { work(label); });
    } catch (const std::system_error&) {
    }
  }
  ~ParallelEventParse() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : workers_) t.join();  // before the batches they may hold go
  }
  ParallelEventParse(const ParallelEventParse&) = delete;
  ParallelEventParse& operator=(const ParallelEventParse&) = delete;

  size_t workers() const { return workers_.size(); }

  // Queues traceEvents[index], whose text is [text, text + len).
  void add(const char* text, size_t len, size_t index) {
    // A batch's text never regrows: a regrowth copies it into fresh pages.
    // The batch is one JSON array: '[', the events with commas, ']'.
    if (filling_ &&
        filling_->text.size() + len + 2 + simdjson::SIMDJSON_PADDING > filling_->text.capacity())
      submit();
    if (!filling_) {
      filling_ = take_spare();
      filling_->first_index = index;
      // The same reservation every time (twice the largest batch, or the
      // one event when larger), so a reused batch never reallocates into
      // fresh pages; capacity never written is never touched.
      filling_->text.reserve(std::max(2 * large_batch_bytes_, len) + 2 +
                             simdjson::SIMDJSON_PADDING);
      filling_->text.push_back('[');
    } else {
      filling_->text.push_back(',');
    }
    filling_->spans.push_back({filling_->text.size(), len});
    filling_->text.append(text, len);
    if (filling_->text.size() >= batch_bytes_) submit();
  }

  // Parses and joins every event queued; rethrows the first event's error.
  void finish() {
    submit();
    std::unique_lock lock(mu_);
    batch_joined_.wait(lock, [&] { return in_flight_.empty() || error_; });
    throw_if_failed();
  }

  // For an error the reader met after the events queued so far: those are
  // parsed first, and the first of their errors (rethrown here) wins.
  void rethrow_earlier_error() {
    if (!failed_) finish();
  }

 private:
  struct Span {
    size_t offset;
    size_t len;
  };
  struct Batch {
    std::string text;      // '[', the events' texts with commas, ']', simdjson padding
    size_t array_len = 0;  // up to and with the ']'
    std::vector<Span> spans;
    size_t first_index = 0;
    Trace part;
    std::vector<std::string> arg_keys;
    std::exception_ptr error;
    bool done = false;
  };

  void submit() {
    if (!filling_) return;
    queued_bytes_ += filling_->text.size();
    if (queued_bytes_ >= large_after_) batch_bytes_ = large_batch_bytes_;
    filling_->text.push_back(']');
    filling_->array_len = filling_->text.size();
    filling_->text.append(simdjson::SIMDJSON_PADDING, '\0');
    {
      std::unique_lock lock(mu_);
      // Bounds memory. A failed batch stops the load here: its error is
      // the first in array order, whatever the reader meets further on.
      batch_joined_.wait(lock, [&] { return in_flight_.size() < max_in_flight_ || error_; });
      throw_if_failed();
      pending_.push_back(filling_.get());
      in_flight_.push_back(std::move(filling_));
    }
    work_ready_.notify_one();
  }

  // With mu_ held, on the reading thread: rethrows a failed batch's error.
  void throw_if_failed() {
    if (!error_) return;
    failed_ = true;
    std::rethrow_exception(error_);
  }

  // A joined batch again, its buffers kept: fresh allocations of this size
  // come from new pages, and zeroing those cost more than the copies.
  std::unique_ptr<Batch> take_spare() {
    std::unique_ptr<Batch> batch;
    {
      std::lock_guard lock(mu_);
      if (spare_.empty()) return std::make_unique<Batch>();
      batch = std::move(spare_.back());
      spare_.pop_back();
    }
    clear_part(*batch);
    batch->text.clear();
    batch->spans.clear();
    batch->error = nullptr;
    batch->done = false;
    return batch;
  }

  // An empty part, its event store's buffer kept.
  static void clear_part(Batch& batch) {
    MappableVector<Event> events = std::move(batch.part.events);
    events.clear();
    batch.part = Trace();
    batch.part.events = std::move(events);
    batch.arg_keys.clear();
  }

  void start_part(EventParser& parser, Batch& batch) {
    // The join interns the part's strings into the whole, which computes
    // their name flags: the part's pool skips them.
    batch.part.strings = StringPool(/*name_flags=*/false);
    batch.part.events.reserve(batch.spans.size());
    parser.bind(batch.part, &batch.arg_keys, &joiner_);
  }

  // The whole batch in one pass; on any error the part is parsed again
  // event by event, so the error is the one a one-thread load raises.
  void parse(EventParser& parser, Batch& batch) {
    try {
      start_part(parser, batch);
      if (parser.parse_array(batch.text.data(), batch.array_len, batch.text.size(),
                             batch.first_index, batch.spans.size()))
        return;
      clear_part(batch);
      start_part(parser, batch);
      for (size_t k = 0; k < batch.spans.size(); ++k) {
        const Span& span = batch.spans[k];
        parser.parse(batch.text.data() + span.offset, span.len, batch.text.size() - span.offset,
                     batch.first_index + k);
      }
    } catch (...) {
      batch.error = std::current_exception();
    }
  }

  // With mu_ held: joins the oldest batches while they are done, unless
  // another worker is joining (it will see this one's batch when it looks
  // again) or an earlier batch failed. The lock is released around appends.
  void join_done(std::unique_lock<std::mutex>& lock) {
    if (joining_) return;
    joining_ = true;
    while (!error_ && !in_flight_.empty() && in_flight_.front()->done) {
      Batch& batch = *in_flight_.front();
      if (batch.error) {
        error_ = batch.error;
        break;
      }
      lock.unlock();
      std::exception_ptr append_error;
      try {
        joiner_.append(std::move(batch.part), batch.arg_keys);
      } catch (...) {
        append_error = std::current_exception();
      }
      lock.lock();
      if (append_error) {
        error_ = append_error;
        break;
      }
      spare_.push_back(std::move(in_flight_.front()));
      in_flight_.pop_front();
      batch_joined_.notify_all();
    }
    joining_ = false;
    batch_joined_.notify_all();
  }

  void work(const std::string& label) {
    Trace unused;
    EventParser parser(unused, label);
    std::unique_lock lock(mu_);
    for (;;) {
      work_ready_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      Batch* batch = pending_.front();
      pending_.pop_front();
      lock.unlock();
      parse(parser, *batch);
      lock.lock();
      batch->done = true;
      join_done(lock);
    }
  }

  TraceJoiner joiner_;  // used by one worker at a time (joining_)
  size_t batch_bytes_;  // the reading thread's alone, as the two below
  const size_t large_batch_bytes_;
  const size_t large_after_;
  size_t queued_bytes_ = 0;
  const size_t max_in_flight_;
  std::unique_ptr<Batch> filling_;  // the reading thread's alone
  bool failed_ = false;             // the reading thread's alone
  std::mutex mu_;                   // guards everything below
  std::condition_variable work_ready_;
  std::condition_variable batch_joined_;
  std::deque<std::unique_ptr<Batch>> in_flight_;  // submitted, not yet joined; in order
  std::deque<Batch*> pending_;                    // not yet taken by a worker
  std::vector<std::unique_ptr<Batch>> spare_;     // joined, for reuse
  std::exception_ptr error_;                      // the first failing batch's, in order
  bool joining_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// ---------------------------------------------------------------------------
// Streams the top-level object and feeds each traceEvents element to the
// EventParser.

class TraceReader {
 public:
  TraceReader(ByteSource& src, Trace& trace, std::string label, const LoadOptions& options,
              unsigned parse_workers = 0)
      : win_(src),
        trace_(trace),
        label_(std::move(label)),
        events_(trace, label_),
        options_(options),
        parse_workers_(parse_workers) {}

  void run() {
    skip_ws();
    if (win_.ensure(1) == 0) fail("file is empty (no JSON data)");
    if (peek() != '{') fail(not_json_message());
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
          if (saw_events) fail("'traceEvents' appears twice in the top-level object");
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
    if (!saw_events && !trace_.top_level_json.empty() &&
        trace_.top_level_json.front().first == "rocprofiler-sdk-tool")
      fail(
          "a rocprofv3 results file, not a PyTorch profiler trace: this command needs a Kineto "
          "trace (jarvis report / info and the MCP tools load_trace, ops_summary and "
          "kernel_counters read rocprofv3)");
    if (!saw_events) fail("no 'traceEvents' array (not a Kineto/Chrome trace)");
    if (trace_.events.empty()) fail("'traceEvents' is empty: the trace has no events");
  }

 private:
  [[noreturn]] void fail(std::string_view what) {
    throw TraceError(fmt::format("{}: {}", label_, what));
  }

  // Inputs of other profilers, named with what to do instead.
  std::string_view unsupported_format(const unsigned char* p, size_t n) const {
    auto named = [&](std::string_view suffix) {
      return label_.size() >= suffix.size() &&
             label_.compare(label_.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (n >= 6 && std::memcmp(p, "SQLite", 6) == 0)
      return "not a Kineto trace: this is a SQLite database, e.g. an Nsight Systems export "
             "(`nsys export --type sqlite`), which this command does not read; `jarvis report`, "
             "`info`, `insights`, `compare` and MCP load_trace read Nsight exports "
             "(docs/nsys.md)";
    if (named(".nsys-rep") || named(".qdrep"))
      return "not a Kineto trace: this is an Nsight Systems report; export it with `nsys export "
             "--type sqlite` and give the .sqlite file to `jarvis report`, `info`, `insights`, "
             "`compare` or MCP load_trace (docs/nsys.md)";
    if (named(".xplane.pb") || named(".pb"))
      return "not a Kineto trace: this looks like a JAX / XLA XPlane protobuf (.xplane.pb), "
             "which this command does not read; `jarvis report`, `jarvis info` and MCP load_trace "
             "read XPlane (docs/jax.md)";
    return {};
  }

  // Describes what the data looks like instead, for a clearer error.
  std::string not_json_message() {
    size_t n = win_.ensure(8);
    const auto* p = reinterpret_cast<const unsigned char*>(win_.at(0));
    if (n >= 4 && p[0] == 0x89 && p[1] == 'P' && p[2] == 'N' && p[3] == 'G')
      return "not JSON: this is a PNG image";
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return "not JSON: gzip data inside gzip data";
    if (p[0] == '[')
      return "not a Kineto trace: the top-level JSON value is an array, not an object";
    if (std::string_view other = unsupported_format(p, n); !other.empty())
      return std::string(other);
    std::string hex;
    for (size_t k = 0; k < std::min<size_t>(n, 8); ++k) hex += fmt::format("{:02x} ", p[k]);
    return fmt::format(
        "not JSON or not a JSON object (a Kineto trace starts with '{{'; "
        "the data starts with bytes {})",
        trim_right(hex));
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
  // object, array or scalar), loading more data as needed. Only quotes and
  // brackets change the state, so the scan visits those bytes alone, found
  // 64 at a time (block_masks).
  size_t scan_extent() {
    char first = need_char();
    if (first != '{' && first != '[' && first != '"') return scan_scalar_extent();
    size_t off = 0;  // start of the next block to look at
    int depth = 0;
    bool in_string = false;
    for (;;) {
      size_t avail = win_.ensure(off + 1);
      if (avail <= off) fail("unexpected end of data (truncated JSON)");
      const char* p = win_.at(0);
      for (; off < avail; off += 64) {
        BlockMasks m = block_masks(p + off);
        uint64_t valid = avail - off >= 64 ? ~uint64_t{0} : (uint64_t{1} << (avail - off)) - 1;
        m.quote &= valid;
        // Without escapes every quote toggles the string state: the brackets
        // outside strings come from one prefix XOR, and only they are visited.
        bool escape_free = !(m.backslash & valid) && (off == 0 || p[off - 1] != '\\');
        if (escape_free && first != '"') {
          uint64_t inside = prefix_xor(m.quote) ^ (in_string ? ~uint64_t{0} : 0);
          uint64_t brackets = (m.open | m.close) & valid & ~inside;
          while (brackets) {
            int k = __builtin_ctzll(brackets);
            brackets &= brackets - 1;
            if (m.open & (uint64_t{1} << k)) {
              ++depth;
            } else {
              if (--depth == 0) return off + static_cast<size_t>(k) + 1;
              if (depth < 0) fail("unbalanced brackets in JSON");
            }
          }
          if (__builtin_popcountll(m.quote) % 2 == 1) in_string = !in_string;
          continue;
        }
        uint64_t structural = (m.quote | m.open | m.close) & valid;
        while (structural) {
          int k = __builtin_ctzll(structural);
          structural &= structural - 1;
          uint64_t bit = uint64_t{1} << k;
          size_t at = off + static_cast<size_t>(k);
          if (in_string) {
            if (!(m.quote & bit)) continue;
            size_t backslashes = 0;  // the opening quote stops this walk
            while (p[at - 1 - backslashes] == '\\') ++backslashes;
            if (backslashes % 2 == 1) continue;  // an escaped quote
            in_string = false;
            if (depth == 0) return at + 1;
          } else if (m.quote & bit) {
            in_string = true;
          } else if (m.open & bit) {
            ++depth;
          } else {
            if (--depth == 0) return at + 1;
            if (depth < 0) fail("unbalanced brackets in JSON");
          }
        }
      }
      off = avail;
    }
  }

  // A number or literal runs to the next delimiter.
  size_t scan_scalar_extent() {
    size_t off = 0;
    for (;;) {
      size_t avail = win_.ensure(off + 1);
      if (avail <= off) return off;
      const char* p = win_.at(0);
      for (; off < avail; ++off) {
        char c = p[off];
        if (c == ',' || c == '}' || c == ']' || is_ws(c)) return off;
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
    // One event at a time where it lies in the window: batching them on
    // this thread (a copy, a join) measured 1-2 ms slower on 4 MB traces.
    if (parse_workers_ == 0) {
      read_event_list(nullptr);
      return;
    }
    size_t batch = options_.parse_batch_bytes ? options_.parse_batch_bytes : kParseBatchBytes;
    size_t large = options_.parse_batch_bytes ? batch : kLargeParseBatchBytes;
    ParallelEventParse parallel(trace_, label_, parse_workers_, batch, large, kLargeBatchesAfter);
    if (parallel.workers() == 0) {
      read_event_list(nullptr);
      return;
    }
    try {
      read_event_list(&parallel);
      parallel.finish();
    } catch (...) {
      parallel.rethrow_earlier_error();
      throw;
    }
  }

  // Small batches touch fewer fresh pages and start the workers sooner;
  // from 128 MiB of JSON on, their per-part costs (each part interns its
  // strings and classifies its names again before the join) outweigh that.
  static constexpr size_t kParseBatchBytes = 256 << 10;
  static constexpr size_t kLargeParseBatchBytes = 1 << 20;
  static constexpr size_t kLargeBatchesAfter = size_t{128} << 20;

  // The elements after '[' up to and with the closing ']', parsed here or
  // queued to `parallel`.
  void read_event_list(ParallelEventParse* parallel) {
    size_t index = 0;
    for (;;) {
      skip_ws();
      if (need_char() != '{') fail(fmt::format("traceEvents[{}] is not a JSON object", index));
      size_t len = scan_extent();
      if (parallel)
        parallel->add(win_.at(0), len, index);
      else
        events_.parse(win_.at(0), len, win_.capacity_from(0), index);
      win_.advance(len);
      ++index;
      if (options_.progress && (index & 0x3fff) == 0 && !options_.progress(win_.consumed(), index))
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
  unsigned parse_workers_;
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

// Kineto JSON averages 300-550 bytes per event; reserving for 200 bytes per
// event avoids regrowing the event vector (and its copy peak). Capacity that
// is never written is never touched, so over-reserving costs no memory.
void reserve_events(Trace& trace, uint64_t json_bytes_estimate) {
  constexpr uint64_t kMinBytesPerEvent = 200;
  // The event array is the largest allocation; from 2 MiB up it is mapped
  // on huge pages (MappableVector's allocator).
  trace.events.reserve(static_cast<size_t>(json_bytes_estimate / kMinBytesPerEvent) + 16);
}

// Parse threads of the loads under way in this process. The automatic count
// takes only the cores they leave free, so concurrent loads (a sweep's jobs,
// an MCP server's sessions) do not multiply threads.
std::atomic<unsigned> g_parse_threads_busy{0};

class ParseThreads {
 public:
  explicit ParseThreads(unsigned count) : count_(count) { g_parse_threads_busy += count_; }
  ~ParseThreads() { g_parse_threads_busy -= count_; }
  ParseThreads(const ParseThreads&) = delete;
  ParseThreads& operator=(const ParseThreads&) = delete;
  unsigned count() const { return count_; }

 private:
  unsigned count_;
};

// Parse workers for a load: as asked, else one per free core (at most 8, and
// none unless two are free) from kParallelParseMinBytes of JSON. The reading
// thread and the inflate thread run beside them; on 2 cores the OS shares
// the cores out (bench/RESULTS.md has the measurements).
// From 4 MiB the two cores pay: 2-core Xeon VM, median of 15 interleaved
// `jarvis info` runs, one thread against two: 4.0 MB 42.7 / 35.7 ms, 8.6 MB
// 48.3 / 44.2 ms, 15.9 MB 107.8 / 80.9 ms; at 1-2.6 MB two were 1-1.5 ms slower.
constexpr uint64_t kParallelParseMinBytes = uint64_t{4} << 20;
unsigned parse_workers(const LoadOptions& options, uint64_t json_bytes_estimate) {
  if (options.parse_workers >= 0) return static_cast<unsigned>(std::min(options.parse_workers, 64));
  // For benchmarks: JARVIS_PARSE_WORKERS=N sets the count for every load.
  if (const char* env = std::getenv("JARVIS_PARSE_WORKERS"); env && *env) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(env, env + std::strlen(env), n);
    if (ec == std::errc() && *end == '\0') return std::min(n, 64u);
  }
  unsigned cores = std::thread::hardware_concurrency();
  if (cores < 2 || json_bytes_estimate < kParallelParseMinBytes) return 0;
  unsigned busy = g_parse_threads_busy.load();
  unsigned free = busy >= cores ? 0 : cores - busy;
  unsigned n = std::min({free, cores, 8u});
  return n >= 2 ? n : 0;
}

void finish(Trace& trace) {
  for (Event& e : trace.events) {
    if (e.has_dur() && e.dur_ns < 0) {
      e.dur_ns = 0;
      ++trace.clamped_negative_durations;
    }
  }
  trace.platform = detect_platform(trace);
  trace.arg_lists.shrink_to_fit();
  trace.shrink_side_tables();
}

// A JAX / XLA profile exported as Chrome trace JSON (the trace.json.gz that
// jax.profiler and TensorBoard's profile plugin write beside the .xplane.pb)
// names its processes "/device:GPU:0" and "/host:CPU" and uses none of
// Kineto's categories: no GPU event is recognised, so every command would end
// in "platform unknown" or "No GPU events found". The XPlane file of the same
// run is what jarvis reads (src/xplane, docs/jax.md).
void refuse_xla_chrome_trace(const Trace& trace, const std::string& label) {
  if (trace.platform != Platform::Unknown) return;
  for (const Event& e : trace.events)
    if (e.is_gpu()) return;
  // The device process names the trace best; a host process alone will do.
  const std::string* xla = nullptr;
  for (const auto& [pid, name] : trace.metadata.process_name)
    if (name.rfind("/device:", 0) == 0 || (!xla && name.rfind("/host:", 0) == 0)) xla = &name;
  if (xla)
    throw TraceError(
        fmt::format("{}: a JAX / XLA trace in Chrome trace JSON (process '{}'), which has no "
                    "Kineto GPU events; jarvis reads the run's XPlane file instead: give the "
                    ".xplane.pb that jax.profiler wrote beside it (plugins/profile/<run>/) to "
                    "`jarvis report`, `info`, `insights` or MCP load_trace (docs/jax.md)",
                    label, *xla),
        ErrorKind::Unsupported);
}

}  // namespace

TraceError cannot_open(const std::string& path, int err) {
  return TraceError(fmt::format("{}: cannot open: {}", path, std::strerror(err)),
                    err == ENOENT ? ErrorKind::NotFound : ErrorKind::InvalidInput);
}

Trace load_trace(const std::string& path, const LoadOptions& options) {
  SnapshotOptions snapshot;
  snapshot.enabled = snapshots_enabled();
  return load_trace(path, options, snapshot);
}

Trace load_trace(const std::string& path, const LoadOptions& options, GzipInflate inflate) {
  struct stat st;
  FilePtr file = open_trace_file(path, st);  // a FIFO or device is refused, never waited on
  note_input_file(path);                     // never a target of this process's writes
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, file.get());
  if (got == 0) throw TraceError(fmt::format("{}: file is empty", path));
  auto size = static_cast<uint64_t>(st.st_size);
  bool gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  bool gz_name = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz_name && !gzip)
    throw TraceError(
        fmt::format("{}: not a gzip file (bad magic bytes; the name ends in .gz)", path));

  Trace trace;
  trace.path = path;
  trace.file_bytes = size;
  const uint64_t size_hint = gzip ? gzip_size_hint(file.get(), size) : size;
  reserve_events(trace, size_hint);
  std::fseek(file.get(), 0, SEEK_SET);
  if (inflate == GzipInflate::Auto)  // inflate overlaps the parse where a second core can run it
    inflate = std::thread::hardware_concurrency() > 1 ? GzipInflate::IsalPipelined
                                                      : GzipInflate::IsalStream;
  std::unique_ptr<ByteSource> src;
  if (gzip && inflate == GzipInflate::Libdeflate) {
    src = libdeflate_whole_source(file.get(), size, size_hint, kWholeInflateMaxBytes);
    if (!src) std::fseek(file.get(), 0, SEEK_SET);  // zlib streams it instead
  }
  if (src) {
    // inflated already
  } else if (gzip) {
    bool isal = inflate == GzipInflate::IsalStream || inflate == GzipInflate::IsalPipelined;
    src = isal ? isal_gzip_source(std::move(file), path) : zlib_gzip_source(std::move(file), path);
    if (inflate == GzipInflate::ZlibPipelined || inflate == GzipInflate::IsalPipelined)
      src = pipelined_source(std::move(src));
  } else {
    src = plain_file_source(std::move(file), path);
  }
  ParseThreads workers(parse_workers(options, size_hint));
  TraceReader reader(*src, trace, path, options, workers.count());
  reader.run();
  finish(trace);
  refuse_xla_chrome_trace(trace, path);
  return trace;
}

Trace load_trace_from_json(std::string_view json, const std::string& label) {
  Trace trace;
  trace.path = label;
  trace.file_bytes = json.size();
  reserve_events(trace, json.size());
  MemorySource src(json);
  LoadOptions options;
  TraceReader reader(src, trace, label, options);
  reader.run();
  finish(trace);
  refuse_xla_chrome_trace(trace, label);
  return trace;
}

}  // namespace jarvis
