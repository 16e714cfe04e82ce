// Sorting the large arrays of doubles that reports take percentiles of (a million trajectories'
// times, millions of tool calls'): Boost's spreadsort, a radix sort, faster there than std::sort.
#pragma once

#include <vector>

namespace arlsim::core {

// Sorts ascending, to the very order std::sort would give: values that compare equal are the same
// bits (NaN and negative zero, where that fails, go to std::sort).
void sort_ascending(std::vector<double>& values);

}  // namespace arlsim::core
