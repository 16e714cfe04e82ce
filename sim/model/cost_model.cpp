#include "sim/model/cost_model.h"

#include <algorithm>

#include "sim/core/assert.h"

namespace arlsim::model {

CollectiveGroup collective_group(const graph::Placement& p, graph::GroupDim dim, int64_t rank) {
  const auto ranks = p.group(dim, rank);
  CollectiveGroup g;
  g.ranks = static_cast<int64_t>(ranks.size());
  const int64_t node = p.node(ranks.front());
  g.ranks_per_node = std::count_if(ranks.begin(), ranks.end(), [&](int64_t r) { return p.node(r) == node; });
  return g;
}

bool crosses_nodes(const graph::Placement& from, int64_t from_rank, const graph::Placement& to, int64_t to_rank) {
  return from.node(from_rank) != to.node(to_rank);
}

AnalyticCostModel::AnalyticCostModel(const input::ClusterSpec& cluster, input::Dtype dtype)
    : cluster_(cluster), compute_(cluster.gpu, dtype), collectives_(cluster) {}

OpCost AnalyticCostModel::cost(const Op& op) const {
  struct Visit {
    const AnalyticCostModel& m;
    OpCost operator()(const GemmOp& g) const {
      return g.groups > 1 ? m.compute_.grouped_gemm(g.groups, g.m, g.n, g.k) : m.compute_.gemm(g.m, g.n, g.k);
    }
    OpCost operator()(const AttentionOp& a) const { return m.compute_.attention(a.forward_flops, a.seq_len, a.pass, a.head_dim, a.calls); }
    OpCost operator()(const DecodeAttentionOp& a) const { return m.compute_.decode_attention(a.kv_bytes, a.layers, a.seqs); }
    OpCost operator()(const MemoryBoundOp& b) const {
      OpCost c = m.compute_.memory_bound(b.bytes, b.kernels, b.kind);
      c.seconds += static_cast<double>(b.graph_kernels) * m.compute_.graph_kernel_s();
      return c;
    }
    OpCost operator()(const CollectiveCallOp& c) const {
      OpCost out;
      out.seconds = m.collectives_.cost(c.op, c.bytes, c.group).seconds;
      return out;
    }
    OpCost operator()(const PointToPointOp& p) const {
      // NCCL's send/recv between two ranks, on one node or across two.
      OpCost out;
      out.seconds = m.collectives_.cost(CollectiveOp::send_recv, p.bytes, {2, p.cross_node ? 1 : 2}).seconds;
      return out;
    }
    OpCost operator()(const WaitOp& w) const {
      OpCost out;
      out.seconds = w.seconds;
      return out;
    }
    OpCost operator()(const HostTransferOp& h) const {
      const input::GpuProfile& gpu = m.cluster_.gpu;
      const double rate = h.memory == HostMemory::pageable_out  ? gpu.host_pageable_out_bytes_per_s
                          : h.memory == HostMemory::pageable_in ? gpu.host_pageable_in_bytes_per_s
                                                                : gpu.host_link.achieved();
      // Offload and swaps are refused without a host link, swaps through pageable memory without
      // its rates (input::check).
      ARLSIM_ASSERT(rate > 0 || h.bytes <= 0);
      OpCost out;
      out.seconds = h.bytes > 0 ? h.bytes / rate + m.cluster_.gpu.host_copy_overhead.seconds() : 0.0;
      return out;
    }
  };
  return std::visit(Visit{*this}, op);
}

}  // namespace arlsim::model
