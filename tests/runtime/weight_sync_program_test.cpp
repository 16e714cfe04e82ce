// The weight sync's and layout switches' programs (runtime/weight_sync_program.cpp) against
// hand-checked cases: the kernels each device runs, their groups and bytes as the cost model
// prices them, and every byte arriving checked on the CPU backend.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/program.h"
#include "sim/input/check.h"
#include "sim/model/transformer.h"
#include "sim/rl/step.h"

using namespace arlsim;
using runtime::Kernel;

TEST_CASE("a layout switch waits the policy's overhead, loads the new engines' shards and moves a resharded state") {
  input::Diagnostics diag;
  std::vector<std::string> overrides;
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  s->policy.switch_overhead_s = 0.25;
  const input::RolloutLayout r1 = s->policy.rollout;  // tp 1: two engines
  const input::TrainLayout t1 = s->policy.train;      // tp 1 x dp 2
  input::RolloutLayout r2 = r1;
  r2.tp = 2;  // one engine of tp 2
  input::TrainLayout t2 = t1;
  t2.tp = 2;
  t2.dp = 1;
  auto kernels = [](const runtime::Program& p, int64_t device) {
    for (const auto& [d, ks] : p.devices)
      if (d == device) return ks;
    return std::vector<Kernel>{};
  };
  // Nothing changes: nothing runs.
  runtime::Program same;
  runtime::add_layout_switch(same, *s, r1, t1, r1, t1);
  CHECK(same.devices.empty());
  // Both change, on the same two devices (colocated): per device the rollout's overhead and the
  // engine's shard (2 bytes a parameter over its tp 2) from host memory, then the training's
  // overhead, its tp-1 state out and its tp-2 state back.
  runtime::Program both;
  runtime::add_layout_switch(both, *s, r1, t1, r2, t2);
  const double shard = 2.0 * model::count_params(s->model).total / 2;
  const double out = model::training_state(s->model, t1, s->workload.dtype).weights +
                     model::training_state(s->model, t1, s->workload.dtype).optimizer;
  const double in = model::training_state(s->model, t2, s->workload.dtype).weights +
                    model::training_state(s->model, t2, s->workload.dtype).optimizer;
  CHECK(in < out);  // tp 2 halves each rank's weights; dp 1 keeps every optimizer state
  for (int64_t d = 0; d < 2; ++d) {
    const auto ks = kernels(both, d);
    REQUIRE(ks.size() == 5);
    CHECK(ks[0].kind == Kernel::Kind::wait);
    CHECK(ks[0].seconds == 0.25);
    CHECK(ks[1].kind == Kernel::Kind::copy);
    CHECK(ks[1].peer == d);
    CHECK(ks[1].bytes == doctest::Approx(shard));
    CHECK(ks[2].kind == Kernel::Kind::wait);
    CHECK(ks[3].peer == -1);
    CHECK(ks[3].bytes == doctest::Approx(out));
    CHECK(ks[4].peer == d);
    CHECK(ks[4].bytes == doctest::Approx(in));
  }
  // The same sharding in other micro-batches: a restart (the overhead) and no state moved.
  runtime::Program restart;
  input::TrainLayout t3 = t1;
  t3.micro_batch = t1.micro_batch + 1;
  runtime::add_layout_switch(restart, *s, r1, t1, r1, t3);
  for (int64_t d = 0; d < 2; ++d) {
    const auto ks = kernels(restart, d);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].kind == Kernel::Kind::wait);
  }
  // The moved bytes arrive checked.
  runtime::CpuBackend cpu(2, 60);
  s->policy.switch_overhead_s = 0;
  runtime::Program moved;
  runtime::add_layout_switch(moved, *s, r1, t1, r2, t2);
  const auto result = cpu.run(moved, "switch");
  CHECK(result.checksum_failures == 0);
  CHECK(result.bytes_verified >= 2 * (shard + in));
}

TEST_CASE("a disaggregated plan's weight sync broadcasts each engine's shard in buckets from a training rank") {
  input::Diagnostics diag;
  std::vector<std::string> overrides = {"/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=1", "/policy/train/dp=1",
                                        "/policy/weight_sync={\"gather\": \"engine-shard\"}"};
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  s->policy.weight_sync_bucket_bytes = 4 << 20;
  runtime::Program p;
  runtime::add_weight_sync(p, *s, s->policy.rollout, s->policy.train);
  const double shard = rl::refit_shape(*s, s->policy.rollout, s->policy.train).rollout_shard_bytes;
  REQUIRE(p.groups.size() == 1);
  const auto& g = p.groups[0];
  REQUIRE(g.size() == 2);
  CHECK(g[0] == rl::train_placement(*s, s->policy.train).first_device());  // the root: a training rank
  CHECK(g[1] == rl::rollout_placement(*s, s->policy.rollout).replica_device(0));
  for (int64_t d : g) {
    const auto& ks = p.on(d);
    CHECK(static_cast<double>(ks.size()) == std::ceil(shard / (4 << 20)));
    double bytes = 0;
    for (const auto& k : ks) {
      CHECK(k.kind == Kernel::Kind::collective);
      CHECK(k.op == model::CollectiveOp::broadcast);
      bytes += k.bytes;
    }
    CHECK(bytes == doctest::Approx(shard));
  }
  // Every byte arrives checked: the receiver's copy against the root's checksum.
  runtime::CpuBackend cpu(2, 60);
  const auto r = cpu.run(p, "broadcast");
  CHECK(r.checksum_failures == 0);
  CHECK(r.bytes_verified >= shard);
}

TEST_CASE("reference weights kept in host memory: two copies on each device before the reference pass, one after") {
  input::Diagnostics diag;
  std::vector<std::string> overrides = {"/policy/reference_weights=\"swapped\""};
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  REQUIRE(s->workload.use_reference);
  const double bytes = rl::reference_swap_bytes(*s, s->policy.train);
  REQUIRE(bytes > 0);
  runtime::Program before, after;
  runtime::add_reference_swap(before, *s, s->policy.train, 3, 2, true);
  runtime::add_reference_swap(after, *s, s->policy.train, 3, 2, false);
  for (int64_t d : {3, 4}) {
    REQUIRE(before.on(d).size() == 2);
    REQUIRE(after.on(d).size() == 1);
    for (const auto* ks : {&before.on(d), &after.on(d)})
      for (const auto& k : *ks) {
        CHECK(k.kind == Kernel::Kind::copy);
        CHECK(k.bytes == doctest::Approx(bytes));
      }
  }
  // Resident reference weights move nothing.
  s->policy.reference_weights = input::ReferenceWeights::resident;
  runtime::Program none;
  runtime::add_reference_swap(none, *s, s->policy.train, 0, 2, true);
  CHECK(none.on(0).empty());
}

TEST_CASE("a full-model gather: every training device all-gathers over its tp group, then over its pipeline, and the bytes arrive checked") {
  input::Diagnostics diag;
  std::vector<std::string> overrides = {"/cluster/gpus_per_node=4", "/policy/train={\"tp\": 2, \"pp\": 2, \"dp\": 1}",
                                        "/policy/weight_sync={\"method\": \"allgather-swap\", \"gather\": \"full-model\"}"};
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  s->workload.engine.sleep_level = 2;  // no engine weights to host memory: only the refit here
  const rl::RefitShape shape = rl::refit_shape(*s, s->policy.rollout, s->policy.train);
  REQUIRE(shape.gathers.size() == 2);
  runtime::Program p;
  runtime::add_weight_sync(p, *s, s->policy.rollout, s->policy.train);
  // Megatron's numbering: devices 0 and 1 are stage 0's tp group, 2 and 3 stage 1's.
  const std::vector<runtime::DeviceGroup> tp{{0, 1}, {0, 1}, {2, 3}, {2, 3}}, pp{{0, 2}, {1, 3}, {0, 2}, {1, 3}};
  for (int64_t d = 0; d < 4; ++d) {
    std::vector<Kernel> gathers;
    for (const auto& k : p.on(d))
      if (k.kind == Kernel::Kind::collective) gathers.push_back(k);
    REQUIRE(gathers.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(gathers[i].op == model::CollectiveOp::all_gather);
      CHECK(gathers[i].bytes == doctest::Approx(shape.gathers[i].output_bytes));
    }
    CHECK(p.groups[static_cast<size_t>(gathers[0].group)] == tp[static_cast<size_t>(d)]);
    CHECK(p.groups[static_cast<size_t>(gathers[1].group)] == pp[static_cast<size_t>(d)]);
  }
  runtime::CpuBackend cpu(4, 60);
  const auto r = cpu.run(p, "full-model gather");
  CHECK(r.checksum_failures == 0);
  CHECK(r.bytes_verified >= shape.gathers[1].output_bytes / 2);
}

TEST_CASE("a disaggregated full-model refit: the training devices gather over their groups after the rollout's GPUs, then one rank broadcasts the whole model to every engine GPU") {
  input::Diagnostics diag;
  // Six devices: an engine of tp 2 on devices 0-1, training tp 2 x pp 2 on devices 2-5.
  std::vector<std::string> overrides = {"/cluster/nodes=3", "/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=2",
                                        "/policy/rollout/tp=2", "/policy/train={\"tp\": 2, \"pp\": 2, \"dp\": 1}",
                                        "/policy/weight_sync={\"gather\": \"full-model\"}"};
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  s->policy.weight_sync_bucket_bytes = 16 << 20;
  const rl::RefitShape shape = rl::refit_shape(*s, s->policy.rollout, s->policy.train);
  REQUIRE(shape.method == input::WeightSync::broadcast);
  REQUIRE(shape.gathers.size() == 2);
  const double whole = 2.0 * model::count_params(s->model).total;
  CHECK(shape.engine_bytes == doctest::Approx(whole));
  runtime::Program p;
  runtime::add_weight_sync(p, *s, s->policy.rollout, s->policy.train);
  const std::vector<runtime::DeviceGroup> tp{{2, 3}, {2, 3}, {4, 5}, {4, 5}}, pp{{2, 4}, {3, 5}, {2, 4}, {3, 5}};
  const runtime::DeviceGroup broadcast{2, 0, 1};
  for (int64_t d = 0; d < 6; ++d) {
    std::vector<Kernel> gathers;
    double received = 0;
    for (const auto& k : p.on(d)) {
      REQUIRE(k.kind == Kernel::Kind::collective);
      if (k.op == model::CollectiveOp::all_gather) gathers.push_back(k);
      if (k.op == model::CollectiveOp::broadcast) {
        CHECK(p.groups[static_cast<size_t>(k.group)] == broadcast);
        received += k.bytes;
      }
    }
    if (d < 2 || d == 2) CHECK(received == doctest::Approx(whole));  // the engine's GPUs and the root
    else CHECK(received == 0);
    if (d < 2) {
      CHECK(gathers.empty());
      continue;
    }
    REQUIRE(gathers.size() == 2);
    CHECK(p.groups[static_cast<size_t>(gathers[0].group)] == tp[static_cast<size_t>(d - 2)]);
    CHECK(p.groups[static_cast<size_t>(gathers[1].group)] == pp[static_cast<size_t>(d - 2)]);
  }
  runtime::CpuBackend cpu(6, 60);
  const auto r = cpu.run(p, "disaggregated full-model refit");
  CHECK(r.checksum_failures == 0);
  CHECK(r.bytes_verified >= whole);
}
