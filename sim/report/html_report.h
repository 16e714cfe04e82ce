// report.html: the page a person opens first after a run — one self-contained file (inline SVG
// and CSS, no script, nothing fetched) that `simulate`, `whatif` and `capacity` write with
// --out. What each holds is in docs/formats.md ("report.html").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/rl/step_result.h"

namespace arlsim::report {

// simulate: step time over the steps stacked by stage, context growth and its tail, memory per
// stage against the GPU's with OOM markers, tool pools' queueing and completion times, time,
// GPU-hours and cost.
std::string run_report_html(const rl::RunResult& r);

// whatif: the variants side by side.
struct ReportVariant {
  std::string label;  // its overrides
  const rl::RunResult* result = nullptr;
};
std::string whatif_report_html(const std::string& scenario, const std::vector<ReportVariant>& variants);

// capacity: the configurations on a plane of time and cost, the Pareto frontier, the deadline and
// the budget.
struct CapacityPoint {
  std::string label;  // "h100-sxm x 4 nodes, colocated"
  int64_t gpus = 0;
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  double total_time_s = 0, gpu_hours = 0;
  std::optional<double> cost_usd;
  bool pareto = false;
  std::string layouts;
  bool confirmed = false;                  // run by the event simulator
  std::optional<double> simulated_total_s;  // its total (none: its run hit an OOM)
  bool beyond_tolerance = false;
};
struct CapacityReport {
  std::string scenario;
  int64_t steps = 0;
  std::vector<CapacityPoint> points;
  std::optional<double> deadline_s, budget_usd;
  std::optional<size_t> cheapest_in_deadline, fastest_in_budget;  // into points
};
std::string capacity_report_html(const CapacityReport& c);

}  // namespace arlsim::report
