#include "planner/plan.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "planner/analytic.h"
#include "sim/core/assert.h"
#include "sim/model/transformer.h"
#include "sim/rl/rollout.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

template <typename Candidate, typename Layout>
size_t index_of(std::vector<Candidate>& candidates, const Layout& l) {
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].layout == l) return i;
  ARLSIM_ASSERT(false);
  return 0;
}

// A context length that stands for bucket b of `edges`: the middle of its range.
double bucket_context(size_t b, const std::vector<double>& edges) {
  if (edges.empty()) return 1024;
  if (b == 0) return edges.front() / 2;
  if (b == edges.size()) return edges.back() * 1.5;
  return (edges[b - 1] + edges[b]) / 2;
}

// Fills cost[step][candidate] from per-candidate estimators (negative: cannot run).
template <typename Estimator, typename Candidate>
CostTable cost_table(const input::ScenarioSpec& s, std::vector<Candidate>& candidates,
                     const std::vector<StepFeatures>& features, std::vector<std::unique_ptr<Estimator>>& estimators,
                     int64_t& evaluations) {
  estimators.clear();
  for (auto& c : candidates) {
    estimators.push_back(c.pruned.empty() ? std::make_unique<Estimator>(s, c.layout) : nullptr);
    if (estimators.back() && !estimators.back()->problem().empty()) {
      c.pruned = estimators.back()->problem();
      estimators.back().reset();
    }
  }
  CostTable t;
  t.cost.assign(features.size(), std::vector<double>(candidates.size(), -1));
  for (size_t i = 0; i < features.size(); ++i)
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!estimators[c]) continue;
      const StageCost cost = estimators[c]->cost(features[i]);
      ++evaluations;
      if (cost.feasible()) t.cost[i][c] = cost.seconds;
      else if (candidates[c].misfit.empty()) candidates[c].misfit = "step " + std::to_string(features[i].step) + ": " + cost.infeasible;
    }
  return t;
}

// The candidate that runs `probe` fastest, or `fallback` when none can.
template <typename Estimator>
size_t best_on(const std::vector<std::unique_ptr<Estimator>>& estimators, const StepFeatures& probe, size_t fallback) {
  size_t best = fallback;
  double least = -1;
  for (size_t c = 0; c < estimators.size(); ++c) {
    if (!estimators[c]) continue;
    const StageCost cost = estimators[c]->cost(probe);
    if (cost.feasible() && (least < 0 || cost.seconds < least)) {
      least = cost.seconds;
      best = c;
    }
  }
  return best;
}

// The trajectories of trace step `step`, as the rollout takes them.
rl::RolloutInput rollout_input(const trace::Trace& t, int64_t step) {
  rl::RolloutInput in;
  in.tool_names = t.tool_names();
  for (size_t i = 0; i < t.size(); ++i) {
    const auto v = t.trajectory(i);
    if (v.info.step == step) in.trajectories.push_back(v);
  }
  return in;
}

// The simulator's generation time of `layout` on a step's trajectories; negative when it cannot run them.
double simulated_rollout_seconds(const input::ScenarioSpec& s, const rl::RolloutInput& in, const input::RolloutLayout& layout) {
  const auto o = rl::rollout_options(s, layout);
  if (!rl::check_rollout(o, &in).empty()) return -1;
  const auto r = rl::simulate_rollout(o, in);
  SimTime end;
  for (SimTime e : r.generation_end) end = std::max(end, e);
  return end.seconds();
}

// Runs the best `per_bucket` rollout candidates of each context range on the range's median step
// with the event simulator, and rescales the range's analytic costs by what it found: confirmed
// candidates by their own ratio, the others by the mean ratio of the confirmed ones.
std::vector<Confirmation> confirm(const input::ScenarioSpec& s, const trace::Trace& t, const std::vector<StepFeatures>& f,
                                  const std::vector<RolloutCandidate>& candidates, const std::vector<double>& edges,
                                  int64_t per_bucket, CostTable& table) {
  std::vector<Confirmation> out;
  std::vector<std::vector<size_t>> buckets(edges.size() + 1);
  for (size_t i = 0; i < f.size(); ++i) buckets[bucket_of(f[i].mean_context, edges)].push_back(i);
  for (size_t b = 0; b < buckets.size(); ++b) {
    auto& members = buckets[b];
    if (members.empty()) continue;
    std::vector<size_t> by_context = members;
    std::sort(by_context.begin(), by_context.end(), [&](size_t x, size_t y) { return f[x].mean_context < f[y].mean_context; });
    const size_t rep = by_context[by_context.size() / 2];
    std::vector<size_t> order;
    for (size_t c = 0; c < candidates.size(); ++c)
      if (table.fits(rep, c)) order.push_back(c);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return table.cost[rep][x] < table.cost[rep][y]; });
    if (static_cast<int64_t>(order.size()) > per_bucket) order.resize(static_cast<size_t>(per_bucket));
    const rl::RolloutInput in = rollout_input(t, f[rep].step);
    std::vector<double> ratio(candidates.size(), 0);
    double sum = 0;
    int64_t confirmed = 0;
    for (size_t c : order) {
      const double simulated = simulated_rollout_seconds(s, in, candidates[c].layout);
      const double analytic = table.cost[rep][c];
      if (simulated <= 0 || analytic <= 0) continue;
      out.push_back({f[rep].step, b, c, analytic, simulated});
      ratio[c] = simulated / analytic;
      sum += ratio[c];
      ++confirmed;
    }
    if (confirmed == 0) continue;
    const double mean = sum / static_cast<double>(confirmed);
    for (size_t i : members)
      for (size_t c = 0; c < candidates.size(); ++c)
        if (table.fits(i, c)) table.cost[i][c] *= ratio[c] > 0 ? ratio[c] : mean;
  }
  return out;
}

template <typename Estimator>
StageSchedules schedules(CostTable table, std::vector<size_t> configured,
                         const std::vector<std::unique_ptr<Estimator>>& estimators, const std::vector<StepFeatures>& f,
                         const PlanOptions& o) {
  StageSchedules out;
  out.costs = std::move(table);
  const CostTable& t = out.costs;
  out.schedules.push_back(evaluate(t, configured, "configured"));
  out.schedules.push_back(select_static(t));
  OnlineOptions online;
  online.bucket_edges = o.bucket_edges;
  online.initial = configured.empty() ? 0 : configured.front();
  online.window = o.online_window;
  for (const auto& step : f) online.step_context.push_back(step.mean_context);
  // EARL measures each candidate per context range before the run, at the run's load: the first
  // step's trajectories with their lengths scaled to the range.
  for (size_t b = 0; b <= o.bucket_edges.size(); ++b) {
    const double factor = f.empty() || f.front().mean_context <= 0 ? 1.0 : bucket_context(b, o.bucket_edges) / f.front().mean_context;
    online.best_per_bucket.push_back(f.empty() ? online.initial : best_on(estimators, f.front().scaled(factor), online.initial));
  }
  out.schedules.push_back(select_online(t, online));
  out.schedules.push_back(select_offline(t));
  return out;
}

}  // namespace

const Schedule& StageSchedules::find(const std::string& selector) const {
  for (const auto& s : schedules)
    if (s.selector == selector) return s;
  ARLSIM_ASSERT(false);
  return schedules.front();
}

std::vector<input::ScheduleEntry> to_schedule(const std::vector<int64_t>& steps, const std::vector<input::RolloutLayout>& rollout,
                                             const std::vector<input::TrainLayout>& train) {
  ARLSIM_ASSERT(steps.size() == rollout.size() && steps.size() == train.size());
  std::vector<input::ScheduleEntry> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool same = i > 0 && rollout[i] == rollout[i - 1] && train[i] == train[i - 1];
    if (same) continue;
    if (!out.empty()) out.back().last_step = steps[i] - 1;
    input::ScheduleEntry e;
    e.first_step = out.empty() ? 0 : steps[i];
    e.rollout = rollout[i];
    e.train = train[i];
    out.push_back(e);
  }
  if (out.size() == 1) out.clear();  // one layout throughout: the policy's own fields say it
  return out;
}

Plan make_plan(const input::ScenarioSpec& s, const std::vector<StepFeatures>& features, const trace::Trace* trace,
               const PlanOptions& o) {
  Plan p;
  p.selector = o.selector;
  for (const auto& f : features) p.steps.push_back(f.step);
  p.rollout = rollout_space(s);
  p.train = train_space(s);
  // Layouts the policy's own schedule names are candidates too.
  std::vector<size_t> configured_rollout, configured_train;
  for (int64_t step : p.steps) {
    const auto [r, t] = rl::layouts_at(s.policy, step);
    if (std::none_of(p.rollout.begin(), p.rollout.end(), [&](const auto& c) { return c.layout == r; }))
      p.rollout.push_back({r, rl::check_rollout(rl::rollout_options(s, r)), {}});
    if (std::none_of(p.train.begin(), p.train.end(), [&](const auto& c) { return c.layout == t; }))
      p.train.push_back({t, {}, {}});
    configured_rollout.push_back(index_of(p.rollout, r));
    configured_train.push_back(index_of(p.train, t));
  }

  std::vector<std::unique_ptr<RolloutEstimator>> rollout_estimators;
  CostTable rollout_costs = cost_table(s, p.rollout, features, rollout_estimators, p.evaluations);
  if (trace && o.confirm > 0)
    p.confirmations = confirm(s, *trace, features, p.rollout, o.bucket_edges, o.confirm, rollout_costs);
  // The cost tables outlive this call (in the plan): their functions hold what they use, priced
  // once rather than at each of the selectors' many calls.
  std::vector<double> relaunch;
  for (const auto& c : p.rollout) relaunch.push_back(rl::rollout_relaunch_seconds(s, c.layout));
  rollout_costs.switch_cost = [relaunch, candidates = p.rollout, overhead = o.switch_overhead_s](size_t from, size_t to) {
    return rl::rollout_switch_seconds(candidates[from].layout, candidates[to].layout, relaunch[to], overhead);
  };
  p.rollout_schedules = schedules(std::move(rollout_costs), configured_rollout, rollout_estimators, features, o);

  std::vector<std::unique_ptr<TrainEstimator>> train_estimators;
  CostTable train_costs = cost_table(s, p.train, features, train_estimators, p.evaluations);
  std::vector<double> state_move;  // each candidate's training state to or from host memory
  for (const auto& c : p.train) state_move.push_back(rl::train_state_move_seconds(s, c.layout));
  train_costs.switch_cost = [state_move, candidates = p.train, overhead = o.switch_overhead_s](size_t from, size_t to) {
    return rl::train_switch_seconds(candidates[from].layout, candidates[to].layout, state_move[from] + state_move[to],
                                    overhead);
  };
  p.train_schedules = schedules(std::move(train_costs), configured_train, train_estimators, features, o);

  const auto& rs = p.rollout_schedules.find(o.selector);
  const auto& ts = p.train_schedules.find(o.selector);
  std::vector<input::RolloutLayout> rollout;
  std::vector<input::TrainLayout> train;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    rollout.push_back(p.rollout[rs.choice[i]].layout);
    train.push_back(p.train[ts.choice[i]].layout);
  }
  p.policy = s.policy;
  p.policy.switch_overhead_s = o.switch_overhead_s;  // the replay charges what the selectors weighed
  if (!p.steps.empty()) {
    p.policy.rollout = rollout.front();
    p.policy.train = train.front();
  }
  p.policy.schedule = to_schedule(p.steps, rollout, train);
  return p;
}

}  // namespace arlsim::planner
