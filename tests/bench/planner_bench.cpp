// The planner's analytic stage evaluations per second (target: over 100,000 per core), measured
// three ways: one rollout layout costed on a step, one training layout costed on steps of new
// lengths (no memoised result to reuse), and a whole plan of EARL's testbed over 200 steps (every
// candidate layout of both stages on every step, as `arlsim plan --confirm 0` does); and the step
// graph's executors placing 200 steps of stages.
// Run: build/tests/planner_bench
#include <benchmark/benchmark.h>

#include "planner/analytic.h"
#include "planner/plan.h"
#include "sim/exec/analytic.h"
#include "sim/exec/event.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"

namespace {

using namespace arlsim;

input::ScenarioSpec earl(const std::vector<std::string>& extra = {}) {
  input::Diagnostics diag;
  std::vector<std::string> o{"/trace/generate/steps=200", "/trace/generate/every=1", "/steps=200"};
  o.insert(o.end(), extra.begin(), extra.end());
  return *input::load_scenario("earl-testbed", o, diag);
}

const std::vector<planner::StepFeatures>& features(const input::ScenarioSpec& s) {
  static const auto f = [&] {
    input::Diagnostics diag;
    const auto t = rl::load_scenario_trace(s, "", diag);
    planner::FeatureOptions fo;
    fo.max_context = s.workload.max_context_tokens;
    return planner::step_features(*t, fo);
  }();
  return f;
}

void rollout_cost(benchmark::State& state) {
  const auto s = earl();
  const auto& f = features(s);
  const planner::RolloutEstimator e(s, {8, 1, 1, 0});
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(e.cost(f[i++ % f.size()]).seconds);
  state.SetItemsProcessed(state.iterations());
}

void train_cost_uncached(benchmark::State& state) {
  const auto s = earl();
  const auto base = features(s).back();
  input::TrainLayout l = s.policy.train;
  int64_t n = 0;
  for (auto _ : state) {
    // A fresh estimator each time: nothing memoised.
    const planner::TrainEstimator e(s, l);
    benchmark::DoNotOptimize(e.cost(base.scaled(1.0 + static_cast<double>(n++ % 97) / 100)).seconds);
  }
  state.SetItemsProcessed(state.iterations());
}

void whole_plan(benchmark::State& state) {
  const auto s = earl();
  const auto& f = features(s);
  planner::PlanOptions o;
  o.confirm = 0;
  int64_t evaluations = 0;
  for (auto _ : state) evaluations += planner::make_plan(s, f, nullptr, o).evaluations;
  state.SetItemsProcessed(evaluations);
  state.counters["evaluations_per_plan"] = static_cast<double>(evaluations) / static_cast<double>(state.iterations());
}

// The step graph composed and placed by the analytic executor: 200 asynchronous steps (the planner's
// analytic run of a schedule), stage activities placed per second.
void analytic_run_200_steps(benchmark::State& state) {
  std::vector<std::pair<int64_t, graph::StageTimes>> steps;
  for (int64_t i = 0; i < 200; ++i) {
    graph::StageTimes t;
    t.rollout = 100 + static_cast<double>(i % 7);
    t.old_logprob = 5;
    t.dispatch = 0.5;
    t.train = 60 + static_cast<double>(i % 5);
    t.weight_sync = 2;
    steps.emplace_back(i, t);
  }
  for (auto _ : state) benchmark::DoNotOptimize(exec::compose({true, 1}, steps).back().end_s);
  state.SetItemsProcessed(state.iterations() * 200 * static_cast<int64_t>(graph::kStageCount));
}

// The same graph on the event executor (devices held, edges as above), for comparison.
void event_run_200_steps(benchmark::State& state) {
  graph::StepGraphBuilder b({true, 1}, {{0, 512}, {512, 512}});
  for (int64_t i = 0; i < 200; ++i) {
    graph::StageTimes t;
    t.rollout = 100 + static_cast<double>(i % 7);
    t.train = 60 + static_cast<double>(i % 5);
    t.weight_sync = 2;
    b.add_step(i, t);
  }
  for (auto _ : state) benchmark::DoNotOptimize(exec::run_events(b.graph()).back().end_s);
  state.SetItemsProcessed(state.iterations() * 200 * static_cast<int64_t>(graph::kStageCount));
}

}  // namespace

BENCHMARK(analytic_run_200_steps);
BENCHMARK(event_run_200_steps);
BENCHMARK(rollout_cost);
BENCHMARK(train_cost_uncached);
BENCHMARK(whole_plan)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
