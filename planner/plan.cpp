#include "planner/plan.h"

#include <algorithm>
#include <cstdio>
#include <charconv>
#include <memory>
#include <system_error>
#include <map>
#include <numeric>
#include <set>

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
// Rounds of confirming the adopted schedule's own rollout layouts (see make_plan).
constexpr int kAdoptedConfirmRounds = 3;

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

// The simulator's generation time of `layout` on step `step`'s trajectories, with the simulator's
// seed for that step (negative when it cannot run them), and whether its engines thrash: the KV
// their preemptions dropped and recomputed exceeds rl::kPreemptionStormShare of the step's tokens.
struct SimulatedRollout {
  double seconds = -1;
  std::string storm;  // "" or why the layout thrashes
};

SimulatedRollout simulated_rollout(const input::ScenarioSpec& s, const rl::RolloutInput& in, const input::RolloutLayout& layout,
                                   int64_t step) {
  auto o = rl::rollout_options(s, layout);
  o.seed = rl::rollout_seed(s, step);
  o.record_spans = o.record_turns = false;  // only the ends and the preemptions are read
  SimulatedRollout out;
  if (!rl::check_rollout(o, &in).empty()) return out;
  const auto r = rl::simulate_rollout(o, in);
  SimTime end;
  for (SimTime e : r.generation_end) end = std::max(end, e);
  out.seconds = end.seconds();
  int64_t tokens = 0;
  for (int64_t t : r.context_tokens) tokens += t;
  if (tokens > 0 && static_cast<double>(r.recomputed_tokens()) > rl::kPreemptionStormShare * static_cast<double>(tokens)) {
    char share[32];  // one decimal: a share just past the limit does not print as the limit
    std::snprintf(share, sizeof share, "%.1f", 100.0 * static_cast<double>(r.recomputed_tokens()) / static_cast<double>(tokens));
    out.storm = "step " + std::to_string(step) + ": rollout: " + std::to_string(r.preemptions()) +
                " preemptions recompute " + share + "% of the step's tokens (KV cache too small; the limit is " +
                std::to_string(static_cast<int>(100 * rl::kPreemptionStormShare)) + "%)";
  }
  return out;
}

// Confirms rollout costs with the event simulator: a candidate of a context range is run on the
// range's median step, and the range's analytic costs are rescaled by what it found — confirmed
// candidates by their own ratio, the others by the mean ratio of the range's confirmed ones. A
// candidate can also be run on the range's first and last steps (spread()): its ratio is then
// interpolated in mean context between the steps it ran on, since the analytic model's error
// changes inside a range (KV-cache pressure grows with the context).
class Confirmer {
 public:
  Confirmer(const input::ScenarioSpec& s, const trace::Trace& t, const std::vector<StepFeatures>& f,
            const std::vector<RolloutCandidate>& candidates, const std::vector<double>& edges, const CostTable& analytic)
      : s_(s), t_(t), f_(f), candidates_(candidates), analytic_(analytic), members_(edges.size() + 1),
        points_(edges.size() + 1) {
    for (size_t i = 0; i < f.size(); ++i) {
      bucket_.push_back(bucket_of(f[i].mean_context, edges));
      members_[bucket_.back()].push_back(i);
    }
    for (auto& m : members_)
      std::sort(m.begin(), m.end(), [&](size_t x, size_t y) { return f[x].mean_context < f[y].mean_context; });
  }

  size_t buckets() const { return members_.size(); }
  size_t bucket_of_step(size_t i) const { return bucket_[i]; }
  // The range's median step, or f.size() for a range without steps.
  size_t rep(size_t b) const { return members_[b].empty() ? f_.size() : members_[b][members_[b].size() / 2]; }

  // Queues candidate c on range b's median step unless done or queued already; true when queued.
  bool confirm(size_t b, size_t c) { return want(b, c, rep(b)); }
  // The same on the range's first and last steps too.
  bool spread(size_t b, size_t c) {
    if (members_[b].empty()) return false;
    bool queued = confirm(b, c);
    queued = want(b, c, members_[b].front()) || queued;
    return want(b, c, members_[b].back()) || queued;
  }
  // Runs what is queued (through `map` when given), recording the results in the order queued.
  void run_queued(const PlanOptions& o) {
    if (queued_.empty()) return;
    auto task = [&](size_t i) {
      const Queued& q = queued_[i];
      const SimulatedRollout r = simulated_rollout(s_, rollout_input(t_, f_[q.step].step), candidates_[q.c].layout, f_[q.step].step);
      char number[64];
      const auto end = std::to_chars(number, number + sizeof number, r.seconds).ptr;
      return std::string(number, end) + "\n" + r.storm;
    };
    std::vector<std::string> results;
    if (o.map) {
      results = o.map(queued_.size(), task);
    } else {
      for (size_t i = 0; i < queued_.size(); ++i) results.push_back(task(i));
    }
    ARLSIM_ASSERT(results.size() == queued_.size());
    for (size_t i = 0; i < queued_.size(); ++i) {
      const std::string& text = results[i];
      const size_t cut = text.find('\n');
      ARLSIM_ASSERT(cut != std::string::npos);
      SimulatedRollout r;
      const auto parsed = std::from_chars(text.data(), text.data() + cut, r.seconds);
      ARLSIM_ASSERT(parsed.ec == std::errc());
      r.storm = text.substr(cut + 1);
      record(queued_[i], r);
    }
    queued_.clear();
  }

  // The analytic costs, rescaled.
  CostTable table() const {
    CostTable t = analytic_;
    for (size_t b = 0; b < members_.size(); ++b) {
      // The mean of the ratios at the median step, for candidates never run.
      double sum = 0;
      int64_t n = 0;
      for (const auto& [c, pts] : points_[b])
        for (const auto& [context, ratio] : pts)
          if (context == f_[rep(b)].mean_context) {
            sum += ratio;
            ++n;
          }
      // Candidates with points of their own take them even when none ran on the median step.
      const double mean = n > 0 ? sum / static_cast<double>(n) : 1.0;
      for (size_t i : members_[b])
        for (size_t c = 0; c < candidates_.size(); ++c) {
          if (!t.fits(i, c)) continue;
          if (storms_[b].count(c)) {
            t.cost[i][c] = -1;
            continue;
          }
          const auto it = points_[b].find(c);
          t.cost[i][c] *= it != points_[b].end() ? interpolate(it->second, f_[i].mean_context) : mean;
        }
    }
    return t;
  }

  const std::vector<Confirmation>& confirmations() const { return confirmations_; }
  // Per candidate that thrashed on some range, the first reason found.
  std::map<size_t, std::string> storms() const {
    std::map<size_t, std::string> out;
    for (const auto& range : storms_)
      for (const auto& [c, why] : range) out.emplace(c, why);
    return out;
  }

 private:
  struct Queued {
    size_t b, c, step;
  };
  bool want(size_t b, size_t c, size_t step) {
    if (step >= f_.size() || !analytic_.fits(step, c) || tried_.count({step, c})) return false;
    tried_.insert({step, c});
    queued_.push_back({b, c, step});
    return true;
  }
  void record(const Queued& q, const SimulatedRollout& run) {
    if (!run.storm.empty()) {
      // A layout that thrashes its KV cache on a step of the range is not one to choose there.
      storms_[q.b].emplace(q.c, run.storm);
      return;
    }
    const double simulated = run.seconds;
    const double analytic = analytic_.cost[q.step][q.c];
    if (simulated <= 0 || analytic <= 0) return;
    confirmations_.push_back({f_[q.step].step, q.b, q.c, analytic, simulated});
    points_[q.b][q.c][f_[q.step].mean_context] = simulated / analytic;
  }

  // Piecewise linear in mean context between the points, constant beyond them.
  static double interpolate(const std::map<double, double>& pts, double context) {
    const auto hi = pts.lower_bound(context);
    if (hi == pts.begin()) return hi->second;
    if (hi == pts.end()) return std::prev(hi)->second;
    const auto lo = std::prev(hi);
    const double w = (context - lo->first) / (hi->first - lo->first);
    return lo->second + w * (hi->second - lo->second);
  }

  const input::ScenarioSpec& s_;
  const trace::Trace& t_;
  const std::vector<StepFeatures>& f_;
  const std::vector<RolloutCandidate>& candidates_;
  const CostTable& analytic_;
  std::vector<size_t> bucket_;                // per step
  std::vector<std::vector<size_t>> members_;  // per range: its steps by mean context
  // Per range, per candidate run: simulated / analytic at the mean context of each step it ran on.
  std::vector<std::map<size_t, std::map<double, double>>> points_;
  std::set<std::pair<size_t, size_t>> tried_;  // (step, candidate)
  std::vector<Queued> queued_;
  std::vector<Confirmation> confirmations_;
  std::vector<std::map<size_t, std::string>> storms_ = std::vector<std::map<size_t, std::string>>(points_.size());
};

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

namespace {

// The policy with those layouts at those steps: the first step's as its own, the rest as its schedule.
void set_layouts(input::PolicySpec& policy, const std::vector<int64_t>& steps, const std::vector<input::RolloutLayout>& rollout,
                 const std::vector<input::TrainLayout>& train) {
  if (!steps.empty()) {
    policy.rollout = rollout.front();
    policy.train = train.front();
  }
  policy.schedule = to_schedule(steps, rollout, train);
}

}  // namespace

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
  const CostTable analytic_rollout = cost_table(s, p.rollout, features, rollout_estimators, p.evaluations);
  // The cost tables outlive this call (in the plan): their functions hold what they use, priced
  // once rather than at each of the selectors' many calls.
  std::vector<double> relaunch;
  for (const auto& c : p.rollout) relaunch.push_back(rl::rollout_relaunch_seconds(s, c.layout));
  const auto rollout_schedules = [&](CostTable table) {
    table.switch_cost = [relaunch, candidates = p.rollout, overhead = o.switch_overhead_s](size_t from, size_t to) {
      return rl::rollout_switch_seconds(candidates[from].layout, candidates[to].layout, relaunch[to], overhead);
    };
    return schedules(std::move(table), configured_rollout, rollout_estimators, features, o);
  };
  if (trace && o.confirm > 0) {
    // The best `confirm` candidates of each context range and the configured one, then the ones the
    // adopted schedule chooses, across their ranges, until it chooses only those (a schedule that
    // picks the cheapest of unconfirmed estimates would favour the most underestimated).
    Confirmer confirmer(s, *trace, features, p.rollout, o.bucket_edges, analytic_rollout);
    for (size_t b = 0; b < confirmer.buckets(); ++b) {
      const size_t rep = confirmer.rep(b);
      if (rep >= features.size()) continue;
      std::vector<size_t> order;
      for (size_t c = 0; c < p.rollout.size(); ++c)
        if (analytic_rollout.fits(rep, c)) order.push_back(c);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return analytic_rollout.cost[rep][x] < analytic_rollout.cost[rep][y]; });
      if (static_cast<int64_t>(order.size()) > o.confirm) order.resize(static_cast<size_t>(o.confirm));
      order.push_back(configured_rollout[rep]);
      for (size_t c : order) confirmer.confirm(b, c);
    }
    confirmer.run_queued(o);
    p.rollout_schedules = rollout_schedules(confirmer.table());
    for (int round = 0; round < kAdoptedConfirmRounds; ++round) {
      const auto& adopted = p.rollout_schedules.find(o.selector);
      bool ran = false;
      for (size_t i = 0; i < adopted.choice.size(); ++i) ran = confirmer.spread(confirmer.bucket_of_step(i), adopted.choice[i]) || ran;
      if (!ran) break;
      confirmer.run_queued(o);
      p.rollout_schedules = rollout_schedules(confirmer.table());
    }
    p.confirmations = confirmer.confirmations();
    for (const auto& [c, why] : confirmer.storms())
      if (p.rollout[c].misfit.empty()) p.rollout[c].misfit = why;
  } else {
    p.rollout_schedules = rollout_schedules(analytic_rollout);
  }

  // Training is costed beside the rollout layouts the adopted rollout schedule has at each step
  // (what sleeps in host memory during training depends on them).
  const auto& rs = p.rollout_schedules.find(o.selector);
  std::vector<input::RolloutLayout> rollout;
  std::vector<input::TrainLayout> train;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    rollout.push_back(p.rollout[rs.choice[i]].layout);
    train.push_back(rl::layouts_at(s.policy, p.steps[i]).train);
  }
  input::ScenarioSpec beside = s;
  set_layouts(beside.policy, p.steps, rollout, train);
  std::vector<std::unique_ptr<TrainEstimator>> train_estimators;
  CostTable train_costs = cost_table(beside, p.train, features, train_estimators, p.evaluations);
  std::vector<double> state_move;  // each candidate's training state to or from host memory
  for (const auto& c : p.train) state_move.push_back(rl::train_state_move_seconds(s, c.layout));
  train_costs.switch_cost = [state_move, candidates = p.train, overhead = o.switch_overhead_s](size_t from, size_t to) {
    return rl::train_switch_seconds(candidates[from].layout, candidates[to].layout, state_move[from] + state_move[to],
                                    overhead);
  };
  p.train_schedules = schedules(std::move(train_costs), configured_train, train_estimators, features, o);

  const auto& ts = p.train_schedules.find(o.selector);
  for (size_t i = 0; i < p.steps.size(); ++i) train[i] = p.train[ts.choice[i]].layout;
  p.policy = s.policy;
  p.policy.switch_overhead_s = o.switch_overhead_s;  // the replay charges what the selectors weighed
  set_layouts(p.policy, p.steps, rollout, train);
  // The preparation passes' own layouts last, beside the adopted training layouts: a pass's memory
  // depends on the training layout's sharding (its ZeRO stage, offloaded weights), so a layout is
  // chosen only where it fits beside every one of them.
  input::ScenarioSpec adopted = s;
  adopted.policy = p.policy;
  p.passes = choose_pass_layouts(adopted, features, p.evaluations);
  apply_pass_layouts(p.policy, p.passes);
  return p;
}

}  // namespace arlsim::planner
