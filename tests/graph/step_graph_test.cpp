// The step graph and its analytic executor on a tiny run: three steps whose stage times are small
// integers, so every start and end below is computed by hand from the edges of step_graph.h.
#include <doctest/doctest.h>

#include "sim/exec/analytic.h"
#include "sim/graph/step_graph.h"

using namespace arlsim;
using graph::Stage;

namespace {

// Rollout R, reward W, then training: old_logprob 1, ref_logprob 1, dispatch 1, train T, weight
// sync 1 (critic 0): a training side of T + 4.
graph::StageTimes times(double rollout, double reward, double train) {
  graph::StageTimes t;
  t.rollout = rollout;
  t.reward = reward;
  t.old_logprob = 1;
  t.ref_logprob = 1;
  t.dispatch = 1;
  t.train = train;
  t.weight_sync = 1;
  return t;
}

struct Run {
  graph::StepGraphBuilder builder;
  exec::AnalyticExecutor executor;
  std::vector<exec::StepSpan> spans;
};

Run run(graph::SyncMode mode, const std::vector<graph::StageTimes>& steps) {
  Run r{graph::StepGraphBuilder(mode), {}, {}};
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto nodes = r.builder.add_step(static_cast<int64_t>(i) + 1, steps[i]);
    r.executor.advance(r.builder.graph());  // step by step, as the simulator does
    r.spans.push_back(exec::step_span(r.executor, nodes));
  }
  return r;
}

}  // namespace

TEST_CASE("step graph: one step's activities follow the stage table, each after the one before") {
  const auto r = run({}, {times(10, 2, 5)});
  const auto& acts = r.builder.graph().activities;
  REQUIRE(acts.size() == graph::kStageCount);
  for (size_t i = 0; i < acts.size(); ++i) {
    CHECK(acts[i].stage == graph::kStages[i].id);
    CHECK(acts[i].after == (i == 0 ? std::vector<graph::ActivityId>{} : std::vector<graph::ActivityId>{static_cast<int>(i) - 1}));
  }
  CHECK(acts[0].op == graph::OpKind::engine_run);
  CHECK(acts[5].op == graph::OpKind::transfer);
  CHECK(acts[6].side == graph::Side::training);
  // rollout 0-10, reward 10-12, old 12-13, ref 13-14, critic 14-14, dispatch 14-15, train 15-20, sync 20-21.
  const double ends[] = {10, 12, 13, 14, 14, 15, 20, 21};
  for (size_t i = 0; i < acts.size(); ++i) CHECK(r.executor.records()[i].end_s == ends[i]);
  CHECK(r.spans[0].start_s == 0);
  CHECK(r.spans[0].end_s == 21);
  CHECK(r.spans[0].rollout_end_s == 12);
}

TEST_CASE("step graph: synchronous steps run one after another (colocated, disaggregated or partial rollout)") {
  // Each step: rollout + reward, then its training side of T + 4, then the next step.
  const auto r = run({false, 1}, {times(10, 2, 5), times(8, 0, 6), times(4, 1, 1)});
  CHECK(r.spans[0].end_s == 21);  // 12 + 9
  CHECK(r.spans[1].start_s == 21);
  CHECK(r.spans[1].end_s == 39);  // 21 + 8 + 10
  CHECK(r.spans[2].start_s == 39);
  CHECK(r.spans[2].end_s == 49);  // 39 + 5 + 5
}

TEST_CASE("step graph: asynchronous with staleness 1 overlaps the next rollout with training") {
  // Rollout 10 per step, training side 9 + 4 = 13 (training-bound):
  // step 1: rollout 0-10, training 10-23.
  // step 2: rollout waits for rollout 1 only (k = 1: the weights of step 0): 10-20; training
  //         waits for training 1: 23-36.
  // step 3: rollout waits for rollout 2 (20) and the weights of step 1 (23): 23-33; training 36-49.
  const auto r = run({true, 1}, {times(10, 0, 9), times(10, 0, 9), times(10, 0, 9)});
  CHECK(r.spans[0].end_s == 23);
  CHECK(r.spans[1].start_s == 10);
  CHECK(r.spans[1].rollout_end_s == 20);
  CHECK(r.spans[1].end_s == 36);
  CHECK(r.spans[2].start_s == 23);
  CHECK(r.spans[2].rollout_end_s == 33);
  CHECK(r.spans[2].end_s == 49);
}

TEST_CASE("step graph: asynchronous with staleness 2 lets rollout run two steps ahead") {
  // Rollout 10, training side 1 + 4 = 5 (rollout-bound):
  // step 1: 0-10, training 10-15; step 2: 10-20, training 20-25;
  // step 3 waits for rollout 2 (20) and the weights of step 0 (none): 20-30, training 30-35;
  // step 4 waits for rollout 3 (30) and the weights of step 1 (15): 30-40, training 40-45.
  const auto r = run({true, 2}, std::vector<graph::StageTimes>(4, times(10, 0, 1)));
  CHECK(r.spans[2].start_s == 20);
  CHECK(r.spans[2].end_s == 35);
  CHECK(r.spans[3].start_s == 30);
  CHECK(r.spans[3].end_s == 45);
  // Training-bound with k = 2: rollout 2, training side 10 + 4 = 14.
  // step 1: 0-2, training 2-16; step 2: 2-4, training 16-30; step 3: 4-6 (no weights to wait for),
  // training 30-44; step 4 waits for the weights of step 1 (16): 16-18, training 44-58.
  const auto t = run({true, 2}, std::vector<graph::StageTimes>(4, times(2, 0, 10)));
  CHECK(t.spans[2].start_s == 4);
  CHECK(t.spans[3].start_s == 16);
  CHECK(t.spans[3].end_s == 58);
  // Staleness 1 on the same steps holds rollout 3 for the weights of step 1 (16) and rollout 4
  // for those of step 2 (30).
  const auto k1 = run({true, 1}, std::vector<graph::StageTimes>(4, times(2, 0, 10)));
  CHECK(k1.spans[2].start_s == 16);
  CHECK(k1.spans[3].start_s == 30);
  CHECK(k1.spans[3].end_s == 58);
}

TEST_CASE("step graph: compose builds and places a list of steps as the builder and the analytic executor do") {
  const auto spans = exec::compose({true, 1}, {{1, times(10, 0, 9)}, {2, times(10, 0, 9)}, {3, times(10, 0, 9)}});
  REQUIRE(spans.size() == 3);
  CHECK(spans[2].step == 3);
  CHECK(spans[2].end_s == 49);
  CHECK(graph::find_stage("dispatch") == Stage::dispatch);
  CHECK_FALSE(graph::find_stage("dispatching"));
}

TEST_CASE("step graph: training is one activity per optimizer step, one after another") {
  // Training 5 s as 4 optimizer steps of 1.25 s each, between dispatch and weight sync; its work
  // shared alike.
  graph::StepGraphBuilder b({false, 1});
  graph::StageWork work;
  work.flops[static_cast<size_t>(Stage::train)] = 8e15;
  const auto n = b.add_step(1, times(10, 2, 5), work, 4);
  exec::AnalyticExecutor e;
  e.advance(b.graph());
  std::vector<const graph::Activity*> train;
  for (const auto& a : b.graph().activities)
    if (a.stage == Stage::train) train.push_back(&a);
  REQUIRE(train.size() == 4);
  for (int32_t k = 0; k < 4; ++k) {
    CHECK(train[static_cast<size_t>(k)]->part == k);
    CHECK(train[static_cast<size_t>(k)]->parts == 4);
    CHECK(train[static_cast<size_t>(k)]->flops == 2e15);
    CHECK(e.record(train[static_cast<size_t>(k)]->id).start_s == 15 + 1.25 * k);
    if (k > 0) CHECK(train[static_cast<size_t>(k)]->after == std::vector<graph::ActivityId>{train[static_cast<size_t>(k)]->id - 1});
  }
  CHECK(e.record(n.last).start_s == 20);  // the weight sync after the last optimizer step
  CHECK(exec::step_span(e, n).end_s == 21);
}
