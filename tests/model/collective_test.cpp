#include <doctest/doctest.h>

#include "sim/model/collective.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;
using model::CollectiveOp;

TEST_CASE("collective: bus-bandwidth factors as nccl-tests defines them") {
  CHECK(model::bus_factor(CollectiveOp::all_reduce, 8) == doctest::Approx(2.0 * 7 / 8));
  CHECK(model::bus_factor(CollectiveOp::all_gather, 8) == doctest::Approx(7.0 / 8));
  CHECK(model::bus_factor(CollectiveOp::reduce_scatter, 16) == doctest::Approx(15.0 / 16));
  CHECK(model::bus_factor(CollectiveOp::all_to_all, 4) == doctest::Approx(3.0 / 4));
  CHECK(model::bus_factor(CollectiveOp::broadcast, 8) == 1.0);
  CHECK(model::bus_factor(CollectiveOp::send_recv, 2) == 1.0);
}

TEST_CASE("collective: a large all-reduce in one H100 node uses NVLS at its measured bus bandwidth") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const model::CollectiveModel cm(c);
  const double bytes = 1 << 30;
  const auto r = cm.cost(CollectiveOp::all_reduce, bytes, {8, 8});
  CHECK(r.algorithm == "nvls");
  // 25 us base + 2 steps x 0.6 us, then 2 x 7/8 of the buffer at 480 GB/s.
  CHECK(r.seconds == doctest::Approx(25.0e-6 + 2 * 0.6e-6 + bytes * 1.75 / 480e9));
  CHECK(r.busbw_bytes_per_s == doctest::Approx(r.algbw_bytes_per_s * 1.75));
}

TEST_CASE("collective: small messages are latency-bound and pick the ring's LL latency") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const model::CollectiveModel cm(c);
  const auto r = cm.cost(CollectiveOp::all_reduce, 8, {8, 8});
  CHECK(r.algorithm == "ring");
  CHECK(r.seconds == doctest::Approx(6.6e-6 + 14 * 0.6e-6 + 8 * 1.75 / 370e9));
}

TEST_CASE("collective: across nodes the ring is bound by the node's NICs") {
  const auto c = test::preset_cluster("dgx-a100", 2);  // 8 x 200 Gb/s HDR at 92% = 184 GB/s per node
  const model::CollectiveModel cm(c);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {16, 8}) == doctest::Approx(8 * 25e9 * 0.92));
  // All-to-all: half of each rank's buffer leaves the node through the node's 8 NICs.
  const double rate = 8 * 25e9 * 0.92 / (8 * 0.5);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_to_all, {16, 8}) == doctest::Approx(rate * 15 / 16));
}
