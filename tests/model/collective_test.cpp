#include <doctest/doctest.h>

#include "sim/model/collective.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;
using model::CollectiveOp;

TEST_CASE("collective: bus-bandwidth factors as nccl-tests defines them") {
  CHECK(model::bus_factor(CollectiveOp::all_reduce, 8) == test::near(2.0 * 7 / 8));
  CHECK(model::bus_factor(CollectiveOp::all_gather, 8) == test::near(7.0 / 8));
  CHECK(model::bus_factor(CollectiveOp::reduce_scatter, 16) == test::near(15.0 / 16));
  CHECK(model::bus_factor(CollectiveOp::all_to_all, 4) == test::near(3.0 / 4));
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
  // 20 us base + one NVLS hop (0 us here), then 2 x 7/8 of the buffer at 400 GB/s.
  CHECK(r.seconds == test::near(20e-6 + bytes * 1.75 / 400e9));
  CHECK(r.busbw_bytes_per_s == test::near(r.algbw_bytes_per_s * 1.75));
}

TEST_CASE("collective: small messages are latency-bound and pick the ring's latency") {
  const auto c = test::own_cluster(1);
  const model::CollectiveModel cm(c);
  const auto r = cm.cost(CollectiveOp::all_reduce, 8, {8, 8});
  CHECK(r.algorithm == "ring");
  // 5 us base + 2 (n - 1) = 14 steps x 1 us, then the bytes at the ring's 300 GB/s.
  CHECK(r.seconds == test::near(5e-6 + 14 * 1e-6 + 8 * 1.75 / 300e9));
}

TEST_CASE("collective: across nodes the ring is bound by the node's NICs") {
  const auto c = test::own_cluster(2);  // 8 NICs of 25 GB/s at 90% = 180 GB/s per node, under the 300 GB/s ring
  const model::CollectiveModel cm(c);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {16, 8}) == test::near(8 * 25e9 * 0.9));
  // All-to-all: half of each rank's buffer leaves the node through the node's 8 NICs.
  const double rate = 8 * 25e9 * 0.9 / (8 * 0.5);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_to_all, {16, 8}) == test::near(rate * 15 / 16));
}

TEST_CASE("collective: a bus bandwidth measured across nodes takes the NICs' place for its group shape") {
  auto c = test::own_cluster(4);
  // Measured by calibrate under mpirun: an all-reduce of 16 GPUs over 2 nodes, an all-to-all of 8 over 2.
  c.gpu.collectives.push_back({"all_reduce", "inter_node", "ring", 16, 120e9, 2});
  c.gpu.collectives.push_back({"all_to_all", "inter_node", "direct", 8, 20e9, 2});
  const model::CollectiveModel cm(c);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {16, 8}) == test::near(120e9));
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {32, 8}) == test::near(120e9));  // 8 a node, over 4 nodes
  CHECK(cm.inter_node_busbw(CollectiveOp::all_gather, {16, 8}) == test::near(120e9));  // the all-reduce's ring stands in
  CHECK(cm.inter_node_busbw(CollectiveOp::all_to_all, {8, 4}) == test::near(20e9));
  // Other shapes: the NICs as before (4 a node: 4 NICs of 25 GB/s at 90%; 8 a node, all-to-all unmeasured).
  CHECK(cm.inter_node_busbw(CollectiveOp::all_reduce, {8, 4}) == test::near(4 * 25e9 * 0.9));
  const double rate = 8 * 25e9 * 0.9 / (8 * 0.5);
  CHECK(cm.inter_node_busbw(CollectiveOp::all_to_all, {16, 8}) == test::near(rate * 15 / 16));
  // The cost of a large all-reduce over 2 nodes moves at the measured rate.
  const double bytes = 8e9;
  const auto cost = cm.cost(CollectiveOp::all_reduce, bytes, {16, 8});
  CHECK(cost.busbw_bytes_per_s <= 120e9);
  CHECK(cost.busbw_bytes_per_s > 0.95 * 120e9);
  // On other NICs than the profile's the measurement does not hold: the NIC model again.
  auto other = c;
  other.nic_bandwidth_bytes_per_s = 20e9;
  CHECK(model::CollectiveModel(other).inter_node_busbw(CollectiveOp::all_reduce, {16, 8}) == test::near(8 * 20e9 * 0.9));
}

namespace {

// NCCL 2.28's ring protocols on NVLink (tuning.cc), on the test's own cluster otherwise.
input::ClusterSpec nccl_cluster(int64_t nodes) {
  auto c = test::own_cluster(nodes);
  auto protocol = [](const char* algorithm, input::Protocol p, double base, double intra, double inter, double share) {
    input::CollectiveProtocol e;
    e.algorithm = algorithm;
    e.protocol = p;
    e.base = SimTime::from_seconds(base * 1e-6);
    e.hop_intra_node = SimTime::from_seconds(intra * 1e-6);
    e.hop_inter_node = SimTime::from_seconds(inter * 1e-6);
    e.bandwidth_share = share;
    return e;
  };
  auto ll = protocol("ring", input::Protocol::ll, 6.6, 0.6, 2.7, 0.5);
  ll.max_bus_bandwidth[0] = 141e9;
  ll.max_bus_bandwidth[1] = 39e9;
  auto simple = protocol("ring", input::Protocol::simple, 8.4, 3.4, 14.0, 1.0);
  simple.multi_node_latency_factor = 1.4;
  auto tree = protocol("tree", input::Protocol::simple, 8.4, 4.0, 14.0, 0.92);
  tree.size_correction = {0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5};
  c.gpu.collective_protocols = {ll, protocol("ring", input::Protocol::ll128, 14.0, 1.9, 4.0, 0.92), simple, tree};
  c.gpu.collectives = {{"all_reduce", "intra_node", "ring", 8, 300e9}};
  return c;
}

}  // namespace

TEST_CASE("collective: the protocol is chosen by size: LL small, LL128 in the middle, Simple large") {
  const auto c = nccl_cluster(1);
  const model::CollectiveModel cm(c);
  // 8 ranks, all-reduce: 2 (n - 1) = 14 steps; 2 x 7/8 of the buffer at each protocol's rate.
  const double small = 4096, middle = 16 << 20, large = 1 << 30;
  const auto s = cm.cost(CollectiveOp::all_reduce, small, {8, 8});
  CHECK(s.protocol == "LL");
  // LL: 6.6 + 14 x 0.6 us, at min(0.5 x 300, 141) GB/s.
  CHECK(s.seconds == test::near(6.6e-6 + 14 * 0.6e-6 + small * 1.75 / 141e9));
  const auto m = cm.cost(CollectiveOp::all_reduce, middle, {8, 8});
  CHECK(m.protocol == "LL128");
  // LL128: 14 + 14 x 1.9 us, at 0.92 x 300 GB/s.
  CHECK(m.seconds == test::near(14e-6 + 14 * 1.9e-6 + middle * 1.75 / (0.92 * 300e9)));
  const auto l = cm.cost(CollectiveOp::all_reduce, large, {8, 8});
  CHECK(l.protocol == "Simple");
  CHECK(l.seconds == test::near(8.4e-6 + 14 * 3.4e-6 + large * 1.75 / 300e9));
  // Bus bandwidth grows with the size and stays below the Simple protocol's.
  CHECK(s.busbw_bytes_per_s < m.busbw_bytes_per_s);
  CHECK(m.busbw_bytes_per_s < l.busbw_bytes_per_s);
  CHECK(l.busbw_bytes_per_s < 300e9);
}

TEST_CASE("collective: across nodes a ring all-reduce crosses 2 x nodes NIC hops and plateaus") {
  const auto c = nccl_cluster(2);
  const model::CollectiveModel cm(c);
  const double bytes = 64 << 20;
  // 16 ranks on 2 nodes: 30 steps, 4 of them between nodes; the plateau x 1.4 beyond
  // 16/16 x 64 KiB; 2 x 15/16 of the buffer at the NICs' 8 x 25 x 0.9 = 180 GB/s per node.
  const auto all = cm.candidates(CollectiveOp::all_reduce, bytes, {16, 8});
  const model::CollectiveCost* ring_simple = nullptr;
  const model::CollectiveCost* tree = nullptr;
  for (const auto& k : all) {
    if (k.algorithm == "ring" && k.protocol == "Simple") ring_simple = &k;
    if (k.algorithm == "tree") tree = &k;
  }
  REQUIRE(ring_simple);
  REQUIRE(tree);
  CHECK(ring_simple->seconds == test::near(1.4 * (8.4e-6 + 26 * 3.4e-6 + 4 * 14e-6) + bytes * 1.875 / 180e9));
  // Tree: base + 2 ((8 - 1) intra + log2(2) inter hops), at 0.92 x 180 GB/s corrected for the size:
  // 64 MiB / 64 B = 2^20, past the table's last entry (index 14), so no correction.
  CHECK(tree->seconds == test::near(8.4e-6 + 2 * (7 * 4e-6 + 14e-6) + bytes * 1.875 / (0.92 * 180e9)));
  // At 1 MiB the tree's bandwidth is halved (index log2(2^20 / 64) = 14: 0.5).
  const double mib = 1 << 20;
  for (const auto& k : cm.candidates(CollectiveOp::all_reduce, mib, {16, 8}))
    if (k.algorithm == "tree")
      CHECK(k.seconds == test::near(8.4e-6 + 2 * (7 * 4e-6 + 14e-6) + mib * 1.875 / (0.5 * 0.92 * 180e9)));
  // LL across two nodes is capped at 39 GB/s.
  const auto tiny = cm.cost(CollectiveOp::all_reduce, 1024, {16, 8});
  CHECK(tiny.protocol == "LL");
  CHECK(tiny.seconds == test::near(6.6e-6 + 26 * 0.6e-6 + 4 * 2.7e-6 + 1024 * 1.875 / 39e9));
}

TEST_CASE("collective: point-to-point moves at the measured send/recv rate of a pair") {
  auto c = nccl_cluster(1);
  const double bytes = 256 << 20;
  {
    const model::CollectiveModel cm(c);  // unmeasured: the GPU link's achieved 400 x 0.8 GB/s
    CHECK(cm.cost(CollectiveOp::send_recv, bytes, {2, 2}).seconds == test::near(8.4e-6 + 3.4e-6 + bytes / 320e9));
  }
  c.gpu.collectives.push_back({"send_recv", "intra_node", "direct", 2, 150e9});
  const model::CollectiveModel cm(c);
  CHECK(cm.cost(CollectiveOp::send_recv, bytes, {2, 2}).seconds == test::near(8.4e-6 + 3.4e-6 + bytes / 150e9));
}
