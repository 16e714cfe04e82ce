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

TEST_CASE("compute: each tile's fixed work costs k_overhead of depth: K / (K + k_overhead)") {
  auto c = test::own_cluster(1);
  c.gpu.gemm_k_overhead = 256;
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  // The measured point stays exact: e_max = 0.70 / (4096 / (4096 + 256)).
  CHECK(cm.gemm_efficiency(4096, 4096, 4096) == test::near(0.70));
  // A shallow GEMM of the same output (no quantisation loss either) loses the depth factor.
  const double e_max = 0.70 / (4096.0 / (4096 + 256));
  CHECK(cm.gemm_efficiency(4096, 4096, 512) == test::near(e_max * 512.0 / (512 + 256)));
}

TEST_CASE("compute: a measured grid is interpolated linearly in m, n and k, and left outside it") {
  auto c = test::own_cluster(1);
  // 2 x 2 x 2 shapes; efficiency 0.1 at the corner, +0.2 along m, +0.1 along n, +0.3 along k.
  c.gpu.gemm_efficiency.clear();
  for (int64_t m : {1024, 4096})
    for (int64_t n : {1024, 8192})
      for (int64_t k : {1024, 8192})
        c.gpu.gemm_efficiency.push_back({m, n, k, 0.1 + (m == 4096 ? 0.2 : 0) + (n == 8192 ? 0.1 : 0) + (k == 8192 ? 0.3 : 0)});
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  CHECK(cm.gemm_efficiency(1024, 1024, 1024) == test::near(0.1));
  CHECK(cm.gemm_efficiency(4096, 8192, 8192) == test::near(0.7));
  // Linear, not logarithmic: m = 2048 is a third of the way from 1024 to 4096.
  CHECK(cm.gemm_efficiency(2048, 1024, 1024) == test::near(0.1 + 0.2 / 3));
  // All three at once: the sum of the three linear parts.
  CHECK(cm.gemm_efficiency(2048, 4608, 4608) == test::near(0.1 + 0.2 / 3 + 0.1 * 0.5 + 0.3 * 0.5));
  CHECK(cm.in_gemm_grid(2048, 4608, 4608));
  // Outside the grid: the analytic model from the grid's best point (4096 x 8192 x 8192 at 0.7,
  // whole tiles and waves: e_max = 0.7).
  CHECK_FALSE(cm.in_gemm_grid(16384, 8192, 8192));
  CHECK(cm.gemm_efficiency(16384, 8192, 8192) == test::near(0.7 * cm.quantisation(16384, 8192, 8192)));
  // A grouped GEMM inside the grid: the faster of its groups as lone kernels (each group's shape
  // at its measured efficiency, times what sharing the waves does for its tiles) and one kernel
  // (the analytic model over the groups' tiles; e_max: the best point's 0.7 at K = 8192, whole
  // tiles and waves, without its depth loss).
  const auto depth = [&](double k) { return k / (k + c.gpu.gemm_k_overhead); };
  const auto one_kernel = [&](int64_t m, int64_t n, int64_t k, int64_t g) {
    return 0.7 / depth(8192) * depth(static_cast<double>(k)) * cm.quantisation(m, n, k, g);
  };
  const auto lone = [&](double measured, int64_t m, int64_t n, int64_t k, int64_t g) {
    return measured * cm.quantisation(m, n, k, g) / cm.quantisation(m, n, k, 1);
  };
  // Here the lone kernels' 0.1 is the small GEMM's fixed time mostly: one kernel is faster.
  REQUIRE(one_kernel(1024, 1024, 1024, 64) > lone(0.1, 1024, 1024, 1024, 64));
  CHECK(cm.gemm_efficiency(1024, 1024, 1024, 64) == test::near(one_kernel(1024, 1024, 1024, 64)));
  // A device whose small GEMMs run well alone (a CPU's loop) keeps the lone kernels' figure.
  auto fast_small = c;
  for (auto& p : fast_small.gpu.gemm_efficiency)
    if (p.m == 1024 && p.n == 1024 && p.k == 1024) p.efficiency = 0.69;
  const model::ComputeModel cpu_like(fast_small.gpu, input::Dtype::bf16);
  REQUIRE(lone(0.69, 1024, 1024, 1024, 8) > one_kernel(1024, 1024, 1024, 8));
  CHECK(cpu_like.gemm_efficiency(1024, 1024, 1024, 8) == test::near(std::min(0.7, lone(0.69, 1024, 1024, 1024, 8))));
  // Groups that fill the waves a lone small GEMM leaves empty gain, but never past the grid's best
  // measured efficiency (0.7 here) as lone kernels.
  int64_t capped_m = 0, capped_g = 0;  // a shape near the best point whose groups would pass it
  for (int64_t m = 4096; m >= 3072 && capped_m == 0; m -= 64)
    for (int64_t g = 2; g <= 64 && capped_m == 0; ++g)
      if (cm.gemm_efficiency(m, 8192, 8192) * cm.quantisation(m, 8192, 8192, g) / cm.quantisation(m, 8192, 8192) > 0.7) {
        capped_m = m;
        capped_g = g;
      }
  REQUIRE(capped_m > 0);
  CHECK(cm.gemm_efficiency(capped_m, 8192, 8192, capped_g) ==
        test::near(std::max(0.7, one_kernel(capped_m, 8192, 8192, capped_g))));
  // ... and outside it, the analytic model for the groups.
  CHECK(cm.gemm_efficiency(16384, 8192, 8192, 4) == test::near(0.7 * cm.quantisation(16384, 8192, 8192, 4)));
}

TEST_CASE("compute: a GEMV is memory-bound and reads the weights once") {
  const auto c = test::own_cluster(1);
  const model::ComputeModel cm(c.gpu, input::Dtype::bf16);
  const auto gemv = cm.gemm(1, 8192, 8192);
  CHECK(gemv.memory_bound);
  const double bytes = 2.0 * (8192 + 8192.0 * 8192 + 8192);
  CHECK(gemv.seconds == test::near(bytes / (2e12 * 0.75) + 5e-6));
}

TEST_CASE("compute: a GEMM kernel's fixed time is the profile's gemm_kernel_overhead, at least a launch") {
  auto c = test::own_cluster(1);  // a 5 us launch
  const double bytes = 2.0 * (4.0 * 4096 + 4096.0 * 4096 + 4.0 * 4096);  // A, the weights, C
  c.gpu.gemm_kernel_overhead = SimTime::from_seconds(8e-6);
  CHECK(model::ComputeModel(c.gpu, input::Dtype::bf16).gemm(4, 4096, 4096).seconds ==
        test::near(bytes / (2e12 * 0.75) + 8e-6));
  // Below the launch, the launch: a kernel takes at least its launch.
  c.gpu.gemm_kernel_overhead = SimTime::from_seconds(1e-6);
  CHECK(model::ComputeModel(c.gpu, input::Dtype::bf16).gemm(4, 4096, 4096).seconds ==
        test::near(bytes / (2e12 * 0.75) + 5e-6));
  // Other kernels keep the launch.
  c.gpu.gemm_kernel_overhead = SimTime::from_seconds(8e-6);
  CHECK(model::ComputeModel(c.gpu, input::Dtype::bf16).memory_bound(1e6, 1).seconds == test::near(1e6 / (2e12 * 0.75) + 5e-6));
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

TEST_CASE("compute: GEMMs and attention run at the sustained clock's share of the measured rates") {
  auto c = test::own_cluster(1);
  const model::ComputeModel burst(c.gpu, input::Dtype::bf16);
  // Efficiencies measured at 2,000 MHz; dense tensor work sustains 1,500 MHz.
  c.gpu.benchmark_clock_mhz = 2000;
  c.gpu.sustained_clock_mhz = 1500;
  const model::ComputeModel sustained(c.gpu, input::Dtype::bf16);
  // The compute part of a GEMM takes 2000 / 1500 as long; its launch does not change.
  const double launch = burst.launch_overhead_s();
  CHECK(sustained.gemm(4096, 4096, 4096).seconds - launch ==
        test::near((burst.gemm(4096, 4096, 4096).seconds - launch) * 2000.0 / 1500.0));
  CHECK(sustained.attention(1e12, 4096, model::AttentionPass::forward).seconds - launch ==
        test::near((burst.attention(1e12, 4096, model::AttentionPass::forward).seconds - launch) * 2000.0 / 1500.0));
  // Memory-bound work and the datasheet peak (MFU's denominator) are the clock's neither.
  CHECK(sustained.memory_bound(1e9).seconds == test::near(burst.memory_bound(1e9).seconds));
  CHECK(sustained.peak_flops() == test::near(burst.peak_flops()));
  CHECK(sustained.sustained_peak_flops() == test::near(burst.peak_flops() * 0.75));
  // A memory-bound GEMM (one row) is as fast as before.
  CHECK(sustained.gemm(1, 8192, 8192).seconds == test::near(burst.gemm(1, 8192, 8192).seconds));
}

TEST_CASE("compute: the power-limited rate bounds fast kernels alone, and replaces the clock's derating") {
  auto c = test::own_cluster(1);
  c.gpu.benchmark_clock_mhz = 2000;
  c.gpu.sustained_clock_mhz = 1500;
  const model::ComputeModel derated(c.gpu, input::Dtype::bf16);
  c.gpu.benchmark_clock_mhz = c.gpu.sustained_clock_mhz = 0;
  const model::ComputeModel burst(c.gpu, input::Dtype::bf16);
  const double launch = burst.launch_overhead_s();
  // The short-run rates of a large and a small GEMM and of a long and a short attention.
  const auto rate = [&](const model::ComputeModel& m, int64_t mnk) {
    const double d = static_cast<double>(mnk);
    return 2.0 * d * d * d / (m.gemm(mnk, mnk, mnk).seconds - launch);
  };
  const double big = rate(burst, 8192), small = rate(burst, 512);
  REQUIRE(small < big);
  const double fa = 1e12 / (burst.attention(1e12, 16384, model::AttentionPass::forward).seconds - launch);
  // A limit between the two GEMMs' rates, and one under the long attention's.
  const double limit = (big + small) / 2;
  c.gpu.benchmark_clock_mhz = 2000;
  c.gpu.sustained_clock_mhz = 1500;
  c.gpu.power_limited[input::Dtype::bf16] = {limit, fa * 0.8};
  const model::ComputeModel limited(c.gpu, input::Dtype::bf16);
  // The large GEMM runs at the limit; the small one keeps its short-run rate, underated by the clock.
  CHECK(rate(limited, 8192) == test::near(limit));
  CHECK(rate(limited, 512) == test::near(small));
  CHECK(rate(derated, 512) == test::near(small * 0.75));
  CHECK(1e12 / (limited.attention(1e12, 16384, model::AttentionPass::forward).seconds - launch) == test::near(fa * 0.8));
  CHECK(limited.sustained_peak_flops() == test::near(limited.peak_flops()));
  // A profile that measured one kind alone keeps the clock's derating for the other.
  c.gpu.power_limited[input::Dtype::bf16] = {limit, 0};
  const model::ComputeModel gemm_only(c.gpu, input::Dtype::bf16);
  CHECK(gemm_only.attention(1e12, 16384, model::AttentionPass::forward).seconds ==
        test::near(derated.attention(1e12, 16384, model::AttentionPass::forward).seconds));
  CHECK(rate(gemm_only, 512) == test::near(small));
  // Another element type keeps the clock's derating.
  c.gpu.peak_flops_per_s[input::Dtype::fp16] = c.gpu.peak(input::Dtype::bf16);
  const model::ComputeModel fp16(c.gpu, input::Dtype::fp16);
  CHECK(fp16.sustained_peak_flops() == test::near(fp16.peak_flops() * 0.75));
}
