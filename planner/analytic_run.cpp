#include "planner/analytic_run.h"

#include <functional>
#include <map>
#include <memory>

#include "planner/analytic.h"
#include "planner/dispatch_plan.h"
#include "sim/core/assert.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

// What the composition needs of step i: its layouts, their stage costs (negative: it does not
// fit), and the switch into them from step i - 1's.
struct StepCosts {
  input::RolloutLayout rollout;
  input::TrainLayout train;
  double rollout_s = -1, train_s = -1, switch_s = 0;
};

std::optional<AnalyticRun> compose_run(const input::ScenarioSpec& s, const std::vector<StepFeatures>& f,
                                       const std::function<StepCosts(size_t)>& step_costs) {
  AnalyticRun run;
  if (f.empty()) return run;
  std::vector<StepCosts> costs;
  for (size_t i = 0; i < f.size(); ++i) {
    costs.push_back(step_costs(i));
    if (costs.back().rollout_s < 0 || costs.back().train_s < 0) return std::nullopt;
  }
  // Dispatch measured on the largest step and scaled by tokens to the others.
  size_t largest = 0;
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i].total_tokens > f[largest].total_tokens) largest = i;
  const auto samples = samples_round_robin(s, costs[largest].rollout, f[largest].contexts);
  std::vector<int64_t> producer_gpu;
  for (const auto& x : samples) producer_gpu.push_back(x.producer_gpu);
  const auto rank = rl::sample_ranks(s, costs[largest].train, f[largest].contexts, producer_gpu);
  const double dispatch_largest = evaluate_plan(s, costs[largest].train, samples, "", s.policy.dispatch, rank).seconds;

  std::vector<std::pair<int64_t, graph::StageTimes>> steps;
  for (size_t i = 0; i < f.size(); ++i) {
    graph::StageTimes times;
    times.rollout = costs[i].rollout_s;
    // The estimator prices experience preparation and training together.
    times.train = costs[i].train_s;
    times.dispatch = f[largest].total_tokens > 0 ? dispatch_largest * static_cast<double>(f[i].total_tokens) /
                                                       static_cast<double>(f[largest].total_tokens)
                                                 : 0;
    // A switch before the step is paid with its weight sync, as the simulator charges it.
    times.weight_sync = rl::weight_sync_seconds(s, costs[i].rollout, costs[i].train) + costs[i].switch_s;
    // A state swapped to-cpu comes back before the passes and the update, which the estimator
    // prices with the training.
    const rl::StateSwapIn in = rl::state_swap_in(s, costs[i].train);
    times.train += in.weights_s + in.optimizer_s;
    steps.emplace_back(f[i].step, times);
  }
  run.spans = exec::compose(rl::sync_mode(s.policy), steps, rl::optimizer_steps(s.workload));
  for (const auto& [step, times] : steps) run.stages.push_back(times);
  run.total_s = run.spans.back().end_s;
  return run;
}

// Training beside that rollout layout fits the nodes' host memory. A plan's training costs were
// checked beside the adopted selector's rollout layouts; another selector may pair them otherwise.
bool host_memory_fits(const input::ScenarioSpec& s, const input::RolloutLayout& rollout, const input::TrainLayout& train) {
  const auto host = rl::host_memory_at(s, rollout, train);
  return !host || host->fits();
}

}  // namespace

std::optional<AnalyticRun> analytic_run(const input::ScenarioSpec& s, const Plan& p, const std::vector<StepFeatures>& f,
                                        const std::string& selector) {
  const auto& rs = p.rollout_schedules.find(selector);
  const auto& ts = p.train_schedules.find(selector);
  ARLSIM_ASSERT(rs.choice.size() == f.size() && ts.choice.size() == f.size());
  return compose_run(s, f, [&](size_t i) {
    const size_t r = rs.choice[i], t = ts.choice[i];
    StepCosts c;
    c.rollout = p.rollout[r].layout;
    c.train = p.train[t].layout;
    if (p.rollout_schedules.costs.fits(i, r)) c.rollout_s = p.rollout_schedules.costs.cost[i][r];
    if (p.train_schedules.costs.fits(i, t) && host_memory_fits(s, c.rollout, c.train)) {
      c.train_s = p.train_schedules.costs.cost[i][t];
      // The adopted schedule's preparation passes run in the layouts chosen beside it.
      if (selector == p.selector)
        for (const auto& pass : p.passes)
          if (i < pass.saved_s.size()) c.train_s -= pass.saved_s[i];
    }
    if (i > 0)
      c.switch_s = p.rollout_schedules.costs.switch_cost(rs.choice[i - 1], r) +
                   p.train_schedules.costs.switch_cost(ts.choice[i - 1], t);
    return c;
  });
}

std::optional<AnalyticRun> analytic_run(const input::ScenarioSpec& s, const std::vector<StepFeatures>& f) {
  // One estimator per layout the policy's schedule uses.
  std::map<std::string, std::unique_ptr<RolloutEstimator>> rollout;
  std::map<std::string, std::unique_ptr<TrainEstimator>> train;
  std::optional<rl::Layouts> previous;
  return compose_run(s, f, [&](size_t i) {
    const rl::Layouts l = rl::layouts_at(s.policy, f[i].step);
    auto& re = rollout[layout_name(l.rollout)];
    if (!re) re = std::make_unique<RolloutEstimator>(s, l.rollout);
    auto& te = train[layout_name(l.train)];
    if (!te) te = std::make_unique<TrainEstimator>(s, l.train);
    StepCosts c;
    c.rollout = l.rollout;
    c.train = l.train;
    if (const StageCost r = re->cost(f[i]); r.feasible()) c.rollout_s = r.seconds;
    if (const StageCost t = te->cost(f[i]); t.feasible()) c.train_s = t.seconds;  // host memory beside l.rollout included
    if (previous)
      c.switch_s = rl::rollout_switch_seconds(s, previous->rollout, l.rollout, s.policy.switch_overhead_s) +
                   rl::train_switch_seconds(s, previous->train, l.train, s.policy.switch_overhead_s);
    previous = l;
    return c;
  });
}

}  // namespace arlsim::planner
