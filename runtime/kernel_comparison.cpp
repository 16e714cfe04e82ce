#include "runtime/kernel_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <stdexcept>

#include "sim/model/memory.h"

namespace arlsim::runtime {

double predict_kernel(const Kernel& k, const Program& p, const model::CostModel& cost, int64_t gpus_per_node) {
  switch (k.kind) {
    case Kernel::Kind::gemm: return cost.seconds(model::GemmOp{k.m, k.n, k.k, std::max<int64_t>(1, k.groups)});
    case Kernel::Kind::attention: {
      // The kernel's heads of 2 s^2 d forward FLOPs each (program.cpp's attention()).
      const double flops = static_cast<double>(k.heads) * 2.0 * static_cast<double>(k.seq_len) *
                           static_cast<double>(k.seq_len) * static_cast<double>(k.head_dim);
      const double forward = cost.seconds(model::AttentionOp{flops, k.seq_len, model::AttentionPass::forward, k.head_dim});
      if (!k.backward) return forward;
      return cost.seconds(model::AttentionOp{flops, k.seq_len, model::AttentionPass::forward_backward, k.head_dim}) - forward;
    }
    case Kernel::Kind::decode_attention: return cost.seconds(model::DecodeAttentionOp{k.bytes, 1, std::max<int64_t>(1, k.seqs)});
    case Kernel::Kind::memory: {
      model::MemoryBoundOp op;
      op.bytes = k.bytes;
      op.kernels = static_cast<int>(std::max<int64_t>(0, k.launches));
      op.kind = k.elementwise;
      return cost.seconds(op);
    }
    case Kernel::Kind::collective: {
      if (k.group < 0 || static_cast<size_t>(k.group) >= p.groups.size()) return 0;
      const DeviceGroup& g = p.groups[static_cast<size_t>(k.group)];
      if (g.empty()) return 0;
      std::set<int64_t> nodes;
      for (int64_t d : g) nodes.insert(d / std::max<int64_t>(1, gpus_per_node));
      model::CollectiveGroup group;
      group.ranks = static_cast<int64_t>(g.size());
      group.ranks_per_node = (group.ranks + static_cast<int64_t>(nodes.size()) - 1) / static_cast<int64_t>(nodes.size());
      return cost.seconds(model::CollectiveCallOp{k.op, k.bytes, group});
    }
    case Kernel::Kind::copy: return cost.seconds(model::HostTransferOp{k.bytes});
    case Kernel::Kind::wait: return k.seconds;
  }
  return 0;
}

std::string kernel_shape(const Kernel& k, const Program& p) {
  char s[160] = "";
  const auto ll = [](int64_t v) { return static_cast<long long>(v); };
  switch (k.kind) {
    case Kernel::Kind::gemm:
      std::snprintf(s, sizeof s, "%lld x %lld x %lld%s", ll(k.m), ll(k.n), ll(k.k), k.weight_gradient ? " (weight gradient)" : "");
      if (k.groups > 1) std::snprintf(s + std::strlen(s), sizeof s - std::strlen(s), ", %lld groups", ll(k.groups));
      break;
    case Kernel::Kind::attention:
      std::snprintf(s, sizeof s, "%lld heads x %lld tokens x %lld%s", ll(k.heads), ll(k.seq_len), ll(k.head_dim),
                    k.backward ? ", backward" : "");
      break;
    case Kernel::Kind::decode_attention:
      std::snprintf(s, sizeof s, "%lld seqs x %lld tokens, %lld/%lld heads x %lld", ll(k.seqs), ll(k.seq_len), ll(k.heads),
                    ll(k.kv_heads), ll(k.head_dim));
      break;
    case Kernel::Kind::memory: {
      static constexpr const char* kinds[] = {"element-wise", "copy", "add", "norm", "activation"};
      static_assert(std::size(kinds) == input::kElementwiseKinds);
      std::snprintf(s, sizeof s, "%s, %.4g MB in %lld launches", kinds[static_cast<int>(k.elementwise)], k.bytes / 1e6,
                    ll(k.launches));
      break;
    }
    case Kernel::Kind::collective:
      if (k.group >= 0 && static_cast<size_t>(k.group) < p.groups.size())
        std::snprintf(s, sizeof s, "%s of %.4g MB over %zu", model::collective_name(k.op), k.bytes / 1e6,
                      p.groups[static_cast<size_t>(k.group)].size());
      else
        std::snprintf(s, sizeof s, "%s of %.4g MB", model::collective_name(k.op), k.bytes / 1e6);
      break;
    case Kernel::Kind::copy:
      std::snprintf(s, sizeof s, "%.4g MB %s", k.bytes / 1e6, k.peer < 0 ? "to host" : "from host");
      break;
    case Kernel::Kind::wait: std::snprintf(s, sizeof s, "%s", k.busy ? "host work" : "timer"); break;
  }
  return s;
}

std::string kernels_csv(const std::vector<KernelComparison>& rows) {
  std::string out = "stage,kind,shape,count,predicted_s,measured_s,error\n";
  char line[320];
  for (const auto& c : rows) {
    std::snprintf(line, sizeof line, "%s,%s,\"%s\",%lld,%.9g,%.9g,%.6f\n", c.stage.c_str(), c.kind.c_str(), c.shape.c_str(),
                  static_cast<long long>(c.count), c.predicted_s, c.measured_s, c.error());
    out += line;
  }
  return out;
}

KernelTally::KernelTally(const input::ScenarioSpec& s)
    : s_(s), training_(s.cluster, s.workload.dtype), serving_(s.cluster, model::serving_dtype(s.cluster.gpu)) {}

void KernelTally::add(const Program& p, const RunStats& r, const std::function<graph::Stage(int64_t device)>& stage_of) {
  for (const auto& [device, seconds] : r.kernel_seconds) {
    const std::vector<Kernel>* kernels = nullptr;
    for (const auto& [d, ks] : p.devices)
      if (d == device) kernels = &ks;
    if (!kernels) continue;
    if (seconds.size() != kernels->size())
      throw std::runtime_error("device " + std::to_string(device) + " reported " + std::to_string(seconds.size()) +
                               " kernel times for a program of " + std::to_string(kernels->size()) + " kernels");
    const graph::Stage stage = stage_of(device);
    const model::CostModel& cost = stage == graph::Stage::rollout ? serving_ : training_;
    for (size_t j = 0; j < kernels->size(); ++j) {
      const Kernel& k = (*kernels)[j];
      std::string shape = kernel_shape(k, p);
      KernelComparison& c = shapes_[{stage, k.kind, shape}];
      if (c.count == 0) {
        c.stage = std::string(graph::stage_name(stage));
        c.kind = kernel_kind_name(k.kind);
        c.shape = std::move(shape);
      }
      ++c.count;
      c.predicted_s += predict_kernel(k, p, cost, s_.cluster.gpus_per_node);
      c.measured_s += seconds[j];
    }
  }
}

std::vector<KernelComparison> KernelTally::by_kind() const {
  std::map<std::pair<graph::Stage, Kernel::Kind>, KernelComparison> kinds;
  for (const auto& [key, c] : shapes_) {
    KernelComparison& k = kinds[{std::get<0>(key), std::get<1>(key)}];
    k.stage = c.stage;
    k.kind = c.kind;
    k.count += c.count;
    k.predicted_s += c.predicted_s;
    k.measured_s += c.measured_s;
  }
  std::vector<KernelComparison> rows;
  for (auto& [key, c] : kinds) rows.push_back(std::move(c));
  return rows;
}

std::vector<KernelComparison> KernelTally::by_shape() const {
  std::vector<KernelComparison> rows;
  for (const auto& [key, c] : shapes_) rows.push_back(c);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
    return std::abs(x.predicted_s - x.measured_s) > std::abs(y.predicted_s - y.measured_s);
  });
  return rows;
}

}  // namespace arlsim::runtime
