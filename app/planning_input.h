// What `arlsim plan` and `arlsim capacity` start from, loaded the same way for both.
#pragma once

#include <boost/program_options/variables_map.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/features.h"
#include "sim/parse/json.h"
#include "sim/input/scenario.h"
#include "sim/trace/trace.h"

namespace arlsim::app {

struct PlanningInput {
  input::ScenarioSpec scenario;
  input::Value document;  // the scenario as loaded, which plan.json embeds
  trace::Trace trace;
  std::vector<planner::StepFeatures> features;  // per trace step in `fo`'s range
};

// Loads the scenario (with `overrides`) and its trace (or `trace_path`) and takes the trace's
// step features, contexts clamped to the workload's limit and at most the scenario's steps.
// Prints the diagnostics and gives nothing when an input is bad.
// A generated trace is refused before it is drawn when it would not fit `limit` (`from_option`:
// the limit is --max-memory's); `command` prefixes the message.
struct PlanningMemory {
  std::optional<double> limit;
  bool from_option = false;
  const char* command = "arlsim";
};
std::optional<PlanningInput> load_planning_input(const std::string& scenario, const std::vector<std::string>& overrides,
                                                 const std::string& trace_path, planner::FeatureOptions fo,
                                                 const PlanningMemory& memory);

// The fixed time of a layout switch to weigh: the scenario's when it states one and the
// --switch-overhead flag was left at its default, else the flag's.
double switch_overhead(const input::ScenarioSpec& s, const boost::program_options::variables_map& vm, double flag);

}  // namespace arlsim::app
