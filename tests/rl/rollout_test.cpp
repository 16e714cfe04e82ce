#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

#include "sim/input/check.h"
#include "sim/rl/rollout.h"
#include "sim/rl/routing.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

// Trajectories built in the test: turns stored here, views point into them.
struct Workload {
  std::vector<std::vector<trace::Turn>> turns;
  std::vector<trace::TrajectoryInfo> info;
  rl::RolloutInput input() const {
    rl::RolloutInput in;
    for (size_t i = 0; i < turns.size(); ++i) in.trajectories.push_back({info[i], turns[i]});
    in.tool_names = {"sandbox"};
    return in;
  }
  void add(int64_t prompt_id, std::vector<trace::Turn> t) {
    info.push_back({0, static_cast<int32_t>(info.size()), prompt_id, false});
    turns.push_back(std::move(t));
  }
};

trace::Turn turn(int32_t prefill, int32_t gen, double tool_s = -1, int32_t obs = 0) {
  trace::Turn t;
  t.prefill_tokens = prefill;
  t.gen_tokens = gen;
  t.obs_tokens = obs;
  if (tool_s >= 0) {
    t.tool = 0;
    t.tool_latency = SimTime::from_seconds(tool_s);
  }
  return t;
}

struct Setup {
  input::ModelSpec model = test::preset_model("qwen3-8b");
  input::ClusterSpec cluster = test::preset_cluster("dgx-h100", 1);
  rl::RolloutOptions options() {
    rl::RolloutOptions o;
    o.model = &model;
    o.cluster = &cluster;
    o.engine.gpu_memory_utilization = 0.9;
    return o;
  }
};

}  // namespace

TEST_CASE("rollout: engine spans and turn records are kept only when asked for, and the run is the same without") {
  Setup s;
  Workload w;
  w.add(1, {turn(1000, 30, 0.5, 20), turn(10, 40)});
  w.add(2, {turn(500, 50)});
  auto o = s.options();
  const auto with = rl::simulate_rollout(o, w.input());
  CHECK(!with.spans.empty());
  CHECK(with.turns.size() == 3);
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    auto off = o;
    (which == 0 ? off.record_spans : off.record_turns) = false;
    const auto without = rl::simulate_rollout(off, w.input());
    CHECK((which == 0 ? without.spans.empty() : without.turns.empty()));
    CHECK(without.makespan == with.makespan);
    CHECK(without.generated_tokens == with.generated_tokens);
    CHECK(without.tool_calls.size() == with.tool_calls.size());
    CHECK(without.trajectory_end == with.trajectory_end);
    CHECK(without.events == with.events);
    // Each trajectory's last engine is kept either way (the producer of its sample for dispatch).
    CHECK(without.engine == with.engine);
  }
  // ... and it is the engine of the trajectory's last turn (records come in turn order).
  std::map<int64_t, int64_t> last;
  for (const auto& turn : with.turns) last[turn.trajectory] = turn.engine;
  for (const auto& [t, e] : last) CHECK(with.engine[static_cast<size_t>(t)] == e);
}

TEST_CASE("rollout: one engine, two requests, timed by hand") {
  Setup s;
  Workload w;
  w.add(1, {turn(1000, 3)});
  w.add(2, {turn(500, 5)});
  auto o = s.options();
  const auto r = rl::simulate_rollout(o, w.input());
  model::InferenceModel im(s.model, s.cluster, {1, 1, 1});
  im.set_execution(rl::engine_execution(o.engine, o.cluster->gpu));  // the host's work per iteration included
  // Iteration 1 prefills both prompts and samples a token each; then both decode together for
  // two iterations (request 1 reaches 3 tokens), then request 2 decodes two more alone.
  model::IterationBatch first;
  first.prefill = {{1000, 0, true}, {500, 0, true}};
  double t = im.iteration(first).seconds;
  for (int i = 0; i < 2; ++i) t += im.decode_window(2).sum(1, 1001 + 501 + 2 * i);
  const double end1 = t;
  for (int i = 0; i < 2; ++i) t += im.decode_window(1).sum(1, 503 + i);
  CHECK(r.trajectory_end[0].seconds() == doctest::Approx(end1).epsilon(1e-9));
  CHECK(r.trajectory_end[1].seconds() == doctest::Approx(t).epsilon(1e-9));
  CHECK(r.generated_tokens == 8);
  CHECK(r.preemptions() == 0);
  CHECK(r.turns[0].first_token == r.turns[1].first_token);  // both sampled by the first iteration
}

TEST_CASE("rollout: a KV budget too small for the batch forces preemptions, and everyone finishes") {
  Setup s;
  Workload w;
  for (int i = 0; i < 8; ++i) w.add(i, {turn(2000, 4000)});
  auto o = s.options();
  // Qwen3-8B: 16.4 GB of weights; at 25% of 80 GiB about 2 GiB is left for KV, 144 KiB per
  // token: ~15K tokens, far below 8 x 6K.
  o.engine.gpu_memory_utilization = 0.25;
  REQUIRE(rl::check_rollout(o).empty());
  const auto r = rl::simulate_rollout(o, w.input());
  CHECK(r.preemptions() > 0);
  for (const auto& end : r.trajectory_end) CHECK(end > SimTime::zero());
  CHECK(r.generated_tokens == 8 * 4000);
}

TEST_CASE("rollout: long prompts that do not all fit wait for room, keep their cached prefix, and are not prefilled twice") {
  Setup s;
  Workload w;
  for (int i = 0; i < 6; ++i) w.add(i, {turn(10000, 50)});
  auto o = s.options();
  o.engine.gpu_memory_utilization = 0.25;  // ~15K tokens of KV: one prompt and part of another
  o.engine.max_num_batched_tokens = 4096;  // each prompt in three chunks
  REQUIRE(rl::check_rollout(o).empty());
  const auto r = rl::simulate_rollout(o, w.input());
  int64_t prefilled = 0;
  for (const auto& e : r.engines) prefilled += e.stats.prefill_tokens;
  MESSAGE("preemptions " << r.preemptions() << ", recomputed " << r.recomputed_tokens() << ", prefilled " << prefilled);
  CHECK(r.generated_tokens == 6 * 50);
  // A request whose next chunk has no room preempts itself once and then waits, first in line,
  // with its blocks cached; it does not start afresh and evict its own prefix (vLLM V1).
  CHECK(r.recomputed_tokens() <= 6 * 10000 / 10);
  CHECK(prefilled <= 6 * 10000 + r.recomputed_tokens());
  CHECK(r.preemptions() <= 6);
}

TEST_CASE("rollout: static sandboxes make the second caller wait for the first trajectory's end") {
  Setup s;
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::sandbox, 1, 1, SimTime::zero(), {}, 0}};
  Workload w;
  // Two identical trajectories: a short turn, a 10 s tool call, a second turn.
  for (int i = 0; i < 2; ++i) w.add(i, {turn(100, 10, 10.0, 50), turn(20, 200)});
  auto o = s.options();
  o.tool_policy = input::ToolPolicy::static_binding;
  const auto stat = rl::simulate_rollout(o, w.input());
  o.tool_policy = input::ToolPolicy::pooled;
  const auto pooled = rl::simulate_rollout(o, w.input());
  auto act = [](const rl::RolloutResult& r, size_t i) { return (r.tool_calls[i].ended - r.tool_calls[i].requested).seconds(); };
  // Pooled: the second action waits for the first action only: ACT = 10 + 10.
  CHECK(act(pooled, 0) == doctest::Approx(10.0));
  CHECK(act(pooled, 1) == doctest::Approx(20.0));
  // Static: it waits until the first trajectory has also run its second turn.
  const double first_last_turn = (stat.turns[2].end - stat.turns[2].arrival).seconds();
  CHECK(stat.turns[2].trajectory == 0);
  CHECK(act(stat, 1) == doctest::Approx(20.0 + first_last_turn).epsilon(1e-6));
}

TEST_CASE("rollout: a partial rollout's tool calls under way at the stop keep when they started") {
  // One sandbox: trajectory 1's call waits for trajectory 0's (10 s), then runs 10 s; trajectory
  // 2, one long turn, ends in between and stops the rollout (a third of the trajectories done).
  Setup s;
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::sandbox, 1, 1, SimTime::zero(), {}, 0}};
  Workload w;
  for (int i = 0; i < 2; ++i) w.add(i, {turn(100, 10, 10.0, 50), turn(20, 200)});
  w.add(2, {turn(100, 1500)});
  auto o = s.options();
  o.tool_policy = input::ToolPolicy::pooled;
  const auto whole = rl::simulate_rollout(o, w.input());
  REQUIRE(whole.tool_calls.size() == 2);
  const auto& queued = whole.tool_calls[1];
  REQUIRE(queued.trajectory == 1);
  CHECK((queued.started - queued.requested).seconds() == doctest::Approx(10.0).epsilon(1e-3));
  // The case the test is about: trajectory 2 ends while trajectory 1's call runs.
  INFO("trajectory 2 ends at ", whole.generation_end[2].seconds(), " s; the call runs from ", queued.started.seconds(),
       " s to ", queued.ended.seconds(), " s");
  REQUIRE(whole.generation_end[2] > queued.started);
  REQUIRE(whole.generation_end[2] < queued.ended);
  o.stop_fraction = 1.0 / 3.0;
  const auto part = rl::simulate_rollout(o, w.input());
  REQUIRE(part.tool_calls.size() == 2);
  CHECK(part.tool_calls[0].started == whole.tool_calls[0].started);
  CHECK(part.tool_calls[0].ended == whole.tool_calls[0].ended);
  CHECK(part.tool_calls[1].requested == queued.requested);
  CHECK(part.tool_calls[1].started == queued.started);  // under way: started, not yet ended
  bool in_tool = false;
  for (const auto& p : part.paused) in_tool = in_tool || (p.trajectory == 1 && p.generated == -1);
  CHECK(in_tool);
}

TEST_CASE("rollout: an API pool limits concurrent calls without binding a unit to a trajectory") {
  // As above, but the pool is an API with one concurrent call: even under static binding the
  // second call waits for the first call only (ACT 10 + 10), not for the first trajectory's end.
  Setup s;
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::api, 1, 1, SimTime::zero(), {}, 0}};
  Workload w;
  for (int i = 0; i < 2; ++i) w.add(i, {turn(100, 10, 10.0, 50), turn(20, 200)});
  auto o = s.options();
  o.tool_policy = input::ToolPolicy::static_binding;
  const auto r = rl::simulate_rollout(o, w.input());
  CHECK((r.tool_calls[0].ended - r.tool_calls[0].requested).seconds() == doctest::Approx(10.0));
  CHECK((r.tool_calls[1].ended - r.tool_calls[1].requested).seconds() == doctest::Approx(20.0));
}

TEST_CASE("rollout: a call the trace gives no latency takes its pool's, drawn from the run's seed") {
  // The trace says 0 s for the tool call; the pool's fixed 3 s latency applies instead. With a
  // log-normal latency the draws depend on the seed only.
  Setup s;
  input::LatencyDist fixed;
  fixed.mean = SimTime::from_seconds(3);
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::sandbox, 4, 4, SimTime::zero(), fixed, 0}};
  Workload w;
  for (int i = 0; i < 2; ++i) w.add(i, {turn(100, 10, 0.0, 50), turn(20, 20)});
  auto o = s.options();
  const auto r = rl::simulate_rollout(o, w.input());
  for (const auto& c : r.tool_calls) CHECK((c.ended - c.started).seconds() == doctest::Approx(3.0));
  input::LatencyDist lognormal;
  lognormal.kind = input::LatencyKind::lognormal;
  lognormal.mean = SimTime::from_seconds(3);
  lognormal.sigma = 0.8;
  s.cluster.pools[0].latency = lognormal;
  o = s.options();
  o.seed = 7;
  const auto a = rl::simulate_rollout(o, w.input()), b = rl::simulate_rollout(o, w.input());
  o.seed = 8;
  const auto c = rl::simulate_rollout(o, w.input());
  CHECK(a.tool_calls[0].ended == b.tool_calls[0].ended);
  CHECK(a.tool_calls[0].ended != c.tool_calls[0].ended);
  CHECK((a.tool_calls[0].ended - a.tool_calls[0].started) != (a.tool_calls[1].ended - a.tool_calls[1].started));
}

TEST_CASE("rollout: event skipping gives the same times as iterating, on random agentic cases") {
  Setup s;
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::sandbox, 4, 16, SimTime::from_seconds(0.5), {}, 0}};
  std::mt19937_64 rng(1234);
  for (int trial = 0; trial < 6; ++trial) {
    Workload w;
    const int n = 8 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      std::vector<trace::Turn> turns;
      const int k = 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < k; ++j) {
        const bool tool = j + 1 < k;
        turns.push_back(turn(j == 0 ? 200 + static_cast<int32_t>(rng() % 3000) : static_cast<int32_t>(rng() % 300),
                             1 + static_cast<int32_t>(rng() % 1500), tool ? 0.1 + static_cast<double>(rng() % 3000) / 1000 : -1,
                             tool ? static_cast<int32_t>(rng() % 500) : 0));
      }
      w.add(i / 4, turns);
    }
    auto o = s.options();
    o.engines = 1 + static_cast<int64_t>(rng() % 3);
    o.engine.gpu_memory_utilization = trial % 2 == 0 ? 0.9 : 0.25;  // some cases preempt
    o.engine.max_num_seqs = 1 + static_cast<int64_t>(rng() % 64);
    o.tool_policy = trial % 3 == 0 ? input::ToolPolicy::static_binding : input::ToolPolicy::pooled;
    const auto& routing = input::routing_policies().choices();
    o.routing = routing[static_cast<size_t>(trial) % routing.size()].value;
    auto in = w.input();
    in.arrivals.clear();
    for (int i = 0; i < n; ++i) in.arrivals.push_back(SimTime::from_seconds(static_cast<double>(rng() % 2000) / 1000));
    const auto skip = rl::simulate_rollout(o, in);
    o.per_iteration = true;
    const auto iterate = rl::simulate_rollout(o, in);
    INFO("trial ", trial, " n ", n, " engines ", o.engines);
    CHECK(skip.events < iterate.events);
    CHECK(skip.preemptions() == iterate.preemptions());
    CHECK(skip.generated_tokens == iterate.generated_tokens);
    for (int i = 0; i < n; ++i) {
      const double a = skip.trajectory_end[static_cast<size_t>(i)].seconds();
      const double b = iterate.trajectory_end[static_cast<size_t>(i)].seconds();
      CHECK(std::abs(a - b) <= 1e-9 * b);
    }
  }
}

TEST_CASE("rollout: a partial rollout keeps what windows in flight completed, as iterating does") {
  // Two engines: the trajectory whose end reaches the fraction ends an iteration of one engine
  // while the other is inside a decode window; the paused trajectories keep the tokens of the
  // iterations that completed before the stop in both modes.
  Setup s;
  std::mt19937_64 rng(99);
  int64_t kept_by_window = 0;
  for (int trial = 0; trial < 6; ++trial) {
    Workload w;
    const int n = 16 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i)
      w.add(i / 4, {turn(100 + static_cast<int32_t>(rng() % 2000), 50 + static_cast<int32_t>(rng() % 3000))});
    auto o = s.options();
    o.engines = 2;
    o.stop_fraction = 0.5;
    o.log_iterations = true;
    const auto skip = rl::simulate_rollout(o, w.input());
    o.per_iteration = true;
    const auto iterate = rl::simulate_rollout(o, w.input());
    INFO("trial ", trial, " n ", n);
    REQUIRE(!skip.paused.empty());
    REQUIRE(skip.paused.size() == iterate.paused.size());
    for (size_t i = 0; i < skip.paused.size(); ++i) {
      CHECK(skip.paused[i].trajectory == iterate.paused[i].trajectory);
      CHECK(skip.paused[i].generated == iterate.paused[i].generated);
      CHECK(skip.paused[i].context == iterate.paused[i].context);
    }
    // The engines' busy time is the same too: what ran until the stop, less the iteration in progress.
    for (size_t e = 0; e < 2; ++e) CHECK(std::abs(skip.engines[e].busy_s - iterate.engines[e].busy_s) <= 1e-9);
    // The logged iterations add up to the tokens each paused trajectory holds (one engine each).
    int64_t logged = 0;
    for (const auto& it : skip.iterations) logged += it.iterations * it.batch.decode_seqs;
    int64_t paused = 0;
    for (const auto& p : skip.paused) paused += std::max<int64_t>(0, p.generated);
    CHECK(logged >= paused);
    // The last logged record of an engine ends at most at the stop.
    for (const auto& it : skip.iterations) CHECK(it.end_s <= skip.makespan.seconds() + 1e-9);
    if (!skip.iterations.empty() && skip.iterations.back().iterations > 1) ++kept_by_window;
  }
  CHECK(kept_by_window > 0);  // the case the test is about happened
}

TEST_CASE("rollout: deterministic") {
  Setup s;
  Workload w;
  for (int i = 0; i < 32; ++i) w.add(i / 8, {turn(1000 + 37 * i, 100 + 13 * i)});
  auto o = s.options();
  o.engines = 2;
  const auto a = rl::simulate_rollout(o, w.input());
  const auto b = rl::simulate_rollout(o, w.input());
  CHECK(a.trajectory_end == b.trajectory_end);
  CHECK(a.events == b.events);
}

TEST_CASE("rollout: group prompts are prefilled once per engine with prefix caching") {
  Setup s;
  Workload w;
  for (int i = 0; i < 16; ++i) w.add(7, {turn(4096, 64)});  // one prompt, 16 samples
  auto o = s.options();
  o.engine.max_num_batched_tokens = 4096;  // one prompt per iteration: later samples hit the cache
  const auto cached = rl::simulate_rollout(o, w.input());
  o.engine.prefix_caching = false;
  const auto uncached = rl::simulate_rollout(o, w.input());
  // The first sample computes the prompt; the other 15 reuse its 255 full blocks (4080 tokens)
  // and compute the last 16 tokens themselves.
  CHECK(cached.engines[0].stats.cached_tokens == 15 * 4080);
  CHECK(cached.engines[0].stats.prefill_tokens == 4096 + 15 * 16);
  CHECK(uncached.engines[0].stats.prefill_tokens == 16 * 4096);
  CHECK(cached.makespan < uncached.makespan);
}

TEST_CASE("rollout: rule rewards queue on their pool, a reward model prefills the whole context") {
  Setup s;
  s.cluster.pools = {input::PoolSpec{"reward", input::PoolKind::sandbox, 1, 1, SimTime::zero(), {}, 0}};
  Workload w;
  for (int i = 0; i < 3; ++i) w.add(i, {turn(500, 100)});  // identical: they finish together
  auto o = s.options();
  o.reward.cpu_time_per_sample = SimTime::from_seconds(2);
  o.reward.pool = "reward";
  const auto rule = rl::simulate_rollout(o, w.input());
  // One CPU unit: the three scores run one after another.
  const SimTime done = rule.generation_end[0];
  CHECK(rule.generation_end[2] == done);
  std::vector<double> after;
  for (int i = 0; i < 3; ++i) after.push_back((rule.trajectory_end[static_cast<size_t>(i)] - done).seconds());
  std::sort(after.begin(), after.end());
  CHECK(after == std::vector<double>{2, 4, 6});

  auto reward_model = test::preset_model("qwen3-4b");
  o.reward = {};
  o.reward.kind = input::RewardKind::model;
  o.reward.model = &reward_model;
  o.reward.engines = 1;
  const auto scored = rl::simulate_rollout(o, w.input());
  CHECK(scored.engines.size() == 2);
  CHECK(scored.engines[1].stats.prefill_tokens == 3 * 600);  // prompt + response of each
  for (int i = 0; i < 3; ++i) CHECK(scored.trajectory_end[static_cast<size_t>(i)] > scored.generation_end[static_cast<size_t>(i)]);
  CHECK(scored.turns.size() == 3);  // scoring is not a turn
}

TEST_CASE("rollout: KV-cache use is sampled over time, at most once per interval per engine") {
  Setup s;
  Workload w;
  for (int i = 0; i < 8; ++i) w.add(i, {turn(2000, 4000)});
  auto o = s.options();
  o.engine.gpu_memory_utilization = 0.25;
  o.kv_sample_interval = SimTime::from_seconds(0.5);
  const auto r = rl::simulate_rollout(o, w.input());
  REQUIRE(r.kv.size() > 2);
  double peak = 0;
  for (size_t i = 0; i < r.kv.size(); ++i) {
    CHECK(r.kv[i].used_fraction >= 0);
    CHECK(r.kv[i].used_fraction <= 1);
    peak = std::max(peak, r.kv[i].used_fraction);
    if (i > 0) CHECK((r.kv[i].time - r.kv[i - 1].time) >= o.kv_sample_interval);
  }
  CHECK(peak > 0.5);  // this batch fills the small cache
}

TEST_CASE("rollout: least-loaded routing sees what a router knows, never how long a request will generate") {
  // The same requests with the long generation on another trajectory: a router that read true
  // remaining lengths would place them differently; one that sees requests in flight and prompt
  // tokens places them the same.
  auto engines_of = [](std::vector<int32_t> gens) {
    Setup s;
    Workload w;
    for (size_t i = 0; i < gens.size(); ++i) w.add(static_cast<int64_t>(i) + 1, {turn(1000, gens[i])});
    auto o = s.options();
    o.engines = 2;
    o.routing = input::Routing::least_loaded;
    const auto r = rl::simulate_rollout(o, w.input());
    std::vector<int64_t> engine(gens.size(), -1);
    for (const auto& t : r.turns) engine[static_cast<size_t>(t.trajectory)] = t.engine;
    return engine;
  };
  const auto a = engines_of({4000, 10, 10, 10, 10, 10});
  const auto b = engines_of({10, 10, 10, 10, 10, 4000});
  CHECK(a == b);
  // Equal prompts arriving together alternate: the fewest requests in flight wins.
  CHECK(a == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
}

TEST_CASE("routing: length-aware routing places first turns by the predictions it is given, and only it reads them") {
  // Predictions of 1,000 tokens for the first trajectory and 10 for the others: the long one takes
  // an engine, the short ones share the other, since its predicted backlog stays the smaller.
  // Each trajectory's engine for four one-turn trajectories (the first of `first_context` tokens),
  // their predictions and how the first comes back from a rollout before, on two engines.
  auto engines_of = [](input::Routing routing, int64_t first_context, std::vector<int64_t> predicted,
                       std::vector<rl::RolloutInput::Carried> carried) {
    Setup s;
    Workload w;
    w.add(1, {turn(first_context, 20)});
    for (int64_t i = 1; i < 4; ++i) w.add(i + 1, {turn(100, 20)});
    auto in = w.input();
    in.predicted_tokens = std::move(predicted);
    in.carried = std::move(carried);
    auto o = s.options();
    o.engines = 2;
    o.routing = routing;
    const auto r = rl::simulate_rollout(o, in);
    std::vector<int64_t> engine(4, -1);
    for (const auto& t : r.turns) engine[static_cast<size_t>(t.trajectory)] = t.engine;
    return engine;
  };
  const std::vector<int64_t> one_long{1000, 10, 10, 10};
  CHECK(engines_of(input::Routing::length_aware, 100, one_long, {}) == std::vector<int64_t>{0, 1, 1, 1});
  CHECK(engines_of(input::Routing::least_loaded, 100, one_long, {}) == std::vector<int64_t>{0, 1, 0, 1});
  // The long one carried over with its KV kept on engine 1 goes back there, and its predicted
  // backlog counts there: the short ones take engine 0.
  CHECK(engines_of(input::Routing::length_aware, 100, one_long, {{true, false, 1, 64}}) == std::vector<int64_t>{1, 0, 0, 0});
  // Carried over with 990 of its predicted 1,000 tokens done: only the 10 left count on engine 1,
  // which then takes the two shortest (10 + 10 + 10 against 25 on engine 0).
  CHECK(engines_of(input::Routing::length_aware, 990, {1000, 25, 10, 10}, {{true, false, 1, 990}}) ==
        std::vector<int64_t>{1, 0, 1, 1});
  // Which policies ask for a prediction, and for which turns: the caller looks it up only then.
  const rl::RouteRequest first{0, 0, -1, 0}, later{0, 1, 1, 0};
  for (const auto r : {input::Routing::round_robin, input::Routing::least_loaded, input::Routing::sticky}) {
    const auto policy = rl::make_routing_policy(r);
    CHECK_FALSE(policy->uses_prediction(first));
    CHECK_FALSE(policy->uses_prediction(later));
  }
  const auto length_aware = rl::make_routing_policy(input::Routing::length_aware);
  CHECK(length_aware->uses_prediction(first));
  CHECK_FALSE(length_aware->uses_prediction(later));
}

TEST_CASE("routing: an engine's load is its requests and the tokens it has to prefill") {
  input::EngineSpec spec;
  rl::EngineScheduler short_gen(spec, 1000), long_gen(spec, 1000);
  rl::Request r;
  r.trajectory = 0;
  r.context = 500;
  r.gen_target = 10;
  short_gen.arrive(r);
  r.gen_target = 100000;
  long_gen.arrive(r);
  CHECK(short_gen.pending_prefill_tokens() == 500);
  CHECK(long_gen.pending_prefill_tokens() == 500);
  auto least_loaded = [](const std::vector<rl::EngineLoad>& loads) {
    rl::EngineLoads all(loads.size());
    for (size_t e = 0; e < loads.size(); ++e) all.set(e, loads[e]);
    return all.min_index();
  };
  CHECK(least_loaded({{1, 500}, {1, 500}, {1, 400}, {0, 9000}}) == 3);  // no request in flight beats a lighter queue
  CHECK(least_loaded({{1, 500}, {1, 400}}) == 1);
  CHECK(least_loaded({{1, 500}, {1, 500}}) == 0);
}

TEST_CASE("routing: the least-loaded index follows every change, ties going to the lowest index") {
  // Against a scan of the values after each of many updates.
  rl::EngineLoads loads(37);
  std::vector<rl::EngineLoad> mirror(37);
  uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t e = (x >> 33) % 37;
    const rl::EngineLoad l{static_cast<int64_t>((x >> 20) % 4), static_cast<int64_t>((x >> 40) % 3) * 100};
    loads.set(e, l);
    mirror[e] = l;
    const size_t scan = static_cast<size_t>(std::min_element(mirror.begin(), mirror.end()) - mirror.begin());
    REQUIRE(loads.min_index() == scan);
    REQUIRE(loads[e] == l);
  }
}

TEST_CASE("engine: eviction takes a cached context's last blocks first and leaves its prefix a cache hit") {
  input::EngineSpec spec;  // 16-token blocks, prefix caching
  rl::EngineScheduler e(spec, 100);
  rl::Planned p;
  std::vector<int64_t> finished, first;
  auto serve = [&](int64_t trajectory, int64_t context) {
    rl::Request r;
    r.trajectory = trajectory;
    r.context = context;
    r.gen_target = 1;  // the prefill's iteration samples it
    e.arrive(r);
    while (!e.idle()) {
      finished.clear();
      e.plan(p);
      e.complete(p, 1, finished, first);
      for (int64_t t : finished) e.release(t);
    }
  };
  serve(0, 800);  // 801 tokens cached in 51 blocks; 49 free
  CHECK(e.stats().cached_tokens == 0);
  serve(1, 1200);  // needs 75 blocks: 26 come off the tail of trajectory 0's entry
  // Trajectory 0's next turn finds the 25 blocks left of its context: 400 tokens (evicted whole,
  // as before, it would find none).
  serve(0, 900);
  CHECK(e.stats().cached_tokens == 400);
  CHECK(e.stats().preemptions == 0);
}

TEST_CASE("engine: a resident context is computed no more, holds its blocks, and goes first") {
  for (const bool caching : {true, false}) {
    INFO("prefix caching " << caching);
    input::EngineSpec spec;  // 16-token blocks
    spec.prefix_caching = caching;
    rl::EngineScheduler e(spec, 100);
    CHECK_FALSE(e.seed_resident(7, 100 * 16 + 1));  // more blocks than the engine has: nothing held
    REQUIRE(e.seed_resident(7, 640));               // 40 blocks, in use (not evictable)
    CHECK(e.used_blocks() == 40);
    // Another request arrives first and wants the whole cache: the resident blocks are not its to
    // take, and the resident request, arriving later, is first in line.
    rl::Request other;
    other.trajectory = 8;
    other.context = 900;  // 57 blocks: more than the 60 free once the resident one has its next block
    other.gen_target = 1;
    e.arrive(other);
    rl::Request r;
    r.trajectory = 7;
    r.context = 700;
    r.gen_target = 1;
    e.arrive(r);
    rl::Planned p;
    e.plan(p);
    // The first 640 tokens are there: the iteration prefills the other 60, then what the budget
    // and the free blocks leave for the other request.
    REQUIRE(p.chunks.size() >= 1);
    CHECK(p.batch.prefill[0].tokens == 60);
    CHECK(p.batch.prefill[0].context == 640);
    CHECK(e.stats().resident_tokens == 640);
    CHECK(e.stats().cached_tokens == 0);  // not a prefix-cache hit
    // A trajectory not resident is prefilled whole.
    rl::EngineScheduler f(spec, 100);
    REQUIRE(f.seed_resident(7, 640));
    r.trajectory = 9;
    f.arrive(r);
    f.plan(p);
    REQUIRE(p.chunks.size() == 1);
    CHECK(p.chunks[0].second == 700);
  }
}

TEST_CASE("engine: the turn-end hint names the grouped request that ends its turn first") {
  input::EngineSpec spec;
  rl::EngineScheduler e(spec, 1000);
  CHECK(e.turn_end_hint().trajectory == -1);  // nothing grouped
  rl::Planned p;
  std::vector<int64_t> finished, first;
  for (const auto& [trajectory, gen] : {std::pair<int64_t, int64_t>{7, 300}, {8, 40}, {9, 120}}) {
    rl::Request r;
    r.trajectory = trajectory;
    r.context = 64;
    r.gen_target = gen;
    e.arrive(r);
  }
  // The prefill iteration, then a plan that groups the three decoding requests.
  e.plan(p);
  e.complete(p, 1, finished, first);
  e.plan(p);
  REQUIRE(p.chunks.empty());
  CHECK(e.turn_end_hint().trajectory == 8);
  CHECK(e.turn_end_hint().request != nullptr);
  CHECK(e.turn_end_hint().entry != nullptr);
  // Once it has left, the next to end.
  e.complete(p, std::max<int64_t>(1, p.skippable), finished, first);
  while (std::find(finished.begin(), finished.end(), 8) == finished.end()) {
    e.plan(p);
    e.complete(p, std::max<int64_t>(1, p.skippable), finished, first);
  }
  e.release(8);
  e.plan(p);
  CHECK(e.turn_end_hint().trajectory == 9);
}

TEST_CASE("rollout: without records of tool calls, each pool keeps the same action and queueing times") {
  // Multi-turn trajectories on two sandboxes, whole and stopped part-way (calls queued and running
  // at the stop): the pools' times equal those the records give, as sets.
  Setup s;
  s.cluster.pools = {input::PoolSpec{"sandbox", input::PoolKind::sandbox, 2, 2, SimTime::zero(), {}, 0}};
  std::mt19937_64 rng(5);
  for (const double stop : {1.0, 0.5, 0.25}) {
    Workload w;
    for (int i = 0; i < 24; ++i) {
      std::vector<trace::Turn> turns;
      const int n = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < n; ++k)
        turns.push_back(turn(50 + static_cast<int32_t>(rng() % 500), 10 + static_cast<int32_t>(rng() % 300),
                             k + 1 < n ? 0.5 + static_cast<double>(rng() % 40) / 10.0 : -1.0, 20));
      w.add(i / 4, std::move(turns));
    }
    auto o = s.options();
    o.tool_policy = input::ToolPolicy::pooled;
    o.stop_fraction = stop;
    const auto with = rl::simulate_rollout(o, w.input());
    o.record_tool_calls = false;
    const auto without = rl::simulate_rollout(o, w.input());
    INFO("stop at ", stop);
    CHECK(without.tool_calls.empty());
    REQUIRE(!with.tool_calls.empty());
    std::vector<float> act, queue;
    for (const auto& c : with.tool_calls) {
      act.push_back(static_cast<float>((c.ended - c.requested).seconds()));
      queue.push_back(static_cast<float>((c.started - c.requested).seconds()));
    }
    auto sorted = [](std::vector<float> v) { return std::sort(v.begin(), v.end()), v; };
    REQUIRE(without.pools.size() == 1);
    CHECK(sorted(without.pools[0].act_s) == sorted(act));
    CHECK(sorted(without.pools[0].queue_s) == sorted(queue));
    CHECK(with.pools[0].act_s.empty());
    CHECK(without.trajectory_end == with.trajectory_end);
  }
}

TEST_CASE("rollout: eager mode's default dispatch runs at the pace of the GPU's host CPU, a dispatch a scenario gives as given") {
  const auto execution = [](const std::vector<std::string>& overrides) {
    input::Diagnostics diag;
    const auto s = input::load_scenario("default", overrides, diag);
    INFO(input::format_all(diag));
    REQUIRE(s);
    return rl::engine_execution(s->workload.engine, s->cluster.gpu);
  };
  const auto x86 = execution({"/workload/engine/enforce_eager=true"});
  CHECK(x86.host_fixed_s == doctest::Approx(6.1e-3));
  CHECK(x86.host_per_sequence_s == doctest::Approx(35e-6));
  CHECK(x86.dispatch_s == doctest::Approx(8.7e-6));
  // A host that runs a framework's code at 2.75 times the time: the default dispatch scales; the
  // engine loop's host work (vLLM V0's line, which V1 engines do not pay) does not.
  const std::string grace = "/cluster/gpu/host_cpu={\"name\": \"Grace\", \"relative_time\": 2.75}";
  const auto slow = execution({grace, "/workload/engine/enforce_eager=true"});
  CHECK(slow.dispatch_s == doctest::Approx(2.75 * 8.7e-6));
  CHECK(slow.host_fixed_s == doctest::Approx(6.1e-3));
  CHECK(slow.host_per_sequence_s == doctest::Approx(35e-6));
  // A dispatch the scenario sets is its own engine on its own hosts.
  const auto given = execution({grace, "/workload/engine/enforce_eager=true", "/workload/engine/eager_dispatch=\"5 us\""});
  CHECK(given.dispatch_s == doctest::Approx(5e-6));
}
