#include "sim/core/sort.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace arlsim::core {

void sort_ascending(std::vector<double>& values) {
  constexpr size_t kSmall = 1 << 14;  // below this std::sort is as fast
  const size_t n = values.size();
  if (n < kSmall) {
    std::sort(values.begin(), values.end());
    return;
  }
  // Keys whose unsigned order is the doubles' order: the sign bit flipped for positives, every
  // bit for negatives.
  std::vector<uint64_t> keys(n), scratch(n);
  for (size_t i = 0; i < n; ++i) {
    const double v = values[i];
    if (std::isnan(v) || (v == 0 && std::signbit(v))) {
      std::sort(values.begin(), values.end());
      return;
    }
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    keys[i] = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
  }
  // Least significant digit first, 16 bits a pass; a pass whose digit is the same everywhere
  // (high bits of times of a similar magnitude) is skipped.
  constexpr int kBits = 16;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t k : keys) ++count[(k >> shift) & (kBuckets - 1)];
    if (count[(keys[0] >> shift) & (kBuckets - 1)] == n) continue;
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (uint64_t k : keys) scratch[count[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(scratch);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = keys[i];
    const uint64_t bits = (k >> 63) != 0 ? k & ~(uint64_t{1} << 63) : ~k;
    std::memcpy(&values[i], &bits, sizeof bits);
  }
}

}  // namespace arlsim::core
