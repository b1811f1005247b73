// annotations: user_annotation and gpu_user_annotation ranges
// (record_function, ProfilerStep#N, Optimizer.step, ...).
#include <charconv>

#include <iterator>

#include "explore/trace_store.h"
#include "sql/table_source.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace annotations_columns {

enum Col { kUid, kName, kCategory, kTs, kDur, kEnd, kPid, kTid, kOnGpu, kStep };

// The leading columns, read off the event (table_source.h).
constexpr EventField kEventColumns[] = {EventField::Uid, EventField::Name, EventField::Category,
                                        EventField::Ts,  EventField::Dur,  EventField::End,
                                        EventField::Pid, EventField::Tid};
static_assert(std::size(kEventColumns) == kOnGpu, "the event columns lead the table");

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
    if (column >= 0 && static_cast<size_t>(column) < std::size(kEventColumns))
      return event_cell(trace, uid, kEventColumns[column], out);
    switch (column) {
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

}  // namespace annotations_columns
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
      annotations_columns::bind_annotations};
  return def;
}

}  // namespace jarvis::sql
