#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>

#include "sim/model/transformer.h"
#include "sim/report/summary.h"
#include "sim/report/table.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

input::ScenarioSpec scenario(const std::vector<std::string>& overrides) { return test::preset_scenario("default", overrides); }

trace::Trace small_trace(const input::ScenarioSpec& s) {
  input::Diagnostics diag;
  auto t = rl::load_scenario_trace(s, "", diag);
  REQUIRE(t);
  return *t;
}

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

TEST_CASE("step: colocated weight sync sends every rollout GPU its engine's shard, however many GPUs train") {
  auto s = test::preset_scenario("default", {"/cluster/nodes=8", "/policy/train/dp=32",
                                            "/policy/weight_sync={\"method\": \"allgather-swap\"}"});
  s.cluster.gpu.host_link.bandwidth_bytes_per_s = 1e18;  // the training state's swap takes no time here
  const double shard = 2.0 * model::count_params(s.model).total / 2;  // bf16 over the rollout's tp 2
  input::TrainLayout t = s.policy.train;
  t.zero = 3;
  for (int64_t dp : {8, 32}) {
    t.dp = dp;
    // Under ZeRO-3 a rank holds 1 / (tp x dp) of the weights: it must receive nearly all of its
    // rollout shard, at no more than the fastest link's rate.
    CHECK(rl::weight_sync_seconds(s, s.policy.rollout, t) > (1 - 1.0 / dp) * shard / s.cluster.gpu_link.bandwidth_bytes_per_s);
  }
}

TEST_CASE("step: a training rank that holds its engine's whole shard gathers nothing (one GPU, or dp replicas)") {
  auto s = test::preset_scenario("default", {"/cluster/nodes=1", "/cluster/gpus_per_node=1", "/policy/train/dp=1",
                                            "/policy/train/tp=1", "/policy/train/sequence_parallel=false",
                                            "/policy/rollout/tp=1",
                                            "/policy/weight_sync={\"method\": \"allgather-swap\"}"});
  CHECK(rl::refit_shape(s, s.policy.rollout, s.policy.train).gather_ranks == 1);
  const double one = rl::weight_sync_seconds(s, s.policy.rollout, s.policy.train);
  CHECK(std::isfinite(one));
  CHECK(one > 0);  // the training state still goes to host memory and back
  // dp replicas under ZeRO-1 each hold the whole model: still nothing to gather.
  input::TrainLayout t = s.policy.train;
  t.dp = 8;
  t.zero = 1;
  CHECK(rl::refit_shape(s, s.policy.rollout, t).gather_ranks == 1);
  // Training tp 2 under a tp-1 engine: each rank holds half of what its engine needs.
  t.tp = 2;
  CHECK(rl::refit_shape(s, s.policy.rollout, t).gather_ranks == 2);
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

TEST_CASE("step: colocated engines asleep at level 1 move their weights to host memory and back; level 2 and resident engines do not") {
  const auto s = scenario({"/policy/placement=\"colocated\""});
  REQUIRE(s.workload.engine.sleep_level == 1);
  const auto& r = s.policy.rollout;
  // Every rollout GPU's bf16 shard, out after the rollout and back before the next.
  const double shard = 2.0 * model::count_params(s.model).total / static_cast<double>(r.tp * r.pp);
  const double expected = 2 * (shard / s.cluster.gpu.host_link.achieved() + s.cluster.gpu.host_copy_overhead.seconds());
  CHECK(rl::engine_sleep_wake_seconds(s, r) == test::near(expected));
  CHECK(rl::weight_sync_seconds(s, r, s.policy.train) ==
        test::near(rl::refit_seconds(s, r, s.policy.train) + expected));
  const auto discard = scenario({"/policy/placement=\"colocated\"", "/workload/engine/sleep_level=2"});
  CHECK(rl::engine_sleep_wake_seconds(discard, r) == 0);
  // A resident engine costs no transfer but keeps its share of every GPU from training.
  const auto resident = scenario({"/policy/placement=\"colocated\"", "/workload/engine/sleep_level=0"});
  CHECK(rl::engine_sleep_wake_seconds(resident, r) == 0);
  const auto& l = s.policy.train;
  const double all = rl::train_memory_at(s, l, 64, 4096).capacity_bytes;
  CHECK(rl::train_memory_at(resident, l, 64, 4096).capacity_bytes ==
        test::near(all * (1 - s.workload.engine.gpu_memory_utilization)));
  CHECK(rl::forward_memory_at(resident, s.model, l, 4096).capacity_bytes ==
        test::near(all * (1 - s.workload.engine.gpu_memory_utilization)));
  // Disaggregated engines never sleep.
  const auto apart = test::preset_scenario("disaggregated-async", {});
  CHECK(rl::engine_sleep_wake_seconds(apart, apart.policy.rollout) == 0);
}

TEST_CASE("step: a training state swapped to-cpu goes out with the refit (weights pinned, Adam's moments into new pageable memory, gradients freed) and comes back before the first pass and the update") {
  const std::vector<std::string> small{"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/policy/placement=\"colocated\"",
                                       "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"};
  auto with = [&](const std::string& state) {
    auto o = small;
    o.push_back("/policy/weight_sync={\"state\": \"" + state + "\"}");
    return scenario(o);
  };
  const auto pinned = with("pinned"), cpu = with("to-cpu");
  const auto& r = pinned.policy.rollout;
  const auto& l = pinned.policy.train;
  REQUIRE(rl::refit_shape(pinned, r, l).method == input::WeightSync::allgather_swap);
  const auto& gpu = pinned.cluster.gpu;
  REQUIRE(gpu.host_pageable_out_bytes_per_s > 0);
  const model::TrainingState state = model::training_state(pinned.model, l, pinned.workload.dtype);
  // bf16 training: of the optimizer's 12 bytes a parameter, Adam's two fp32 moments are 8.
  CHECK(state.moments == test::near(state.optimizer * 8.0 / 12.0));
  const double copy = gpu.host_copy_overhead.seconds(), link = gpu.host_link.achieved();
  // The pinned swap: gradients and optimizer states out and back over the host link.
  const double gather = rl::refit_seconds(pinned, r, l) - 2 * ((state.gradients + state.optimizer) / link + copy);
  CHECK(gather >= 0);
  const double weights = state.weights / link + copy;
  CHECK(rl::refit_seconds(cpu, r, l) ==
        test::near(gather + weights + state.moments / gpu.host_pageable_out_bytes_per_s + copy));
  const rl::StateSwapIn in = rl::state_swap_in(cpu, l);
  CHECK(in.weights_s == test::near(weights));
  CHECK(in.optimizer_s == test::near(state.moments / gpu.host_pageable_in_bytes_per_s + copy));
  const rl::StateSwapIn none = rl::state_swap_in(pinned, l);
  CHECK(none.weights_s == 0);
  CHECK(none.optimizer_s == 0);
  // The way back lands in the stages that need it: the weights before the old log-probs, the
  // moments before the update; the rollout is the same.
  const auto a = rl::simulate_run(pinned, small_trace(pinned), {}), b = rl::simulate_run(cpu, small_trace(cpu), {});
  REQUIRE(a.steps.size() == 1);
  REQUIRE(b.steps.size() == 1);
  const auto &x = a.steps[0].stages, &y = b.steps[0].stages;
  CHECK(y.rollout == test::near(x.rollout));
  CHECK(y.old_logprob - x.old_logprob == test::near(in.weights_s));
  CHECK(y.ref_logprob == test::near(x.ref_logprob));
  CHECK(y.train - x.train == test::near(in.optimizer_s));
  CHECK(y.weight_sync - x.weight_sync == test::near(rl::refit_seconds(cpu, r, l) - rl::refit_seconds(pinned, r, l)));
  // Without a forward pass before training (log-probs from the rollout, no reference), the
  // weights come back with the training; a critic's pass never takes them.
  auto no_pass = small;
  no_pass.insert(no_pass.end(), {"/workload/use_rollout_log_probs=true", "/workload/use_reference=false",
                                 "/policy/weight_sync={\"state\": \"to-cpu\"}"});
  const auto np = scenario(no_pass);
  auto no_pass_pinned = no_pass;
  no_pass_pinned.back() = "/policy/weight_sync={\"state\": \"pinned\"}";
  const auto npp = scenario(no_pass_pinned);
  const auto c = rl::simulate_run(npp, small_trace(npp), {}), e = rl::simulate_run(np, small_trace(np), {});
  REQUIRE(c.steps.size() == 1);
  REQUIRE(e.steps.size() == 1);
  CHECK(e.steps[0].stages.old_logprob == 0);
  CHECK(e.steps[0].stages.train - c.steps[0].stages.train == test::near(in.weights_s + in.optimizer_s));
  // A layout that offloads its optimizer keeps the moments in host memory: nothing of them moves.
  auto offloaded = cpu;
  offloaded.policy.train.offload_optimizer = true;
  CHECK(rl::state_swap_in(offloaded, offloaded.policy.train).optimizer_s == 0);
  CHECK(rl::refit_seconds(offloaded, r, offloaded.policy.train) == test::near(gather + weights));
  // Nor does the pinned swap move an offloaded optimizer again: the gradients alone go out and back.
  auto offloaded_pinned = pinned;
  offloaded_pinned.policy.train.offload_optimizer = true;
  CHECK(rl::refit_seconds(offloaded_pinned, r, offloaded_pinned.policy.train) ==
        test::near(gather + 2 * (state.gradients / link + copy)));
  // The offload method moves the same state, and loads the engines' weights besides.
  auto offload = cpu;
  offload.policy.weight_sync = input::WeightSync::offload;
  const double shard = rl::refit_shape(offload, r, l).rollout_shard_bytes;
  CHECK(rl::refit_seconds(offload, r, l) ==
        test::near(weights + state.moments / gpu.host_pageable_out_bytes_per_s + copy + shard / link + copy));
  CHECK(rl::state_swap_in(offload, l).weights_s == test::near(weights));
  // During the rollout the node's host memory holds its ranks' swapped state (the engines are
  // awake): a host too small for it is out of memory there, whichever way the state moves.
  auto small_host = pinned;
  small_host.cluster.host_memory_bytes = 8 * (state.gradients + state.optimizer) - 1;
  const auto host = rl::host_memory_at(small_host, r, l);
  REQUIRE(host);
  CHECK(host->get("swapped training state") == test::near(8 * (state.gradients + state.optimizer)));
  CHECK(!host->fits());
  auto small_cpu = cpu;
  small_cpu.cluster.host_memory_bytes = small_host.cluster.host_memory_bytes;
  CHECK(rl::host_memory_during_rollout(*host));
  // A state swapped to-cpu stays in host memory into training (the moments until the update),
  // beside the engines asleep: both in one phase.
  const auto host_cpu = rl::host_memory_at(small_cpu, r, l);
  CHECK(host_cpu->get("swapped training state") == test::near(8 * (state.weights + state.moments)));
  CHECK(host_cpu->get("sleeping engines' weights") > 0);
  CHECK(!rl::host_memory_during_rollout(*host_cpu));
  small_cpu.cluster.host_memory_bytes = host_cpu->total() - 1;
  CHECK(!rl::host_memory_at(small_cpu, r, l)->fits());
}

TEST_CASE("step: reference weights kept in host memory are swapped in for the reference pass, three copies of a rank's state dict") {
  const std::vector<std::string> small{"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/policy/placement=\"colocated\"",
                                       "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=4"};
  auto with = [&](const std::string& weights, std::vector<std::string> more = {}) {
    auto o = small;
    o.push_back("/policy/reference_weights=\"" + weights + "\"");
    o.insert(o.end(), more.begin(), more.end());
    return scenario(o);
  };
  const auto resident = with("resident"), swapped = with("swapped");
  const auto& l = swapped.policy.train;
  REQUIRE(l.zero < 3);
  const auto& gpu = swapped.cluster.gpu;
  const double copy = gpu.host_copy_overhead.seconds(), link = gpu.host_link.achieved();
  // Below ZeRO-3 a rank's state dict is its bf16 weights: out, the reference's in, and back.
  const double weights = model::training_state(swapped.model, l, swapped.workload.dtype).weights;
  CHECK(rl::reference_swap_bytes(swapped, l) == test::near(weights));  // the pass in the training layout
  CHECK(rl::reference_swap_seconds(swapped, l) == test::near(3 * (weights / link + copy)));
  CHECK(rl::reference_swap_seconds(resident, l) == 0);
  // FSDP keeps its parameter shard in fp32: twice the bf16 shard.
  auto fsdp = swapped;
  fsdp.policy.train.zero = 3;
  const double shard = model::training_state(fsdp.model, fsdp.policy.train, fsdp.workload.dtype).weights;
  CHECK(rl::reference_swap_bytes(fsdp, fsdp.policy.train) == test::near(2 * shard));
  // Without a reference model nothing moves.
  const auto none = with("swapped", {"/workload/use_reference=false"});
  CHECK(rl::reference_swap_seconds(none, none.policy.train) == 0);
  // The swap lands in the reference pass alone.
  const auto a = rl::simulate_run(resident, small_trace(resident), {}), b = rl::simulate_run(swapped, small_trace(swapped), {});
  REQUIRE(a.steps.size() == 1);
  REQUIRE(b.steps.size() == 1);
  const auto &x = a.steps[0].stages, &y = b.steps[0].stages;
  CHECK(y.ref_logprob - x.ref_logprob == test::near(rl::reference_swap_seconds(swapped, l)));
  CHECK(y.old_logprob == test::near(x.old_logprob));
  CHECK(y.train == test::near(x.train));
  CHECK(y.rollout == test::near(x.rollout));
  // The node's host memory holds its ranks' reference weights and the pinned blocks the policy's
  // wait in during the pass: a host with room for all but them is out of memory, and fits with
  // the reference resident.
  const auto host = rl::host_memory_at(swapped, swapped.policy.rollout, l);
  REQUIRE(host);
  REQUIRE(l.gpus() == 8);  // one node's ranks
  CHECK(host->get("reference weights") == test::near(2 * 8 * weights));
  const auto without = rl::host_memory_at(resident, resident.policy.rollout, l);
  CHECK(without->get("reference weights") == 0);
  auto small_host = swapped, small_resident = resident;
  small_host.cluster.host_memory_bytes = small_resident.cluster.host_memory_bytes = without->total() + 8 * weights;
  CHECK(!rl::host_memory_at(small_host, small_host.policy.rollout, l)->fits());
  CHECK(rl::host_memory_at(small_resident, small_resident.policy.rollout, l)->fits());
  // A reference pass in a layout of its own swaps what a rank of that layout holds: tp 4 (the
  // training's 2) halves it.
  REQUIRE(l.tp == 2);
  const auto own = with("swapped", {"/policy/ref_logprob={\"tp\": 4, \"dp\": 2}"});
  const auto own_resident = with("resident", {"/policy/ref_logprob={\"tp\": 4, \"dp\": 2}"});
  const input::TrainLayout pass = rl::pass_layout(own.policy.train, own.policy.ref_logprob);
  REQUIRE(pass.tp == 4);
  const double pass_weights = model::training_state(own.model, pass, own.workload.dtype).weights;
  CHECK(rl::reference_swap_bytes(own, pass) == test::near(pass_weights));
  CHECK(pass_weights == doctest::Approx(weights / 2).epsilon(0.01));  // the norms stay whole on every rank
  const auto c = rl::simulate_run(own_resident, small_trace(own_resident), {}), e = rl::simulate_run(own, small_trace(own), {});
  REQUIRE(c.steps.size() == 1);
  REQUIRE(e.steps.size() == 1);
  CHECK(e.steps[0].stages.ref_logprob - c.steps[0].stages.ref_logprob == test::near(rl::reference_swap_seconds(own, pass)));
  // Weights a layout keeps in host memory already are not swapped through the host link.
  auto offloaded = swapped;
  offloaded.policy.train.offload_params = true;
  CHECK(rl::reference_swap_bytes(offloaded, offloaded.policy.train) == 0);
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
  // Each turn record, call and trajectory adds its records.
  CHECK(rl::rollout_memory_bytes(2, 10, 4, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 11, 4, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 5, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 4, 1, 2) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  CHECK(rl::rollout_memory_bytes(1, 10, 4, 1, 1, 1) > rl::rollout_memory_bytes(1, 10, 4, 1, 1));
  // A call's two times take less than its record.
  CHECK(rl::rollout_memory_bytes(1, 10, 0, 1, 1, 4) < rl::rollout_memory_bytes(1, 10, 4, 1, 1));
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
