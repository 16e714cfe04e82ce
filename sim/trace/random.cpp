#include "sim/trace/random.h"

#include <cmath>
#include <numbers>

#include "sim/core/assert.h"

namespace arlsim::trace {

uint64_t Rng::stream_seed(uint64_t seed, uint64_t stream) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(seed + 0x9e3779b97f4a7c15ULL) + stream);
}

double Rng::uniform01() {
  return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53;
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  ARLSIM_ASSERT(lo <= hi);
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range == 0) return static_cast<int64_t>(engine_());  // the whole 64-bit range
  // Rejection keeps every value equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return lo + static_cast<int64_t>(x % range);
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double r = std::sqrt(-2.0 * std::log(uniform01()));
  const double theta = 2.0 * std::numbers::pi * uniform01();
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

double Rng::exponential(double mean) { return -mean * std::log(uniform01()); }

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::numbers::sqrt2); }

double normal_quantile(double p) {
  ARLSIM_ASSERT(p > 0 && p < 1);
  if (p > 0.5) return -normal_quantile(1 - p);  // erfc is accurate in the lower tail
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace arlsim::trace
