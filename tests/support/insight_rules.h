// The insights of one rule, in their ranked order; findings as the JSON
// they are written as, to compare two runs (insight tests).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "insights/insights.h"

namespace jarvis::testing {

inline std::vector<insights::Insight> rule_of(const std::vector<insights::Insight>& all,
                                              const std::string& rule) {
  std::vector<insights::Insight> out;
  for (const auto& i : all)
    if (i.rule == rule) out.push_back(i);
  return out;
}

inline nlohmann::json insights_json(const std::vector<insights::Insight>& found) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : found) out.push_back(insights::to_json(i));
  return out;
}

}  // namespace jarvis::testing
