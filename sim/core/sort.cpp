#include "sim/core/sort.h"

#include <algorithm>
#include <cmath>
#include <boost/sort/spreadsort/float_sort.hpp>

namespace arlsim::core {

void sort_ascending(std::vector<double>& values) {
  // Boost's spreadsort (a radix sort over the values' bits, falling back to comparisons in small
  // bins) orders doubles as their bits say, which is std::sort's order except where values that
  // compare equal differ in bits: NaN and negative zero go to std::sort.
  for (const double v : values)
    if (std::isnan(v) || (v == 0 && std::signbit(v))) {
      std::sort(values.begin(), values.end());
      return;
    }
  boost::sort::spreadsort::float_sort(values.begin(), values.end());
}

}  // namespace arlsim::core
