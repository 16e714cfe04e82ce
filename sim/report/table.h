// The run summary that `arlsim simulate` prints for people: step-time percentiles, each stage's
// share of the time, throughput, totals, cost and OOMs, in at most 80 columns.
#pragma once

#include <string>

#include "sim/rl/step_result.h"

namespace arlsim::report {

// Lines end in '\n'. Stages that took no time in any step are left out of the stage table.
std::string run_table(const rl::RunResult& r);

}  // namespace arlsim::report
