#include "sim/model/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <limits>
#include <map>
#include <queue>
#include <utility>

#include "sim/core/assert.h"

namespace arlsim::model {

struct Topology::Graph {
  // Edge property: the index of the link in links_.
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_index_t, size_t>>;
  G g;
  std::vector<size_t> gpu_vertex;
};

Topology::Topology(const input::ClusterSpec& c, std::optional<ControllerLink> controller)
    : graph_(std::make_unique<Graph>()),
      gpus_(c.total_gpus()),
      gpus_per_node_(c.gpus_per_node),
      nics_per_node_(c.nics_per_node),
      controller_(controller) {
  auto& g = graph_->g;
  auto add_vertex = [&] { return boost::add_vertex(g); };
  const double nvlink = c.gpu_link.achieved();
  const double nic = c.nic_bandwidth_bytes_per_s * (c.gpu.nic_efficiency > 0 ? c.gpu.nic_efficiency : 1.0);
  // A single switch, or a fat tree of leaves under one (non-blocking or oversubscribed) spine
  // layer; rail-optimized networks are modelled as a fat tree.
  const int64_t nodes_per_leaf =
      c.topology == input::NetworkTopology::single_switch || c.nodes_per_leaf == 0 ? c.nodes : c.nodes_per_leaf;
  const int64_t leaves = (c.nodes + nodes_per_leaf - 1) / nodes_per_leaf;
  std::vector<size_t> leaf_vertex;
  for (int64_t l = 0; l < leaves; ++l) leaf_vertex.push_back(add_vertex());
  const size_t spine = leaves > 1 ? add_vertex() : 0;
  nodes_per_leaf_ = nodes_per_leaf;
  for (int64_t l = 0; l < leaves && leaves > 1; ++l) {
    // Uplink capacity: the leaf's NIC bandwidth divided by the oversubscription ratio.
    const int64_t nodes_here = std::min(nodes_per_leaf, c.nodes - l * nodes_per_leaf);
    const double up = static_cast<double>(nodes_here * c.nics_per_node) * nic / c.oversubscription;
    leaf_spine_link_.push_back(links_.size());
    connect(leaf_vertex[l], spine, "leaf" + std::to_string(l), "spine", up);
  }
  for (int64_t n = 0; n < c.nodes; ++n) {
    const size_t sw = add_vertex();
    const std::string node = "node" + std::to_string(n);
    std::vector<size_t> nics;
    for (int64_t i = 0; i < c.nics_per_node; ++i) {
      nics.push_back(add_vertex());
      nic_leaf_link_.push_back(links_.size());
      connect(nics.back(), leaf_vertex[n / nodes_per_leaf], node + ".nic" + std::to_string(i),
              "leaf" + std::to_string(n / nodes_per_leaf), nic);
    }
    for (int64_t i = 0; i < c.gpus_per_node; ++i) {
      const size_t v = add_vertex();
      graph_->gpu_vertex.push_back(v);
      const std::string gpu = "gpu" + std::to_string(n * c.gpus_per_node + i);
      gpu_switch_link_.push_back(links_.size());
      connect(v, sw, gpu, node + ".nvswitch", nvlink);
      // Each GPU reaches the network through its own NIC (shared round-robin when fewer).
      gpu_nic_link_.push_back(links_.size());
      gpu_nic_.push_back(n * c.nics_per_node + i % c.nics_per_node);
      connect(v, nics[static_cast<size_t>(i % c.nics_per_node)], gpu,
              node + ".nic" + std::to_string(i % c.nics_per_node), nic);
    }
  }
  add_host_links(c);
  if (controller_) {
    ARLSIM_ASSERT(controller_->node >= 0 && controller_->node < c.nodes);
    const int64_t leaf = controller_->node / nodes_per_leaf;
    controller_vertex_ = add_vertex();
    controller_leaf_link_ = links_.size();
    connect(controller_vertex_, leaf_vertex[leaf], "controller", "leaf" + std::to_string(leaf),
            controller_->capacity_bytes_per_s);
  }
}

double Topology::bytes_for(const input::ClusterSpec& c) {
  const int64_t nodes_per_leaf =
      c.topology == input::NetworkTopology::single_switch || c.nodes_per_leaf == 0 ? c.nodes : c.nodes_per_leaf;
  const auto leaves = static_cast<double>((c.nodes + nodes_per_leaf - 1) / nodes_per_leaf);
  const auto gpus = static_cast<double>(c.total_gpus());
  const auto nics = static_cast<double>(c.nodes * c.nics_per_node);
  const auto nodes = static_cast<double>(c.nodes);
  // Pairs in the graph: leaf-spine, NIC-leaf, GPU-NVSwitch, GPU-NIC; host pairs outside it.
  const double graph_pairs = (leaves > 1 ? leaves : 0) + nics + 2 * gpus;
  const double pairs = graph_pairs + gpus + nics;
  const double vertices = leaves + 1 + nodes + nics + gpus;
  constexpr double kName = 32;  // a link's name ("gpu12345->node1543.nvswitch") outgrows the string's own buffer
  using G = Graph::G;
  const double edge = sizeof(typename G::StoredEdge) + sizeof(size_t);
  return 2 * pairs * (sizeof(LinkInfo) + kName + sizeof(double)) + 2 * graph_pairs * edge +
         vertices * sizeof(typename G::stored_vertex) + gpus * 6 * sizeof(size_t);
}

void Topology::add_host_links(const input::ClusterSpec& c) {
  // Host links stay out of the routing graph: a GPU-to-GPU path through host memory would tie
  // with the one through the NVSwitch, and host routes are composed explicitly in route().
  const double host = c.gpu.host_link.achieved();
  for (int64_t g = 0; g < gpus_; ++g) {
    const std::string node = "node" + std::to_string(g / c.gpus_per_node);
    gpu_to_host_.push_back(add_link_pair("gpu" + std::to_string(g), node + ".host", host));
  }
  for (int64_t n = 0; n < c.nodes; ++n)
    for (int64_t i = 0; i < c.nics_per_node; ++i) {
      const std::string node = "node" + std::to_string(n);
      host_to_nic_.push_back(add_link_pair(node + ".host", node + ".nic" + std::to_string(i), host));
    }
}

Topology::~Topology() = default;

size_t Topology::add_link_pair(const std::string& an, const std::string& bn, double capacity) {
  links_.push_back({an + "->" + bn, capacity});
  links_.push_back({bn + "->" + an, capacity});
  return links_.size() - 2;
}

void Topology::connect(size_t a, size_t b, const std::string& an, const std::string& bn, double capacity) {
  const size_t id = add_link_pair(an, bn, capacity);
  boost::add_edge(a, b, id, graph_->g);
  boost::add_edge(b, a, id + 1, graph_->g);
}

namespace {

// Records each vertex's tree edge during a breadth-first search.
class PredecessorRecorder : public boost::default_bfs_visitor {
 public:
  explicit PredecessorRecorder(std::vector<std::pair<uint32_t, uint32_t>>& pred) : pred_(pred) {}
  template <typename Edge, typename G>
  void tree_edge(Edge e, const G& g) const {
    pred_[boost::target(e, g)] = {static_cast<uint32_t>(boost::source(e, g)),
                                  static_cast<uint32_t>(boost::get(boost::edge_index, g, e))};
  }

 private:
  std::vector<std::pair<uint32_t, uint32_t>>& pred_;
};

}  // namespace

std::vector<size_t> Topology::path(int64_t src, int64_t dst) const {
  Trees trees(0);
  return gpu_path(src, dst, trees);
}

std::vector<size_t> Topology::gpu_path(int64_t src, int64_t dst, Trees& trees) const {
  ARLSIM_ASSERT(src >= 0 && src < gpus_ && dst >= 0 && dst < gpus_);
  if (src == dst) return {};
  (void)trees;
  return closed_route({EndpointKind::gpu, src}, {EndpointKind::gpu, dst});
}

// The fat tree's shortest paths, as the breadth-first search finds them: within a node through
// the NVSwitch (its link is each GPU's first, so the search meets it before a shared NIC); across
// nodes up through the source GPU's NIC to its leaf, over the spine when the leaves differ, and
// down through the destination GPU's own NIC (any other NIC would add the hops through a third
// GPU). The controller hangs off its node's leaf.
std::vector<size_t> Topology::closed_route(Endpoint src, Endpoint dst) const {
  using enum EndpointKind;
  const auto leaf_of = [&](Endpoint e) {
    return e.kind == controller ? controller_->node / nodes_per_leaf_ : e.index / gpus_per_node_ / nodes_per_leaf_;
  };
  std::vector<size_t> out;
  if (src.kind == gpu && dst.kind == gpu && src.index / gpus_per_node_ == dst.index / gpus_per_node_) {
    out = {gpu_switch_link_[static_cast<size_t>(src.index)], gpu_switch_link_[static_cast<size_t>(dst.index)] + 1};
    return out;
  }
  if (src.kind == controller) out.push_back(controller_leaf_link_);
  else {
    out.push_back(gpu_nic_link_[static_cast<size_t>(src.index)]);
    out.push_back(nic_leaf_link_[static_cast<size_t>(gpu_nic_[static_cast<size_t>(src.index)])]);
  }
  const int64_t a = leaf_of(src), b = leaf_of(dst);
  if (a != b) {
    out.push_back(leaf_spine_link_[static_cast<size_t>(a)]);
    out.push_back(leaf_spine_link_[static_cast<size_t>(b)] + 1);
  }
  if (dst.kind == controller) out.push_back(controller_leaf_link_ + 1);
  else {
    out.push_back(nic_leaf_link_[static_cast<size_t>(gpu_nic_[static_cast<size_t>(dst.index)])] + 1);
    out.push_back(gpu_nic_link_[static_cast<size_t>(dst.index)] + 1);
  }
  return out;
}

std::vector<size_t> Topology::searched_route(Endpoint src, Endpoint dst) const {
  using enum EndpointKind;
  ARLSIM_ASSERT(src.kind != host && dst.kind != host);
  if (src == dst) return {};
  const auto vertex = [&](Endpoint e) {
    return e.kind == controller ? controller_vertex_ : graph_->gpu_vertex[static_cast<size_t>(e.index)];
  };
  Trees trees(0);
  return vertex_path(vertex(src), vertex(dst), trees);
}

std::vector<size_t> Topology::vertex_path(size_t s, size_t d, Trees& trees) const {
  const auto& g = graph_->g;
  const size_t vertices = boost::num_vertices(g);
  ARLSIM_ASSERT(trees.owner_ == nullptr || trees.owner_ == this);  // a cache serves one topology
  if (trees.owner_ == nullptr) {
    trees.owner_ = this;
    ARLSIM_ASSERT(vertices < UINT32_MAX && links_.size() < UINT32_MAX);
    trees.by_source_.resize(vertices);
    // At least a node's GPUs, the host and the controller: the sources of one batch's group.
    const size_t per_tree = vertices * sizeof(Trees::Tree::value_type);
    trees.limit_ = std::max(static_cast<size_t>(gpus_per_node_) + 2, trees.max_bytes_ / per_tree);
  }
  constexpr uint32_t none = std::numeric_limits<uint32_t>::max();
  if (trees.by_source_[s].empty()) {
    if (trees.held_ >= trees.limit_) {
      for (auto& t : trees.by_source_) Trees::Tree().swap(t);
      trees.held_ = 0;
    }
    trees.by_source_[s].assign(vertices, {none, none});
    ++trees.held_;
    boost::breadth_first_search(g, s, boost::visitor(PredecessorRecorder(trees.by_source_[s])));
  }
  const auto& pred = trees.by_source_[s];
  std::vector<size_t> out;
  for (size_t v = d; v != s; v = pred[v].first) {
    ARLSIM_ASSERT(pred[v].first != none);
    out.push_back(pred[v].second);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<size_t> Topology::route(Endpoint src, Endpoint dst) const {
  Trees trees(0);
  return route(src, dst, trees);
}

std::vector<std::vector<size_t>> Topology::routes(const std::vector<std::pair<Endpoint, Endpoint>>& pairs) const {
  Trees trees(0);  // the smallest: a node's sources at a time
  return routes(pairs, trees);
}

std::vector<std::vector<size_t>> Topology::routes(const std::vector<std::pair<Endpoint, Endpoint>>& pairs,
                                                  RouteCache& trees) const {
  std::vector<std::vector<size_t>> out;
  out.reserve(pairs.size());
  for (const auto& [src, dst] : pairs) out.push_back(route(src, dst, trees));
  return out;
}

std::vector<size_t> Topology::route(Endpoint src, Endpoint dst, Trees& trees) const {
  using enum EndpointKind;
  if (src == dst) return {};
  if (src.kind == gpu && dst.kind == gpu) return gpu_path(src.index, dst.index, trees);
  if (src.kind == host || dst.kind == host) return host_route(src, dst, trees);
  ARLSIM_ASSERT(controller_.has_value());
  for (Endpoint e : {src, dst}) ARLSIM_ASSERT(e.kind == controller || (e.index >= 0 && e.index < gpus_));
  return closed_route(src, dst);
}

std::vector<size_t> Topology::host_route(Endpoint src, Endpoint dst, Trees& trees) const {
  const bool to_host = dst.kind == EndpointKind::host;
  const Endpoint host = to_host ? dst : src;
  const Endpoint gpu = to_host ? src : dst;
  ARLSIM_ASSERT(gpu.kind == EndpointKind::gpu && gpu.index >= 0 && gpu.index < gpus_);
  ARLSIM_ASSERT(host.index >= 0 && host.index < gpus_ / gpus_per_node_);
  const auto host_link = gpu_to_host_[static_cast<size_t>(gpu.index)];
  if (gpu.index / gpus_per_node_ == host.index) return {to_host ? host_link : host_link + 1};
  // Through the rail: the host's side of the path is the one the node's GPU of the same local
  // index would take, with its GPU-NIC link replaced by the host-NIC link.
  const int64_t local = gpu.index % gpus_per_node_;
  const int64_t rail_gpu = host.index * gpus_per_node_ + local;
  const size_t host_nic = host_to_nic_[static_cast<size_t>(host.index * nics_per_node_ + local % nics_per_node_)];
  auto p = to_host ? gpu_path(gpu.index, rail_gpu, trees) : gpu_path(rail_gpu, gpu.index, trees);
  if (to_host) p.back() = host_nic + 1;
  else p.front() = host_nic;
  return p;
}

int64_t Topology::node_of(Endpoint e) const {
  switch (e.kind) {
    case EndpointKind::gpu: return e.index / gpus_per_node_;
    case EndpointKind::host: return e.index;
    case EndpointKind::controller: ARLSIM_ASSERT(controller_.has_value()); return controller_->node;
  }
  return 0;
}

std::vector<double> Topology::capacities() const {
  std::vector<double> out;
  out.reserve(links_.size());
  for (const auto& l : links_) out.push_back(l.capacity_bytes_per_s);
  return out;
}

double Topology::bottleneck(int64_t src, int64_t dst) const {
  double b = std::numeric_limits<double>::infinity();
  for (size_t id : path(src, dst)) b = std::min(b, links_[id].capacity_bytes_per_s);
  return b;
}

namespace {

// Flows over the links they use, renumbered densely; a flow's demand becomes a link of its own
// with that capacity, so that one algorithm handles both limits.
class FairShare {
 public:
  FairShare(const std::vector<Flow>& flows, const std::vector<double>& capacities) : flow_links_(flows.size()) {
    constexpr uint32_t unseen = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> index(capacities.size(), unseen);
    for (size_t f = 0; f < flows.size(); ++f) {
      for (size_t l : flows[f].links) {
        ARLSIM_ASSERT(l < capacities.size());
        if (index[l] == unseen) {
          index[l] = static_cast<uint32_t>(capacity_.size());
          capacity_.push_back(capacities[l]);
        }
        flow_links_[f].push_back(index[l]);
      }
      if (flows[f].demand_bytes_per_s > 0 && !flows[f].links.empty()) {
        flow_links_[f].push_back(static_cast<uint32_t>(capacity_.size()));
        capacity_.push_back(flows[f].demand_bytes_per_s);
      }
    }
    link_flows_.resize(capacity_.size());
    for (size_t f = 0; f < flow_links_.size(); ++f)
      for (uint32_t l : flow_links_[f]) link_flows_[l].push_back(static_cast<uint32_t>(f));
    drop_redundant_links();
    left_.resize(capacity_.size());
    users_.assign(capacity_.size(), 0);
    fixed_.assign(flow_links_.size(), kFinished);
  }

  // Max-min fair rates of the `live` flows (the others' rates are left as they are), by the bottleneck
  // algorithm: the link with the smallest equal share fixes the rate of every flow on it; those
  // flows leave, and no other link's share can drop below the one just fixed, so links are
  // settled in increasing order of share. A link's share only grows, so a heap entry that is out
  // of date is put back with its current share when it comes up, rather than on every change.
  //
  // The live flows of each call must be among those of the previous call (flows only finish):
  // a link's list of flows then drops the finished ones as it is walked, keeping its order, and a
  // call costs in proportion to the live flows and their links, not to all of them.
  void rates(const std::vector<uint32_t>& live, std::vector<double>& rate) const {
    rate.resize(flow_links_.size());
    for (uint32_t f : previous_live_) fixed_[f] = kFinished;  // unless live again, below
    using Entry = std::pair<double, uint32_t>;  // (share, link)
    std::vector<Entry> entries;
    for (uint32_t f : live) {
      rate[f] = 0;
      fixed_[f] = 0;
      for (uint32_t l : flow_links_[f]) {
        if (users_[l]++ == 0) {
          left_[l] = capacity_[l];
          entries.emplace_back(0, l);
        }
      }
    }
    previous_live_ = live;
    for (auto& [s, l] : entries) s = share(l);
    // Every entry is unique (one per link), so the order they are settled in does not depend on
    // the order they were listed.
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap(std::greater<>(), std::move(entries));
    while (!heap.empty()) {
      const auto [s, l] = heap.top();
      heap.pop();
      if (users_[l] == 0) continue;
      if (s != share(l)) {
        heap.emplace(share(l), l);
        continue;
      }
      auto& flows = link_flows_[l];
      size_t kept = 0;
      for (uint32_t f : flows) {
        if (fixed_[f] == kFinished) continue;
        flows[kept++] = f;
        if (fixed_[f]) continue;
        fixed_[f] = 1;
        rate[f] = s;
        for (uint32_t other : flow_links_[f]) {
          left_[other] -= s;
          --users_[other];
        }
      }
      flows.resize(kept);
    }
    // Every live flow has been fixed, so every link's count of users is back to 0 (a flow missing
    // here was live again after it had finished, against the precondition).
    for (uint32_t f : live) ARLSIM_ASSERT(fixed_[f] == 1);
  }

 private:
  double share(uint32_t l) const { return std::max(0.0, left_[l] / static_cast<double>(users_[l])); }

  // Links that carry exactly the same flows (a GPU's link to its NIC and the NIC's to the leaf,
  // when each GPU has its own NIC; a warehouse's link to a NIC and that NIC's to the leaf) keep
  // the same count of users and lose the same rates. The one of least capacity (the first, on a
  // tie) therefore always settles their flows before the others come up: those of equal
  // capacity tie with it and come later in link order, and those clearly larger have a larger
  // share whatever the rounding. Both kinds are dropped, and the rates come out bit for bit the
  // same with fewer links. A link only slightly larger (within rounding of a tie) is kept.
  void drop_redundant_links() {
    std::map<std::vector<uint32_t>, std::vector<uint32_t>> same_flows;  // flows -> their links, in order
    for (uint32_t l = 0; l < capacity_.size(); ++l) same_flows[link_flows_[l]].push_back(l);
    std::vector<char> dropped(capacity_.size(), 0);
    for (const auto& [flows, links] : same_flows) {
      uint32_t least = links.front();
      for (uint32_t l : links)
        if (capacity_[l] < capacity_[least]) least = l;
      for (uint32_t l : links)
        if (l != least && (capacity_[l] == capacity_[least] || capacity_[l] > capacity_[least] * (1 + 1e-6))) dropped[l] = 1;
    }
    for (uint32_t l = 0; l < capacity_.size(); ++l)
      if (dropped[l]) link_flows_[l].clear();
    for (auto& links : flow_links_)
      links.erase(std::remove_if(links.begin(), links.end(), [&](uint32_t l) { return dropped[l] != 0; }), links.end());
  }

  std::vector<double> capacity_;
  std::vector<std::vector<uint32_t>> flow_links_;
  mutable std::vector<std::vector<uint32_t>> link_flows_;  // finished flows are dropped as met
  // State carried from call to call (the fluid model calls once per re-share).
  mutable std::vector<double> left_;
  mutable std::vector<int64_t> users_;
  mutable std::vector<char> fixed_;  // per flow: 0 live, 1 rate fixed in this call, kFinished
  mutable std::vector<uint32_t> previous_live_;
  static constexpr char kFinished = 2;
};

}  // namespace

std::vector<double> max_min_fair_rates(const std::vector<Flow>& flows, const std::vector<double>& capacities) {
  std::vector<uint32_t> all(flows.size());
  for (size_t f = 0; f < flows.size(); ++f) all[f] = static_cast<uint32_t>(f);
  std::vector<double> rate;
  FairShare(flows, capacities).rates(all, rate);
  // Flows without links are limited only by their demand.
  for (size_t f = 0; f < flows.size(); ++f)
    if (flows[f].links.empty()) rate[f] = flows[f].demand_bytes_per_s;
  return rate;
}

std::vector<double> flow_completion_seconds(const std::vector<Flow>& flows, const std::vector<double>& bytes,
                                            const std::vector<double>& capacities, double reshare_fraction) {
  ARLSIM_ASSERT(flows.size() == bytes.size());
  ARLSIM_ASSERT(reshare_fraction >= 0 && reshare_fraction < 1);
  const double inf = std::numeric_limits<double>::infinity();
  // Remaining bytes below this fraction of a flow's size are rounding, not data.
  const double eps = 1e-9;
  std::vector<double> done(flows.size(), 0.0);
  std::vector<double> left = bytes;
  std::vector<uint32_t> live;
  for (size_t f = 0; f < flows.size(); ++f) {
    if (bytes[f] <= 0) continue;
    if (!flows[f].links.empty()) live.push_back(static_cast<uint32_t>(f));
    else if (flows[f].demand_bytes_per_s > 0) done[f] = bytes[f] / flows[f].demand_bytes_per_s;
  }
  const FairShare share(flows, capacities);
  std::vector<double> rate, finish;
  double now = 0;
  while (!live.empty()) {
    share.rates(live, rate);
    finish.clear();
    for (uint32_t f : live) finish.push_back(rate[f] > 0 ? left[f] / rate[f] : inf);
    // Hold the rates until the k-th completion (k = 1: exact).
    const auto k = std::max<size_t>(1, static_cast<size_t>(reshare_fraction * static_cast<double>(live.size())));
    std::vector<double> order = finish;
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k - 1), order.end());
    const double step = order[k - 1];
    if (step == inf) {
      for (uint32_t f : live) done[f] = inf;
      break;
    }
    std::vector<uint32_t> still;
    for (size_t i = 0; i < live.size(); ++i) {
      const uint32_t f = live[i];
      if (finish[i] <= step || left[f] - rate[f] * step <= bytes[f] * eps) {
        done[f] = now + std::min(finish[i], step);
      } else {
        left[f] -= rate[f] * step;
        still.push_back(f);
      }
    }
    now += step;
    live = std::move(still);
  }
  return done;
}

}  // namespace arlsim::model
