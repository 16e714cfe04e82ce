// Nearest-rank percentiles, the one definition every report uses: the p-th percentile of n
// sorted values is the value at rank ceil(p/100 * n) (1-based), so a reported percentile is
// always a value that occurs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace arlsim {

// The 0-based index of the p-th percentile among n > 0 sorted values. The small tolerance keeps an
// exact rank exact (0.9 * 10 is 9.000000000000002 in binary floating point).
inline size_t nearest_rank_index(size_t n, double percent) {
  const auto rank = static_cast<size_t>(std::ceil(percent / 100.0 * static_cast<double>(n) - 1e-9));
  return std::clamp<size_t>(rank, 1, n) - 1;
}

// `sorted` ascending; T{} when empty.
template <class T>
T nearest_rank(const std::vector<T>& sorted, double percent) {
  if (sorted.empty()) return T{};
  return sorted[nearest_rank_index(sorted.size(), percent)];
}

}  // namespace arlsim
