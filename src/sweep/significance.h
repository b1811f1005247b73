// Statistics for sweep conclusions: is B different from A, given a few
// samples of each? Used by compare_sweeps and the regression gate.
//
// A sample is one number per unit of repetition, and the unit decides what
// noise the test measures:
//   - within a run: one value per op instance (the instances of one GEMM row
//     in one trace) — says these two traces differ, not the configurations;
//   - across iterations: one value per ProfilerStep of a run;
//   - across runs: one value per repeated run of a configuration — the noise
//     a claim about the configuration (or a code change) must beat.
// The test is the two-sided Mann-Whitney U rank test (exact distribution
// without ties and at most 20 samples a side, else the normal approximation
// with tie and continuity correction, as scipy.stats.mannwhitneyu). With too
// few samples the test cannot reach the chosen alpha at all (3 + 3 samples:
// the smallest two-sided p is 0.1); then the verdict is "cannot tell".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jarvis::sweep {

struct RankTest {
  size_t n_a = 0, n_b = 0;
  double u = 0;      // U statistic of sample a
  double p = 1;      // two-sided p-value (NaN when a side is empty)
  double min_p = 1;  // the smallest two-sided p these sizes can give (exact, no ties)
  bool exact = false;
};

// Two-sided Mann-Whitney U test of a against b.
RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b);
// 2 / C(n_a + n_b, n_a): the p of complete separation.
double min_two_sided_p(size_t n_a, size_t n_b);

// Percentile bootstrap interval of the relative change of medians,
// 100 * (median(b) / median(a) - 1), from `resamples` resamples of each side
// (fixed seed: the same inputs give the same interval). NaN with fewer than
// two samples a side.
struct Interval {
  double lo = 0, hi = 0;
};
Interval bootstrap_median_change_pct(const std::vector<double>& a, const std::vector<double>& b,
                                     double level = 0.95, size_t resamples = 2000);

enum class Verdict { Slower, Faster, Same, CannotTell };
// slower | faster | same | cannot tell
const char* verdict_name(Verdict v);

// Baseline a against candidate b (larger = slower, e.g. times).
struct SampleComparison {
  size_t n_base = 0, n_cand = 0;
  double base_median = 0, cand_median = 0;
  double change_pct = 0;  // 100 * (cand_median / base_median - 1)
  RankTest test;
  Interval ci_pct;  // bootstrap interval of change_pct
  Verdict verdict = Verdict::CannotTell;
  std::string reason;  // one sentence: the numbers behind the verdict
};
// Slower / faster: p < alpha and |change_pct| > threshold_pct. Same: the test
// could reach alpha but did not, or the change is within the threshold.
// Cannot tell: fewer samples than the test needs to reach alpha.
SampleComparison compare_samples(const std::vector<double>& base, const std::vector<double>& cand,
                                 double alpha, double threshold_pct);

}  // namespace jarvis::sweep
