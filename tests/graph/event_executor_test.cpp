// The event executor: devices held alone, and transfers that share links max-min fairly. Times
// are hand-computed from the graph's durations, capacities and bytes.
#include <doctest/doctest.h>

#include "sim/exec/analytic.h"
#include "sim/exec/event.h"
#include "sim/graph/step_graph.h"

using namespace arlsim;
using graph::Activity;

namespace {

Activity act(graph::ActivityId id, double seconds, std::vector<graph::ActivityId> after = {},
             std::vector<graph::DeviceRange> holds = {}) {
  Activity a;
  a.id = id;
  a.seconds = seconds;
  a.after = std::move(after);
  a.holds = std::move(holds);
  return a;
}

}  // namespace

TEST_CASE("event executor: where no activity waits for devices it agrees with the critical path") {
  // Disaggregated async, training-bound: the engines are idle whenever a weight sync is ready, so
  // holding them changes nothing and both executors place every activity alike.
  graph::StepGraphBuilder b({true, 1}, {{0, 8}, {8, 8}});
  graph::StageTimes t;
  t.rollout = 2;
  t.train = 9;
  t.weight_sync = 4;
  for (int step = 1; step <= 3; ++step) b.add_step(step, t);
  exec::AnalyticExecutor analytic;
  analytic.advance(b.graph());
  const auto events = exec::run_events(b.graph());
  REQUIRE(events.size() == analytic.records().size());
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].start_s == doctest::Approx(analytic.records()[i].start_s));
    CHECK(events[i].end_s == doctest::Approx(analytic.records()[i].end_s));
  }
}

TEST_CASE("event executor: activities that hold the same devices run one after another") {
  // 0 holds GPUs 0-7 for 5 s; 1 holds GPUs 4-11 for 3 s; 2 holds GPUs 8-15 for 2 s. 1 overlaps both;
  // 0 and 2 start at once, 1 waits for both: 5-8.
  graph::StepGraph g;
  g.activities = {act(0, 5, {}, {{0, 8}}), act(1, 3, {}, {{4, 8}}), act(2, 2, {}, {{8, 8}})};
  const auto r = exec::run_events(g);
  CHECK(r[0].start_s == 0);
  CHECK(r[2].start_s == 0);
  CHECK(r[1].start_s == 5);
  CHECK(r[1].end_s == 8);
}

TEST_CASE("event executor: the next step's rollout and an asynchronous weight sync contend for the engines") {
  // Disaggregated async, staleness 1: rollout 10 s on GPUs 0-7, training 12 s then weight sync
  // 2 s on GPUs 8-15 (the sync holds the engines too).
  // step 1: rollout 0-10, train 10-22, sync waits for the engines: rollout 2 runs 10-20, so 22-24.
  // step 2: rollout 10-20; train 24-36 (after sync 1), sync: rollout 3 (after sync 1 at 24) runs
  // 24-34, so 36-38. The critical path alone would overlap sync 1 with rollout 2's engines.
  graph::StepGraphBuilder b({true, 1}, {{0, 8}, {8, 8}});
  graph::StageTimes t;
  t.rollout = 10;
  t.train = 12;
  t.weight_sync = 2;
  for (int step = 1; step <= 3; ++step) b.add_step(step, t);
  const auto r = exec::run_events(b.graph());
  const auto& steps = b.steps();
  CHECK(r[static_cast<size_t>(steps[0].last)].start_s == 22);
  CHECK(r[static_cast<size_t>(steps[1].first)].start_s == 10);
  CHECK(r[static_cast<size_t>(steps[2].first)].start_s == 24);
  CHECK(r[static_cast<size_t>(steps[1].last)].end_s == 38);
  CHECK(r[static_cast<size_t>(steps[2].last)].end_s == 52);  // train 38-50, sync 50-52
}

TEST_CASE("event executor: completions at the same time free their devices before anything starts") {
  // Async, staleness 2; rollout 6 + reward 4 on GPUs 0-7, old_logprob 7 + train 3 + weight sync 2
  // on GPUs 8-15 (the sync holds the engines too). At t = 20 step 1's training and step 2's reward
  // end together: step 1's weight sync (the lower id) starts then, 20-22, and step 3's rollout,
  // ready at 20 too, waits for the engines until 22, whichever completion is handled first.
  graph::StepGraphBuilder b({true, 2}, {{0, 8}, {8, 8}});
  graph::StageTimes t;
  t.rollout = 6;
  t.reward = 4;
  t.old_logprob = 7;
  t.train = 3;
  t.weight_sync = 2;
  for (int step = 1; step <= 3; ++step) b.add_step(step, t);
  const auto r = exec::run_events(b.graph());
  const auto& steps = b.steps();
  CHECK(r[static_cast<size_t>(steps[0].last)].start_s == 20);
  CHECK(r[static_cast<size_t>(steps[1].rollout_end)].end_s == 20);
  CHECK(r[static_cast<size_t>(steps[2].first)].start_s == 22);
}

TEST_CASE("event executor: two transfers sharing a link take as long as max-min fairness says") {
  // Links: 0 (shared, 10 B/s), 1 (4 B/s), 2 (100 B/s). Transfer A: 60 B over links 0 and 1.
  // Transfer B: 60 B over links 0 and 2, starting at t = 0 as well.
  // Fair shares: A is held to 4 by link 1; B gets the rest of link 0: 6. B finishes at 60/6 = 10 s,
  // when A has moved 40 B; A then gets 4 (link 1 still binds) for 20 B more: 5 s, ends at 15 s.
  graph::StepGraph g;
  g.link_capacities = {10, 4, 100};
  g.activities = {act(0, 0), act(1, 0)};
  g.activities[0].transfers = {{{0, 1}, 60}};
  g.activities[1].transfers = {{{0, 2}, 60}};
  auto r = exec::run_events(g);
  CHECK(r[1].end_s == doctest::Approx(10).epsilon(1e-9));
  CHECK(r[0].end_s == doctest::Approx(15).epsilon(1e-9));
  // Alone, B would take 60 / 10 = 6 s; started 3 s after A (which holds 4 B/s of link 0), it gets 6
  // B/s: 3 + 10 = 13 s, and A 15 s as before. A fixed part after the flows adds to the end.
  g.activities.push_back(act(2, 3));
  g.activities[1].after = {2};
  g.activities[1].seconds = 0.5;
  r = exec::run_events(g);
  CHECK(r[1].start_s == 3);
  CHECK(r[1].end_s == doctest::Approx(13.5).epsilon(1e-9));
  CHECK(r[0].end_s == doctest::Approx(15).epsilon(1e-9));
}
