// plan.json ("format": "arlsim-plan/1"), the planner's output and the input of exporters and the
// runtime; docs/formats.md documents every key. It is self-contained: it carries the resolved
// scenario with the planned policy (so `arlsim simulate plan.json` replays it), a summary of the
// cluster, model and workload, the per-stage layouts and their schedule over steps, how each
// selector and candidate fared, the dispatch mode and plan, and the simulator's per-step
// prediction.
#pragma once

#include <string>

#include "planner/plan.h"
#include "sim/rl/step_result.h"
#include "sim/parse/json.h"
#include "sim/input/scenario.h"

namespace arlsim::planner {

struct DispatchComparison;

struct PlanDocument {
  const input::ScenarioSpec* scenario = nullptr;
  const input::Value* scenario_document = nullptr;  // resolved, as loaded
  const Plan* plan = nullptr;
  const rl::RunResult* predicted = nullptr;  // the scenario simulated with the planned policy
  const DispatchComparison* dispatch = nullptr;  // may be null
  // The adopted schedule's analytic run (analytic_run.h), beside `predicted`; null when a step of
  // it does not fit.
  const double* analytic_total_s = nullptr;
  // The same for the scenario's own (configured) layouts: their analytic run, and the simulated run
  // of the scenario as given; null when not run.
  const double* configured_analytic_s = nullptr;
  const rl::RunResult* configured = nullptr;
};

std::string plan_json(const PlanDocument& d);
// A parsed input document as indented JSON (what `arlsim export --format json` prints).
std::string document_json(const input::Value& v);

}  // namespace arlsim::planner
