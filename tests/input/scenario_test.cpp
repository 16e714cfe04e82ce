#include <doctest/doctest.h>

#include "sim/input/check.h"

using namespace arlsim::input;

namespace {

std::string errors_of(const std::vector<std::string>& overrides) {
  Diagnostics diag;
  check_document("default", SpecKind::scenario, overrides, diag);
  return format_all(diag);
}

}  // namespace

TEST_CASE("scenario: the default scenario is valid and fully resolved") {
  Diagnostics diag;
  auto s = load_scenario("default", {}, diag);
  INFO(format_all(diag));
  REQUIRE(s);
  CHECK(s->cluster.total_gpus() == 16);
  CHECK(s->model.num_heads == 32);
  CHECK(s->workload.trajectories_per_step() == 512);
  CHECK(s->policy.train.gpus() == 16);
  CHECK(s->cluster.pools.size() == 1);
  CHECK(s->cluster.pools[0].cold_start.ns() == 2'000'000'000);
}

TEST_CASE("scenario: layout products must equal the stage's GPUs, reported where the user changed them") {
  // The layout object is the preset's; the user's --set inside it is what made it wrong.
  CHECK(errors_of({"/policy/train/dp=4"}) ==
        "--set /policy/train/dp=4: /policy/train: tp x pp x dp x cp = 2 x 1 x 4 x 1 = 8 GPUs, but training has 16 "
        "(all GPUs of the cluster)\n");
  // A preset's layout against the user's cluster: at the cluster, which the user changed.
  CHECK(errors_of({"/cluster/nodes=1"}) ==
        "--set /cluster/nodes=1: /policy/train: tp x pp x dp x cp = 2 x 1 x 8 x 1 = 16 GPUs, but training has 8 "
        "(all GPUs of the cluster)\n");
  // ... at the field of the cluster's size the user set, not at another of their edits beside it.
  CHECK(errors_of({"/cluster/gpu/memory/bandwidth=\"3 TB/s\"", "/cluster/nodes=1"}).rfind("--set /cluster/nodes=1: ", 0) == 0);
  // A two-field limit in a preset's GPU: at the field the user set.
  CHECK(errors_of({"/cluster/gpu/memory/capacity=\"1 GiB\""}).find(
            "--set /cluster/gpu/memory/capacity=\"1 GiB\": /cluster/gpu/memory/capacity: reserved memory (2.00 GiB) must "
            "be smaller than the capacity (1.00 GiB)") == 0);
}

TEST_CASE("scenario: tensor parallelism must split the heads") {
  // Qwen3-8B has 32 query heads and 8 key-value heads.
  CHECK(errors_of({"/policy/rollout/tp=3"}) ==
        "--set /policy/rollout/tp=3: /policy/rollout/tp: the model's 32 attention heads do not split over tp = 3; "
        "choose a tp that divides 32\n"
        "--set /policy/rollout/tp=3: /policy/rollout: rollout's 16 GPUs do not split into engines of tp x pp = 3 GPUs; "
        "set \"replicas\" to use fewer GPUs\n");
  CHECK(errors_of({"/policy/train/tp=16", "/policy/train/dp=1"}) ==
        "--set /policy/train/tp=16: /policy/train/tp: the model's 8 key-value heads do not split over tp = 16; "
        "tensor-parallel training shards whole key-value groups; choose a tp that divides 8\n"
        "--set /policy/train/tp=16: /policy/train/tp: tp = 16 spans more than the 8 GPUs of one node\n");
}

TEST_CASE("scenario: disaggregated placement cannot take more GPUs than the cluster has") {
  CHECK(errors_of({"/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=16"}) ==
        "--set /policy/rollout_gpus=16: /policy/rollout_gpus: rollout_gpus = 16 leaves no GPU for training; the cluster "
        "has 16 GPUs (2 nodes x 8)\n");
  // 8 rollout GPUs leave 8 for training: dp 8 x tp 2 no longer fits.
  CHECK(errors_of({"/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=8", "/policy/train/dp=4"}).empty());
}

TEST_CASE("scenario: the workload's context must fit the model's") {
  CHECK(errors_of({"/workload/max_context_tokens=65536", "/workload/max_response_tokens=60000"}) ==
        "--set /workload/max_context_tokens=65536: /workload/max_context_tokens: the workload's context of 65536 tokens "
        "exceeds the model's 40960 (max_position_embeddings)\n");
  CHECK(errors_of({"/workload/max_response_tokens=20000"}) ==
        "preset:scenario/default:27:27: /workload/max_context_tokens: max_prompt_tokens (2048) + "
        "max_response_tokens (20000) = 22048 exceeds max_context_tokens (20480); the preset as changed by --set "
        "/workload/max_response_tokens=20000; change the field named with --set\n");
}

TEST_CASE("scenario: mini-batches must split over data parallelism") {
  // 512 trajectories / 128 mini-batches = 4 per mini-batch, fewer than the 8 data-parallel ranks.
  CHECK(errors_of({"/workload/mini_batches=128"}) ==
        "preset:scenario/default:36:31: /policy/train/dp: a mini-batch of 4 trajectories does not split evenly over dp = 8; "
        "the preset as changed by --set /workload/mini_batches=128; change the field named with --set\n");
}

TEST_CASE("scenario: a rollout engine may span whole nodes, not parts of them") {
  CHECK(errors_of({"/policy/rollout/tp=16"}).empty());
  // 3 nodes: tp 12 would split a node between two engines.
  CHECK(errors_of({"/cluster/nodes=3", "/policy/train/dp=12", "/policy/rollout/tp=12"}).find(
            "tp = 12 spans nodes but not whole ones (8 GPUs each)") != std::string::npos);
}

TEST_CASE("scenario: uneven first and last pipeline stages must leave an even split for the others") {
  CHECK(errors_of({"/policy/train/pp=2", "/policy/train/dp=4", "/policy/train/first_stage_layers=20"}).empty());
  CHECK(errors_of({"/policy/train/pp=2", "/policy/train/dp=4", "/policy/train/first_stage_layers=37"}) ==
        "--set /policy/train/first_stage_layers=37: /policy/train/first_stage_layers: the model's 36 layers less the "
        "first and last stages' (37 + 0) do not split evenly over the other 1 stages\n");
}
