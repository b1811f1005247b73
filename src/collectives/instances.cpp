// Collective types, nccl-tests bandwidths and the per-rank instance list.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "collectives/collectives.h"

namespace jarvis::collectives {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string text_of(const PyValue& v) {
  if (v.is_none()) return "";
  if (v.is_string()) return v.s;
  return v.repr_list();
}

// "[0, 1, 2]" (as PyTorch writes it) or a JSON list of ints.
std::vector<int64_t> parse_ranks(const PyValue& v) {
  std::vector<int64_t> ranks;
  if (v.is_list()) {
    for (const PyValue& item : v.list)
      if (item.kind == PyValue::Kind::Int) ranks.push_back(item.i);
    return ranks;
  }
  if (!v.is_string()) return ranks;
  int64_t current = 0;
  bool in_number = false;
  for (char c : v.s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      current = current * 10 + (c - '0');
      in_number = true;
    } else if (in_number) {
      ranks.push_back(current);
      current = 0;
      in_number = false;
    }
  }
  if (in_number) ranks.push_back(current);
  return ranks;
}

}  // namespace

CollectiveType collective_type(std::string_view name) {
  static const std::pair<std::string_view, CollectiveType> names[] = {
      {"allreduce", CollectiveType::AllReduce},
      {"allreduce_coalesced", CollectiveType::AllReduce},
      {"reducescatter", CollectiveType::ReduceScatter},
      {"_reduce_scatter_base", CollectiveType::ReduceScatter},
      {"reduce_scatter_tensor_coalesced", CollectiveType::ReduceScatter},
      {"allgather", CollectiveType::AllGather},
      {"all_gather", CollectiveType::AllGather},
      {"_allgather_base", CollectiveType::AllGather},
      {"all_gather_into_tensor_coalesced", CollectiveType::AllGather},
      {"allgather_into_tensor_coalesced", CollectiveType::AllGather},
      {"all_to_all", CollectiveType::AllToAll},
      {"alltoall", CollectiveType::AllToAll},
      {"alltoall_base", CollectiveType::AllToAll},
      {"all_to_allv", CollectiveType::AllToAllV},
      {"broadcast", CollectiveType::Broadcast},
      {"reduce", CollectiveType::Reduce},
      {"collective_permute", CollectiveType::SendRecv},
  };
  for (auto [n, t] : names)
    if (n == name) return t;
  return CollectiveType::Other;
}

const char* collective_type_name(CollectiveType type) {
  switch (type) {
    case CollectiveType::AllReduce:
      return "allreduce";
    case CollectiveType::ReduceScatter:
      return "reducescatter";
    case CollectiveType::AllGather:
      return "allgather";
    case CollectiveType::AllToAll:
      return "alltoall";
    case CollectiveType::AllToAllV:
      return "alltoallv";
    case CollectiveType::Broadcast:
      return "broadcast";
    case CollectiveType::Reduce:
      return "reduce";
    case CollectiveType::SendRecv:
      return "sendrecv";
    case CollectiveType::Other:
      return "other";
  }
  return "other";
}

double bus_bandwidth_factor(CollectiveType type, int64_t group_size) {
  if (group_size < 1) return kNaN;
  const double n = static_cast<double>(group_size);
  switch (type) {
    case CollectiveType::AllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveType::ReduceScatter:
    case CollectiveType::AllGather:
    case CollectiveType::AllToAll:
    case CollectiveType::AllToAllV:
      return (n - 1) / n;
    case CollectiveType::Broadcast:
    case CollectiveType::Reduce:
    case CollectiveType::SendRecv:
      return 1.0;
    case CollectiveType::Other:
      return kNaN;
  }
  return kNaN;
}

Bandwidth bandwidth(CollectiveType type, double msg_size_mb, int64_t group_size, double time_us) {
  Bandwidth bw{kNaN, kNaN};
  if (!(time_us > 0) || std::isnan(msg_size_mb)) return bw;
  // TraceLens: (MiB / 1024) / (us / 1e6), i.e. GiB per second.
  bw.algbw_gbps = (msg_size_mb / 1024.0) / (time_us / 1e6);
  bw.busbw_gbps = bw.algbw_gbps * bus_bandwidth_factor(type, group_size);
  return bw;
}

double full_msg_size_mb(const CollectiveKernel& kernel, CollectiveType type) {
  return type == CollectiveType::AllGather ? kernel.out_msg_mb() : kernel.in_msg_mb();
}

std::vector<CollectiveInstance> collective_instances(const Trace& trace) {
  std::vector<CollectiveInstance> out;
  for (CollectiveKernel& k : collective_kernels(trace)) {
    CollectiveInstance inst;
    inst.kernel_name = std::string(trace.name(k.uid));
    inst.process_group = text_of(k.process_group_name);
    inst.collective = text_of(k.collective_name);
    inst.type = collective_type(inst.collective);
    inst.dtype = text_of(k.dtype);
    if (k.in_msg_nelems.is_number())
      inst.in_msg_nelems = static_cast<int64_t>(k.in_msg_nelems.as_double());
    if (k.group_size.is_number()) inst.group_size = static_cast<int64_t>(k.group_size.as_double());
    inst.group_ranks = parse_ranks(k.process_group_ranks);
    inst.msg_size_mb = full_msg_size_mb(k, inst.type);
    inst.bw = bandwidth(inst.type, inst.msg_size_mb, inst.group_size, k.dur);
    inst.kernel = std::move(k);
    out.push_back(std::move(inst));
  }
  // Sequence within each process group by start time (file order on ties).
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.kernel.ts < b.kernel.ts; });
  std::map<std::string, int64_t> next_seq;
  for (auto& inst : out) inst.seq = next_seq[inst.process_group]++;
  return out;
}

}  // namespace jarvis::collectives
