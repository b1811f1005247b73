// The insights of one rule, in their ranked order (insight tests).
#pragma once

#include <string>
#include <vector>

#include "insights/insights.h"

namespace jarvis::testing {

inline std::vector<insights::Insight> rule_of(const std::vector<insights::Insight>& all,
                                              const std::string& rule) {
  std::vector<insights::Insight> out;
  for (const auto& i : all)
    if (i.rule == rule) out.push_back(i);
  return out;
}

}  // namespace jarvis::testing
