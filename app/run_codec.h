// A run's result as text and back, exactly (every number round-trips), for processes that share
// a sweep under mpirun and send their runs to rank 0: all of it but the activity records and
// counters, which only a timeline reads.
#pragma once

#include <string>

#include "sim/rl/step_result.h"

namespace arlsim::app {

std::string pack_run(const rl::RunResult& r);
rl::RunResult unpack_run(const std::string& text);

}  // namespace arlsim::app
