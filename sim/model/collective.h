// Collective communication time: an alpha-beta model per algorithm, in NCCL's terms.
//
//   time = latency(algorithm, steps) + size x factor(op, n) / bus_bandwidth(algorithm, scope)
//
// The factor and the bus bandwidth are those nccl-tests reports (doc/PERFORMANCE.md there):
// all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; broadcast and
// send/recv 1 — so a profile's measured bus bandwidth plugs in directly. Each algorithm runs one of
// NCCL's protocols (LL, LL128, Simple), each with its own latency (a base plus a hop latency per
// step) and share of the bus bandwidth, and the call takes the fastest pair as NCCL's tuner does
// (src/graph/tuning.cc): LL for small sizes, LL128 in the middle, Simple for large ones.
// Across nodes a ring's C channels each cross one NIC, so its bus bandwidth is the smaller of the
// intra-node rate and the node's aggregate NIC rate; the tree has the same bandwidth and
// logarithmic latency; NVLS (NVLink SHARP) only where the profile has measured it. A bus bandwidth
// the profile measured across nodes (`arlsim calibrate` under mpirun) for the group's ranks per
// node takes the NICs' place, on a cluster with the NIC rate the profile states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/input/cluster.h"

namespace arlsim::model {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
const char* collective_name(CollectiveOp op);
bool collective_from_name(std::string_view name, CollectiveOp& out);

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor.
double bus_factor(CollectiveOp op, int64_t ranks);

struct CollectiveCost {
  double seconds = 0;
  std::string algorithm;  // ring, tree, nvls, direct
  std::string protocol;   // LL, LL128, Simple
  double algbw_bytes_per_s = 0;  // size / time
  double busbw_bytes_per_s = 0;  // algbw x factor
};

struct CollectiveGroup {
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;  // consecutive ranks share a node
  int64_t nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
};

// A group of `ranks` members `stride` devices apart, on nodes of `gpus_per_node` filled in order
// from a node's first device: as many members share a node as fit it that far apart.
inline CollectiveGroup strided_group(int64_t ranks, int64_t stride, int64_t gpus_per_node) {
  CollectiveGroup g;
  g.ranks = ranks;
  const int64_t fit = gpus_per_node / (stride > 1 ? stride : 1);
  g.ranks_per_node = fit < 1 ? 1 : fit > ranks ? ranks : fit;
  return g;
}

// The fixed start-up time of one NCCL call: the ring's Simple protocol base latency (0 when the
// profile has none).
double call_latency_s(const input::GpuProfile& gpu);

// What a cluster's profile lacks for collective costs, or "".
std::string missing_collective_data(const input::ClusterSpec& cluster);

class CollectiveModel {
 public:
  explicit CollectiveModel(const input::ClusterSpec& cluster);

  // `bytes` is the size nccl-tests reports: the buffer of all-reduce and broadcast, the whole
  // output of all-gather, the whole input of reduce-scatter, each rank's buffer of all-to-all.
  CollectiveCost cost(CollectiveOp op, double bytes, const CollectiveGroup& group) const;
  // All algorithms that apply, for reports and tests.
  std::vector<CollectiveCost> candidates(CollectiveOp op, double bytes, const CollectiveGroup& group) const;

  // Within a node, for a group of `ranks`: the measured point of that op and algorithm whose rank
  // count is nearest (a point without one counts as farthest), else all-reduce's ring point, else
  // the profile's GPU link.
  double intra_node_busbw(CollectiveOp op, const std::string& algorithm, int64_t ranks) const;
  double inter_node_busbw(CollectiveOp op, const CollectiveGroup& group) const;
  // A profile's point measured across nodes for this op and group shape (0: none).
  double measured_inter_node_busbw(CollectiveOp op, const CollectiveGroup& group) const;

 private:
  double latency_s(const input::CollectiveProtocol& p, const std::string& algorithm, CollectiveOp op, double bytes,
                   const CollectiveGroup& group) const;
  double protocol_busbw(const input::CollectiveProtocol& p, const std::string& algorithm, CollectiveOp op, double bytes,
                        double simple_busbw, int64_t nodes) const;

  const input::ClusterSpec& cluster_;
  bool complete_ = false;  // the cluster has the data collectives need (a single GPU may lack it)
};

}  // namespace arlsim::model
