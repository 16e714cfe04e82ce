#include "sim/model/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <limits>

#include "sim/core/assert.h"

namespace arlsim::model {

struct Topology::Graph {
  // Edge property: the index of the link in links_.
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_index_t, size_t>>;
  G g;
  std::vector<size_t> gpu_vertex;
};

Topology::Topology(const spec::ClusterSpec& c) : graph_(std::make_unique<Graph>()), gpus_(c.total_gpus()) {
  auto& g = graph_->g;
  auto add_vertex = [&] { return boost::add_vertex(g); };
  const double nvlink = c.gpu_link.achieved();
  const double nic = c.nic_bandwidth_bytes_per_s * (c.gpu.nic_efficiency > 0 ? c.gpu.nic_efficiency : 1.0);
  // A single switch, or a fat tree of leaves under one (non-blocking or oversubscribed) spine
  // layer; rail-optimized networks are modelled as a fat tree.
  const int64_t nodes_per_leaf =
      c.topology == spec::NetworkTopology::single_switch || c.nodes_per_leaf == 0 ? c.nodes : c.nodes_per_leaf;
  const int64_t leaves = (c.nodes + nodes_per_leaf - 1) / nodes_per_leaf;
  std::vector<size_t> leaf_vertex;
  for (int64_t l = 0; l < leaves; ++l) leaf_vertex.push_back(add_vertex());
  const size_t spine = leaves > 1 ? add_vertex() : 0;
  for (int64_t l = 0; l < leaves && leaves > 1; ++l) {
    // Uplink capacity: the leaf's NIC bandwidth divided by the oversubscription ratio.
    const int64_t nodes_here = std::min(nodes_per_leaf, c.nodes - l * nodes_per_leaf);
    const double up = static_cast<double>(nodes_here * c.nics_per_node) * nic / c.oversubscription;
    connect(leaf_vertex[l], spine, "leaf" + std::to_string(l), "spine", up);
  }
  for (int64_t n = 0; n < c.nodes; ++n) {
    const size_t sw = add_vertex();
    const std::string node = "node" + std::to_string(n);
    std::vector<size_t> nics;
    for (int64_t i = 0; i < c.nics_per_node; ++i) {
      nics.push_back(add_vertex());
      connect(nics.back(), leaf_vertex[n / nodes_per_leaf], node + ".nic" + std::to_string(i),
              "leaf" + std::to_string(n / nodes_per_leaf), nic);
    }
    for (int64_t i = 0; i < c.gpus_per_node; ++i) {
      const size_t v = add_vertex();
      graph_->gpu_vertex.push_back(v);
      const std::string gpu = "gpu" + std::to_string(n * c.gpus_per_node + i);
      connect(v, sw, gpu, node + ".nvswitch", nvlink);
      // Each GPU reaches the network through its own NIC (shared round-robin when fewer).
      connect(v, nics[static_cast<size_t>(i % c.nics_per_node)], gpu,
              node + ".nic" + std::to_string(i % c.nics_per_node), nic);
    }
  }
}

Topology::~Topology() = default;

void Topology::connect(size_t a, size_t b, const std::string& an, const std::string& bn, double capacity) {
  boost::add_edge(a, b, links_.size(), graph_->g);
  links_.push_back({an + "->" + bn, capacity});
  boost::add_edge(b, a, links_.size(), graph_->g);
  links_.push_back({bn + "->" + an, capacity});
}

namespace {

// Records each vertex's tree edge during a breadth-first search.
class PredecessorRecorder : public boost::default_bfs_visitor {
 public:
  explicit PredecessorRecorder(std::vector<std::pair<size_t, size_t>>& pred) : pred_(pred) {}
  template <typename Edge, typename G>
  void tree_edge(Edge e, const G& g) const {
    pred_[boost::target(e, g)] = {boost::source(e, g), boost::get(boost::edge_index, g, e)};
  }

 private:
  std::vector<std::pair<size_t, size_t>>& pred_;
};

}  // namespace

std::vector<size_t> Topology::path(int64_t src, int64_t dst) const {
  ARLSIM_ASSERT(src >= 0 && src < gpus_ && dst >= 0 && dst < gpus_);
  std::vector<size_t> out;
  if (src == dst) return out;
  const auto& g = graph_->g;
  const size_t none = std::numeric_limits<size_t>::max();
  std::vector<std::pair<size_t, size_t>> pred(boost::num_vertices(g), {none, none});
  const size_t s = graph_->gpu_vertex[static_cast<size_t>(src)];
  const size_t d = graph_->gpu_vertex[static_cast<size_t>(dst)];
  // A shortest path never relays through a third GPU: such a route is always longer than the
  // direct one through the NVSwitch or the two GPUs' NICs.
  boost::breadth_first_search(g, s, boost::visitor(PredecessorRecorder(pred)));
  for (size_t v = d; v != s; v = pred[v].first) {
    ARLSIM_ASSERT(pred[v].first != none);
    out.push_back(pred[v].second);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

double Topology::bottleneck(int64_t src, int64_t dst) const {
  double b = std::numeric_limits<double>::infinity();
  for (size_t id : path(src, dst)) b = std::min(b, links_[id].capacity_bytes_per_s);
  return b;
}

std::vector<double> max_min_fair_rates(const std::vector<Flow>& flows, const std::vector<double>& capacities) {
  std::vector<double> rate(flows.size(), 0.0);
  std::vector<double> remaining = capacities;
  std::vector<bool> frozen(flows.size(), false);
  size_t active = flows.size();
  // Flows without links are limited only by their demand.
  for (size_t f = 0; f < flows.size(); ++f) {
    if (flows[f].links.empty()) {
      rate[f] = flows[f].demand_bytes_per_s;
      frozen[f] = true;
      --active;
    }
  }
  while (active > 0) {
    // The next increment every active flow can take: the tightest link's equal share, or the
    // smallest unmet demand.
    std::vector<int> users(capacities.size(), 0);
    for (size_t f = 0; f < flows.size(); ++f)
      if (!frozen[f])
        for (size_t l : flows[f].links) ++users[l];
    double step = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacities.size(); ++l)
      if (users[l] > 0) step = std::min(step, remaining[l] / users[l]);
    for (size_t f = 0; f < flows.size(); ++f)
      if (!frozen[f] && flows[f].demand_bytes_per_s > 0) step = std::min(step, flows[f].demand_bytes_per_s - rate[f]);
    for (size_t f = 0; f < flows.size(); ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (size_t l : flows[f].links) remaining[l] -= step;
    }
    // Freeze flows on saturated links and flows whose demand is met.
    const double eps = 1e-9;
    for (size_t f = 0; f < flows.size(); ++f) {
      if (frozen[f]) continue;
      bool stop = flows[f].demand_bytes_per_s > 0 && rate[f] >= flows[f].demand_bytes_per_s * (1 - eps);
      for (size_t l : flows[f].links) stop = stop || remaining[l] <= capacities[l] * eps;
      if (stop) {
        frozen[f] = true;
        --active;
      }
    }
  }
  return rate;
}

}  // namespace arlsim::model
