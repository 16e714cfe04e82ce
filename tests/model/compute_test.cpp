#include <doctest/doctest.h>

#include "sim/model/compute.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

// The formulas on the test's own GPU (tests/model/model_fixtures.h: own_cluster), so that a
// recalibrated shipped profile cannot break them.
TEST_CASE("compute: tile and wave quantisation") {
  const auto c = test::own_cluster(1);  // 128 SMs, 128 x 256 tiles
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  // 4096 x 8448: 32 x 33 = 1056 whole tiles in ceil(1056 / 128) = 9 waves of 128 slots.
  CHECK(cm.quantisation(4096, 8448, 8192) == test::near(1056.0 / (9 * 128)));
  // 100 rows of a 128-row tile: 100/128 of the work is useful; 4 tiles split K 32 ways (8192 / 256)
  // fill the 128 SMs exactly.
  CHECK(cm.quantisation(100, 1024, 8192) == test::near(100.0 / 128));
}

TEST_CASE("compute: a large GEMM runs at the profile's measured efficiency") {
  const auto c = test::own_cluster(1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  // The profile's point (4096^3 at 70%, no quantisation loss) is reproduced exactly.
  CHECK(cm.gemm_efficiency(4096, 4096, 4096) == test::near(0.70));
  const auto big = cm.gemm(4096, 4096, 4096);
  CHECK_FALSE(big.memory_bound);
  CHECK(big.seconds == test::near(2.0 * 4096 * 4096 * 4096 / (1000e12 * 0.70) + 5e-6));
}

TEST_CASE("compute: a GEMV is memory-bound and reads the weights once") {
  const auto c = test::own_cluster(1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  const auto gemv = cm.gemm(1, 8192, 8192);
  CHECK(gemv.memory_bound);
  const double bytes = 2.0 * (8192 + 8192.0 * 8192 + 8192);
  CHECK(gemv.seconds == test::near(bytes / (2e12 * 0.75) + 5e-6));
}

TEST_CASE("compute: attention efficiency interpolates the profile's curve in log length") {
  const auto c = test::own_cluster(1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward_backward) == test::near(0.30));
  // Halfway between 4096 and 8192 in log2: halfway between 30% and 32%.
  CHECK(cm.attention_efficiency(5793, model::AttentionPass::forward_backward) == test::near(0.31).epsilon(1e-3));
  // Past the longest point: its efficiency.
  CHECK(cm.attention_efficiency(1 << 20, model::AttentionPass::forward) == test::near(0.60));
}

TEST_CASE("compute: attention takes the causal points of the nearest head dimension") {
  // Points at head_dim 64 (0.30) and 128 (0.50), and a non-causal one at 128 (0.90) that causal
  // attention must not use; all at 4096 tokens, forward.
  auto c = test::preset_cluster("dgx-h100", 1);
  c.gpu.attention_efficiency = {{4096, 64, true, "fwd", 0.30}, {4096, 128, true, "fwd", 0.50}, {4096, 128, false, "fwd", 0.90}};
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 64) == test::near(0.30));
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 128) == test::near(0.50));
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 192) == test::near(0.50));  // nearest: 128
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 80) == test::near(0.30));   // nearest: 64
  // A profile of non-causal points only still prices attention with them.
  c.gpu.attention_efficiency = {{4096, 128, false, "fwd", 0.90}};
  const model::ComputeModel only(c.gpu, input::Dtype::bf16);
  CHECK(only.attention_efficiency(4096, model::AttentionPass::forward, 128) == test::near(0.90));
}
