#include "charts/annotated_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include "trace/phase_text.h"

namespace jarvis::charts {

namespace {

using nlohmann::json;

// A JSON string literal (quotes included), invalid UTF-8 replaced.
std::string json_string(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// pid / tid as the trace had them: a number, or a string.
std::string proc_id_json(const Trace& trace, const ProcId& p) {
  if (!p.present()) return "0";
  if (p.is_string) return json_string(trace.proc_id_text(p));
  return std::to_string(p.value);
}

// Microseconds with the trace's nanosecond resolution.
std::string us_text(int64_t ns) {
  return fmt::format("{}.{:03d}", ns / 1000 - (ns < 0 && ns % 1000 ? 1 : 0),
                     static_cast<int>(((ns % 1000) + 1000) % 1000));
}

std::string us_text(double us) {
  return us_text(static_cast<int64_t>(std::llround(us * 1e3)));
}

// gzip (RFC 1952) made piece by piece: the text given to add() is
// compressed as it comes, finish() returns the whole member.
class GzipStream {
 public:
  GzipStream() {
    if (deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("gzip: deflateInit2 failed");
  }
  ~GzipStream() { deflateEnd(&z_); }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  void add(std::string_view text) {
    if (text.size() > std::numeric_limits<uInt>::max())
      throw std::runtime_error("gzip: input over 4 GiB");
    const int rc = run(text, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("gzip: deflate failed");
  }
  std::string finish() {
    if (run({}, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("gzip: deflate did not finish");
    return std::move(out_);
  }

 private:
  // zlib's loop: deflate into a fresh piece of output until a call leaves
  // room in it (all of `in` taken; with Z_FINISH, the stream ended). Output
  // in pieces as it comes: a buffer of deflateBound, zero-filled, took as
  // much memory again as the annotated trace it compresses 10-15x.
  int run(std::string_view in, int flush) {
    constexpr size_t kPiece = size_t{1} << 20;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    do {
      const size_t at = out_.size();
      out_.resize(at + kPiece);
      z_.next_out = reinterpret_cast<Bytef*>(out_.data() + at);
      z_.avail_out = static_cast<uInt>(kPiece);
      rc = deflate(&z_, flush);
      out_.resize(at + kPiece - z_.avail_out);
    } while (rc != Z_STREAM_ERROR && z_.avail_out == 0);
    return rc;
  }

  z_stream z_{};
  std::string out_;
};

class Writer {
 public:
  // The document's head goes first and the events after it. Into one string
  // reserved for about what a trace's events take (256 bytes each, x32: 236;
  // pages reserved but not written take no memory), so it is neither copied
  // as it grows nor once more to join head and events at the end; or, given
  // a gzip stream, into a buffer compressed each time it holds kPieceBytes
  // (x256: 1.3 GB of JSON held whole before the compressed 100 MB, issue 75).
  Writer(const Trace& trace, const std::string& source, GzipStream* gzip = nullptr)
      : trace_(trace), gzip_(gzip) {
    out_.reserve(gzip ? kPieceBytes + 64 * 1024 : trace.events.size() * 256 + 4096);
    out_ += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"jarvis\":" +
            json_string("annotated trace of " + source +
                        ": the trace's events plus the critical path and the findings in the "
                        "process 'jarvis annotations'") +
            "},\"traceEvents\":[";
  }

  void event(const std::string& body) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_ += "{" + body + "}";
    if (gzip_ && out_.size() >= kPieceBytes) {
      gzip_->add(out_);
      out_.clear();
    }
  }

  // The trace's own events: slices, instants and the launch flows.
  size_t copy_trace() {
    size_t n = 0;
    for (Uid u = 0; u < trace_.events.size(); ++u) {
      const Event& e = trace_.events[u];
      // Slices, instants and flows; metadata is the processes' names, written apart.
      const bool copied = e.ph == Phase::Complete || e.ph == Phase::Instant ||
                          e.ph == Phase::FlowStart || e.ph == Phase::FlowEnd;
      if (!copied || !e.has_ts() || (e.ph == Phase::Complete && !e.has_dur())) continue;
      const std::string_view ph = phase_text(e.ph);
      std::string body =
          fmt::format(R"("ph":"{}","name":{},"cat":{},"pid":{},"tid":{},"ts":{})", ph, name(e.name),
                      name(e.cat_name), proc_id_json(trace_, trace_.pid(e)),
                      proc_id_json(trace_, trace_.tid(e)), us_text(e.ts_ns));
      if (e.ph == Phase::Complete) body += ",\"dur\":" + us_text(e.dur_ns);
      if (e.ph == Phase::Instant) body += ",\"s\":\"t\"";
      if (e.ph == Phase::FlowStart || e.ph == Phase::FlowEnd) {
        int64_t id = trace_.flow_id(e);
        if (id == kNoInt) continue;
        body += fmt::format(",\"id\":{}", id);
        if (e.bp_enclosing) body += ",\"bp\":\"e\"";
      }
      std::string args;
      auto add_id = [&](const char* key, int64_t v) {
        if (v == kNoInt) return;
        args += fmt::format("{}\"{}\":{}", args.empty() ? "" : ",", key, v);
      };
      add_id("External id", trace_.external_id(e));
      add_id("correlation", trace_.correlation(e));
      add_id("device", trace_.device(e));
      add_id("stream", trace_.stream(e));
      if (!args.empty()) body += ",\"args\":{" + args + "}";
      event(body);
      ++n;
    }
    for (const auto& [pid, label] : trace_.metadata.process_name)
      event(fmt::format(R"("ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}})",
                        proc_id_json(trace_, pid), json_string(label)));
    for (const auto& [key, label] : trace_.metadata.thread_name)
      event(fmt::format(R"("ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}})",
                        proc_id_json(trace_, key.first), proc_id_json(trace_, key.second),
                        json_string(label)));
    return n;
  }

  // The document (the compressed member with a gzip stream).
  std::string finish() {
    out_ += "\n]}\n";
    if (!gzip_) return std::move(out_);
    gzip_->add(out_);
    return gzip_->finish();
  }

 private:
  static constexpr size_t kPieceBytes = size_t{1} << 20;
  const std::string& name(uint32_t id) {
    auto it = names_.find(id);
    if (it == names_.end()) it = names_.emplace(id, json_string(trace_.strings.view(id))).first;
    return it->second;
  }

  const Trace& trace_;
  GzipStream* gzip_;
  std::string out_;
  bool first_ = true;
  std::unordered_map<uint32_t, std::string> names_;
};

// A pid no event of the trace uses.
int64_t free_pid(const Trace& trace) {
  std::set<int64_t> used;
  for (const ThreadKey& k : trace.threads)
    if (k.pid.present() && !k.pid.is_string) used.insert(k.pid.value);
  int64_t pid = 1'000'000'000;
  while (used.count(pid)) ++pid;
  return pid;
}

std::string segment_name(const critical_path::Segment& s) {
  if (!s.kernel().empty()) return std::string(s.kernel());
  if (!s.op().empty()) return std::string(s.op());
  if (!s.category().empty()) return std::string(s.category());  // "host_gap", "launch", ...
  return std::string(s.kind());
}

}  // namespace

namespace {

std::string write_annotated_trace(const Trace& trace, const ReportVerdict& verdict,
                                  const std::string& source, AnnotatedTraceCounts* counts,
                                  GzipStream* gzip) {
  AnnotatedTraceCounts c;
  Writer w(trace, source, gzip);
  c.trace_events = w.copy_trace();
  const int64_t pid = free_pid(trace);
  auto track = [&](int tid, const std::string& label) {
    w.event(fmt::format(R"("ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}})",
                        pid, tid, json_string(label)));
    w.event(fmt::format(
        R"("ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}})", pid,
        tid, tid));
  };
  w.event(fmt::format(R"("ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}})",
                      pid, json_string("jarvis annotations")));
  w.event(fmt::format(
      R"("ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":-1}})", pid));
  if (verdict.step) {
    const critical_path::Analysis& a = verdict.step->recorded;
    track(1, "iterations");
    track(2, "critical path");
    for (size_t k = 0; k < a.iterations.size(); ++k) {
      const auto& it = a.iterations[k];
      w.event(fmt::format(
          R"("ph":"X","name":{},"cat":"jarvis.iteration","pid":{},"tid":1,"ts":{},"dur":{},"args":{{"bound_by":{},"why":{},"length_us":{}}})",
          json_string(fmt::format("{}: {}-bound", it.name, it.bound_by)), pid, us_text(it.start_us),
          us_text(it.end_us - it.start_us), json_string(it.bound_by), json_string(it.bound_reason),
          it.length_us));
      ++c.iterations;
      for (const auto& s : it.path) {
        w.event(fmt::format(
            R"("ph":"X","name":{},"cat":"jarvis.critical_path","pid":{},"tid":2,"ts":{},"dur":{},"args":{{"iteration":{},"rank":{},"kind":{},"category":{},"op":{},"kernel":{},"start_us":{},"dur_us":{}}})",
            json_string(segment_name(s)), pid, us_text(s.start_us), us_text(s.dur_us),
            json_string(it.name), s.rank, json_string(s.kind()), json_string(s.category()),
            json_string(s.op()), json_string(s.kernel()), s.start_us, s.dur_us));
        ++c.path_slices;
      }
    }
  }
  // The GPU window, for the findings about the whole trace.
  double gpu_start = std::numeric_limits<double>::infinity(), gpu_end = -gpu_start;
  for (const Event& e : trace.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur()) {
      gpu_start = std::min(gpu_start, e.ts());
      gpu_end = std::max(gpu_end, e.end());
    }
  for (size_t k = 0; k < verdict.findings.size(); ++k) {
    const auto& f = verdict.findings[k];
    const int tid = static_cast<int>(10 + k);
    track(tid, fmt::format("finding {}: {}", k + 1, f.title));
    std::string args = fmt::format(R"("rule":{},"severity":{},"recoverable_us_total":{})",
                                   json_string(f.rule), json_string(f.severity),
                                   f.recoverable_us ? json(*f.recoverable_us).dump() : "null");
    size_t markers = 0;
    for (Uid u : f.uids) {
      if (u >= trace.events.size() || markers >= kMaxMarkersPerFinding) break;
      const Event& e = trace.events[u];
      if (!e.has_ts()) continue;
      w.event(fmt::format(
          R"("ph":"i","s":"t","name":{},"cat":"jarvis.finding","pid":{},"tid":{},"ts":{},"args":{{{},"event":{}}})",
          json_string(f.rule), pid, tid, us_text(e.ts_ns), args, json_string(trace.name(u))));
      ++markers;
    }
    if (markers == 0 && std::isfinite(gpu_start)) {
      w.event(fmt::format(
          R"("ph":"X","name":{},"cat":"jarvis.finding","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}})",
          json_string(f.title), pid, tid, us_text(gpu_start), us_text(gpu_end - gpu_start), args));
      ++markers;
    }
    c.finding_markers += markers;
    ++c.finding_tracks;
  }
  if (counts) *counts = c;
  return w.finish();
}

}  // namespace

std::string annotated_trace_json(const Trace& trace, const ReportVerdict& verdict,
                                 const std::string& source, AnnotatedTraceCounts* counts) {
  return write_annotated_trace(trace, verdict, source, counts, nullptr);
}

std::string annotated_trace_gzip(const Trace& trace, const ReportVerdict& verdict,
                                 const std::string& source, AnnotatedTraceCounts* counts) {
  GzipStream gzip;
  return write_annotated_trace(trace, verdict, source, counts, &gzip);
}

std::string gzip_compress(std::string_view data) {
  GzipStream gzip;
  gzip.add(data);
  return gzip.finish();
}

std::string annotated_trace_name(const std::string& html_path) {
  std::filesystem::path p(html_path);
  return p.stem().string() + ".annotated.json.gz";
}

}  // namespace jarvis::charts
