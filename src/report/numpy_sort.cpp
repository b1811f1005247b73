#include "report/numpy_sort.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace jarvis::numpy {

namespace {

// NumPy 1.24 introsort argsort (npysort quicksort.cpp, `aquicksort_`):
// median-of-three quicksort, insertion sort below 16 elements, heapsort when
// the depth budget runs out. Reproduced because pandas' default sort is this
// unstable algorithm and tied rows come out in its order.
bool less_nan_last(double a, double b) {
  return a < b || (b != b && a == a);
}

void argheapsort(const double* v, size_t* tosort, ptrdiff_t n) {
  size_t* a = tosort - 1;  // 1-based heap indexing
  ptrdiff_t i, j, l;
  size_t tmp;
  for (l = n >> 1; l > 0; --l) {
    tmp = a[l];
    for (i = l, j = l << 1; j <= n;) {
      if (j < n && less_nan_last(v[a[j]], v[a[j + 1]])) j += 1;
      if (less_nan_last(v[tmp], v[a[j]])) {
        a[i] = a[j];
        i = j;
        j += j;
      } else {
        break;
      }
    }
    a[i] = tmp;
  }
  for (; n > 1;) {
    tmp = a[n];
    a[n] = a[1];
    n -= 1;
    for (i = 1, j = 2; j <= n;) {
      if (j < n && less_nan_last(v[a[j]], v[a[j + 1]])) j++;
      if (less_nan_last(v[tmp], v[a[j]])) {
        a[i] = a[j];
        i = j;
        j += j;
      } else {
        break;
      }
    }
    a[i] = tmp;
  }
}

int msb(size_t n) {
  int depth = 0;
  while (n >>= 1) depth++;
  return depth;
}

void argquicksort(const double* v, size_t* tosort, size_t num) {
  constexpr ptrdiff_t kSmall = 15;
  if (num < 2) return;
  size_t* pl = tosort;
  size_t* pr = tosort + num - 1;
  std::vector<size_t*> stack;
  std::vector<int> depths;
  int cdepth = msb(num) * 2;
  for (;;) {
    if (cdepth < 0) {
      argheapsort(v, pl, pr - pl + 1);
    } else {
      while ((pr - pl) > kSmall) {
        size_t* pm = pl + ((pr - pl) >> 1);
        if (less_nan_last(v[*pm], v[*pl])) std::swap(*pm, *pl);
        if (less_nan_last(v[*pr], v[*pm])) std::swap(*pr, *pm);
        if (less_nan_last(v[*pm], v[*pl])) std::swap(*pm, *pl);
        double vp = v[*pm];
        size_t* pi = pl;
        size_t* pj = pr - 1;
        std::swap(*pm, *pj);
        for (;;) {
          do ++pi;
          while (less_nan_last(v[*pi], vp));
          do --pj;
          while (less_nan_last(vp, v[*pj]));
          if (pi >= pj) break;
          std::swap(*pi, *pj);
        }
        std::swap(*pi, *(pr - 1));
        // Continue with the smaller partition, keep the larger one for later.
        if (pi - pl < pr - pi) {
          stack.push_back(pi + 1);
          stack.push_back(pr);
          pr = pi - 1;
        } else {
          stack.push_back(pl);
          stack.push_back(pi - 1);
          pl = pi + 1;
        }
        depths.push_back(--cdepth);
      }
      for (size_t* pi = pl + 1; pi <= pr; ++pi) {
        size_t vi = *pi;
        double vpi = v[vi];
        size_t* pj = pi;
        size_t* pk = pi - 1;
        while (pj > pl && less_nan_last(vpi, v[*pk])) *pj-- = *pk--;
        *pj = vi;
      }
    }
    if (stack.empty()) break;
    pr = stack.back();
    stack.pop_back();
    pl = stack.back();
    stack.pop_back();
    cdepth = depths.back();
    depths.pop_back();
  }
}

}  // namespace

std::vector<size_t> argsort(const std::vector<double>& values) {
  std::vector<size_t> perm(values.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  argquicksort(values.data(), perm.data(), perm.size());
  return perm;
}

std::vector<size_t> argsort_descending(const std::vector<double>& values) {
  // pandas nargsort(ascending=False): reverse the non-missing values, sort
  // them ascending, reverse the result, then append the missing ones.
  std::vector<size_t> non_missing, missing;
  for (size_t i = 0; i < values.size(); ++i)
    (std::isnan(values[i]) ? missing : non_missing).push_back(i);
  std::reverse(non_missing.begin(), non_missing.end());
  std::vector<double> reversed_values;
  reversed_values.reserve(non_missing.size());
  for (size_t i : non_missing) reversed_values.push_back(values[i]);
  std::vector<size_t> perm = argsort(reversed_values);
  std::vector<size_t> result;
  result.reserve(values.size());
  for (size_t i = perm.size(); i-- > 0;) result.push_back(non_missing[perm[i]]);
  result.insert(result.end(), missing.begin(), missing.end());
  return result;
}

}  // namespace jarvis::numpy
