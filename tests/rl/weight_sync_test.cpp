// Weight sync and host memory: every rollout GPU receiving its engine's shard, the engines'
// sleep and wake, the training state's swap (pinned or to-cpu) and reference weights kept in host
// memory, with the node's host memory each needs.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/model/collective.h"
#include "sim/model/cost_model.h"
#include "sim/model/memory.h"
#include "sim/model/transformer.h"
#include "tests/rl/step_fixtures.h"

using namespace arlsim;
using test::scenario;
using test::small_trace;

TEST_CASE("step: colocated weight sync sends every rollout GPU its engine's shard, however many GPUs train") {
  auto s = test::preset_scenario("default", {"/cluster/nodes=8", "/policy/train/dp=32",
                                            "/policy/weight_sync={\"method\": \"allgather-swap\", \"gather\": \"engine-shard\"}"});
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
                                            "/policy/weight_sync={\"method\": \"allgather-swap\", \"gather\": \"engine-shard\"}"});
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

TEST_CASE("step: a full-model gather makes every parameter whole on every training rank, along tp and then the pipeline") {
  // Megatron tp 2 x pp 2 x dp 2 on two nodes of four: tp peers share a node, stages sit a node apart.
  const std::vector<std::string> o{"/cluster/nodes=2", "/cluster/gpus_per_node=4", "/policy/placement=\"colocated\"",
                                   "/policy/train={\"tp\": 2, \"pp\": 2, \"dp\": 2}", "/policy/rollout/tp=2"};
  auto shard_o = o, full_o = o;
  shard_o.push_back("/policy/weight_sync={\"method\": \"allgather-swap\", \"gather\": \"engine-shard\"}");
  full_o.push_back("/policy/weight_sync={\"method\": \"allgather-swap\", \"gather\": \"full-model\"}");
  const auto shard = scenario(shard_o), full = scenario(full_o);
  const auto& r = full.policy.rollout;
  const auto& l = full.policy.train;
  const double params = model::count_params(full.model).total;
  const rl::RefitShape f = rl::refit_shape(full, r, l);
  CHECK(f.full_model);
  CHECK_FALSE(rl::refit_shape(shard, r, l).full_model);
  REQUIRE(f.gathers.size() == 2);
  // First the stage's tensors whole across tp (about half the model in bf16: the two stages are
  // nearly even), then every stage's, broadcast by its owners: the whole model in bf16.
  CHECK(f.gathers[0].dim == rl::RefitGatherStep::Dim::tp);
  CHECK(f.gathers[0].ranks == 2);
  CHECK(f.gathers[0].ranks_per_node == 2);
  CHECK(f.gathers[0].output_bytes == doctest::Approx(params).epsilon(0.1));
  CHECK(f.gathers[1].dim == rl::RefitGatherStep::Dim::pp);
  CHECK(f.gathers[1].ranks == 2);
  CHECK(f.gathers[1].ranks_per_node == 1);  // tp x dp = 4 devices apart: the next node
  CHECK(f.gathers[1].output_bytes == test::near(2 * params));
  // Half the model crosses each rank's NIC at no more than its rate; the engine-shard gather
  // crosses NVLink only.
  CHECK(rl::full_model_gather_seconds(full, f) > params / full.cluster.nic_bandwidth_bytes_per_s);
  CHECK(rl::refit_seconds(full, r, l) - rl::refit_seconds(shard, r, l) > 0.5 * params / full.cluster.nic_bandwidth_bytes_per_s);
  // With context parallelism the pipeline's members sit tp x cp x dp apart: two nodes of eight.
  const auto cp = scenario({"/cluster/nodes=2", "/policy/placement=\"colocated\"",
                            "/policy/train={\"tp\": 2, \"cp\": 2, \"pp\": 2, \"dp\": 2}", "/policy/rollout/tp=2",
                            "/policy/weight_sync={\"gather\": \"full-model\"}"});
  const rl::RefitShape c = rl::refit_shape(cp, cp.policy.rollout, cp.policy.train);
  REQUIRE(c.gathers.size() == 2);
  CHECK(c.gathers[1].dim == rl::RefitGatherStep::Dim::pp);
  CHECK(c.gathers[1].ranks_per_node == 1);
}

TEST_CASE("step: unset, the refit gathers the whole model, but an offload refit loads its shards and gathers nothing") {
  const auto plain = scenario({"/policy/placement=\"colocated\""});
  CHECK(rl::refit_shape(plain, plain.policy.rollout, plain.policy.train).full_model);
  const auto offload = scenario({"/policy/placement=\"colocated\"", "/policy/weight_sync={\"method\": \"offload\"}"});
  const rl::RefitShape o = rl::refit_shape(offload, offload.policy.rollout, offload.policy.train);
  CHECK(o.method == input::WeightSync::offload);
  CHECK_FALSE(o.full_model);
  CHECK(o.engine_bytes == test::near(o.rollout_shard_bytes));
}

TEST_CASE("step: under ZeRO-3 the full-model gather gathers the shards in the layout's shard dtype, across its shard group first") {
  // FSDP over four ranks of tp 2 on two nodes of four: a shard group's members sit tp = 2 devices
  // apart, two on a node; each rank holds a quarter of its tp half, in fp32.
  const std::vector<std::string> o{"/cluster/nodes=2", "/cluster/gpus_per_node=4", "/policy/placement=\"colocated\"",
                                   "/policy/train={\"tp\": 2, \"dp\": 4, \"zero\": 3}", "/policy/rollout/tp=1",
                                   "/policy/weight_sync={\"gather\": \"full-model\"}"};
  const auto z3 = scenario(o);
  const double params = model::count_params(z3.model).total;
  const rl::RefitShape f = rl::refit_shape(z3, z3.policy.rollout, z3.policy.train);
  REQUIRE(f.gathers.size() == 2);
  CHECK(f.gathers[0].dim == rl::RefitGatherStep::Dim::shard);
  CHECK(f.gathers[0].ranks == 4);
  CHECK(f.gathers[0].ranks_per_node == 2);
  CHECK(f.gathers[0].output_bytes == doctest::Approx(4 * params / 2).epsilon(0.01));  // a tp half in fp32
  CHECK(f.gathers[1].dim == rl::RefitGatherStep::Dim::tp);
  CHECK(f.gathers[1].output_bytes == doctest::Approx(4 * params).epsilon(0.01));
  // DeepSpeed's ZeRO-3 keeps bf16 partitions: half the bytes.
  auto bf16_o = o;
  bf16_o[3] = "/policy/train={\"tp\": 2, \"dp\": 4, \"zero\": 3, \"shard_dtype\": \"bf16\"}";
  const auto bf16 = scenario(bf16_o);
  const rl::RefitShape h = rl::refit_shape(bf16, bf16.policy.rollout, bf16.policy.train);
  REQUIRE(h.gathers.size() == 2);
  CHECK(h.gathers[0].output_bytes == test::near(f.gathers[0].output_bytes / 2));
  CHECK(h.gathers[1].output_bytes == test::near(f.gathers[1].output_bytes / 2));
  CHECK(rl::refit_seconds(bf16, bf16.policy.rollout, bf16.policy.train) <
        rl::refit_seconds(z3, z3.policy.rollout, z3.policy.train));
}

TEST_CASE("step: a mixture of experts' full-model gather moves the dense part over tp and every expert over ep") {
  const auto moe = scenario({"/model=\"qwen3-30b-a3b\"", "/cluster/nodes=2", "/policy/placement=\"colocated\"",
                             "/policy/train={\"tp\": 2, \"ep\": 8, \"dp\": 8}", "/policy/rollout/tp=2",
                             "/policy/weight_sync={\"gather\": \"full-model\"}"});
  const rl::RefitShape m = rl::refit_shape(moe, moe.policy.rollout, moe.policy.train);
  const auto& e = moe.model.moe;
  // Each expert a gated MLP: three hidden x expert-ffn matrices.
  const double experts = static_cast<double>(moe.model.num_moe_layers() * e.num_experts) * 3.0 *
                         static_cast<double>(moe.model.hidden_size * e.expert_ffn_hidden_size);
  const double dense = model::count_params(moe.model).total - experts;
  REQUIRE(m.gathers.size() == 2);
  // tp peers hold the same experts (tp 2 < ep 8): the tp gather moves the dense part alone.
  CHECK(m.gathers[0].dim == rl::RefitGatherStep::Dim::tp);
  CHECK(m.gathers[0].output_bytes == doctest::Approx(2 * dense).epsilon(0.02));
  CHECK(m.gathers[1].dim == rl::RefitGatherStep::Dim::ep);
  CHECK(m.gathers[1].ranks == 8);
  CHECK(m.gathers[1].ranks_per_node == 8);  // ep consecutive devices (expert tp 1): one node
  CHECK(m.gathers[1].output_bytes == test::near(2 * experts));
  // ep's members are consecutive whatever tp and cp: with cp 2 and ep 4 the four share a node.
  const auto cp = scenario({"/model=\"qwen3-30b-a3b\"", "/cluster/nodes=2", "/policy/placement=\"colocated\"",
                            "/policy/train={\"tp\": 2, \"cp\": 2, \"ep\": 4, \"dp\": 4}", "/policy/rollout/tp=2",
                            "/policy/weight_sync={\"gather\": \"full-model\"}"});
  const rl::RefitShape c = rl::refit_shape(cp, cp.policy.rollout, cp.policy.train);
  REQUIRE(c.gathers.size() == 2);
  CHECK(c.gathers[1].dim == rl::RefitGatherStep::Dim::ep);
  CHECK(c.gathers[1].ranks_per_node == 4);
}

TEST_CASE("step: a broadcast refit after a full-model gather sends every engine GPU the whole model") {
  const std::vector<std::string> o{"/policy/rollout/tp=2"};
  auto shard_o = o, full_o = o;
  shard_o.push_back("/policy/weight_sync={\"method\": \"broadcast\", \"gather\": \"engine-shard\"}");
  full_o.push_back("/policy/weight_sync={\"method\": \"broadcast\", \"gather\": \"full-model\"}");
  const auto shard = test::preset_scenario("disaggregated-async", shard_o);
  const auto full = test::preset_scenario("disaggregated-async", full_o);
  const auto& r = full.policy.rollout;
  const auto& l = full.policy.train;
  REQUIRE(r.gpus_per_engine() == 2);
  const double params = model::count_params(full.model).total;
  const rl::RefitShape s = rl::refit_shape(shard, r, l), f = rl::refit_shape(full, r, l);
  CHECK(s.engine_bytes == test::near(params));  // bf16 over the engine's tp 2
  CHECK(f.engine_bytes == test::near(2 * params));
  // The other half of the model over each engine GPU's NIC, after the training ranks' gathers.
  const double nic = full.cluster.nic_bandwidth_bytes_per_s * full.cluster.gpu.nic_efficiency;
  CHECK(rl::refit_seconds(full, r, l) - rl::refit_seconds(shard, r, l) >=
        params / nic + rl::full_model_gather_seconds(full, f) - 1e-9);
}
