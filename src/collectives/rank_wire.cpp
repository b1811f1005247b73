// The text form of a RankAnalysis that an MPI rank sends to rank 0. It must
// give back exactly the values the merge stage would have read in one
// process, or the outputs would differ: doubles go through nlohmann's
// shortest round-trip form, NaN and infinities (bandwidths of zero-length
// kernels) as strings, since JSON has neither.
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "collectives/collectives.h"

namespace jarvis::collectives {
namespace {

using json = nlohmann::json;

json num(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

double num(const json& j) {
  if (j.is_number()) return j.get<double>();
  return std::strtod(j.get<std::string>().c_str(), nullptr);  // "nan", "inf", "-inf"
}

// [uid, ts, dur, stream, kernel, group, collective, type, dtype, nelems,
// group_size, group_ranks, seq, msg_mb, algbw, busbw]: the kernel's metadata
// PyValues are left out, the merge reads only what rank_trace derived.
json instance_json(const CollectiveInstance& i) {
  return {i.kernel.uid,  num(i.kernel.ts),   num(i.kernel.dur),    i.kernel.stream,
          i.kernel_name, i.process_group,    i.collective,         static_cast<int>(i.type),
          i.dtype,       i.in_msg_nelems,    i.group_size,         i.group_ranks,
          i.seq,         num(i.msg_size_mb), num(i.bw.algbw_gbps), num(i.bw.busbw_gbps)};
}

CollectiveInstance instance_from(const json& a) {
  CollectiveInstance i;
  i.kernel.uid = a.at(0).get<Uid>();
  i.kernel.ts = num(a.at(1));
  i.kernel.dur = num(a.at(2));
  i.kernel.stream = a.at(3).get<int64_t>();
  i.kernel_name = a.at(4).get<std::string>();
  i.process_group = a.at(5).get<std::string>();
  i.collective = a.at(6).get<std::string>();
  i.type = static_cast<CollectiveType>(a.at(7).get<int>());
  i.dtype = a.at(8).get<std::string>();
  i.in_msg_nelems = a.at(9).get<int64_t>();
  i.group_size = a.at(10).get<int64_t>();
  i.group_ranks = a.at(11).get<std::vector<int64_t>>();
  i.seq = a.at(12).get<int64_t>();
  i.msg_size_mb = num(a.at(13));
  i.bw.algbw_gbps = num(a.at(14));
  i.bw.busbw_gbps = num(a.at(15));
  return i;
}

// Cells keep their variant alternative (an int 3 and a double 3.0 render
// differently): null, or [tag, value] with tag i, d, b or s.
json cell_to_wire(const Cell& c) {
  if (c.missing()) return nullptr;
  if (c.is_int()) return {"i", std::get<int64_t>(c.v)};
  if (c.is_double()) return {"d", num(std::get<double>(c.v))};
  if (c.is_bool()) return {"b", std::get<bool>(c.v)};
  return {"s", c.text()};
}

Cell cell_from_wire(const json& j) {
  if (j.is_null()) return {};
  const std::string tag = j.at(0).get<std::string>();
  if (tag == "i") return Cell(j.at(1).get<int64_t>());
  if (tag == "d") return Cell(num(j.at(1)));
  if (tag == "b") return Cell(j.at(1).get<bool>());
  if (tag == "s") return Cell(j.at(1).get<std::string>());
  throw std::runtime_error("malformed table cell in a rank analysis");
}

json table_json(const Table& t) {
  json rows = json::array();
  for (const auto& row : t.rows) {
    json r = json::array();
    for (const Cell& c : row) r.push_back(cell_to_wire(c));
    rows.push_back(std::move(r));
  }
  return {{"name", t.name}, {"columns", t.columns}, {"level2", t.column_level2}, {"rows", rows}};
}

Table table_from(const json& j) {
  Table t(j.at("name").get<std::string>(), j.at("columns").get<std::vector<std::string>>());
  t.column_level2 = j.at("level2").get<std::vector<std::string>>();
  for (const auto& r : j.at("rows")) {
    auto& row = t.rows.emplace_back();
    for (const auto& c : r) row.push_back(cell_from_wire(c));
  }
  return t;
}

}  // namespace

std::string rank_analysis_to_text(const RankAnalysis& a) {
  json instances = json::array();
  for (const auto& i : a.trace.instances) instances.push_back(instance_json(i));
  json tables = json::array();
  for (const auto& t : a.overlap_tables) tables.push_back(table_json(t));
  json j = {{"rank", a.trace.rank},
            {"world_size", a.trace.world_size},
            {"path", a.trace.path},
            {"instances", std::move(instances)},
            {"overlap_tables", std::move(tables)}};
  return j.dump();
}

RankAnalysis rank_analysis_from_text(std::string_view text) {
  try {
    json j = json::parse(text);
    RankAnalysis a;
    a.trace.rank = j.at("rank").get<int64_t>();
    a.trace.world_size = j.at("world_size").get<int64_t>();
    a.trace.path = j.at("path").get<std::string>();
    for (const auto& i : j.at("instances")) a.trace.instances.push_back(instance_from(i));
    for (const auto& t : j.at("overlap_tables")) a.overlap_tables.push_back(table_from(t));
    return a;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed rank analysis: ") + e.what());
  }
}

}  // namespace jarvis::collectives
