#include "cli/suggest.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace jarvis::cli {
namespace {

char fold(char c) {
  return c == '_' ? '-' : c;
}

// Optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of adjacent characters, each one edit.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string did_you_mean(std::string_view word, const std::set<std::string>& candidates) {
  // Leading dashes are not part of what was misspelt.
  std::string_view core = word.substr(std::min(word.find_first_not_of('-'), word.size()));
  size_t limit = std::clamp<size_t>(core.size() / 3, 1, 3);
  const std::string* best = nullptr;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    size_t distance = edit_distance(word, c);
    if (distance < best_distance) {
      best_distance = distance;
      best = &c;
    }
  }
  return best ? fmt::format(" (did you mean '{}'?)", *best) : "";
}

}  // namespace jarvis::cli
