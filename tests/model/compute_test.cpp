#include <doctest/doctest.h>

#include "sim/model/compute.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

TEST_CASE("compute: tile and wave quantisation") {
  const auto c = test::preset_cluster("dgx-h100", 1);  // 132 SMs, 128 x 256 tiles
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  // 4096 x 8192: 32 x 32 = 1024 whole tiles in ceil(1024 / 132) = 8 waves of 132 slots.
  CHECK(cm.quantisation(4096, 8192, 8192) == doctest::Approx(1024.0 / (8 * 132)));
  // 100 rows of a 128-row tile: 100/128 of the work is useful; 4 tiles split K 32 ways (8192 / 256)
  // fill 128 of the 132 SMs.
  CHECK(cm.quantisation(100, 1024, 8192) == doctest::Approx(100.0 / 128 * 128 / 132));
}

TEST_CASE("compute: a large GEMM runs at the profile's measured efficiency") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  // The profile's point (2048 x 2048 x 13312 at 80.3%) is reproduced exactly.
  CHECK(cm.gemm_efficiency(2048, 2048, 13312) == doctest::Approx(0.803));
  const auto big = cm.gemm(2048, 2048, 13312);
  CHECK_FALSE(big.memory_bound);
  CHECK(big.seconds == doctest::Approx(2.0 * 2048 * 2048 * 13312 / (989e12 * 0.803) + 2e-6));
}

TEST_CASE("compute: a GEMV is memory-bound and reads the weights once") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  const auto gemv = cm.gemm(1, 8192, 8192);
  CHECK(gemv.memory_bound);
  const double bytes = 2.0 * (8192 + 8192.0 * 8192 + 8192);
  CHECK(gemv.seconds == doctest::Approx(bytes / (3.35e12 * 0.80) + 2e-6));
}

TEST_CASE("compute: attention efficiency interpolates the profile's curve in log length") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward_backward) == doctest::Approx(294.0 / 989).epsilon(1e-3));
  // Halfway between 4096 and 8192 in log2: halfway between 294 and 308 TFLOP/s.
  CHECK(cm.attention_efficiency(5793, model::AttentionPass::forward_backward) ==
        doctest::Approx((294.0 + 308.0) / 2 / 989).epsilon(1e-3));
  CHECK(cm.attention_efficiency(1 << 20, model::AttentionPass::forward) == doctest::Approx(616.0 / 989).epsilon(1e-3));
}

TEST_CASE("compute: attention takes the causal points of the nearest head dimension") {
  // Points at head_dim 64 (0.30) and 128 (0.50), and a non-causal one at 128 (0.90) that causal
  // attention must not use; all at 4096 tokens, forward.
  auto c = test::preset_cluster("dgx-h100", 1);
  c.gpu.attention_efficiency = {{4096, 64, true, "fwd", 0.30}, {4096, 128, true, "fwd", 0.50}, {4096, 128, false, "fwd", 0.90}};
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 64) == doctest::Approx(0.30));
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 128) == doctest::Approx(0.50));
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 192) == doctest::Approx(0.50));  // nearest: 128
  CHECK(cm.attention_efficiency(4096, model::AttentionPass::forward, 80) == doctest::Approx(0.30));   // nearest: 64
  // A profile of non-causal points only still prices attention with them.
  c.gpu.attention_efficiency = {{4096, 128, false, "fwd", 0.90}};
  const model::ComputeModel only(c.gpu, input::Dtype::bf16);
  CHECK(only.attention_efficiency(4096, model::AttentionPass::forward, 128) == doctest::Approx(0.90));
}
