// ClusterSpec: nodes of identical GPUs, the links between them, and the external resource pools
// (tool sandboxes, reward-model servers, rate-limited APIs) that agentic rollouts call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/input/hardware.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {


enum class NetworkTopology { single_switch, fat_tree, rail_optimized };
enum class PoolKind { sandbox, reward_server, api };
enum class LatencyKind { fixed, exponential, lognormal, uniform };

// A latency distribution: `mean` for all kinds, `sigma` (of the underlying normal) for lognormal,
// [min, max] for uniform.
struct LatencyDist {
  LatencyKind kind = LatencyKind::fixed;
  SimTime mean;
  double sigma = 0;
  SimTime min, max;
};

struct PoolSpec {
  std::string name;
  PoolKind kind = PoolKind::sandbox;
  int64_t count = 0;      // resources available at the start
  int64_t max_count = 0;  // elastic upper bound (>= count); equal to count when not elastic
  SimTime cold_start;     // time to bring up one more resource
  LatencyDist latency;    // per action, when the trace does not give one
  int64_t gpus = 0;       // reward_server: GPUs it runs on
  double price_usd_per_unit_hour = 0;  // sandbox or api: the cost of a provisioned unit; 0 = unknown
};

// The most nodes a cluster may have (and a capacity sweep ask for).
inline constexpr int64_t kMaxNodes = int64_t{1} << 16;

struct ClusterSpec {
  std::string name;
  std::string description;
  GpuProfile gpu;
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;
  // The GPUs of one host (what Slurm and Ray call a node) when a node is an NVLink domain of
  // several hosts (a GB200 NVL72 rack's compute trays of 4); 0: gpus_per_node.
  int64_t gpus_per_host = 0;
  int64_t host_gpus() const { return gpus_per_host > 0 ? gpus_per_host : gpus_per_node; }
  Link gpu_link;  // defaults to the profile's
  std::string intra_node_topology = "nvswitch";
  double nic_bandwidth_bytes_per_s = 0;  // per GPU; defaults to the profile's
  int64_t nics_per_node = 0;             // defaults to gpus_per_node
  NetworkTopology topology = NetworkTopology::single_switch;
  double oversubscription = 1.0;  // leaf uplink oversubscription (fat tree)
  int64_t nodes_per_leaf = 0;     // fat tree: nodes under one leaf switch; 0 = all
  double controller_bandwidth_bytes_per_s = 0;  // the single controller's link; 0 = one GPU's NIC
  std::vector<PoolSpec> pools;
  double price_usd_per_gpu_hour = 0;  // defaults to the profile's; 0 = unknown
  // Host (CPU) memory of one node, which offloaded training states and sleeping engines' weights
  // live in; 0 = unknown (not checked).
  double host_memory_bytes = 0;

  int64_t total_gpus() const { return nodes * gpus_per_node; }
  // Whether groups of `g` GPUs laid out one after another straddle two nodes: their size neither
  // divides a node's GPUs nor is a multiple of them. Such a group is priced as if on one node.
  bool straddles(int64_t g) const { return g > 1 && gpus_per_node % g != 0 && g % gpus_per_node != 0; }
};

// Expects "gpu" already resolved to a profile object (see loader.h).
bool parse_cluster(const Value& v, const std::string& pointer, Diagnostics& diag, ClusterSpec& out);
bool parse_latency(const Value& v, const std::string& pointer, Diagnostics& diag, LatencyDist& out);

}  // namespace arlsim::input
