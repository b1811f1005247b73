// The annotated trace that `jarvis report --html` writes beside its page: the
// trace's own events (CPU ops, runtime calls, kernels, annotations such as
// ProfilerStep#N, launch flows) in Chrome trace-event JSON, plus one extra
// process "jarvis annotations" with
//   * a track "iterations": one slice per iteration of the critical path,
//     named with what bounds it (gpu / host / communication);
//   * a track "critical path": one slice per segment of each iteration's
//     measured critical path (the times `jarvis critical-path` writes to
//     path_iteration<K>.csv), named by kernel, else op, else segment kind;
//   * one track per finding ("finding 1: <title>"): an instant marker at each
//     op or kernel the finding is about (at most kMaxMarkersPerFinding), or
//     one slice over the GPU window when it is about the whole trace.
// Perfetto UI and chrome://tracing open it as is (gzip-compressed JSON).
#pragma once

#include <cstddef>
#include <string>

#include "charts/report_page.h"
#include "trace/trace.h"

namespace jarvis::charts {

inline constexpr size_t kMaxMarkersPerFinding = 200;

struct AnnotatedTraceCounts {
  size_t trace_events = 0;  // copied from the trace
  size_t path_slices = 0;   // critical-path segments
  size_t iterations = 0;
  size_t finding_tracks = 0;
  size_t finding_markers = 0;  // instant markers and whole-trace slices
};

// The trace-event JSON document (uncompressed). `source` names the input in
// the document's otherData.
std::string annotated_trace_json(const Trace& trace, const ReportVerdict& verdict,
                                 const std::string& source, AnnotatedTraceCounts* counts = nullptr);

// gzip_compress(annotated_trace_json(...)) made as the text comes: the
// compressed document and a buffer of text held, not the whole text (what
// `report --html` and render_report write).
std::string annotated_trace_gzip(const Trace& trace, const ReportVerdict& verdict,
                                 const std::string& source, AnnotatedTraceCounts* counts = nullptr);

// gzip (RFC 1952) of `data`, as Perfetto UI and chrome://tracing read it.
std::string gzip_compress(std::string_view data);

// The annotated trace's file name beside an HTML page: "report.html" ->
// "report.annotated.json.gz".
std::string annotated_trace_name(const std::string& html_path);

}  // namespace jarvis::charts
