#include "app/planning_input.h"

#include <iostream>

#include "app/memory_limit.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"

namespace arlsim::app {

std::optional<PlanningInput> load_planning_input(const std::string& scenario, const std::vector<std::string>& overrides,
                                                 const std::string& trace_path, planner::FeatureOptions fo,
                                                 const PlanningMemory& memory) {
  input::Diagnostics diag;
  PlanningInput in;
  auto s = input::load_scenario(scenario, overrides, diag, &in.document);
  std::optional<trace::Trace> t;
  if (s && !trace_path.empty()) s->generated_trace.reset();  // the file replaces the generated trace (and its run length)
  // A generated trace too large for memory is refused before it is drawn.
  if (s)
    if (const std::string problem =
            expected_memory_problem(*s, nullptr, memory.limit, memory.from_option);
        !problem.empty()) {
      std::cerr << memory.command << ": " << problem << "\n";
      return std::nullopt;
    }
  if (s) t = rl::load_scenario_trace(*s, trace_path, diag);
  if (!s || !t) {
    std::cerr << input::format_all(diag);
    return std::nullopt;
  }
  in.scenario = std::move(*s);
  in.trace = std::move(*t);
  fo.max_context = in.scenario.workload.max_context_tokens;
  fo.max_steps = in.scenario.steps;
  in.features = planner::step_features(in.trace, fo);
  return in;
}

double switch_overhead(const input::ScenarioSpec& s, const boost::program_options::variables_map& vm, double flag) {
  return vm["switch-overhead"].defaulted() && s.policy.switch_overhead_s > 0 ? s.policy.switch_overhead_s : flag;
}

}  // namespace arlsim::app
