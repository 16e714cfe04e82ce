// The default scenario and its generated trace, for the step tests.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/rl/step.h"
#include "tests/model/model_fixtures.h"

namespace arlsim::test {

// The embedded default scenario with `overrides` (/pointer=value).
inline input::ScenarioSpec scenario(const std::vector<std::string>& overrides) { return preset_scenario("default", overrides); }

// The trace a scenario simulates (its generated steps).
inline trace::Trace small_trace(const input::ScenarioSpec& s) {
  input::Diagnostics diag;
  auto t = rl::load_scenario_trace(s, "", diag);
  REQUIRE(t);
  return *t;
}

}  // namespace arlsim::test
