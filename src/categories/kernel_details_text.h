// Reading the kernel_details_summary cell of the perf tables: TraceLens writes
// it as the Python repr of a list of dicts ({'name': '...', ...,
// 'mean_duration_us': ...}). The cell text comes from the trace (kernel names
// are arbitrary), so it is scanned with RE2, whose time is linear in the text
// and whose stack use does not grow with a match's length (std::regex
// recursed once per character and overflowed on 100k-character names).
// A regex rather than the Python literal parser on purpose: TraceLens's
// category analyses read the cell with these same patterns, and the
// literal parser would differ from them on names holding quotes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jarvis::analysis {

// Every 'name': '...' value, in order.
std::vector<std::string> kernel_detail_names(std::string_view text);

struct KernelDetailMean {
  std::string name;
  double mean_us = 0;
};

// Every 'name' with the first 'mean_duration_us' number after it.
std::vector<KernelDetailMean> kernel_detail_means(std::string_view text);

}  // namespace jarvis::analysis
