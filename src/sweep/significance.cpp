// Mann-Whitney U (exact and normal approximation), bootstrap interval of the
// change of medians, and the verdict rule of significance.h.
#include "sweep/significance.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace jarvis::sweep {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Number of orderings of m a-values and n b-values (no ties) giving each U,
// by the recurrence on where the largest value comes from: from a it is
// above all n b-values (adds n to U), from b it adds nothing.
std::vector<double> exact_u_counts(size_t m, size_t n) {
  std::vector<std::vector<std::vector<double>>> c(m + 1, std::vector<std::vector<double>>(n + 1));
  for (size_t i = 0; i <= m; ++i)
    for (size_t j = 0; j <= n; ++j) {
      if (i == 0 || j == 0) {
        c[i][j] = {1.0};
        continue;
      }
      std::vector<double> out(i * j + 1, 0.0);
      const auto& from_a = c[i - 1][j];
      for (size_t u = 0; u < from_a.size(); ++u) out[u + j] += from_a[u];
      const auto& from_b = c[i][j - 1];
      for (size_t u = 0; u < from_b.size(); ++u) out[u] += from_b[u];
      c[i][j] = std::move(out);
    }
  return c[m][n];
}

constexpr size_t kExactMax = 20;

}  // namespace

double min_two_sided_p(size_t n_a, size_t n_b) {
  if (n_a == 0 || n_b == 0) return 1;
  // 2 / C(n_a + n_b, n_a), in logs so large sizes do not overflow.
  double log_c = std::lgamma(static_cast<double>(n_a + n_b + 1)) -
                 std::lgamma(static_cast<double>(n_a + 1)) -
                 std::lgamma(static_cast<double>(n_b + 1));
  return std::min(1.0, 2.0 * std::exp(-log_c));
}

RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  RankTest t;
  t.n_a = a.size();
  t.n_b = b.size();
  t.min_p = min_two_sided_p(t.n_a, t.n_b);
  if (a.empty() || b.empty()) {
    t.p = NAN;
    return t;
  }
  // Ranks over the pooled sample, ties given their mean rank.
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.push_back({x, 0});
  for (double x : b) all.push_back({x, 1});
  std::sort(all.begin(), all.end());
  const size_t N = all.size();
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < N;) {
    size_t j = i;
    while (j < N && all[j].first == all[i].first) ++j;
    double mean_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    double k = static_cast<double>(j - i);
    if (j - i > 1) ties = true;
    tie_term += k * k * k - k;
    for (size_t x = i; x < j; ++x)
      if (all[x].second == 0) rank_sum_a += mean_rank;
    i = j;
  }
  const double m = static_cast<double>(t.n_a), n = static_cast<double>(t.n_b);
  t.u = rank_sum_a - m * (m + 1) / 2;
  if (!ties && t.n_a <= kExactMax && t.n_b <= kExactMax) {
    std::vector<double> counts = exact_u_counts(t.n_a, t.n_b);
    double total = 0, below = 0, above = 0;
    auto u = static_cast<size_t>(std::llround(t.u));
    for (size_t k = 0; k < counts.size(); ++k) {
      total += counts[k];
      if (k <= u) below += counts[k];
      if (k >= u) above += counts[k];
    }
    t.p = std::min(1.0, 2.0 * std::min(below, above) / total);
    t.exact = true;
    return t;
  }
  double mu = m * n / 2;
  double var = m * n / 12 *
               ((static_cast<double>(N) + 1) -
                tie_term / (static_cast<double>(N) * (static_cast<double>(N) - 1)));
  if (var <= 0) {
    t.p = 1;  // every value equal
    return t;
  }
  double z = std::max(0.0, std::fabs(t.u - mu) - 0.5) / std::sqrt(var);
  t.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return t;
}

Interval bootstrap_median_change_pct(const std::vector<double>& a, const std::vector<double>& b,
                                     double level, size_t resamples) {
  if (a.size() < 2 || b.size() < 2) return {NAN, NAN};
  std::mt19937_64 rng(0x5eed5eedULL);  // fixed: the interval is reproducible
  std::vector<double> changes;
  changes.reserve(resamples);
  std::vector<double> ra(a.size()), rb(b.size());
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  for (size_t r = 0; r < resamples; ++r) {
    for (double& x : ra) x = a[pick_a(rng)];
    for (double& x : rb) x = b[pick_b(rng)];
    double ma = median_of(ra);
    if (ma != 0) changes.push_back(100.0 * (median_of(rb) / ma - 1));
  }
  if (changes.empty()) return {NAN, NAN};
  std::sort(changes.begin(), changes.end());
  auto at = [&](double q) {
    double pos = q * static_cast<double>(changes.size() - 1);
    return changes[static_cast<size_t>(std::llround(pos))];
  };
  return {at((1 - level) / 2), at(1 - (1 - level) / 2)};
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Slower:
      return "slower";
    case Verdict::Faster:
      return "faster";
    case Verdict::Same:
      return "same";
    case Verdict::CannotTell:
      return "cannot tell";
  }
  return "cannot tell";
}

SampleComparison compare_samples(const std::vector<double>& base, const std::vector<double>& cand,
                                 double alpha, double threshold_pct) {
  SampleComparison c;
  c.n_base = base.size();
  c.n_cand = cand.size();
  c.base_median = median_of(base);
  c.cand_median = median_of(cand);
  c.change_pct = c.base_median != 0 ? 100.0 * (c.cand_median / c.base_median - 1) : NAN;
  c.test = mann_whitney(base, cand);
  c.ci_pct = bootstrap_median_change_pct(base, cand);
  if (c.n_base == 0 || c.n_cand == 0 || c.test.min_p >= alpha) {
    c.verdict = Verdict::CannotTell;
    c.reason = fmt::format(
        "{} baseline and {} candidate samples: the rank test cannot reach p < {} (smallest "
        "possible p {:.3g}); repeat the runs (4 a side at least)",
        c.n_base, c.n_cand, alpha, c.test.min_p);
    return c;
  }
  bool significant = c.test.p < alpha;
  if (significant && std::fabs(c.change_pct) > threshold_pct) {
    c.verdict = c.change_pct > 0 ? Verdict::Slower : Verdict::Faster;
    c.reason = fmt::format(
        "{:+.2f} % (95 % CI {:+.2f} .. {:+.2f} %), p = {:.3g} with {} + {} "
        "samples",
        c.change_pct, c.ci_pct.lo, c.ci_pct.hi, c.test.p, c.n_base, c.n_cand);
  } else {
    c.verdict = Verdict::Same;
    c.reason = significant
                   ? fmt::format(
                         "{:+.2f} % is significant (p = {:.3g}, {} + {} samples) but "
                         "within the {} % threshold",
                         c.change_pct, c.test.p, c.n_base, c.n_cand, threshold_pct)
                   : fmt::format(
                         "no difference detected: {:+.2f} % (95 % CI {:+.2f} .. {:+.2f} "
                         "%), p = {:.3g} with {} + {} samples",
                         c.change_pct, c.ci_pct.lo, c.ci_pct.hi, c.test.p, c.n_base, c.n_cand);
  }
  return c;
}

}  // namespace jarvis::sweep
