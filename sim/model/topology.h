// The cluster as a graph of links (Boost.Graph): GPUs, each node's NVSwitch, NICs, leaf and
// spine switches, with the achieved bandwidth of every directed link. Flows between GPUs take a
// fixed shortest path; concurrent flows share links max-min fairly (progressive filling,
// Bertsekas & Gallager, "Data Networks", sec. 6.5.2), which the simulator uses for dispatch and
// weight sync so that hot spots show.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/spec/cluster.h"

namespace arlsim::model {

struct LinkInfo {
  std::string name;  // "gpu3->nvswitch0", "nic1.2->leaf0", ...
  double capacity_bytes_per_s = 0;
};

class Topology {
 public:
  explicit Topology(const spec::ClusterSpec& cluster);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  int64_t gpu_count() const { return gpus_; }
  size_t link_count() const { return links_.size(); }
  const LinkInfo& link(size_t id) const { return links_[id]; }

  // Link ids on the path from GPU `src` to GPU `dst` (empty when src == dst).
  std::vector<size_t> path(int64_t src, int64_t dst) const;
  // The smallest capacity on the path.
  double bottleneck(int64_t src, int64_t dst) const;

 private:
  struct Graph;
  // Adds both directions of a link of the given capacity.
  void connect(size_t a, size_t b, const std::string& a_name, const std::string& b_name, double capacity);

  std::unique_ptr<Graph> graph_;
  std::vector<LinkInfo> links_;
  int64_t gpus_ = 0;
};

// A flow over links with an optional rate cap (0 = none).
struct Flow {
  std::vector<size_t> links;
  double demand_bytes_per_s = 0;
};

// Max-min fair rates of concurrent flows over links of the given capacities: no flow can get
// more without taking from one that has less or equal.
std::vector<double> max_min_fair_rates(const std::vector<Flow>& flows, const std::vector<double>& capacities);

}  // namespace arlsim::model
