// The cluster as a graph of links (Boost.Graph): GPUs, each node's NVSwitch, NICs, leaf and
// spine switches, with the achieved bandwidth of every directed link. Flows between GPUs take a
// fixed shortest path; concurrent flows share links max-min fairly (progressive filling,
// Bertsekas & Gallager, "Data Networks", sec. 6.5.2), which the simulator uses for dispatch and
// weight sync so that hot spots show. Besides GPUs, traffic can start or end at a node's host
// memory (over each GPU's host link, and to the network through the node's NICs) and at a
// single controller process whose link hangs off the leaf switch of its node.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/input/cluster.h"

namespace arlsim::model {

struct LinkInfo {
  std::string name;  // "gpu3->nvswitch0", "nic1.2->leaf0", ...
  double capacity_bytes_per_s = 0;
};

enum class EndpointKind { gpu, host, controller };

// Where a flow starts or ends: a GPU (by global id), the host memory of a node (by node), or the
// controller.
struct Endpoint {
  EndpointKind kind = EndpointKind::gpu;
  int64_t index = 0;
  static Endpoint gpu(int64_t id) { return {EndpointKind::gpu, id}; }
  static Endpoint host(int64_t node) { return {EndpointKind::host, node}; }
  static Endpoint controller() { return {EndpointKind::controller, 0}; }
  auto operator<=>(const Endpoint&) const = default;
};

// A single controller process (a Ray driver) on the host of `node`, reached over one link of the
// given achieved bandwidth in each direction (EARL's baseline: TCP at 25 Gbps).
struct ControllerLink {
  int64_t node = 0;
  double capacity_bytes_per_s = 0;
};

class Topology;

// Breadth-first trees from the sources routed so far, kept between calls of Topology::routes()
// on one topology (the dispatch of every step of a run reuses them). Holds at most about
// `max_bytes` of trees; when full it drops them all, which costs little because routes come
// grouped by source.
class RouteCache {
 public:
  explicit RouteCache(size_t max_bytes = size_t{64} << 20) : max_bytes_(max_bytes) {}

 private:
  friend class Topology;
  using Tree = std::vector<std::pair<uint32_t, uint32_t>>;  // per vertex: (parent, link id)
  size_t max_bytes_;
  const Topology* owner_ = nullptr;  // the topology it serves, set on first use
  size_t limit_ = 0;                 // trees held at most; set by the topology on first use
  size_t held_ = 0;
  std::vector<Tree> by_source_;      // per vertex; empty: not searched
};

class Topology {
 public:
  explicit Topology(const input::ClusterSpec& cluster, std::optional<ControllerLink> controller = std::nullopt);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // The bytes a topology of this cluster holds: its links (with their names), the routing graph's
  // vertices and edges, and the per-GPU link tables; from the counts the constructor makes.
  static double bytes_for(const input::ClusterSpec& cluster);

  int64_t gpu_count() const { return gpus_; }
  size_t link_count() const { return links_.size(); }
  const LinkInfo& link(size_t id) const { return links_[id]; }

  // Link ids on the path from GPU `src` to GPU `dst` (empty when src == dst).
  std::vector<size_t> path(int64_t src, int64_t dst) const;
  // The smallest capacity on the path.
  double bottleneck(int64_t src, int64_t dst) const;

  // Link ids from `src` to `dst` for any pair but host to host or host to controller, which
  // nothing sends. A host reaches a GPU of its own node over that GPU's host link and a GPU of
  // another node through the NIC of that GPU's rail (the same local index), so that warehouse
  // reads spread over the node's NICs as GPU traffic does.
  std::vector<size_t> route(Endpoint src, Endpoint dst) const;
  // The routes of many pairs at once, sharing breadth-first searches between pairs that start
  // from the same place (list pairs grouped by source for the full benefit); with a cache, also
  // with earlier calls. A cache serves one topology only.
  std::vector<std::vector<size_t>> routes(const std::vector<std::pair<Endpoint, Endpoint>>& pairs) const;
  std::vector<std::vector<size_t>> routes(const std::vector<std::pair<Endpoint, Endpoint>>& pairs,
                                          RouteCache& cache) const;
  // The same route found by a breadth-first search of the graph: the reference the closed-form
  // routes above are tested against (they follow the fat tree's structure instead of searching,
  // so that a route costs its length, not the cluster's size).
  std::vector<size_t> searched_route(Endpoint src, Endpoint dst) const;
  // The node an endpoint sits on (the controller's node for the controller).
  int64_t node_of(Endpoint e) const;
  // Every link's capacity, indexed by link id (what max_min_fair_rates takes).
  std::vector<double> capacities() const;

 private:
  struct Graph;
  using Trees = RouteCache;
  // Adds both directions of a link of the given capacity to the routing graph.
  void connect(size_t a, size_t b, const std::string& a_name, const std::string& b_name, double capacity);
  // Adds both directions of a link that routes never search through; returns the id of a -> b
  // (b -> a is the next id).
  size_t add_link_pair(const std::string& a_name, const std::string& b_name, double capacity);
  void add_host_links(const input::ClusterSpec& c);
  // Breadth-first shortest path between two vertices of the routing graph.
  std::vector<size_t> vertex_path(size_t src, size_t dst, Trees& trees) const;
  std::vector<size_t> gpu_path(int64_t src, int64_t dst, Trees& trees) const;
  std::vector<size_t> route(Endpoint src, Endpoint dst, Trees& trees) const;
  std::vector<size_t> host_route(Endpoint src, Endpoint dst, Trees& trees) const;

  std::unique_ptr<Graph> graph_;
  std::vector<LinkInfo> links_;
  int64_t gpus_ = 0;
  int64_t gpus_per_node_ = 1;
  int64_t nics_per_node_ = 1;
  std::optional<ControllerLink> controller_;
  size_t controller_vertex_ = 0;
  // The fat tree's structure, for routes in closed form (each id is a -> b; b -> a is the next).
  std::vector<size_t> gpu_switch_link_, gpu_nic_link_;  // per GPU: to its node's NVSwitch, to its NIC
  std::vector<int64_t> gpu_nic_;                        // per GPU: its NIC (node x nics_per_node + i)
  std::vector<size_t> nic_leaf_link_;                   // per NIC: to its leaf
  std::vector<size_t> leaf_spine_link_;                 // per leaf: to the spine (none with one leaf)
  int64_t nodes_per_leaf_ = 1;
  size_t controller_leaf_link_ = 0;
  std::vector<size_t> closed_route(Endpoint src, Endpoint dst) const;  // gpu or controller ends
  std::vector<size_t> gpu_to_host_;  // per GPU: the link id of gpu -> host (host -> gpu is next)
  std::vector<size_t> host_to_nic_;  // per node x NIC: the link id of host -> nic (nic -> host is next)
};

// A flow over links with an optional rate cap (0 = none).
struct Flow {
  std::vector<size_t> links;
  double demand_bytes_per_s = 0;
};

// Max-min fair rates of concurrent flows over links of the given capacities: no flow can get
// more without taking from one that has less or equal.
std::vector<double> max_min_fair_rates(const std::vector<Flow>& flows, const std::vector<double>& capacities);

// When each of a set of concurrent transfers finishes, all starting at time 0 (a fluid model):
// the rates are max-min fair; at the first completion the finished flows leave and the rest are
// re-shared, until all are done. bytes[i] belongs to flows[i]. A flow without links takes
// bytes / demand, or no time without a demand (a copy within one device is not modelled); a flow
// that cannot progress (a zero-capacity link) never finishes: +infinity.
// Re-sharing after every completion costs one fair-share computation per flow, quadratic in the
// flows; with reshare_fraction f > 0 the rates are held until max(1, f x flows left) flows have
// finished, so capacity a finished flow frees waits for the next re-share: completion times can
// only come out later, and the count of re-shares grows as log(flows) / f.
std::vector<double> flow_completion_seconds(const std::vector<Flow>& flows, const std::vector<double>& bytes,
                                            const std::vector<double>& capacities, double reshare_fraction = 0);

}  // namespace arlsim::model
