// "Did you mean" for misspelt commands and flags.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace jarvis::cli {

// The candidate nearest to `word` by edit distance (a swap of two neighbours
// counts once; '_' and '-' are the same, so TraceLens's snake_case spellings
// find jarvis's flags) as " (did you mean 'X'?)", or "" when none is close:
// within a third of the word's length, at most 3 edits.
std::string did_you_mean(std::string_view word, const std::set<std::string>& candidates);

}  // namespace jarvis::cli
