// Each kernel priced alone as the cost model prices its operation, and timed alone by the CPU
// backend, in its program's order: what validate's per-kernel comparison (kernels.csv) is made of.
#include <doctest/doctest.h>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/kernel_comparison.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;
using runtime::Kernel;

TEST_CASE("each kernel alone is priced as the cost model prices its operation") {
  const input::ClusterSpec cluster = test::preset_cluster("dgx-h100", 2);
  const model::AnalyticCostModel cost(cluster, input::Dtype::bf16);
  runtime::Program p;
  Kernel g;
  g.kind = Kernel::Kind::gemm;
  g.m = 4096, g.n = 1024, g.k = 3072, g.groups = 4;
  CHECK(runtime::predict_kernel(g, p, cost, 8) == cost.seconds(model::GemmOp{4096, 1024, 3072, 4}));
  CHECK(runtime::kernel_shape(g, p) == "4096 x 1024 x 3072, 4 groups");
  // Attention: the kernel's heads of 2 s^2 d forward FLOPs; a backward one is the whole pass less
  // the forward, and costs more than the forward.
  Kernel a;
  a.kind = Kernel::Kind::attention;
  a.heads = 16, a.seq_len = 2048, a.head_dim = 128;
  const double flops = 16.0 * 2 * 2048.0 * 2048 * 128;
  const double forward = cost.seconds(model::AttentionOp{flops, 2048, model::AttentionPass::forward, 128});
  CHECK(runtime::predict_kernel(a, p, cost, 8) == forward);
  a.backward = true;
  const double backward = runtime::predict_kernel(a, p, cost, 8);
  CHECK(backward == doctest::Approx(
                        cost.seconds(model::AttentionOp{flops, 2048, model::AttentionPass::forward_backward, 128}) - forward));
  CHECK(backward > forward);
  CHECK(runtime::kernel_shape(a, p) == "16 heads x 2048 tokens x 128, backward");
  // A collective within a node and one across two nodes of 8 GPUs.
  Kernel c = runtime::collective(model::CollectiveOp::all_reduce, 64e6, p.group({0, 1, 2, 3, 4, 5, 6, 7}));
  CHECK(runtime::predict_kernel(c, p, cost, 8) ==
        cost.seconds(model::CollectiveCallOp{model::CollectiveOp::all_reduce, 64e6, model::CollectiveGroup{8, 8}}));
  c.group = p.group({0, 8});
  const double across = runtime::predict_kernel(c, p, cost, 8);
  CHECK(across == cost.seconds(model::CollectiveCallOp{model::CollectiveOp::all_reduce, 64e6, model::CollectiveGroup{2, 1}}));
  CHECK(across > 0);
  // Streaming work in its launches, a copy over the host link, a wait its own seconds.
  Kernel m;
  m.kind = Kernel::Kind::memory;
  m.bytes = 1e8, m.launches = 3;
  model::MemoryBoundOp op;
  op.bytes = 1e8;
  op.kernels = 3;
  CHECK(runtime::predict_kernel(m, p, cost, 8) == cost.seconds(op));
  Kernel h;
  h.kind = Kernel::Kind::copy;
  h.bytes = 1e9;
  CHECK(runtime::predict_kernel(h, p, cost, 8) == cost.seconds(model::HostTransferOp{1e9}));
  CHECK(runtime::kernel_shape(h, p) == "1000 MB to host");
  Kernel w;
  w.kind = Kernel::Kind::wait;
  w.seconds = 0.25;
  w.busy = true;
  CHECK(runtime::predict_kernel(w, p, cost, 8) == 0.25);
  CHECK(runtime::kernel_shape(w, p) == "host work");
}

TEST_CASE("the CPU backend times each kernel of a device's program, in its order") {
  runtime::Program p;
  Kernel g;
  g.kind = Kernel::Kind::gemm;
  g.m = 64, g.n = 64, g.k = 64;
  Kernel w;
  w.kind = Kernel::Kind::wait;
  w.seconds = 0.02;
  p.on(0) = {g, w, g};
  p.on(1) = {w};
  runtime::CpuBackend cpu(2, 60);
  const auto stats = cpu.run(p, "kernels");
  REQUIRE(stats.kernel_seconds.size() == 2);
  for (const auto& [device, seconds] : stats.kernel_seconds) {
    REQUIRE(seconds.size() == p.on(device).size());
    double sum = 0;
    for (double s : seconds) sum += s;
    for (const auto& [d, total] : stats.device_seconds)
      if (d == device) CHECK(sum == doctest::Approx(total));
  }
  const auto& zero = stats.kernel_seconds[0].first == 0 ? stats.kernel_seconds[0].second : stats.kernel_seconds[1].second;
  CHECK(zero[1] >= 0.02);
  CHECK(zero[0] + zero[2] == doctest::Approx(stats.kernels.gemm));
}
