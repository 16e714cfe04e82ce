#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/model/transformer.h"
#include "sim/report/summary.h"
#include "sim/report/table.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"
#include "tests/rl/step_fixtures.h"

using namespace arlsim;

using test::scenario;
using test::small_trace;

namespace {

double sum(const rl::StageTimes& t) {
  return t.rollout + t.reward + t.old_logprob + t.ref_logprob + t.critic + t.dispatch + t.train + t.weight_sync;
}


}  // namespace

TEST_CASE("step: a synchronous colocated step on one node is its stages one after another") {
  const auto s = scenario({"/steps=2", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                           "/trace/generate/group_size=4"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() == 2);
  for (const auto& step : r.steps) {
    CHECK(step.time_s == doctest::Approx(sum(step.stages)));
    CHECK(step.stages.rollout > 0);
    CHECK(step.stages.old_logprob > 0);
    CHECK(step.stages.ref_logprob > 0);
    CHECK(step.stages.critic == 0);  // GRPO has no critic
    CHECK(step.stages.train > step.stages.old_logprob);  // forward + backward, several mini-batches
    CHECK(step.stages.weight_sync > 0);
    CHECK_FALSE(step.oom);
  }
  CHECK(r.steps[1].start_s == doctest::Approx(r.steps[0].time_s));
  CHECK(r.total_time_s == doctest::Approx(r.steps[0].time_s + r.steps[1].time_s));
  CHECK(r.gpu_hours == doctest::Approx(8 * r.total_time_s / 3600));
  // Dispatch stays inside the node: NVLink, no controller bottleneck worth minutes.
  CHECK(r.steps[0].stages.dispatch < 1.0);
}

TEST_CASE("step: asynchronous training overlaps the next rollout") {
  const std::vector<std::string> base{"/steps=6", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4",
                                      "/trace/generate/every=1", "/policy/placement=\"disaggregated\"",
                                      "/policy/rollout_gpus=8", "/policy/train/dp=4"};
  const auto sync_s = scenario(base);
  auto async_overrides = base;
  async_overrides.push_back("/policy/sync={\"mode\": \"async\", \"staleness\": 1}");
  const auto async_s = scenario(async_overrides);
  const auto t = small_trace(sync_s);
  const auto sync_r = rl::simulate_run(sync_s, t, {});
  const auto async_r = rl::simulate_run(async_s, t, {});
  REQUIRE(async_r.steps.size() == 6);
  CHECK(async_r.total_time_s < sync_r.total_time_s);
  // Each pool works through its stages one after another, so the run lasts at least the busier
  // pool's total; the weight sync holds both pools (the engines load the new weights), so it counts
  // on the rollout side too. With the overlap the run lasts about the sum over steps of the busier
  // side (plus one pipeline fill).
  double rollout_total = 0, training_total = 0, bound = 0, fill = 0;
  for (const auto& step : async_r.steps) {
    const double rollout = step.stages.rollout + step.stages.reward + step.stages.weight_sync;
    const double training = sum(step.stages) - step.stages.rollout - step.stages.reward;
    rollout_total += rollout;
    training_total += training;
    bound += std::max(rollout, training);
    fill = std::max(fill, std::min(rollout, training));
  }
  CHECK(async_r.total_time_s >= std::max(rollout_total, training_total) * 0.999);
  CHECK(async_r.total_time_s <= (bound + fill) * 1.001);
}

TEST_CASE("step: continuous generation keeps the engines busy with later steps' trajectories") {
  // 32 trajectories a step on the rollout pool's engines: a step's rollout waits for its longest
  // when the engines hold one step at a time.
  const std::vector<std::string> base{"/steps=8", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4",
                                      "/trace/generate/every=1", "/policy/placement=\"disaggregated\"",
                                      "/policy/rollout_gpus=8", "/policy/train/dp=4"};
  auto with = [&](const std::string& sync) { return scenario(test::plus(base, "/policy/sync=" + sync)); };
  const auto whole1 = with(R"({"mode": "async", "staleness": 1})");
  const auto cont1 = with(R"({"mode": "async", "staleness": 1, "continuous": true})");
  const auto whole4 = with(R"({"mode": "async", "staleness": 4})");
  const auto cont4 = with(R"({"mode": "async", "staleness": 4, "continuous": true})");
  CHECK(cont4.policy.continuous);
  const auto t = small_trace(whole1);
  const auto r_whole1 = rl::simulate_run(whole1, t, {}), r_cont1 = rl::simulate_run(cont1, t, {});
  const auto r_whole4 = rl::simulate_run(whole4, t, {}), r_cont4 = rl::simulate_run(cont4, t, {});
  REQUIRE(r_cont4.steps.size() == 8);
  // With a staleness of 1 the engines hold one step at a time either way: the same run.
  CHECK(r_cont1.total_time_s == r_whole1.total_time_s);
  for (size_t i = 0; i < 8; ++i) CHECK(r_cont1.steps[i].stages.rollout == r_whole1.steps[i].stages.rollout);
  // A larger staleness without continuous generation changes only when rollouts may start.
  for (size_t i = 0; i < 8; ++i) CHECK(r_whole4.steps[i].stages.rollout == r_whole1.steps[i].stages.rollout);
  // Continuous: the first step's rollout ends when 32 of the 128 trajectories held have finished,
  // the shortest, long before the step's own longest; the run is shorter, and every step trains
  // on a batch of 32 finished trajectories.
  CHECK(r_cont4.steps[0].stages.rollout < 0.7 * r_whole4.steps[0].stages.rollout);
  CHECK(r_cont4.total_time_s < 0.9 * r_whole4.total_time_s);
  double rollout_whole = 0, rollout_cont = 0;
  int64_t tokens_whole = 0, tokens_cont = 0;
  for (size_t i = 0; i < 8; ++i) {
    rollout_whole += r_whole4.steps[i].stages.rollout;
    rollout_cont += r_cont4.steps[i].stages.rollout;
    tokens_whole += r_whole4.steps[i].tokens;
    tokens_cont += r_cont4.steps[i].tokens;
    CHECK(r_cont4.steps[i].tokens > 0);
  }
  CHECK(rollout_cont < rollout_whole);
  // The engines also hold the trace's steps 9-11, ahead of the last simulated step: the run
  // trains on the first to finish, short ones more often, and never on more than whole steps.
  CHECK(tokens_cont < tokens_whole);
  // Event skipping and iterating agree, the cache full of carried contexts included.
  rl::RunOptions iterate;
  iterate.per_iteration = true;
  const auto r_iter4 = rl::simulate_run(cont4, t, iterate);
  REQUIRE(r_iter4.steps.size() == 8);
  for (size_t i = 0; i < 8; ++i) CHECK(r_iter4.steps[i].stages.rollout == doctest::Approx(r_cont4.steps[i].stages.rollout).epsilon(1e-9));
  // Every step trains on exactly its batch, however many ended in the event that reached it.
  std::vector<size_t> trained;
  rl::RunOptions count;
  count.on_step = [&](rl::StepExecution&& e) { trained.push_back(e.tokens.size()); };
  rl::simulate_run(cont4, t, count);
  CHECK(trained == std::vector<size_t>(8, 32));
  // Keeping the running requests' KV across the update (NeMo RL's default) spares their contexts'
  // second prefill: the same trajectories, sooner.
  const auto keep4 = with(R"({"mode": "async", "staleness": 4, "continuous": true, "kv_cache": "keep"})");
  CHECK(keep4.policy.keep_kv_cache);
  const auto r_keep4 = rl::simulate_run(keep4, t, {});
  REQUIRE(r_keep4.steps.size() == 8);
  CHECK(r_keep4.steps[0].stages.rollout == r_cont4.steps[0].stages.rollout);  // nothing carried into the first
  double rollout_keep = 0;
  for (size_t i = 0; i < 8; ++i) rollout_keep += r_keep4.steps[i].stages.rollout;
  CHECK(rollout_keep < rollout_cont);
  // Engines relaunched in another layout keep nothing: contexts are kept at step 2 and 3, but
  // none at step 3 when the rollout's tp goes there from the preset's 2 to 4.
  auto switched = base;
  switched.push_back(R"(/policy/sync={"mode": "async", "staleness": 4, "continuous": true, "kv_cache": "keep"})");
  auto kept_prefills = [&](const std::vector<std::string>& overrides) {
    const auto sc = scenario(overrides);
    CHECK(sc.policy.rollout.tp == 2);
    std::map<int64_t, int64_t> kept;  // by step
    rl::RunOptions o;
    o.on_step = [&](rl::StepExecution&& e) { kept[e.step] = e.kept_kv_tokens; };
    const auto r = rl::simulate_run(sc, t, o);
    REQUIRE(r.steps.size() == 8);
    return kept;
  };
  const auto same = kept_prefills(switched);
  CHECK(same.at(2) > 0);
  CHECK(same.at(3) > 0);
  switched.push_back(R"(/policy/schedule=[{"steps": "3:", "rollout": {"tp": 4}}])");
  const auto relaunched = kept_prefills(switched);
  CHECK(relaunched.at(2) > 0);
  CHECK(relaunched.at(3) == 0);
}

TEST_CASE("step: long contexts on one GPU per rank run out of memory, sharded ones do not") {
  // Qwen3-8B trained with plain data parallelism (no ZeRO, no TP) at 20K contexts: 18 bytes per
  // parameter (147 GB) cannot fit an 80 GiB GPU.
  const auto oom_s = scenario({"/steps=1", "/trace/generate/prompts_per_step=4", "/trace/generate/group_size=4",
                               "/policy/train={\"tp\": 1, \"dp\": 16, \"zero\": 0}"});
  const auto oom = rl::simulate_run(oom_s, small_trace(oom_s), {});
  REQUIRE(oom.oom_events.size() == 1);
  CHECK(oom.oom_events[0].stage == "train");
  CHECK(oom.oom_events[0].needed_gib > oom.oom_events[0].available_gib);
  CHECK(oom.oom_events[0].contributors_gib.front().first == "optimizer");
  const auto fine_s = scenario({"/steps=1", "/trace/generate/prompts_per_step=4", "/trace/generate/group_size=4"});
  CHECK(rl::simulate_run(fine_s, small_trace(fine_s), {}).oom_events.empty());
}

TEST_CASE("step: a rollout engine whose weights do not fit is an OOM of the rollout stage") {
  const auto s = scenario({"/steps=1", "/trace/generate/prompts_per_step=4", "/trace/generate/group_size=4",
                           "/workload/engine/gpu_memory_utilization=0.2", "/policy/rollout/tp=1"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.oom_events.size() == 1);
  CHECK(r.oom_events[0].stage == "rollout");
}

TEST_CASE("step: same inputs, same results") {
  const auto s = scenario({"/steps=2", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  const auto t = small_trace(s);
  const auto a = rl::simulate_run(s, t, {});
  const auto b = rl::simulate_run(s, t, {});
  REQUIRE(a.steps.size() == b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) CHECK(a.steps[i].time_s == b.steps[i].time_s);
  REQUIRE(a.activities.size() == b.activities.size());
  for (size_t i = 0; i < a.activities.size(); ++i) {
    CHECK(a.activities[i].start_s == b.activities[i].start_s);
    CHECK(a.activities[i].end_s == b.activities[i].end_s);
  }
}

TEST_CASE("step: the run's records hold each step's stages as placed, and its parts inside them") {
  const auto s = scenario({"/steps=2", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() == 2);
  for (const auto& step : r.steps) {
    double first_start = 1e300;
    graph::StageTimes recorded;
    int32_t optimizer_steps = 0;
    for (const auto& a : r.activities) {
      if (a.step != step.step) continue;
      if (a.kind == exec::RecordKind::stage) {
        recorded[a.stage] += a.end_s - a.start_s;
        if (a.stage == graph::Stage::train) {
          CHECK(a.part == optimizer_steps++);
          CHECK(a.parts == s.workload.ppo_epochs * s.workload.mini_batches);
        }
        first_start = std::min(first_start, a.start_s);
      } else if (a.kind == exec::RecordKind::engine_span) {
        // An engine's span lies inside its step's rollout, on the rollout's GPUs.
        CHECK(a.start_s >= step.start_s - 1e-9);
        CHECK(a.end_s <= step.start_s + step.stages.rollout + 1e-6);
        CHECK(a.devices.count == s.policy.rollout.tp * s.policy.rollout.pp);
      }
    }
    CHECK(first_start == doctest::Approx(step.start_s));
    // Each stage's records last the stage's time, to the nanosecond the event engine keeps;
    // training is one record per optimizer step.
    for (const auto& info : graph::kStages) CHECK(recorded[info.id] == doctest::Approx(step.stages[info.id]).epsilon(1e-9));
    CHECK(optimizer_steps == s.workload.ppo_epochs * s.workload.mini_batches);
  }
  // Each stage record carries its work: model FLOPs where it computes, bytes where it moves data.
  for (const auto& a : r.activities) {
    if (a.kind != exec::RecordKind::stage) continue;
    if (a.stage == graph::Stage::train || a.stage == graph::Stage::old_logprob || a.stage == graph::Stage::rollout)
      CHECK(a.flops > 0);
    if (a.stage == graph::Stage::dispatch) CHECK(a.bytes > 0);
    if (a.stage == graph::Stage::weight_sync)
      CHECK(a.bytes == doctest::Approx(2.0 * model::count_params(s.model).total * rl::rollout_engines(s, s.policy.rollout)));
  }
  // Without a timeline only the stages are kept.
  rl::RunOptions o;
  o.timeline = false;
  const auto bare = rl::simulate_run(s, small_trace(s), o);
  CHECK(bare.activities.size() == 2 * (graph::kStageCount - 1 + static_cast<size_t>(rl::optimizer_steps(s.workload))));
  CHECK(bare.counters.empty());
}

TEST_CASE("step: partial rollout ends a step's rollout early and carries the rest over") {
  const std::vector<std::string> base{"/steps=3", "/trace/generate/prompts_per_step=16", "/trace/generate/group_size=4"};
  const auto full_s = scenario(base);
  auto partial_overrides = base;
  partial_overrides.push_back("/policy/sync={\"mode\": \"sync\", \"partial_rollout\": 0.5}");
  const auto partial_s = scenario(partial_overrides);
  const auto t = small_trace(full_s);
  const auto full = rl::simulate_run(full_s, t, {});
  const auto partial = rl::simulate_run(partial_s, t, {});
  REQUIRE(partial.steps.size() == 3);
  // The first step stops when half of its 64 trajectories are done: sooner, with fewer tokens.
  CHECK(partial.steps[0].stages.rollout < full.steps[0].stages.rollout);
  CHECK(partial.steps[0].tokens < full.steps[0].tokens);
  // Later steps also finish trajectories carried over from earlier ones.
  int64_t carried = 0;
  for (const auto& s : partial.steps) carried += s.tokens;
  CHECK(carried > 0);
  CHECK_FALSE(partial.steps[1].oom);
}

TEST_CASE("step: a layout switch of the schedule costs its relaunch or reshard plus the policy's overhead") {
  // Steps 1-3; training changes layout at step 2 and rollout at step 3.
  const std::vector<std::string> base{
      "/steps=3", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
      "/trace/generate/group_size=4", "/trace/generate/every=1",
      "/policy/schedule=[{\"steps\": \"2:2\", \"train\": {\"tp\": 4, \"dp\": 2}}, "
      "{\"steps\": \"3:\", \"train\": {\"tp\": 4, \"dp\": 2}, \"rollout\": {\"tp\": 4}}]"};
  auto with_overhead = base;
  with_overhead.push_back("/policy/switch_overhead=\"30 s\"");
  const auto s0 = scenario(base), s30 = scenario(with_overhead);
  CHECK(s30.policy.switch_overhead_s == 30);
  const auto free = rl::simulate_run(s0, small_trace(s0), {});
  const auto charged = rl::simulate_run(s30, small_trace(s30), {});
  REQUIRE(free.steps.size() == 3);
  REQUIRE(charged.steps.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const int64_t step = free.steps[i].step;
    REQUIRE(step == static_cast<int64_t>(i) + 1);
    const auto l = rl::layouts_at(s0.policy, step);
    double expected = rl::weight_sync_seconds(s0, l.rollout, l.train);
    if (i == 1) expected += rl::train_reshard_seconds(s0, s0.policy.train, l.train);
    if (i == 2) expected += rl::rollout_relaunch_seconds(s0, l.rollout);
    INFO("step " << step);
    CHECK(free.steps[i].stages.weight_sync == doctest::Approx(expected));
    CHECK(charged.steps[i].stages.weight_sync == doctest::Approx(expected + (i == 0 ? 0.0 : 30.0)));
  }
  CHECK(rl::train_switch_seconds(s0, s0.policy.train, s0.policy.train, 30) == 0);
  auto recompute_only = s0.policy.train;
  recompute_only.recompute = input::Recompute::full;
  CHECK(rl::train_switch_seconds(s0, s0.policy.train, recompute_only, 30) == 30);  // a restart, no reshard
  CHECK(rl::rollout_switch_seconds(s0, s0.policy.rollout, s0.policy.rollout, 30) == 0);
}

TEST_CASE("step: layout-aware assignment keeps samples on their node and dispatches faster") {
  const std::vector<std::string> base{"/steps=2", "/trace/generate/prompts_per_step=16", "/trace/generate/group_size=8",
                                      "/policy/dispatch=\"decentralized\""};
  auto aware_overrides = base;
  aware_overrides.push_back("/policy/balance_batch=\"layout-aware\"");
  const auto balanced_s = scenario(base), aware_s = scenario(aware_overrides);
  CHECK(aware_s.policy.batch_assignment == input::BatchAssignment::layout_aware);
  const auto balanced = rl::simulate_run(balanced_s, small_trace(balanced_s), {});
  const auto aware = rl::simulate_run(aware_s, small_trace(aware_s), {});
  REQUIRE(balanced.steps.size() == 2);
  REQUIRE(aware.steps.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(aware.steps[i].stages.rollout == balanced.steps[i].stages.rollout);
    CHECK(aware.steps[i].stages.dispatch < balanced.steps[i].stages.dispatch);
  }
}

TEST_CASE("step: layout-aware ranks stay on the producer's node within the slack") {
  // Two nodes of two ranks; every sample made on node 0: the first ones stay there until the
  // node's ranks reach the slack over the mean load, the rest go to node 1.
  const std::vector<int64_t> tokens{100, 100, 100, 100, 100, 100, 100, 100};
  const std::vector<int64_t> sample_node(tokens.size(), 0), rank_node{0, 0, 1, 1};
  const auto rank = rl::layout_aware_ranks(tokens, sample_node, rank_node, 0.5);
  std::vector<int64_t> load(4, 0);
  for (size_t i = 0; i < tokens.size(); ++i) load[static_cast<size_t>(rank[i])] += tokens[i];
  CHECK(load[0] == 300);  // 1.5 x the mean of 200
  CHECK(load[1] == 300);
  CHECK(load[2] + load[3] == 200);
  // With no slack it is the balanced assignment.
  CHECK(rl::imbalance(tokens, rl::layout_aware_ranks(tokens, sample_node, rank_node, 0), 4) == doctest::Approx(1.0));
}

TEST_CASE("step: the layout-aware busiest rank stays within max((1 + slack) x mean, mean + longest)") {
  uint64_t state = 7;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t ranks = 1 + static_cast<int64_t>(next() % 16), nodes = 1 + static_cast<int64_t>(next() % 4);
    std::vector<int64_t> tokens, sample_node, rank_node;
    for (int64_t r = 0; r < ranks; ++r) rank_node.push_back(static_cast<int64_t>(next()) % nodes);
    const size_t samples = 1 + next() % 200;
    for (size_t i = 0; i < samples; ++i) {
      tokens.push_back(1 + static_cast<int64_t>(next() % 32768));
      sample_node.push_back(static_cast<int64_t>(next()) % nodes);
    }
    const auto rank = rl::layout_aware_ranks(tokens, sample_node, rank_node, rl::kLayoutAwareSlack);
    std::vector<double> load(static_cast<size_t>(ranks), 0);
    double total = 0, longest = 0;
    for (size_t i = 0; i < samples; ++i) {
      load[static_cast<size_t>(rank[i])] += static_cast<double>(tokens[i]);
      total += static_cast<double>(tokens[i]);
      longest = std::max(longest, static_cast<double>(tokens[i]));
    }
    const double mean = total / static_cast<double>(ranks);
    CHECK(*std::max_element(load.begin(), load.end()) <= std::max((1 + rl::kLayoutAwareSlack) * mean, mean + longest) + 1e-6);
  }
}

TEST_CASE("step: a preparation pass whose layout does not fit is an OOM of its stage") {
  const auto s = test::preset_scenario("earl-testbed", {"/steps=1", "/policy/ref_logprob={\"tp\": 1, \"dp\": 128}"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.oom_events.size() == 1);
  const auto& oom = r.oom_events.front();
  CHECK(oom.stage == "ref_logprob");
  CHECK(oom.needed_gib > oom.available_gib);
  // 72B parameters in bf16 on one GPU: the weights alone are about 135 GiB.
  CHECK(oom.contributors_gib.front().first == "weights");
  CHECK(oom.contributors_gib.front().second == doctest::Approx(2.0 * 72.7e9 / (1 << 30)).epsilon(0.02));
  // The same pass sharded over the training layout fits.
  const auto fits = rl::forward_memory_at(s, s.model, rl::pass_layout(s.policy.train, std::nullopt), 32768);
  CHECK(fits.fits());
}

TEST_CASE("step: a pass in its own layout drops the training layout's uneven stages, shard group and Ulysses") {
  input::TrainLayout train;
  train.tp = 2;
  train.pp = 4;
  train.dp = 4;
  train.zero = 1;
  train.shard_group = 4;
  train.first_stage_layers = 6;
  train.ulysses = true;
  input::InferenceLayout pass;
  pass.tp = 2;
  pass.pp = 2;
  pass.dp = 6;
  const auto l = rl::pass_layout(train, pass);
  CHECK(l.pp == 2);
  CHECK(l.first_stage_layers == 0);
  CHECK(!l.uneven_stages());
  CHECK(l.shard_group == 0);  // 4 does not divide dp = 6
  CHECK(!l.ulysses);
  CHECK(l.stage_split_problem(36).empty());
  // Without a layout of its own the pass runs in the training layout, as it is.
  const auto same = rl::pass_layout(train, std::nullopt);
  CHECK(same.first_stage_layers == 6);
  CHECK(same.shard_group == 4);
  // A scenario training in uneven stages, its old log-probs in another layout, simulates.
  const auto s = scenario({"/steps=1", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4",
                           "/policy/train/pp=2", "/policy/train/dp=4", "/policy/train/first_stage_layers=20",
                           "/policy/old_logprob={\"tp\": 2, \"dp\": 8}"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() == 1);
  CHECK(r.oom_events.empty());
  CHECK(r.steps[0].stages.old_logprob > 0);
}

TEST_CASE("step: dynamic batching charges each rank its share, down to one sequence each") {
  const auto s = scenario({});
  input::TrainLayout l;
  l.max_tokens_per_gpu = 16384;  // 8 sequences of 2,048 tokens per micro-batch at most
  auto per_rank = [&](int64_t dp) {
    l.dp = dp;
    const auto r = rl::train_request(l, 512, 2048, s.workload);
    return std::pair<int64_t, int64_t>{r.global_batch / dp, r.layout.micro_batch};
  };
  // 512 sequences: 32 ranks take 16 each in two micro-batches of 8; 128 take 4 in one micro-batch
  // of 4 (not a full one of 8); 512 ranks take one; 1,024 ranks still one (the floor).
  CHECK(per_rank(32) == std::pair<int64_t, int64_t>{16, 8});
  CHECK(per_rank(128) == std::pair<int64_t, int64_t>{4, 4});
  CHECK(per_rank(512) == std::pair<int64_t, int64_t>{1, 1});
  CHECK(per_rank(1024) == std::pair<int64_t, int64_t>{1, 1});
  // Uneven shares are balanced over the micro-batches the budget needs: 20 sequences a rank in
  // ceil(20 / 8) = 3 micro-batches of 7.
  CHECK(per_rank(512 / 20 + 1) == std::pair<int64_t, int64_t>{21, 7});
  // The update time falls as ranks are added, until each holds one sequence.
  const auto m = test::preset_model("qwen3-8b");
  auto c = test::own_cluster(16);
  auto seconds = [&](int64_t dp) {
    l.dp = dp;
    return model::estimate_train(m, c, rl::train_request(l, 512, 2048, s.workload)).iteration_s;
  };
  CHECK(seconds(64) < seconds(32));
  CHECK(seconds(128) < seconds(64));
}

TEST_CASE("step: trajectories cut at the context limit count as simulated, not as the trace made them") {
  const auto s = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                           "/trace/generate/group_size=4", "/workload/max_response_tokens=900",
                           "/workload/max_context_tokens=3000"});
  const auto trace = small_trace(s);
  const auto r = rl::simulate_run(s, trace, {});
  REQUIRE(r.steps.size() == 1);
  int64_t whole = 0, cut = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto t = trace.trajectory(i);
    if (t.info.step != r.steps[0].step) continue;
    whole += t.context_tokens();
    cut += std::min<int64_t>(t.context_tokens(), 3000);
  }
  REQUIRE(whole > cut);  // the trace has contexts beyond the limit
  CHECK(r.steps[0].tokens <= cut);
  CHECK(r.steps[0].tokens_per_s == doctest::Approx(static_cast<double>(r.steps[0].tokens) / r.steps[0].time_s));
}

TEST_CASE("step: in asynchronous runs each step's window holds its own activities") {
  const auto s = test::preset_scenario("disaggregated-async", {"/steps=4"});
  input::Diagnostics diag;
  auto t = rl::load_scenario_trace(s, "", diag);
  REQUIRE(t);
  const auto r = rl::simulate_run(s, *t, {});
  REQUIRE(r.steps.size() == 4);
  double sum_time = 0;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto& st = r.steps[i];
    sum_time += st.time_s;
    for (const auto& a : r.activities) {
      if (a.step != st.step) continue;
      CHECK(a.start_s >= st.start_s - 1e-9);
      CHECK(a.end_s <= st.end_s + 1e-9);
    }
  }
  CHECK(sum_time == doctest::Approx(r.total_time_s));
  CHECK(r.steps.back().end_s == doctest::Approx(r.total_time_s));
}

TEST_CASE("step: a KV cache too small for the batch is a preemption storm, reported as a warning") {
  // Without prefix caching a preempted request keeps none of its KV: all of it is computed again.
  const auto tight =
      scenario({"/steps=1", "/workload/engine/gpu_memory_utilization=0.16", "/workload/engine/prefix_caching=false"});
  const auto r = rl::simulate_run(tight, small_trace(tight), {});
  REQUIRE(r.steps.size() == 1);
  CHECK(r.steps[0].preemptions > 0);
  CHECK(static_cast<double>(r.steps[0].recomputed_tokens) > rl::kPreemptionStormShare * static_cast<double>(r.steps[0].tokens));
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].kind == "kv_exhaustion");
  CHECK(r.warnings[0].step == r.steps[0].step);
  // With room to spare: no preemption, no warning.
  const auto roomy = scenario({"/steps=1"});
  const auto ok = rl::simulate_run(roomy, small_trace(roomy), {});
  CHECK(ok.steps[0].preemptions == 0);
  CHECK(ok.warnings.empty());
}

TEST_CASE("step: with the rollout's log-probabilities the trainer's old_logprob pass does not run") {
  const auto with = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                              "/trace/generate/group_size=4"});
  const auto without = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                                 "/trace/generate/group_size=4", "/workload/use_rollout_log_probs=true"});
  const auto a = rl::simulate_run(with, small_trace(with), {});
  const auto b = rl::simulate_run(without, small_trace(without), {});
  CHECK(a.steps[0].stages.old_logprob > 0);
  CHECK(b.steps[0].stages.old_logprob == 0);
  CHECK(b.steps[0].stages.ref_logprob == doctest::Approx(a.steps[0].stages.ref_logprob));
  CHECK(b.total_time_s < a.total_time_s);
  // NeMo RL's force_on_policy_ratio (one optimizer step a step): the training pass's own
  // log-probabilities are the old ones, so the pass does not run either.
  const auto one_step = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                                  "/trace/generate/group_size=4", "/workload/mini_batches=1"});
  const auto forced = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                                "/trace/generate/group_size=4", "/workload/mini_batches=1", "/workload/force_on_policy_ratio=true"});
  const auto c = rl::simulate_run(one_step, small_trace(one_step), {});
  const auto d = rl::simulate_run(forced, small_trace(forced), {});
  CHECK(c.steps[0].stages.old_logprob > 0);
  CHECK(d.steps[0].stages.old_logprob == 0);
  CHECK(d.steps[0].stages.train == doctest::Approx(c.steps[0].stages.train));
}

TEST_CASE("step: a scenario's generated trace takes generator options beside (or instead of) a preset") {
  const auto s = scenario({"/steps=1", "/trace={\"generate\": {\"steps\": 2, \"prompts_per_step\": 16, \"group_size\": 4, "
                           "\"options\": {\"response-mean\": 600, \"response-limit\": 1200, \"length-sigma\": 0.1, "
                           "\"tail-weight\": 0, \"turns-max\": 1, \"turns-mean\": 1, \"tool\": \"none\"}}}"});
  const auto t = small_trace(s);
  REQUIRE(t.size() == 2 * 16 * 4);
  double response = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto v = t.trajectory(i);
    CHECK(v.response_tokens() <= 1200);
    CHECK(v.turns.size() == 1);
    response += static_cast<double>(v.response_tokens());
  }
  CHECK(response / static_cast<double>(t.size()) == doctest::Approx(600).epsilon(0.1));
}

TEST_CASE("step: a scenario's \"tool\" options replace the preset's tools, as the command line's --tool flags do") {
  const auto s = scenario({"/steps=1", "/trace={\"generate\": {\"preset\": \"search-agent\", \"steps\": 1, "
                           "\"prompts_per_step\": 4, \"group_size\": 2, \"options\": {\"tool\": [\"grep: "
                           "dist=lognormal mean=0.2s sigma=0.3 obs_tokens=50\", \"read: dist=lognormal mean=0.4s sigma=0.3 "
                           "obs_tokens=80\"]}}}"});
  const auto t = small_trace(s);
  REQUIRE(t.size() == 4 * 2);
  auto names = t.tool_names();  // in the order of first use
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"grep", "read"});
  int64_t calls = 0;
  for (size_t i = 0; i < t.size(); ++i) calls += t.trajectory(i).tool_calls();
  CHECK(calls > 0);
}

TEST_CASE("step: each tool pool reports its actions' completion and queueing, and its resources (ARL-Tangram)") {
  auto run = [](const char* tool_policy) {
    const auto s = scenario({"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/trace/generate/prompts_per_step=8",
                             "/trace/generate/group_size=4", std::string("/policy/tool_policy=\"") + tool_policy + "\"",
                             "/cluster/pools/0/price_usd_per_unit_hour=0.05"});
    const auto t = small_trace(s);
    auto r = rl::simulate_run(s, t, {});
    REQUIRE(r.steps.size() == 1);
    REQUIRE(r.pools.size() == 1);
    // Every call the step's trajectories make, but those cut off by the turn or context limit.
    int64_t calls = 0;
    for (size_t i = 0; i < t.size(); ++i)
      if (t.trajectory(i).info.step == r.steps[0].step) calls += t.trajectory(i).tool_calls();
    CHECK(r.pools[0].act_s.size() > 0);
    CHECK(static_cast<int64_t>(r.pools[0].act_s.size()) <= calls);
    for (size_t i = 0; i < r.pools[0].act_s.size(); ++i) CHECK(r.pools[0].act_s[i] >= r.pools[0].queue_s[i]);
    CHECK(r.pools[0].busy_resource_s <= r.pools[0].provisioned_resource_s + 1e-6);
    return r;
  };
  const auto pooled = run("pooled"), bound = run("static");
  // A statically bound sandbox is held for its trajectory's whole life, idle while the model
  // generates; pooled units are held only for an action.
  CHECK(bound.pools[0].busy_resource_s > pooled.pools[0].busy_resource_s);
  const auto summary = report::pool_summaries(pooled);
  REQUIRE(summary.size() == 1);
  CHECK(summary[0].act_s.count == static_cast<int64_t>(pooled.pools[0].act_s.size()));
  CHECK(summary[0].cost_usd == doctest::Approx(pooled.pools[0].provisioned_resource_s / 3600 * 0.05));
}

TEST_CASE("step: a sampled trace's whole run is projected from its simulated steps, interpolated between them") {
  // Six steps, every second simulated (1, 3, 5): steps 2 and 4 take the mean of their neighbours,
  // step 6 the last simulated one's time.
  const auto s = scenario({"/steps=3", "/trace/generate/steps=6", "/trace/generate/every=2",
                           "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() == 3);
  CHECK(r.steps[0].step == 1);
  CHECK(r.steps[2].step == 5);
  const double t1 = r.steps[0].time_s, t3 = r.steps[1].time_s, t5 = r.steps[2].time_s;
  const double whole = t1 + (t1 + t3) / 2 + t3 + (t3 + t5) / 2 + t5 + t5;
  CHECK(r.steps_total == 6);
  CHECK(r.projected_total_time_s == test::near(r.total_time_s * whole / (t1 + t3 + t5)));
  CHECK(r.projected_gpu_hours == test::near(r.gpu_hours * whole / (t1 + t3 + t5)));
  const std::string json = report::summary_json(r);
  CHECK(json.find("\"steps_total\": 6") != std::string::npos);
  CHECK(json.find("\"steps_simulated\": 3") != std::string::npos);
  CHECK(report::run_table(r).find("3 of 6 steps simulated") != std::string::npos);
  // Every step simulated: nothing to project.
  const auto all = scenario({"/steps=3", "/trace/generate/steps=3", "/trace/generate/every=1", "/trace/generate/prompts_per_step=8",
                             "/trace/generate/group_size=4"});
  const auto whole_run = rl::simulate_run(all, small_trace(all), {});
  CHECK(whole_run.steps_total == 0);
  CHECK(report::summary_json(whole_run).find("\"projected\": null") != std::string::npos);
}

TEST_CASE("step: a run's memory is its trace and the rollout records of its largest step") {
  const auto s = scenario({"/steps=3", "/trace/generate/steps=3", "/trace/generate/every=1",
                           "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  const auto t = small_trace(s);
  const rl::RunMemory m = rl::run_memory(s, t);
  CHECK(m.trace_bytes == static_cast<double>(t.storage_bytes()));
  CHECK(m.trajectories == 8 * 4);
  int64_t turns = 0, calls = 0;
  for (size_t i = 0; i < t.size(); ++i)
    if (t.trajectory(i).info.step == m.step) {
      turns += static_cast<int64_t>(t.trajectory(i).turns.size());
      calls += t.trajectory(i).tool_calls();
    }
  CHECK(m.turns == turns);
  const auto pools = static_cast<int64_t>(s.cluster.pools.size());
  const int64_t engines = rl::rollout_engines(s, s.policy.rollout);
  CHECK(m.bytes == test::near(m.trace_bytes + m.cluster_bytes + rl::rollout_memory_bytes(m.trajectories, 0, 0, pools, engines, calls)));
  // With a timeline, a record per tool call instead of the pools' times.
  CHECK(rl::run_memory(s, t, true).bytes ==
        test::near(m.trace_bytes + m.cluster_bytes + rl::rollout_memory_bytes(m.trajectories, 0, calls, pools, engines)));
  // No other step needs more.
  for (int64_t step = 1; step <= 3; ++step) {
    int64_t n = 0, c = 0;
    for (size_t i = 0; i < t.size(); ++i)
      if (t.trajectory(i).info.step == step) {
        ++n;
        c += t.trajectory(i).tool_calls();
      }
    CHECK(rl::rollout_memory_bytes(n, 0, 0, pools, engines, c) <= m.bytes - m.trace_bytes - m.cluster_bytes);
  }
  // Generating continuously, the rollout holds the trajectories of `staleness` steps.
  const auto cont = scenario({"/steps=3", "/trace/generate/steps=3", "/trace/generate/every=1",
                              "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4",
                              "/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=8", "/policy/train/dp=4",
                              "/policy/sync={\"mode\": \"async\", \"staleness\": 3, \"continuous\": true}"});
  const rl::RunMemory mc = rl::run_memory(cont, t);
  CHECK(mc.trajectories == 3 * 8 * 4);
  CHECK(mc.turns == 3 * turns);
  // Each turn record, call and trajectory adds its records.
  CHECK(rl::rollout_memory_bytes(2, 10, 4, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 11, 4, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 5, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 4, 1, 2) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 4, 1, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  // A call's two times take less than its record.
  CHECK(rl::rollout_memory_bytes(1, 10, 0, 1, 1, 4) < rl::rollout_memory_bytes(1, 10, 4, 1, 1));
}

TEST_CASE("step: a generated trace's memory is estimated before it is drawn, from the storage the generator lays out") {
  const auto s = scenario({"/steps=3", "/trace/generate/steps=3", "/trace/generate/every=1",
                           "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  rl::RunOptions o;
  o.timeline = false;
  const auto expected = rl::expected_run_memory(s, &o);
  REQUIRE(expected);
  input::Diagnostics diag;
  const auto t = rl::load_scenario_trace(s, "", diag, &o);
  REQUIRE(t);
  const rl::RunMemory m = rl::run_memory(s, *t);
  // The generator lays out turns at half as many again as the mean: never below what the drawn
  // trace takes, and within a few times of it.
  CHECK(expected->trajectories == m.trajectories);
  CHECK(expected->trace_bytes >= m.trace_bytes);
  CHECK(expected->trace_bytes < 4 * m.trace_bytes);
  CHECK(expected->bytes == expected->trace_bytes);
  // Fewer steps simulated, less to hold.
  rl::RunOptions one = o;
  one.max_steps = 1;
  CHECK(rl::expected_run_memory(s, &one)->trace_bytes < expected->trace_bytes);
  // A trace file is read before it is measured: no estimate.
  auto file = s;
  file.trace_path = "some.jsonl";
  CHECK_FALSE(rl::expected_run_memory(file, &o));
}

TEST_CASE("step: a run of later steps generates only those, and projects the generator's whole run from them") {
  const auto s = scenario({"/steps=3", "/trace/generate/steps=6", "/trace/generate/every=2",
                           "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"});
  rl::RunOptions o;
  o.first_step = 3;
  input::Diagnostics diag;
  const auto later = rl::load_scenario_trace(s, "", diag, &o);
  REQUIRE(later);
  REQUIRE(later->size() == 2u * 8 * 4);  // steps 3 and 5 only
  CHECK(later->trajectory(0).info.step == 3);
  // The same trajectories as in the whole trace.
  const auto all = small_trace(s);
  const auto first_of_3 = all.trajectory(8 * 4);
  REQUIRE(first_of_3.info.step == 3);
  CHECK(later->trajectory(0).info == first_of_3.info);
  CHECK(later->trajectory(0).turns.size() == first_of_3.turns.size());
  const auto r = rl::simulate_run(s, *later, o);
  REQUIRE(r.steps.size() == 2);
  // Steps 1 and 2 take step 3's time, 4 the mean of 3 and 5, 6 step 5's.
  const double t3 = r.steps[0].time_s, t5 = r.steps[1].time_s;
  const double whole = 3 * t3 + (t3 + t5) / 2 + 2 * t5;
  CHECK(r.steps_total == 6);
  CHECK(r.projected_total_time_s == test::near(r.total_time_s * whole / (t3 + t5)));
}

TEST_CASE("step: with a record sink each step's records arrive as it is placed, the same records as a held run") {
  // Asynchronous, so that steps overlap; pipeline detail on, so that every kind of record occurs.
  const auto s = scenario({"/steps=4", "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4",
                           "/trace/generate/every=1", "/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=8",
                           "/policy/train/dp=4", "/policy/sync={\"mode\": \"async\", \"staleness\": 1}"});
  const auto t = small_trace(s);
  rl::RunOptions held;
  held.detail_pipeline = true;
  const auto whole = rl::simulate_run(s, t, held);
  struct Collect final : rl::RecordSink {
    std::vector<exec::ActivityRecord> records;
    std::vector<rl::CounterSample> counters;
    std::vector<int64_t> steps;
    void step_placed(const rl::RunResult&, const std::vector<exec::ActivityRecord>& r,
                     const std::vector<rl::CounterSample>& c) override {
      REQUIRE_FALSE(r.empty());
      for (const auto& a : r) CHECK(a.step == r.front().step);  // one step's records at a time
      steps.push_back(r.front().step);
      records.insert(records.end(), r.begin(), r.end());
      counters.insert(counters.end(), c.begin(), c.end());
    }
  } sink;
  rl::RunOptions streamed = held;
  streamed.sink = &sink;
  const auto r = rl::simulate_run(s, t, streamed);
  CHECK(r.activities.empty());
  CHECK(r.counters.empty());
  CHECK(sink.steps == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(r.total_time_s == whole.total_time_s);
  // The same records, in another order (the held run keeps every rollout's parts first).
  auto key = [](const exec::ActivityRecord& a) {
    return std::make_tuple(a.step, static_cast<int>(a.kind), a.start_s, a.end_s, a.index, a.a, a.b, a.id,
                           static_cast<int>(a.stage), a.part);
  };
  auto sorted = [&](std::vector<exec::ActivityRecord> v) {
    std::sort(v.begin(), v.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
    return v;
  };
  const auto a = sorted(whole.activities), b = sorted(sink.records);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(key(a[i]) == key(b[i]));
  CHECK(sink.counters.size() == whole.counters.size());
  std::vector<bool> kinds(4, false);
  for (const auto& x : b) kinds[static_cast<size_t>(x.kind)] = true;
  CHECK(kinds == std::vector<bool>{true, true, true, true});
}
