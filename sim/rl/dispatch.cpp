#include "sim/rl/dispatch.h"

#include <algorithm>
#include <map>
#include <utility>

#include "sim/core/assert.h"
#include "sim/model/topology.h"

namespace arlsim::rl {

std::vector<DispatchTensor> dispatch_tensors(bool use_reference, bool critic) {
  // verl keeps token ids, masks and positions as torch.long and log-probs, values, rewards and
  // advantages as fp32. Every per-token row counts over the sample's whole context: verl pads the
  // response-side tensors to the response limit, which in agentic runs is most of the context.
  std::vector<DispatchTensor> t = {
      {"input_ids", 8, 0, TensorRole::data},
      {"attention_mask", 8, 0, TensorRole::data},
      {"position_ids", 8, 0, TensorRole::data},
      {"responses", 8, 0, TensorRole::data},
      {"response_mask", 8, 0, TensorRole::data},
      {"old_log_probs", 4, 0, TensorRole::data},
  };
  if (use_reference) t.push_back({"ref_log_prob", 4, 0, TensorRole::data});
  if (critic) t.push_back({"values", 4, 0, TensorRole::data});
  t.push_back({"token_level_rewards", 4, 0, TensorRole::data});
  t.push_back({"score", 0, 4, TensorRole::advantage_input});
  t.push_back({"advantages", 4, 4, TensorRole::advantage_output});
  t.push_back({"returns", 4, 0, TensorRole::advantage_output});
  return t;
}

std::string dispatch_problem(const input::ClusterSpec& cluster, const DispatchOptions& o) {
  if (o.controller_node < 0 || o.controller_node >= cluster.nodes)
    return "the controller's node " + std::to_string(o.controller_node) + " is outside the cluster's " +
           std::to_string(cluster.nodes) + " nodes";
  if (o.controller_bandwidth_bytes_per_s <= 0) return "the controller's link has no bandwidth";
  if (o.mode == input::DispatchMode::transfer_dock && cluster.gpu.host_link.achieved() <= 0)
    return "a transfer dock keeps its warehouses in host memory, and GPU profile " + cluster.gpu.name +
           " has no host link bandwidth";
  return "";
}

namespace {

using model::Endpoint;

// A setting of the fluid solver, not of the hardware: rates are re-shared after each 1% of the
// flows left have finished (after every completion below 200 flows). With thousands of flows this
// is 10-30x faster than re-sharing after every completion, and a phase's end moved by less than
// 0.2% on random many-to-many phases of 2,700-8,200 flows on 1,024 GPUs.
constexpr double kReshareFraction = 0.01;

// What one sample moves, by the tensors' roles.
struct SampleBytes {
  double data = 0;              // data rows, whole
  double advantage_input = 0;   // to the controller
  double output_tensors = 0;    // advantage rows per token (centralized)
  double output_scalars = 0;    // advantage rows per sample (distributed modes)
};

SampleBytes sample_bytes(const std::vector<DispatchTensor>& tensors, int64_t tokens) {
  SampleBytes b;
  const auto n = static_cast<double>(tokens);
  for (const auto& t : tensors) {
    const double whole = t.bytes_per_token * n + t.bytes_per_sample;
    switch (t.role) {
      case TensorRole::data: b.data += whole; break;
      case TensorRole::advantage_input: b.advantage_input += whole; break;
      case TensorRole::advantage_output:
        b.output_tensors += t.bytes_per_token * n;
        b.output_scalars += t.bytes_per_sample;
        break;
    }
  }
  return b;
}

// When a phase's transfers end: the data plane (GPUs, warehouses) and the controller's.
struct PhaseTimes {
  double data = 0;
  double controller = 0;
  double all() const { return std::max(data, controller); }
};

// Transfers that start together, merged per (source, destination): one connection carries all
// of a pair's tensors.
class Phase {
 public:
  void add(Endpoint src, Endpoint dst, double bytes) {
    if (bytes > 0 && src != dst) bytes_[{src, dst}] += bytes;
  }
  const std::map<std::pair<Endpoint, Endpoint>, double>& transfers() const { return bytes_; }

 private:
  std::map<std::pair<Endpoint, Endpoint>, double> bytes_;
};

}  // namespace

// Runs phases over one topology and keeps the byte counts.
class DispatchNetwork::Network {
 public:
  Network(const input::ClusterSpec& c, const DispatchOptions& o)
      : topology_(c, model::ControllerLink{o.controller_node, o.controller_bandwidth_bytes_per_s}),
        capacities_(topology_.capacities()),
        transport_(o.transport) {}

  PhaseTimes run(const Phase& phase, DispatchResult& r) {
    std::vector<std::pair<Endpoint, Endpoint>> pairs;
    std::vector<double> bytes;
    std::vector<bool> to_controller;
    for (const auto& [ends, b] : phase.transfers()) {
      pairs.push_back(ends);
      bytes.push_back(b);
      to_controller.push_back(is_controller(ends.first) || is_controller(ends.second));
      count(ends.first, ends.second, b, r);
    }
    std::vector<model::Flow> flows;
    for (auto& links : topology_.routes(pairs, routes_)) flows.push_back({std::move(links), 0});
    const auto done = model::flow_completion_seconds(flows, bytes, capacities_, kReshareFraction);
    PhaseTimes t;
    for (size_t i = 0; i < done.size(); ++i) {
      double& end = to_controller[i] ? t.controller : t.data;
      end = std::max(end, done[i]);
    }
    t.data += software_seconds(pairs, bytes, to_controller, false);
    t.controller += software_seconds(pairs, bytes, to_controller, true);
    return t;
  }

  int64_t node_of(int64_t gpu) const { return topology_.node_of(Endpoint::gpu(gpu)); }

 private:
  static bool is_controller(Endpoint e) { return e.kind == model::EndpointKind::controller; }

  void count(Endpoint src, Endpoint dst, double b, DispatchResult& r) const {
    r.bytes_moved += b;
    ++r.flows;
    if (is_controller(src) || is_controller(dst)) r.controller_bytes += b;
    else if (topology_.node_of(src) != topology_.node_of(dst)) r.cross_node_bytes += b;
  }

  // The transport's software time for the data (or controller) transfers of a phase: its fixed
  // part, the busiest sender's calls and copies, the busiest receiver's calls.
  double software_seconds(const std::vector<std::pair<Endpoint, Endpoint>>& pairs, const std::vector<double>& bytes,
                          const std::vector<bool>& to_controller, bool controller) const {
    const auto& tr = transport_;
    if (tr.send_per_message_s <= 0 && tr.receive_per_message_s <= 0 && tr.copy_bytes_per_s <= 0 && tr.per_phase_s <= 0)
      return 0;
    std::map<Endpoint, double> sending, receiving;
    bool any = false;
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (to_controller[i] != controller) continue;
      any = true;
      sending[pairs[i].first] += tr.send_per_message_s + (tr.copy_bytes_per_s > 0 ? bytes[i] / tr.copy_bytes_per_s : 0.0);
      receiving[pairs[i].second] += tr.receive_per_message_s;
    }
    if (!any) return 0;
    double send = 0, receive = 0;
    for (const auto& [e, t] : sending) send = std::max(send, t);
    for (const auto& [e, t] : receiving) receive = std::max(receive, t);
    return tr.per_phase_s + send + receive;
  }

  model::Topology topology_;
  std::vector<double> capacities_;
  model::RouteCache routes_;
  input::DispatchTransport transport_;
};

namespace {

using Network = DispatchNetwork::Network;

double total_tokens(const std::vector<DispatchSample>& samples) {
  double n = 0;
  for (const auto& s : samples) n += static_cast<double>(s.tokens);
  return n;
}

// Gather everything to the controller, compute, scatter everything back out.
double centralized(Network& net, const std::vector<DispatchSample>& samples,
                   const std::vector<DispatchTensor>& tensors, const DispatchOptions& o, DispatchResult& r) {
  Phase gather, scatter;
  for (const auto& s : samples) {
    const SampleBytes b = sample_bytes(tensors, s.tokens);
    gather.add(Endpoint::gpu(s.producer_gpu), Endpoint::controller(), b.data + b.advantage_input);
    scatter.add(Endpoint::controller(), Endpoint::gpu(s.consumer_gpu), b.data + b.output_tensors);
  }
  r.cpu_seconds = o.advantage_seconds_per_token * total_tokens(samples);
  const double gathered = net.run(gather, r).all();
  return gathered + r.cpu_seconds + net.run(scatter, r).all();
}

// Data straight from producer to consumer; meanwhile scores go to the controller and the
// per-sample advantages come back.
double decentralized(Network& net, const std::vector<DispatchSample>& samples,
                     const std::vector<DispatchTensor>& tensors, const DispatchOptions& o, DispatchResult& r) {
  Phase direct, advantages;
  for (const auto& s : samples) {
    const SampleBytes b = sample_bytes(tensors, s.tokens);
    direct.add(Endpoint::gpu(s.producer_gpu), Endpoint::gpu(s.consumer_gpu), b.data);
    direct.add(Endpoint::gpu(s.producer_gpu), Endpoint::controller(), b.advantage_input);
    advantages.add(Endpoint::controller(), Endpoint::gpu(s.consumer_gpu), b.output_scalars);
  }
  r.cpu_seconds = o.advantage_seconds_per_token * static_cast<double>(samples.size());
  // The returning advantages are simulated after the direct phase rather than beside its tail:
  // they are a few bytes per sample on the controller's own link.
  const PhaseTimes first = net.run(direct, r);
  return std::max(first.data, first.controller + r.cpu_seconds + net.run(advantages, r).all());
}

// Producers write into their node's warehouse and tell the controller; once a row's columns are
// all written and its advantages known, the consumer is told where it is and reads it.
double transfer_dock(Network& net, const std::vector<DispatchSample>& samples,
                     const std::vector<DispatchTensor>& tensors, const DispatchOptions& o, DispatchResult& r) {
  Phase write, read;
  for (const auto& s : samples) {
    const SampleBytes b = sample_bytes(tensors, s.tokens);
    const Endpoint warehouse = Endpoint::host(net.node_of(s.producer_gpu));
    write.add(Endpoint::gpu(s.producer_gpu), warehouse, b.data);
    write.add(Endpoint::gpu(s.producer_gpu), Endpoint::controller(), b.advantage_input + o.metadata_bytes_per_message);
    read.add(warehouse, Endpoint::gpu(s.consumer_gpu), b.data);
    read.add(Endpoint::controller(), Endpoint::gpu(s.consumer_gpu), b.output_scalars + o.metadata_bytes_per_message);
  }
  r.cpu_seconds = o.advantage_seconds_per_token * static_cast<double>(samples.size());
  const PhaseTimes first = net.run(write, r);
  return std::max(first.data, first.controller + r.cpu_seconds) + net.run(read, r).all();
}

}  // namespace

DispatchNetwork::DispatchNetwork(const input::ClusterSpec& cluster, const DispatchOptions& options)
    : net_(std::make_unique<Network>(cluster, options)), options_(options), gpus_(cluster.total_gpus()) {}

DispatchNetwork::~DispatchNetwork() = default;

DispatchResult DispatchNetwork::simulate(const std::vector<DispatchSample>& samples,
                                         const std::vector<DispatchTensor>& tensors) {
  for (const auto& s : samples) {
    ARLSIM_ASSERT(s.tokens >= 0);
    ARLSIM_ASSERT(s.producer_gpu >= 0 && s.producer_gpu < gpus_);
    ARLSIM_ASSERT(s.consumer_gpu >= 0 && s.consumer_gpu < gpus_);
  }
  DispatchResult r;
  switch (options_.mode) {
    case input::DispatchMode::centralized: r.seconds = centralized(*net_, samples, tensors, options_, r); break;
    case input::DispatchMode::decentralized: r.seconds = decentralized(*net_, samples, tensors, options_, r); break;
    case input::DispatchMode::transfer_dock: r.seconds = transfer_dock(*net_, samples, tensors, options_, r); break;
  }
  return r;
}

DispatchResult simulate_dispatch(const input::ClusterSpec& cluster, const std::vector<DispatchSample>& samples,
                                 const std::vector<DispatchTensor>& tensors, const DispatchOptions& options) {
  return DispatchNetwork(cluster, options).simulate(samples, tensors);
}

}  // namespace arlsim::rl
