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

// The formulas on the test's own profile (tests/model/model_fixtures.h: own_cluster).
TEST_CASE("collective: a large all-reduce in one node uses NVLS at its measured bus bandwidth") {
  const auto c = test::own_cluster(1);
  const model::CollectiveModel cm(c);
  const double bytes = 1 << 30;
  const auto r = cm.cost(CollectiveOp::all_reduce, bytes, {8, 8});
  CHECK(r.algorithm == "nvls");
  // 20 us base + 2 steps x 1 us, then 2 x 7/8 of the buffer at 400 GB/s.
  CHECK(r.seconds == doctest::Approx(20e-6 + 2 * 1e-6 + bytes * 1.75 / 400e9));
  CHECK(r.busbw_bytes_per_s == doctest::Approx(r.algbw_bytes_per_s * 1.75));
}

TEST_CASE("collective: small messages are latency-bound and pick the ring's latency") {
  const auto c = test::own_cluster(1);
  const model::CollectiveModel cm(c);
  const auto r = cm.cost(CollectiveOp::all_reduce, 8, {8, 8});
  CHECK(r.algorithm == "ring");
  // 5 us base + 2 (n - 1) = 14 steps x 1 us, then the bytes at the ring's 300 GB/s.
  CHECK(r.seconds == doctest::Approx(5e-6 + 14 * 1e-6 + 8 * 1.75 / 300e9));
}

TEST_CASE("collective: across nodes the ring is bound by the node's NICs") {
  const auto c = test::own_cluster(2);  // 8 NICs of 25 GB/s at 90% = 180 GB/s per node, under the 300 GB/s ring
  const model::CollectiveModel cm(c);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {16, 8}) == doctest::Approx(8 * 25e9 * 0.9));
  // All-to-all: half of each rank's buffer leaves the node through the node's 8 NICs.
  const double rate = 8 * 25e9 * 0.9 / (8 * 0.5);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_to_all, {16, 8}) == doctest::Approx(rate * 15 / 16));
}
