// A plan's run as the planner predicts it without the event simulator: each step's stage costs
// from the analytic estimators (the schedule's chosen candidates), dispatch measured as fluid flows
// on the largest step and scaled by tokens to the others, weight sync and the schedule's layout
// switches, placed in time on the step graph the simulator builds (sim/graph/step_graph.h) by the
// analytic executor (sim/exec/analytic.h: the critical path, without the simulator's device
// contention). `arlsim capacity` answers with it, `arlsim whatif --analytic` too, and
// `arlsim plan` prints it beside the simulated run as their agreement.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/plan.h"
#include "sim/exec/analytic.h"

namespace arlsim::planner {

struct AnalyticRun {
  std::vector<exec::StepSpan> spans;  // per trace step
  std::vector<graph::StageTimes> stages;  // per trace step (preparation and training together in `train`)
  double total_s = 0;                 // the last step's end
};

// The run of `p`'s schedules chosen by `selector`; none when a chosen layout does not fit a step
// (an OOM has no time). The second form: the scenario's own layouts (its policy's schedule),
// costed by the analytic estimators alone — `arlsim whatif --analytic`.
std::optional<AnalyticRun> analytic_run(const input::ScenarioSpec& s, const Plan& p, const std::vector<StepFeatures>& f,
                                        const std::string& selector);
std::optional<AnalyticRun> analytic_run(const input::ScenarioSpec& s, const std::vector<StepFeatures>& f);

}  // namespace arlsim::planner
