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

// Sequential steps of each algorithm (NCCL: ring all-reduce 2(n-1), tree 2 log2 n, ...).
double steps(const std::string& algorithm, CollectiveOp op, int64_t n) {
  const double nd = static_cast<double>(n);
  if (op == CollectiveOp::send_recv) return 1;
  if (algorithm == "tree") return 2 * std::ceil(std::log2(std::max(nd, 2.0)));
  if (algorithm == "nvls") return 2;
  if (op == CollectiveOp::all_reduce) return 2 * (nd - 1);
  return nd - 1;
}

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

std::string missing_collective_data(const input::ClusterSpec& cluster) {
  const auto& g = cluster.gpu;
  if (cluster.gpu_link.bandwidth_bytes_per_s <= 0) return "a GPU link (gpu_link)";
  if (cluster.gpu_link.efficiency <= 0 && g.collectives.empty())
    return "an achieved GPU-link efficiency (gpu_link/efficiency) or measured collectives";
  if (g.collective_latency.hop_intra_node.ns() <= 0) return "the collective latency model (collective_latency)";
  if (cluster.nodes > 1 && g.nic_efficiency <= 0) return "the NIC efficiency (efficiency/nic)";
  return {};
}

CollectiveModel::CollectiveModel(const input::ClusterSpec& cluster) : cluster_(cluster) {
  ARLSIM_ASSERT(missing_collective_data(cluster).empty());
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
  if (algorithm == "direct") return intra_node_busbw(op, "ring", ranks);  // unmeasured: as a ring moves it
  if (algorithm == "nvls") return 0;  // only where measured
  if (ring_all_reduce) return ring_all_reduce->bus_bandwidth_bytes_per_s;
  return cluster_.gpu_link.achieved();
}

double CollectiveModel::inter_node_busbw(CollectiveOp op, const CollectiveGroup& group) const {
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

double CollectiveModel::latency_s(const std::string& algorithm, CollectiveOp op, const CollectiveGroup& group) const {
  const auto& l = cluster_.gpu.collective_latency;
  const SimTime base = algorithm == "tree" ? l.tree_base : algorithm == "nvls" ? l.nvls_base : l.ring_base;
  const SimTime hop = group.nodes() > 1 ? l.hop_inter_node : l.hop_intra_node;
  return base.seconds() + steps(algorithm, op, group.ranks) * hop.seconds();
}

std::vector<CollectiveCost> CollectiveModel::candidates(CollectiveOp op, double bytes, const CollectiveGroup& group) const {
  std::vector<CollectiveCost> out;
  if (group.ranks <= 1) {
    out.push_back({0, "none", 0, 0});
    return out;
  }
  const bool multi_node = group.nodes() > 1;
  std::vector<std::string> algorithms{op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv ? "direct" : "ring"};
  if (op == CollectiveOp::all_reduce && multi_node) algorithms.push_back("tree");
  if (op == CollectiveOp::all_reduce && !multi_node && intra_node_busbw(op, "nvls", group.ranks) > 0) algorithms.push_back("nvls");
  const double factor = bus_factor(op, group.ranks);
  for (const auto& a : algorithms) {
    double busbw = 0;
    if (op == CollectiveOp::send_recv)
      busbw = multi_node ? cluster_.nic_bandwidth_bytes_per_s * cluster_.gpu.nic_efficiency : cluster_.gpu_link.achieved();
    else if (multi_node) busbw = inter_node_busbw(op, group);
    else busbw = intra_node_busbw(op, a, group.ranks);
    CollectiveCost c;
    c.algorithm = a;
    c.seconds = latency_s(a, op, group) + bytes * factor / busbw;
    c.algbw_bytes_per_s = bytes / c.seconds;
    c.busbw_bytes_per_s = c.algbw_bytes_per_s * factor;
    out.push_back(c);
  }
  return out;
}

CollectiveCost CollectiveModel::cost(CollectiveOp op, double bytes, const CollectiveGroup& group) const {
  auto all = candidates(op, bytes, group);
  return *std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
}

}  // namespace arlsim::model
