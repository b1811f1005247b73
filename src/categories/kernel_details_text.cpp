#include "categories/kernel_details_text.h"

#include <re2/re2.h>

#include <cstdlib>

namespace jarvis::analysis {

std::vector<std::string> kernel_detail_names(std::string_view text) {
  static const RE2 name_re(R"('name':\s*'([^']+)')");
  std::vector<std::string> out;
  re2::StringPiece input(text.data(), text.size());
  std::string name;
  while (RE2::FindAndConsume(&input, name_re, &name)) out.push_back(name);
  return out;
}

std::vector<KernelDetailMean> kernel_detail_means(std::string_view text) {
  static const RE2 entry_re(R"('name':\s*'([^']+)'(?s:.*?)'mean_duration_us':\s*([0-9.]+))");
  std::vector<KernelDetailMean> out;
  re2::StringPiece input(text.data(), text.size());
  std::string name, mean;
  while (RE2::FindAndConsume(&input, entry_re, &name, &mean))
    out.push_back({name, std::strtod(mean.c_str(), nullptr)});
  return out;
}

}  // namespace jarvis::analysis
