// Nearest-rank percentiles, the one definition every report uses: the p-th percentile of n
// sorted values is the value at rank ceil(p/100 * n) (1-based), so a reported percentile is
// always a value that occurs.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace arlsim {

// `sorted` ascending; T{} when empty. The small tolerance keeps an exact rank exact (0.9 * 10 is
// 9.000000000000002 in binary floating point).
template <class T>
T nearest_rank(const std::vector<T>& sorted, double percent) {
  if (sorted.empty()) return T{};
  const auto rank = static_cast<size_t>(std::ceil(percent / 100.0 * static_cast<double>(sorted.size()) - 1e-9));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace arlsim
