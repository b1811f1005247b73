#include "trace/expansion_budget.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

namespace jarvis {

namespace {
std::atomic<uint64_t> g_process_limit{0};

std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}
}  // namespace

void set_process_memory_limit(uint64_t bytes) {
  g_process_limit.store(bytes, std::memory_order_relaxed);
}

uint64_t process_memory_limit() {
  return g_process_limit.load(std::memory_order_relaxed);
}

uint64_t expansion_limit(uint64_t input_bytes) {
  const uint64_t scaled =
      input_bytes > UINT64_MAX / kExpansionFactor ? UINT64_MAX : input_bytes * kExpansionFactor;
  uint64_t limit = std::max(kExpansionFloorBytes, scaled);
  if (uint64_t process = process_memory_limit(); process > 0)
    limit = std::min(limit, std::max<uint64_t>(process / 2, 1));
  return limit;
}

ExpansionBudget::ExpansionBudget(std::string label, uint64_t input_bytes)
    : label_(std::move(label)), input_bytes_(input_bytes), limit_(expansion_limit(input_bytes)) {
  const uint64_t process = process_memory_limit();
  why_ =
      process > 0 && limit_ == std::max<uint64_t>(process / 2, 1)
          ? "half of the server's --max-memory"
          : fmt::format("{}x its size, at least {}", kExpansionFactor, mib(kExpansionFloorBytes));
}

void ExpansionBudget::refuse(uint64_t bytes, std::string_view what) const {
  throw ExpansionRefused(
      fmt::format("{}: {} would take {} more, past the {} an input of {} may expand to here "
                  "({}; {} taken so far). The file references the same data far more often "
                  "than a profiler writes it: it is crafted or damaged",
                  label_, what, mib(bytes), mib(limit_), mib(input_bytes_), why_, mib(used_)));
}

}  // namespace jarvis
