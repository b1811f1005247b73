// Multi-rank collective report: match instances across ranks, align the
// ranks' clocks, and compute skews, waits and bandwidths.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collectives/collectives.h"
#include "report/stats.h"

namespace jarvis::collectives {
namespace {

// distributedInfo.{rank, world_size}; -1 when absent.
std::pair<int64_t, int64_t> distributed_info(const Trace& trace) {
  for (const auto& [key, text] : trace.top_level_json) {
    if (key != "distributedInfo") continue;
    auto info = nlohmann::json::parse(text, nullptr, false);
    if (!info.is_object()) break;
    auto int_of = [&](const char* k) -> int64_t {
      auto it = info.find(k);
      return it != info.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
    };
    return {int_of("rank"), int_of("world_size")};
  }
  return {-1, -1};
}

std::string describe(const CollectiveInstance& inst) {
  std::string what = inst.collective.empty() ? inst.kernel_name : inst.collective;
  if (!inst.dtype.empty()) what += fmt::format(" {}", inst.dtype);
  if (inst.in_msg_nelems >= 0) what += fmt::format(" x {}", inst.in_msg_nelems);
  return what;
}

bool same_collective(const CollectiveInstance& a, const CollectiveInstance& b) {
  return a.collective == b.collective && a.dtype == b.dtype && a.in_msg_nelems == b.in_msg_nelems;
}

// Synchronising collectives: every rank leaves them together.
bool ends_together(CollectiveType t) {
  return t == CollectiveType::AllReduce || t == CollectiveType::ReduceScatter ||
         t == CollectiveType::AllGather || t == CollectiveType::AllToAll ||
         t == CollectiveType::AllToAllV;
}

using GroupInstances = std::map<int64_t, std::vector<const CollectiveInstance*>>;  // rank -> by seq

void check_identities(const std::vector<RankTrace>& ranks) {
  std::map<int64_t, const RankTrace*> seen;
  for (const RankTrace& r : ranks) {
    if (auto [it, fresh] = seen.emplace(r.rank, &r); !fresh)
      throw CollectiveError(
          fmt::format("rank {} appears twice ({} and {})", r.rank, it->second->path, r.path));
  }
  const RankTrace* sized = nullptr;
  for (const RankTrace& r : ranks) {
    if (r.world_size < 0) continue;
    if (sized && sized->world_size != r.world_size)
      throw CollectiveError(
          fmt::format("mismatched world sizes: rank {} ({}) has world_size {}, rank {} ({}) has {}",
                      sized->rank, sized->path, sized->world_size, r.rank, r.path, r.world_size));
    if (r.rank >= r.world_size)
      throw CollectiveError(
          fmt::format("rank {} ({}) is outside its world_size {}", r.rank, r.path, r.world_size));
    sized = &r;
  }
}

// The first seq at which `rank` differs from the reference (or runs out).
size_t divergence(const std::vector<const CollectiveInstance*>& ref,
                  const std::vector<const CollectiveInstance*>& other) {
  size_t k = 0;
  while (k < other.size() && k < ref.size() && same_collective(*ref[k], *other[k])) ++k;
  return k;
}

void check_group(const std::string& group, const GroupInstances& by_rank) {
  auto longest = std::max_element(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  const auto& ref = longest->second;
  for (const auto& [rank, list] : by_rank) {
    const size_t k = divergence(ref, list);
    if (list.size() < ref.size())
      throw CollectiveError(fmt::format(
          "rank {} is missing an instance of {} in process group '{}' (seq {}): it recorded {} "
          "collectives in that group, rank {} recorded {}",
          rank, describe(*ref[k]), group, k, list.size(), longest->first, ref.size()));
    if (k < list.size())
      throw CollectiveError(
          fmt::format("process group '{}' seq {}: rank {} ran {} but rank {} ran {}", group, k,
                      longest->first, describe(*ref[k]), rank, describe(*list[k])));
  }
}

// Ranks of each process group, checked against the loaded traces.
std::map<std::string, GroupInstances> group_by_process_group(const std::vector<RankTrace>& ranks) {
  std::set<int64_t> loaded;
  for (const RankTrace& r : ranks) loaded.insert(r.rank);
  std::map<std::string, GroupInstances> groups;
  std::map<std::string, std::vector<int64_t>> members;
  for (const RankTrace& r : ranks)
    for (const CollectiveInstance& inst : r.instances) {
      groups[inst.process_group][r.rank].push_back(&inst);
      if (!inst.group_ranks.empty()) members[inst.process_group] = inst.group_ranks;
    }
  for (auto& [group, by_rank] : groups) {
    auto it = members.find(group);
    const std::vector<int64_t> expected =
        it != members.end() ? it->second : std::vector<int64_t>(loaded.begin(), loaded.end());
    for (int64_t member : expected) {
      if (!loaded.count(member))
        throw CollectiveError(
            fmt::format("process group '{}' spans ranks {} but no trace was given for rank {}",
                        group, fmt::join(expected, ", "), member));
      if (!by_rank.count(member)) {
        const auto& any = by_rank.begin()->second;
        throw CollectiveError(fmt::format(
            "rank {} has no instance of process group '{}' (first: {}, seq 0); other ranks "
            "recorded {}",
            member, group, describe(*any.front()), any.size()));
      }
    }
    check_group(group, by_rank);
  }
  return groups;
}

// Offsets that make synchronising collectives end together: each rank is
// aligned on an already aligned rank by the median end difference of the
// instances they share. The lowest rank keeps its clock.
std::map<int64_t, double> align_clocks(const std::map<std::string, GroupInstances>& groups,
                                       const std::vector<int64_t>& ranks) {
  std::map<int64_t, double> offset{{ranks.front(), 0.0}};
  bool any_sync = false;
  for (const auto& [g, by_rank] : groups)
    for (const auto* inst : by_rank.begin()->second) any_sync |= ends_together(inst->type);
  bool progress = true;
  while (offset.size() < ranks.size() && progress) {
    progress = false;
    for (int64_t r : ranks) {
      if (offset.count(r)) continue;
      std::vector<double> diffs;
      for (const auto& [g, by_rank] : groups) {
        auto mine = by_rank.find(r);
        if (mine == by_rank.end()) continue;
        for (const auto& [other, list] : by_rank) {
          auto known = offset.find(other);
          if (known == offset.end()) continue;
          for (size_t k = 0; k < list.size(); ++k) {
            if (any_sync && !ends_together(list[k]->type)) continue;
            const CollectiveKernel& a = list[k]->kernel;
            const CollectiveKernel& b = mine->second[k]->kernel;
            diffs.push_back((a.ts + a.dur + known->second) - (b.ts + b.dur));
          }
          break;  // one aligned partner per group is enough
        }
      }
      if (diffs.empty()) continue;
      offset[r] = stats::median(diffs);
      progress = true;
    }
  }
  for (int64_t r : ranks)
    if (!offset.count(r))
      throw CollectiveError(fmt::format(
          "rank {} shares no collective with rank {}: cannot align its clock (use no alignment "
          "when the ranks share one clock)",
          r, ranks.front()));
  return offset;
}

MatchedInstance match_one(const std::string& group, const GroupInstances& by_rank, size_t seq,
                          const std::map<int64_t, double>& offset) {
  const CollectiveInstance& first = *by_rank.begin()->second[seq];
  MatchedInstance m;
  m.process_group = group;
  m.collective = first.collective.empty() ? first.kernel_name : first.collective;
  m.type = first.type;
  m.seq = static_cast<int64_t>(seq);
  m.dtype = first.dtype;
  m.in_msg_nelems = first.in_msg_nelems;
  m.msg_size_mb = first.msg_size_mb;
  m.group_size = first.group_size > 0 ? first.group_size : static_cast<int64_t>(by_rank.size());
  std::vector<double> ends;
  for (const auto& [rank, list] : by_rank) {
    const CollectiveKernel& k = list[seq]->kernel;
    m.ranks.push_back(rank);
    m.start_us.push_back(k.ts + offset.at(rank));
    m.dur_us.push_back(k.dur);
    ends.push_back(m.start_us.back() + k.dur);
  }
  auto latest = std::max_element(m.start_us.begin(), m.start_us.end());
  auto earliest = std::min_element(m.start_us.begin(), m.start_us.end());
  // Ties go to the lowest rank. Event times are integer ns read back as µs
  // doubles, so starts that are equal in the trace can differ by rounding
  // noise after the clock alignment: starts within a picosecond are a tie.
  constexpr double kTieUs = 1e-6;
  size_t last_i = 0, first_i = 0;
  while (m.start_us[last_i] < *latest - kTieUs) ++last_i;
  while (m.start_us[first_i] > *earliest + kTieUs) ++first_i;
  m.last_rank = m.ranks[last_i];
  m.first_rank = m.ranks[first_i];
  m.start_skew_us = *latest - *earliest;
  m.end_skew_us = stats::max(ends) - stats::min(ends);
  for (double s : m.start_us) m.wait_us.push_back(*latest - s);
  m.dur_us_min = stats::min(m.dur_us);
  m.dur_us_max = stats::max(m.dur_us);
  m.bw = bandwidth(m.type, m.msg_size_mb, m.group_size, m.dur_us_min);
  return m;
}

}  // namespace

RankTrace rank_trace(const Trace& trace, int64_t rank_from_order) {
  RankTrace r;
  auto [rank, world] = distributed_info(trace);
  r.rank = rank >= 0 ? rank : rank_from_order;
  r.world_size = world;
  r.path = trace.path;
  r.instances = collective_instances(trace);
  if (r.instances.empty())
    throw CollectiveError(
        fmt::format("{} (rank {}) has no collective kernels (nccl/rccl kernels with their "
                    "launch correlation); nothing to match",
                    trace.path, r.rank));
  return r;
}

MultiRankReport match_ranks(std::vector<RankTrace> ranks, TimeAlignment alignment) {
  if (ranks.empty()) throw CollectiveError("no rank traces given");
  check_identities(ranks);
  std::sort(ranks.begin(), ranks.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  MultiRankReport report;
  for (const RankTrace& r : ranks) report.ranks.push_back(r.rank);
  auto groups = group_by_process_group(ranks);
  if (alignment == TimeAlignment::CollectiveEnd) {
    report.clock_offset_us = align_clocks(groups, report.ranks);
  } else {
    for (int64_t r : report.ranks) report.clock_offset_us[r] = 0.0;
  }
  for (const auto& [group, by_rank] : groups)
    for (size_t seq = 0; seq < by_rank.begin()->second.size(); ++seq)
      report.instances.push_back(match_one(group, by_rank, seq, report.clock_offset_us));
  return report;
}

}  // namespace jarvis::collectives
