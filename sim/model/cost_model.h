// The cost model's interface: the time of one typed operation on the devices it runs on. Every
// composite estimate (a training iteration, a forward pass, an engine iteration) is built from
// these operations, so a different implementation — the analytic one below, or a table measured
// by `arlsim calibrate` — changes every estimate at once. Implementations are chosen by whoever
// builds the estimates; tests pass fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <variant>

#include "sim/graph/placement.h"
#include "sim/model/collective.h"
#include "sim/model/compute.h"

namespace arlsim::model {

// A dense GEMM (m x k) x (k x n), or `groups` identical ones launched as one kernel (MoE experts).
struct GemmOp {
  int64_t m = 0, n = 0, k = 0;
  int64_t groups = 1;
};
// FlashAttention over `forward_flops` forward FLOPs at a representative key length.
struct AttentionOp {
  double forward_flops = 0;
  int64_t seq_len = 0;
  AttentionPass pass = AttentionPass::forward;
  int64_t head_dim = 128;  // of the query-key product
  int64_t calls = 1;       // kernel launches the work is split into (context-parallel ring steps)
};
// Decode attention: `layers` kernels reading `kv_bytes` of KV cache for a batch of `seqs`
// sequences (ComputeModel::decode_attention: the profile's decode table, or the memory-bound rate).
struct DecodeAttentionOp {
  double kv_bytes = 0;
  int64_t layers = 1;
  int64_t seqs = 1;
};
// Element-wise work streaming `bytes` through HBM in `kernels` launches, and `graph_kernels`
// kernels replayed from a CUDA graph (each at least the profile's graph_kernel_overhead).
struct MemoryBoundOp {
  double bytes = 0;
  int kernels = 1;
  int64_t graph_kernels = 0;
  ElementwiseKind kind = ElementwiseKind::any;  // priced at that kind's measured rate, where the profile has one
};
// A collective over a group of ranks (see collective_group()); `bytes` as nccl-tests counts them.
struct CollectiveCallOp {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;
  CollectiveGroup group;
};
// Bytes from one device to another (pipeline activations, context-parallel KV blocks): over the
// node's GPU link, or over the NICs when the two sit on different nodes.
struct PointToPointOp {
  double bytes = 0;
  bool cross_node = false;
};
// Bytes between a GPU and host memory, priced as one transfer: its bytes at the rate of the host
// memory it uses and one copy's fixed time (the profile's host_copy_overhead). Pinned memory is
// read and written by the copy engine at the host link's rate. Pageable memory is what PyTorch's
// `tensor.to("cpu")` allocates: out of the device into newly allocated pages, each faulted in and
// zeroed by the host's kernel as the driver copies its staging buffer into it, and back in from
// them through that staging buffer (the profile's `host_pageable` rates).
enum class HostMemory { pinned, pageable_out, pageable_in };
struct HostTransferOp {
  double bytes = 0;
  HostMemory memory = HostMemory::pinned;
};
// Time that passes without using a device: a tool call, a wait on another process.
struct WaitOp {
  double seconds = 0;
};

using Op = std::variant<GemmOp, AttentionOp, DecodeAttentionOp, MemoryBoundOp, CollectiveCallOp, PointToPointOp,
                        HostTransferOp, WaitOp>;

// Whether two placements' devices sit on different nodes (a PointToPointOp between them).
bool crosses_nodes(const graph::Placement& from, int64_t from_rank, const graph::Placement& to, int64_t to_rank);

class CostModel {
 public:
  virtual ~CostModel() = default;
  // The operation's time (and, for kernels, its FLOPs and HBM bytes) on one device of its kind;
  // a collective's on its group.
  virtual OpCost cost(const Op& op) const = 0;
  // Peak dense FLOP/s of one device in the model's dtype: what MFU is reported against.
  virtual double peak_flops() const = 0;
  double seconds(const Op& op) const { return cost(op).seconds; }
};

// The group of `rank`'s ranks along `dim` in a placement, as collectives see it: its size and
// how many of its consecutive ranks share a node.
CollectiveGroup collective_group(const graph::Placement& p, graph::GroupDim dim, int64_t rank);

// Roofline kernels with the profile's efficiency curves (compute.h), NCCL-style collectives over
// the cluster (collective.h) and the profile's host link: every figure from the profile.
class AnalyticCostModel final : public CostModel {
 public:
  AnalyticCostModel(const input::ClusterSpec& cluster, input::Dtype dtype);
  OpCost cost(const Op& op) const override;
  double peak_flops() const override { return compute_.peak_flops(); }

 private:
  const input::ClusterSpec& cluster_;
  ComputeModel compute_;
  CollectiveModel collectives_;
};

}  // namespace arlsim::model
