// annotations: user_annotation and gpu_user_annotation ranges
// (record_function, ProfilerStep#N, Optimizer.step, ...).
#include <charconv>

#include "explore/trace_store.h"
#include "sql/table_source.h"

namespace jarvis::sql {
namespace {

enum Col { kUid, kName, kCategory, kTs, kDur, kEnd, kPid, kTid, kOnGpu, kStep };

constexpr std::string_view kStepPrefix = "ProfilerStep#";

struct AnnotationIndex {
  std::vector<Uid> uids;
};

TableSource bind_annotations(const QueryContext& ctx) {
  const Trace& trace = ctx.trace();
  auto index = ctx.entry().cached<AnnotationIndex>("sql:annotations", [&] {
    AnnotationIndex ix;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      Cat c = trace.events[u].cat;
      if (c == Cat::UserAnnotation || c == Cat::GpuUserAnnotation) ix.uids.push_back(u);
    }
    return ix;
  });
  auto uids = std::shared_ptr<const std::vector<Uid>>(index, &index->uids);
  return uid_rows(uids, kUid, [&trace](size_t, Uid uid, int column, CellSink& out) {
    const Event& e = trace.events[uid];
    switch (column) {
      case kUid:
        out.integer(uid);
        break;
      case kName:
        out.text(trace.str(e.name), true);
        break;
      case kCategory:
        out.text(trace.str(e.cat_name), true);
        break;
      case kTs:
        out.maybe_int(e.ts_ns);
        break;
      case kDur:
        out.maybe_int(e.dur_ns);
        break;
      case kEnd:
        if (e.has_ts() && e.has_dur())
          out.integer(e.ts_ns + e.dur_ns);
        else
          out.null();
        break;
      case kPid:
        out.proc_id(trace, trace.pid(e));
        break;
      case kTid:
        out.proc_id(trace, trace.tid(e));
        break;
      case kOnGpu:
        out.integer(e.cat == Cat::GpuUserAnnotation ? 1 : 0);
        break;
      case kStep: {
        std::string_view name = trace.str(e.name);
        int64_t step = 0;
        if (name.starts_with(kStepPrefix)) {
          auto digits = name.substr(kStepPrefix.size());
          auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
          if (ec == std::errc() && p == digits.data() + digits.size()) {
            out.integer(step);
            break;
          }
        }
        out.null();
        break;
      }
      default:
        out.null();
    }
  });
}

}  // namespace

const TableDef& annotations_table() {
  static const TableDef def{
      "annotations",
      "record_function / ProfilerStep ranges (user_annotation, gpu_user_annotation)",
      {{"uid", ColType::Integer, "event uid"},
       {"name", ColType::Text, "annotation name, e.g. ProfilerStep#3, Optimizer.step"},
       {"category", ColType::Text, "user_annotation (host) or gpu_user_annotation (GPU)"},
       {"ts", ColType::Integer, "start, ns"},
       {"dur", ColType::Integer, "duration, ns"},
       {"end", ColType::Integer, "ts + dur, ns"},
       {"pid", ColType::Integer, "process id"},
       {"tid", ColType::Integer, "thread id (GPU annotations: the stream)"},
       {"on_gpu", ColType::Integer, "1 for gpu_user_annotation"},
       {"step", ColType::Integer, "N of a ProfilerStep#N range, else NULL"}},
      bind_annotations};
  return def;
}

}  // namespace jarvis::sql
