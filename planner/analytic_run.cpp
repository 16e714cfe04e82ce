#include "planner/analytic_run.h"

#include "planner/dispatch_plan.h"
#include "sim/core/assert.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

std::optional<AnalyticRun> analytic_run(const input::ScenarioSpec& s, const Plan& p, const std::vector<StepFeatures>& f,
                         const std::string& selector) {
  const auto& rs = p.rollout_schedules.find(selector);
  const auto& ts = p.train_schedules.find(selector);
  ARLSIM_ASSERT(rs.choice.size() == f.size() && ts.choice.size() == f.size());
  AnalyticRun run;
  if (f.empty()) return run;
  // Dispatch measured on the largest step and scaled by tokens to the others.
  size_t largest = 0;
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i].total_tokens > f[largest].total_tokens) largest = i;
  const auto& rollout_at = p.rollout[rs.choice[largest]].layout;
  const auto& train_at = p.train[ts.choice[largest]].layout;
  const auto samples = samples_round_robin(s, rollout_at, f[largest].contexts);
  std::vector<int64_t> producer_gpu;
  for (const auto& x : samples) producer_gpu.push_back(x.producer_gpu);
  const auto rank = rl::sample_ranks(s, train_at, f[largest].contexts, producer_gpu);
  const double dispatch_largest = evaluate_plan(s, train_at, samples, "", s.policy.dispatch, rank).seconds;

  std::vector<std::pair<int64_t, graph::StageTimes>> steps;
  for (size_t i = 0; i < f.size(); ++i) {
    const size_t r = rs.choice[i], t = ts.choice[i];
    if (!p.rollout_schedules.costs.fits(i, r) || !p.train_schedules.costs.fits(i, t)) return std::nullopt;
    graph::StageTimes times;
    times.rollout = p.rollout_schedules.costs.cost[i][r];
    // The estimator prices experience preparation and training together.
    times.train = p.train_schedules.costs.cost[i][t];
    times.dispatch = f[largest].total_tokens > 0 ? dispatch_largest * static_cast<double>(f[i].total_tokens) /
                                                       static_cast<double>(f[largest].total_tokens)
                                                 : 0;
    // A switch before the step is paid with its weight sync, as the simulator charges it.
    times.weight_sync = rl::weight_sync_seconds(s, p.rollout[r].layout, p.train[t].layout);
    if (i > 0) {
      times.weight_sync += p.rollout_schedules.costs.switch_cost(rs.choice[i - 1], r);
      times.weight_sync += p.train_schedules.costs.switch_cost(ts.choice[i - 1], t);
    }
    steps.emplace_back(f[i].step, times);
  }
  run.spans = exec::compose(rl::sync_mode(s.policy), steps);
  run.total_s = run.spans.back().end_s;
  return run;
}

}  // namespace arlsim::planner
