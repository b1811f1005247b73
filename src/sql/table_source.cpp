#include "sql/table_source.h"

#include <algorithm>
#include <cmath>

#include "explore/trace_store.h"
#include "report/report.h"
#include "trace/phase_text.h"
#include "tree/call_tree.h"

namespace jarvis::sql {

const char* col_type_name(ColType t) {
  switch (t) {
    case ColType::Integer:
      return "INTEGER";
    case ColType::Real:
      return "REAL";
    case ColType::Text:
      return "TEXT";
  }
  return "TEXT";
}

void CellSink::maybe_real(double v) {
  if (std::isnan(v))
    null();
  else
    real(v);
}

void CellSink::cell(const Cell& c) {
  if (c.is_int())
    integer(std::get<int64_t>(c.v));
  else if (c.is_double())
    maybe_real(std::get<double>(c.v));
  else if (c.is_bool())
    integer(std::get<bool>(c.v) ? 1 : 0);
  else if (c.is_text())
    text(c.text(), false);
  else
    null();
}

void CellSink::proc_id(const Trace& trace, const ProcId& p) {
  if (!p.present())
    null();
  else if (p.is_string)
    text(trace.str(static_cast<uint32_t>(p.value)), true);
  else
    integer(p.value);
}

const Trace& QueryContext::trace() const {
  return entry_.trace();
}

const CallTree& QueryContext::tree() const {
  if (!tree_) tree_ = trace_call_tree(entry_);
  return *tree_;
}

const Report& QueryContext::report() const {
  if (!report_) report_ = trace_report(entry_);
  return *report_;
}

void event_cell(const Trace& trace, Uid uid, EventField field, CellSink& out) {
  const Event& e = trace.events[uid];
  switch (field) {
    case EventField::Uid:
      return out.integer(uid);
    case EventField::Name:
      return out.text(trace.str(e.name), true);
    case EventField::Category:
      return out.text(trace.str(e.cat_name), true);
    case EventField::Phase:
      return out.text(phase_text(e.ph), true);
    case EventField::Ts:
      return out.maybe_int(e.ts_ns);
    case EventField::Dur:
      return out.maybe_int(e.dur_ns);
    case EventField::End:
      if (e.has_ts() && e.has_dur()) return out.integer(e.ts_ns + e.dur_ns);
      return out.null();
    case EventField::Pid:
      return out.proc_id(trace, trace.pid(e));
    case EventField::Tid:
      return out.proc_id(trace, trace.tid(e));
    case EventField::Stream:
      return out.maybe_int(trace.stream(e));
    case EventField::Device:
      return out.maybe_int(trace.device(e));
    case EventField::Correlation:
      return out.maybe_int(trace.correlation(e));
    case EventField::ExternalId:
      return out.maybe_int(trace.external_id(e));
    case EventField::FlowId:
      return out.maybe_int(trace.flow_id(e));
  }
  out.null();
}

TableSource uid_rows(std::shared_ptr<const std::vector<Uid>> uids, int key_column,
                     std::function<void(size_t row, Uid uid, int column, CellSink&)> cell) {
  TableSource s;
  s.rows = uids->size();
  s.key_column = key_column;
  s.cell = [uids, cell = std::move(cell)](size_t row, int column, CellSink& out) {
    cell(row, (*uids)[row], column, out);
  };
  s.find_key = [uids](int64_t key) -> std::optional<size_t> {
    if (key < 0 || key > static_cast<int64_t>(kNoUid)) return std::nullopt;
    auto it = std::lower_bound(uids->begin(), uids->end(), static_cast<Uid>(key));
    if (it == uids->end() || *it != static_cast<Uid>(key)) return std::nullopt;
    return static_cast<size_t>(it - uids->begin());
  };
  return s;
}

std::vector<ColumnDef> sheet_columns(const Table& t) {
  std::vector<ColumnDef> cols;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    bool any_double = false, any_text = false, any_int = false;
    for (const auto& row : t.rows) {
      const Cell& cell = row[c];
      any_double |= cell.is_double();
      any_text |= cell.is_text();
      any_int |= cell.is_int() || cell.is_bool();
    }
    ColType type = any_text     ? ColType::Text
                   : any_double ? ColType::Real
                   : any_int    ? ColType::Integer
                                : ColType::Text;
    std::string name = t.columns[c];
    // A MultiIndex header (two rows) reads as "level1 level2", as pandas flattens it.
    if (c < t.column_level2.size() && !t.column_level2[c].empty()) name += " " + t.column_level2[c];
    cols.push_back({std::move(name), type, "report sheet " + t.name + " column"});
  }
  return cols;
}

TableSource sheet_source(std::shared_ptr<const Table> t) {
  TableSource s;
  s.rows = t->rows.size();
  s.cell = [t](size_t row, int column, CellSink& out) { out.cell(t->rows[row][column]); };
  return s;
}

std::vector<const TableDef*> builtin_tables() {
  return {&events_table(),           &ops_table(),    &kernels_table(),    &annotations_table(),
          &gpu_timeline_table_def(), &memory_table(), &collectives_table()};
}

}  // namespace jarvis::sql
