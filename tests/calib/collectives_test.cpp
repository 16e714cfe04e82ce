// Calibration of collectives: nccl-tests' conventions, the ring's latency fitted, groups across
// nodes, in place and out of place, a CPU's threads.
#include "calib/harness/harness.h"

#include <doctest/doctest.h>

#include "calib/cpu/cpu_device.h"
#include "sim/model/collective.h"
#include "tests/calib/calib_fixtures.h"

using namespace arlsim;
using test::FakeDevice;
using test::round_trip;

TEST_CASE("calibrate: collectives in nccl-tests' bus bandwidth, the largest size per group, the ring's latency fitted") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  CHECK(p.collective_ranks == std::vector<int64_t>{2, 4});
  CHECK(p.collective_bytes.front() == 8);
  const auto r = calib::measure(d, p);
  // Six ops out of place and the four NCCL runs in place (not all-to-all, not send/recv) in place
  // too, at each size of each group size.
  REQUIRE(r.collectives.size() == 2 * (6 + 4) * p.collective_bytes.size());
  int64_t in_place = 0;
  for (const auto& c : r.collectives) {
    in_place += c.in_place ? 1 : 0;
    CHECK_FALSE((c.in_place && (c.op == model::CollectiveOp::all_to_all || c.op == model::CollectiveOp::send_recv)));
  }
  CHECK(in_place == 2 * 4 * static_cast<int64_t>(p.collective_bytes.size()));
  for (const auto& c : r.collectives) {
    if (c.in_place) {
      CHECK(c.seconds.median == doctest::Approx(FakeDevice::collective_seconds(c.op, c.bytes, c.ranks) - 1e-6));
      continue;
    }
    const double n = static_cast<double>(c.ranks);
    double factor = 1;  // broadcast, send/recv
    if (c.op == model::CollectiveOp::all_reduce) factor = 2 * (n - 1) / n;
    if (c.op == model::CollectiveOp::all_gather || c.op == model::CollectiveOp::reduce_scatter ||
        c.op == model::CollectiveOp::all_to_all)
      factor = (n - 1) / n;
    CHECK(c.algbw() == doctest::Approx(c.bytes / FakeDevice::collective_seconds(c.op, c.bytes, c.ranks)));
    CHECK(c.busbw() == doctest::Approx(c.algbw() * factor));
  }
  const auto g = round_trip(r, "fake-collectives.json");
  // One point per op and group size: its bus bandwidth at the largest size.
  REQUIRE(g.collectives.size() == 12);
  const double top = p.collective_bytes.back();
  for (const auto& c : g.collectives) {
    CHECK(c.scope == "intra_node");
    const auto op = c.op == "all_reduce" ? model::CollectiveOp::all_reduce : c.op == "send_recv" ? model::CollectiveOp::send_recv
                                                                                                : model::CollectiveOp::broadcast;
    if (c.op != "all_reduce" && c.op != "send_recv" && c.op != "broadcast") continue;
    CHECK(c.algorithm == (c.op == "send_recv" ? "direct" : "ring"));
    // From the in-place runs (1 us faster in the fake), but send/recv's from its out-of-place ones.
    const double in_place_s = op == model::CollectiveOp::send_recv ? 0 : 1e-6;
    const double want = top * model::bus_factor(op, c.ranks) / (FakeDevice::collective_seconds(op, top, c.ranks) - in_place_s);
    CHECK(c.bus_bandwidth_bytes_per_s == doctest::Approx(want).epsilon(1e-4));
  }
  // t = base + 2(n - 1) hop from the 8-byte in-place all-reduces of 2 and 4 ranks: 3 - 1 us and 5 us back.
  REQUIRE(g.collective_protocols.size() == 1);
  CHECK(g.collective_protocols[0].algorithm == "ring");
  CHECK(g.collective_protocols[0].base.seconds() == doctest::Approx(2e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  // The cost model prices collectives from it: the profile's all-reduce rate and latency come back.
  input::ClusterSpec cluster;
  cluster.gpu = g;
  cluster.gpus_per_node = 4;
  cluster.nodes = 1;
  cluster.gpu_link = g.gpu_link;
  REQUIRE(model::missing_collective_data(cluster).empty());
}

namespace {

// Sixteen processes on two nodes: 2 us, 5 us per ring step within a node and 12 us per step
// between nodes (2 x nodes of an all-reduce's 2(n - 1), nodes - 1 of the other rings, the one of
// a send/recv), and the bytes each process moves at 40 GB/s.
class FakeFabric final : public calib::Fabric {
 public:
  int64_t ranks() const override { return 16; }
  int64_t nodes() const override { return 2; }
  std::string link() const override { return "fake fabric"; }
  static double seconds(model::CollectiveOp op, double bytes) {
    const bool all_reduce = op == model::CollectiveOp::all_reduce, send_recv = op == model::CollectiveOp::send_recv;
    const double steps = all_reduce ? 30 : send_recv ? 1 : 15, between = all_reduce ? 4 : 1;
    return 2e-6 + (steps - between) * 5e-6 + between * 12e-6 + bytes * model::bus_factor(op, 16) / 40e9;
  }
  std::optional<double> collective(model::CollectiveOp op, double bytes, double* used, bool) override {
    *used = bytes;
    if (fail_broadcast && op == model::CollectiveOp::broadcast) return std::nullopt;
    return seconds(op, bytes);
  }
  std::string problem() const override { return "the fabric's check failed"; }
  bool fail_broadcast = false;
};

}  // namespace

TEST_CASE("calibrate: collectives across nodes become inter-node points, the hop between nodes and the NIC's efficiency") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  auto r = calib::measure(d, p);
  FakeFabric f;
  f.fail_broadcast = true;
  calib::measure_fabric(f, p, r);
  r.nic = {25e9, 0};
  // Every op at every size, the four NCCL runs in place too, less the broadcast's, which failed.
  REQUIRE(r.inter_node.size() == 8 * p.collective_bytes.size());
  CHECK(r.fabric == "fake fabric");
  CHECK(std::any_of(r.excluded.begin(), r.excluded.end(), [](const std::string& e) {
    return e.rfind("broadcast x16 over 2 nodes 8 B: the fabric's check failed", 0) == 0;
  }));
  for (const auto& c : r.inter_node) {
    CHECK(c.ranks == 16);
    CHECK(c.nodes == 2);
    CHECK(c.seconds.median == doctest::Approx(FakeFabric::seconds(c.op, c.bytes)));
  }
  const auto g = round_trip(r, "fake-inter-node.json");
  const double top = p.collective_bytes.back();
  int64_t inter = 0;
  double all_reduce_busbw = 0;
  for (const auto& c : g.collectives) {
    if (c.scope != "inter_node") continue;
    ++inter;
    CHECK(c.ranks == 16);
    CHECK(c.nodes == 2);
    CHECK(c.op != "broadcast");
    const auto op = c.op == "all_reduce"   ? model::CollectiveOp::all_reduce
                    : c.op == "send_recv"  ? model::CollectiveOp::send_recv
                    : c.op == "all_to_all" ? model::CollectiveOp::all_to_all
                    : c.op == "all_gather" ? model::CollectiveOp::all_gather
                                           : model::CollectiveOp::reduce_scatter;
    CHECK(c.algorithm == (c.op == "send_recv" || c.op == "all_to_all" ? "direct" : "ring"));
    const double want = top * model::bus_factor(op, 16) / FakeFabric::seconds(op, top);
    CHECK(c.bus_bandwidth_bytes_per_s == doctest::Approx(want).epsilon(1e-4));
    if (op == model::CollectiveOp::all_reduce) all_reduce_busbw = want;
  }
  CHECK(inter == 5);
  // The hop between nodes from the 8-byte all-reduce, with the hop and base fitted within a node
  // (5 us and 2 us): 12 us back.
  REQUIRE(g.collective_protocols.size() == 1);
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_inter_node.seconds() == doctest::Approx(12e-6).epsilon(1e-3));
  // The NIC's efficiency: the all-reduce's bus bandwidth over the 8 NICs a node's 8 processes use.
  CHECK(g.nic_bandwidth_bytes_per_s == doctest::Approx(25e9));
  CHECK(g.nic_efficiency == doctest::Approx(all_reduce_busbw / (8 * 25e9)).epsilon(1e-3));
  // The cost model prices a 16-GPU all-reduce over 2 nodes at the measured rate.
  input::ClusterSpec cluster;
  cluster.gpu = g;
  cluster.gpus_per_node = 8;
  cluster.nodes = 2;
  cluster.nics_per_node = 8;
  cluster.nic_bandwidth_bytes_per_s = g.nic_bandwidth_bytes_per_s;
  cluster.gpu_link = g.gpu_link;
  REQUIRE(model::missing_collective_data(cluster).empty());
  const model::CollectiveModel cm(cluster);
  CHECK(cm.inter_node_busbw(model::CollectiveOp::all_reduce, {16, 8}) == doctest::Approx(all_reduce_busbw).epsilon(1e-4));
  // Without the NIC's rate no efficiency is derived, and the notes say so.
  r.nic = {};
  const auto bare = round_trip(r, "fake-inter-node-bare.json");
  CHECK(bare.nic_efficiency == 0);
  CHECK(bare.provenance.notes.find("no NIC rate stated") != std::string::npos);
}

TEST_CASE("calibrate: a GPU's collective groups go up to its node's GPUs; a machine of one GPU has none") {
  FakeDevice d;
  calib::DeviceInfo gpu = d.info();  // bf16: a GPU's plan
  const std::vector<calib::Op> ops = {calib::Op::collective};
  CHECK(calib::make_plan(gpu, ops, true).collective_ranks == std::vector<int64_t>{2, 4, 8});
  gpu.max_ranks = 1;
  const calib::Plan one = calib::make_plan(gpu, ops, true);
  CHECK(one.collective_ranks.empty());
  CHECK(calib::estimated_seconds(one, 1e12, 1e9, 1e-5) == 0.0);
  // Asked for (the program refuses --ranks on such a machine), a group is planned and each of its
  // points fails its check, reported.
  CHECK(calib::make_plan(gpu, ops, true, 2).collective_ranks == std::vector<int64_t>{2});
}

TEST_CASE("calibrate: collectives whose in-place runs all fail are fitted to their out-of-place runs") {
  FakeDevice d;
  d.fail_in_place = true;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  const auto r = calib::measure(d, p);
  CHECK(d.in_place_calls > 0);
  for (const auto& c : r.collectives) CHECK_FALSE(c.in_place);
  CHECK_FALSE(r.excluded.empty());  // the failed in-place runs are reported
  const auto g = round_trip(r, "fake-no-in-place.json");
  REQUIRE(g.collective_protocols.size() == 1);
  // The out-of-place all-reduces' 3 us and 5 us per step.
  CHECK(g.collective_protocols[0].base.seconds() == doctest::Approx(3e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  CHECK(g.collectives.size() == 2 * 5);
}

TEST_CASE("calibrate: send/recv alone fits its latency to one hop, not to a ring") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  const auto g = round_trip(calib::measure(d, p), "fake-p2p.json");
  REQUIRE(g.collective_protocols.size() == 1);
  // Both group sizes give one step: no base to separate, the mean time per hop (the fake's send/recv
  // takes 3 us + (n - 1) x 5 us: 8 us at 2 ranks, 18 us at 4).
  CHECK(g.collective_protocols[0].base.seconds() == 0);
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(13e-6).epsilon(1e-2));
  // Ops not asked for leave no points and no notes.
  CHECK(g.provenance.notes.find("GEMM grid") == std::string::npos);
  CHECK(g.attention_efficiency.empty());
}

TEST_CASE("calibrate: the CPU device's collectives among 3 threads, at sizes that do not split evenly, check out") {
  auto dev = calib::make_cpu_device();
  for (auto op : {model::CollectiveOp::all_reduce, model::CollectiveOp::all_gather, model::CollectiveOp::reduce_scatter,
                  model::CollectiveOp::all_to_all, model::CollectiveOp::broadcast, model::CollectiveOp::send_recv})
    for (double bytes : {4.0, 400.0, 100000.0}) {
      double used = 0;
      for (const bool in_place : {false, true}) {
        if (in_place && !calib::in_place_capable(op)) continue;
        const auto t = dev->collective(op, bytes, 3, &used, in_place);
        CHECK_MESSAGE(t.has_value(), model::collective_name(op), " ", bytes, (in_place ? " in place: " : ": "), dev->problem());
        CHECK(used >= bytes);
      }
    }
  // Attention forward and backward pass their reference rows at a length that is not a multiple of
  // the 128-query block.
  CHECK(dev->attention(300, 64, false).has_value());
  CHECK(dev->attention(300, 64, true).has_value());
}

