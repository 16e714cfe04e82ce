#include "sim/model/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/core/assert.h"

namespace arlsim::model {

namespace {

constexpr std::pair<CollectiveOp, std::string_view> kNames[] = {
    {CollectiveOp::all_reduce, "all_reduce"}, {CollectiveOp::all_gather, "all_gather"},
    {CollectiveOp::reduce_scatter, "reduce_scatter"}, {CollectiveOp::all_to_all, "all_to_all"},
    {CollectiveOp::broadcast, "broadcast"},   {CollectiveOp::send_recv, "send_recv"}};

double log2_ceil(double x) { return std::ceil(std::log2(std::max(x, 1.0))); }

}  // namespace

const char* collective_name(CollectiveOp op) {
  for (const auto& [o, name] : kNames)
    if (o == op) return name.data();
  return "?";
}

bool collective_from_name(std::string_view name, CollectiveOp& out) {
  for (const auto& [o, n] : kNames) {
    if (n == name) {
      out = o;
      return true;
    }
  }
  return false;
}

double bus_factor(CollectiveOp op, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv: return 1;
  }
  return 1;
}

double call_latency_s(const input::GpuProfile& gpu) {
  for (const auto& p : gpu.collective_protocols)
    if (p.algorithm == "ring" && p.protocol == input::Protocol::simple) return p.base.seconds();
  return 0;
}

std::string missing_collective_data(const input::ClusterSpec& cluster) {
  const auto& g = cluster.gpu;
  if (cluster.gpu_link.bandwidth_bytes_per_s <= 0) return "a GPU link (gpu_link)";
  const bool measured_within = std::any_of(g.collectives.begin(), g.collectives.end(),
                                           [](const auto& p) { return p.scope == "intra_node"; });
  if (cluster.gpu_link.efficiency <= 0 && !measured_within)
    return "an achieved GPU-link efficiency (gpu_link/efficiency) or measured collectives within a node";
  const bool ring_simple = std::any_of(g.collective_protocols.begin(), g.collective_protocols.end(), [](const auto& p) {
    return p.algorithm == "ring" && p.protocol == input::Protocol::simple;
  });
  if (!ring_simple) return "the ring algorithm's Simple protocol in collective_protocols";
  if (cluster.nodes > 1 && g.nic_efficiency <= 0) return "the NIC efficiency (efficiency/nic)";
  return {};
}

CollectiveModel::CollectiveModel(const input::ClusterSpec& cluster)
    : cluster_(cluster), complete_(missing_collective_data(cluster).empty()) {
  // A single GPU never communicates: its profile (one measured by `arlsim calibrate` on a CPU, say)
  // need not describe collectives.
  ARLSIM_ASSERT(complete_ || cluster.total_gpus() <= 1);
}

double CollectiveModel::intra_node_busbw(CollectiveOp op, const std::string& algorithm, int64_t ranks) const {
  // A measured point for this op and algorithm wins; all-reduce's ring rate stands in for the
  // other ops' rings (they move the same bytes per link per step). Among several points, the one
  // measured on the nearest number of ranks.
  const std::string name = collective_name(op);
  const auto distance = [&](const input::CollectivePoint& p) {
    return p.ranks > 0 ? std::abs(p.ranks - ranks) : std::numeric_limits<int64_t>::max();
  };
  const input::CollectivePoint *exact = nullptr, *ring_all_reduce = nullptr;
  for (const auto& p : cluster_.gpu.collectives) {
    if (p.scope != "intra_node") continue;
    if (p.op == name && p.algorithm == algorithm && (!exact || distance(p) < distance(*exact))) exact = &p;
    if (p.op == "all_reduce" && p.algorithm == "ring" && (!ring_all_reduce || distance(p) < distance(*ring_all_reduce)))
      ring_all_reduce = &p;
  }
  if (exact) return exact->bus_bandwidth_bytes_per_s;
  // Unmeasured send/recv moves at what one GPU's link achieves; an unmeasured all-to-all as a ring.
  if (op == CollectiveOp::send_recv) return cluster_.gpu_link.achieved();
  if (algorithm == "direct") return intra_node_busbw(op, "ring", ranks);  // unmeasured: as a ring moves it
  if (algorithm == "nvls") return 0;  // only where measured
  if (ring_all_reduce) return ring_all_reduce->bus_bandwidth_bytes_per_s;
  return cluster_.gpu_link.achieved();
}

double CollectiveModel::measured_inter_node_busbw(CollectiveOp op, const CollectiveGroup& group) const {
  // A point measured across nodes (arlsim calibrate under mpirun) with this group's ranks per node:
  // the op's own, else for a ring op the all-reduce's ring; among several, the one over the nearest
  // number of nodes (a ring's rate across nodes is its NICs', whatever their number). Only on the
  // NICs it was measured on: a cluster that sets another NIC rate than the profile's gets the NIC
  // model.
  const double profile_nic = cluster_.gpu.nic_bandwidth_bytes_per_s;
  if (profile_nic > 0 && std::abs(cluster_.nic_bandwidth_bytes_per_s - profile_nic) > 1e-9 * profile_nic) return 0;
  const int64_t per_node = std::min(group.ranks_per_node, cluster_.gpus_per_node);
  const std::string name = collective_name(op);
  const bool ring_op = op != CollectiveOp::all_to_all && op != CollectiveOp::send_recv;
  const auto distance = [&](const input::CollectivePoint& p) { return std::abs(p.nodes - group.nodes()); };
  const input::CollectivePoint *exact = nullptr, *stand_in = nullptr;
  for (const auto& p : cluster_.gpu.collectives) {
    if (p.scope != "inter_node" || p.nodes < 2 || p.ranks / p.nodes != per_node) continue;
    if (p.op == name && (!exact || distance(p) < distance(*exact))) exact = &p;
    if (ring_op && p.op == "all_reduce" && p.algorithm == "ring" && (!stand_in || distance(p) < distance(*stand_in)))
      stand_in = &p;
  }
  if (exact) return exact->bus_bandwidth_bytes_per_s;
  return stand_in ? stand_in->bus_bandwidth_bytes_per_s : 0.0;
}

double CollectiveModel::inter_node_busbw(CollectiveOp op, const CollectiveGroup& group) const {
  if (const double measured = measured_inter_node_busbw(op, group); measured > 0) return measured;
  const double nic = cluster_.nic_bandwidth_bytes_per_s * cluster_.gpu.nic_efficiency;
  const int64_t per_node = std::min(group.ranks_per_node, cluster_.gpus_per_node);
  const double nics = static_cast<double>(std::min<int64_t>(cluster_.nics_per_node, per_node));
  const double intra =
      intra_node_busbw(op == CollectiveOp::all_to_all ? op : CollectiveOp::all_reduce, "ring", std::min(group.ranks, per_node));
  if (op == CollectiveOp::all_to_all) {
    // Each rank sends (n - r)/n of its buffer off its node, through the node's NICs.
    const double n = static_cast<double>(group.ranks), r = static_cast<double>(per_node);
    const double off_node = (n - r) / n;
    const double node_rate = nics * nic;  // bytes/s leaving a node
    const double rank_rate = node_rate / (r * off_node);
    return std::min(intra, rank_rate * (n - 1) / n);
  }
  return std::min(intra, nics * nic);
}

double CollectiveModel::latency_s(const input::CollectiveProtocol& p, const std::string& algorithm, CollectiveOp op,
                                  double bytes, const CollectiveGroup& group) const {
  const int64_t n = group.ranks, nodes = group.nodes();
  const double intra = p.hop_intra_node.seconds(), inter = p.hop_inter_node.seconds();
  if (algorithm == "tree")  // up and down the chain in each node and the tree over the nodes
    return p.base.seconds() + 2 * (static_cast<double>(std::min(group.ranks_per_node, n) - 1) * intra +
                                   log2_ceil(static_cast<double>(nodes)) * inter);
  if (algorithm == "nvls") return p.base.seconds() + (nodes > 1 ? intra + inter : intra);
  if (op == CollectiveOp::send_recv) return p.base.seconds() + (nodes > 1 ? inter : intra);
  // A ring (or the n - 1 exchanges of an all-to-all): 2(n - 1) steps for an all-reduce, n - 1
  // otherwise. A ring over k nodes crosses between nodes k times per pass (NCCL: 2k inter-node
  // steps for an all-reduce, k - 1 for the others).
  const bool all_reduce = op == CollectiveOp::all_reduce;
  const double steps = static_cast<double>(all_reduce ? 2 * (n - 1) : n - 1);
  const double inter_steps =
      nodes <= 1 ? 0.0 : std::min(steps, static_cast<double>(all_reduce ? 2 * nodes : nodes - 1));
  double latency = p.base.seconds() + (steps - inter_steps) * intra + inter_steps * inter;
  // NCCL's plateau of multi-node ring all-reduces beyond a small size (tuning.cc).
  if (all_reduce && nodes > 1 && bytes >= static_cast<double>(n) / 16.0 * 65536.0) latency *= p.multi_node_latency_factor;
  return latency;
}

double CollectiveModel::protocol_busbw(const input::CollectiveProtocol& p, const std::string& algorithm, CollectiveOp op,
                                       double bytes, double simple_busbw, int64_t nodes) const {
  double bw = simple_busbw * p.bandwidth_share;
  const double cap = p.max_bus_bandwidth[nodes <= 1 ? 0 : nodes == 2 ? 1 : 2];
  if (cap > 0) bw = std::min(bw, cap);
  if (algorithm == "tree" && op == CollectiveOp::all_reduce && !p.size_correction.empty()) {
    // Powers of two from 64 B: index floor(log2(bytes / 64)).
    const double index = std::floor(std::log2(std::max(bytes / 64.0, 1.0)));
    if (index < static_cast<double>(p.size_correction.size())) bw *= p.size_correction[static_cast<size_t>(index)];
  }
  return bw;
}

std::vector<CollectiveCost> CollectiveModel::candidates(CollectiveOp op, double bytes, const CollectiveGroup& group) const {
  std::vector<CollectiveCost> out;
  if (group.ranks <= 1) {
    out.push_back({0, "none", "", 0, 0});
    return out;
  }
  ARLSIM_ASSERT(complete_);
  const bool multi_node = group.nodes() > 1;
  std::vector<std::string> algorithms{op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv ? "direct" : "ring"};
  if (op == CollectiveOp::all_reduce && multi_node) algorithms.push_back("tree");
  if (op == CollectiveOp::all_reduce && !multi_node && intra_node_busbw(op, "nvls", group.ranks) > 0) algorithms.push_back("nvls");
  const double factor = bus_factor(op, group.ranks);
  for (const auto& a : algorithms) {
    // The algorithm's bus bandwidth with the Simple protocol: measured within a node, the NICs'
    // share across nodes.
    double busbw = 0;
    if (op == CollectiveOp::send_recv && multi_node) {
      const double measured = measured_inter_node_busbw(op, group);
      busbw = measured > 0 ? measured : cluster_.nic_bandwidth_bytes_per_s * cluster_.gpu.nic_efficiency;
    } else if (op == CollectiveOp::send_recv)
      busbw = intra_node_busbw(op, a, 2);
    else if (multi_node) busbw = inter_node_busbw(op, group);
    else busbw = intra_node_busbw(op, a, group.ranks);
    // Point-to-point work (all-to-all, send/recv) runs the ring's protocols.
    const std::string& table = a == "direct" ? std::string("ring") : a;
    for (const auto& p : cluster_.gpu.collective_protocols) {
      if (p.algorithm != table) continue;
      const double bw = protocol_busbw(p, a, op, bytes, busbw, group.nodes());
      CollectiveCost c;
      c.algorithm = a;
      c.protocol = input::protocol_name(p.protocol);
      c.seconds = latency_s(p, a, op, bytes, group) + bytes * factor / bw;
      c.algbw_bytes_per_s = c.seconds > 0 ? bytes / c.seconds : 0.0;
      c.busbw_bytes_per_s = c.algbw_bytes_per_s * factor;
      out.push_back(c);
    }
  }
  return out;
}

CollectiveCost CollectiveModel::cost(CollectiveOp op, double bytes, const CollectiveGroup& group) const {
  auto all = candidates(op, bytes, group);
  ARLSIM_ASSERT(!all.empty());
  return *std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
}

}  // namespace arlsim::model
