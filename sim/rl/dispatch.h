// Dispatch: after rollout and experience preparation, a step's intermediate tensors (token ids,
// masks, log-probs, values, rewards, advantages, returns) move from the GPU that holds each
// sample to the training rank that consumes it. Three designs:
//
// - centralized: one controller process gathers every tensor over its link, computes the
//   advantages on its CPU and scatters each sample's tensors to its consumer (the single-
//   controller baseline that EARL measures, arXiv 2510.05943, "Data Dispatcher");
// - decentralized: each tensor goes straight from its producer to its consumer (NVLink inside a
//   node, the NICs between nodes); only per-sample rewards reach the controller and per-sample
//   advantages come back (EARL's layout-aware dispatcher);
// - transfer_dock: producers write into the warehouse in their node's host memory, a metadata
//   controller tracks readiness, consumers read from the producer node's warehouse (MindSpeed RL's
//   transfer dock, arXiv 2507.19017).
//
// Transfers are fluid flows over model::Topology: all flows of a phase start together and share
// links max-min fairly (model::flow_completion_seconds). Transfers between the same two endpoints
// in a phase form one flow, as one connection carries them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/input/cluster.h"
#include "sim/input/policy.h"

namespace arlsim::rl {

// What a tensor is for, which decides where it travels in each mode.
enum class TensorRole {
  data,              // made where the sample is, read by the training rank
  advantage_input,   // a per-sample scalar the controller needs for the advantages (the score)
  advantage_output,  // made by the controller; see DispatchTensor
};

// One row of the dispatch table. A sample's tensor takes bytes_per_token x tokens +
// bytes_per_sample, except advantage_output rows: the centralized controller sends the per-token
// tensor (bytes_per_token x tokens), while the distributed modes send only the per-sample scalar
// (bytes_per_sample) and the consumer expands it over the tokens — group baselines need the
// other samples' scores, the rest of the advantage is local to one sample.
struct DispatchTensor {
  std::string name;
  double bytes_per_token = 0;
  double bytes_per_sample = 0;
  TensorRole role = TensorRole::data;
};

// The intermediate tensors of one step as verl's DataProto holds them (ROLL's batch and the
// transfer dock's columns are the same tensors); docs/cost-model.md (Dispatch) lists the rows.
std::vector<DispatchTensor> dispatch_tensors(bool use_reference, bool critic);

// One sample (trajectory): its tokens as stored (padded length where the framework pads), the GPU
// that holds its tensors when dispatch starts, and the GPU of the training rank that reads them.
struct DispatchSample {
  int64_t tokens = 0;
  int64_t producer_gpu = 0;
  int64_t consumer_gpu = 0;
};

struct DispatchOptions {
  input::DispatchMode mode = input::DispatchMode::centralized;
  double controller_bandwidth_bytes_per_s = 0;  // achieved, each direction
  // CPU time of the controller per element it computes an advantage for: every token when it
  // holds whole tensors (centralized), one element per sample when only scalars reach it.
  double advantage_seconds_per_token = 0;
  int64_t controller_node = 0;
  // transfer_dock: the size of one readiness message (a producer's "written", the controller's
  // "ready in warehouse w" to a consumer); 0 leaves metadata traffic out.
  double metadata_bytes_per_message = 0;
  // The software each phase's transfers go through (the policy's dispatch_transport): see
  // input::DispatchTransport. A phase's data and controller transfers each take, beyond the
  // links' time, the fixed per-phase cost, the busiest sender's calls and copies and the busiest
  // receiver's calls (one message per source and destination pair).
  input::DispatchTransport transport;
};

struct DispatchResult {
  double seconds = 0;
  double bytes_moved = 0;        // every byte sent, controller traffic included
  double cross_node_bytes = 0;   // between GPUs or warehouses of different nodes
  double controller_bytes = 0;   // to and from the controller
  double cpu_seconds = 0;        // the controller's advantage computation, inside `seconds`
  int64_t flows = 0;             // point-to-point flows with bytes to move
};

// What makes a dispatch impossible to simulate with these inputs, or "" (a controller link
// without bandwidth, a transfer dock without the profile's host link, a controller node outside
// the cluster).
std::string dispatch_problem(const input::ClusterSpec& cluster, const DispatchOptions& options);

// The cluster's network as dispatch sees it, built once for many dispatches with the same cluster
// and options (every step of a run): the topology with the controller's link, and the routes
// found so far. simulate_dispatch() builds one for a single dispatch.
class DispatchNetwork {
 public:
  DispatchNetwork(const input::ClusterSpec& cluster, const DispatchOptions& options);
  ~DispatchNetwork();
  DispatchNetwork(const DispatchNetwork&) = delete;
  DispatchNetwork& operator=(const DispatchNetwork&) = delete;

  // As simulate_dispatch() with the cluster and options given at construction.
  DispatchResult simulate(const std::vector<DispatchSample>& samples, const std::vector<DispatchTensor>& tensors);

  class Network;  // defined where dispatch is simulated

 private:
  std::unique_ptr<Network> net_;
  DispatchOptions options_;
  int64_t gpus_ = 0;
};

// The dispatch of one step. Deterministic: the same inputs give the same result. A link without
// bandwidth (see dispatch_problem()) makes the flows over it never finish: `seconds` is infinite.
// GPUs and the controller node must lie in the cluster (checked as an internal invariant).
DispatchResult simulate_dispatch(const input::ClusterSpec& cluster, const std::vector<DispatchSample>& samples,
                                 const std::vector<DispatchTensor>& tensors, const DispatchOptions& options);

}  // namespace arlsim::rl
