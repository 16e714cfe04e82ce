// Run summaries: the distributions a report prints (nearest-rank percentiles, the mean).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <vector>

#include "sim/core/percentile.h"
#include "sim/rl/metrics.h"

using namespace arlsim;

TEST_CASE("summaries: percentiles by selection match the nearest ranks of the sorted values, and the mean does not depend on order") {
  uint64_t state = 12345;
  auto next = [&] {  // a small LCG: values with ties and a long tail
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>((state >> 33) % 1000) * ((state >> 20) % 7 == 0 ? 37.5 : 1.0);
  };
  for (size_t n : {1u, 2u, 3u, 9u, 10u, 11u, 99u, 100u, 101u, 1000u}) {
    std::vector<double> v(n);
    for (double& x : v) x = next();
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const rl::Distribution d = rl::summarize(v);
    CHECK(d.count == static_cast<int64_t>(n));
    CHECK(d.p50 == nearest_rank(sorted, 50));
    CHECK(d.p90 == nearest_rank(sorted, 90));
    CHECK(d.p99 == nearest_rank(sorted, 99));
    CHECK(d.max == sorted.back());
    double sum = 0;
    for (double x : sorted) sum += x;
    CHECK(d.mean == doctest::Approx(sum / static_cast<double>(n)).epsilon(1e-15));
    std::reverse(v.begin(), v.end());
    CHECK(rl::summarize(v).mean == d.mean);
  }
  CHECK(rl::summarize({}).count == 0);
  // An infinite value gives an infinite mean, not NaN.
  CHECK(std::isinf(rl::summarize({1.0, std::numeric_limits<double>::infinity(), 2.0}).mean));
}
