// Placement: a parallel layout mapped onto devices, a contiguous block of them, `devices_per_node`
// to a node. Training ranks are numbered as Megatron-LM numbers them: tensor parallelism fastest,
// then context parallelism, then data parallelism, pipeline stages outermost. Rollout engines are
// placements too — dp engines (replicas) of tp x pp devices — numbered replica by replica, each
// engine's devices contiguous, as vLLM and SGLang take them. A device is a GPU, or a CPU thread
// for the CPU runtime and calibration. Nothing else does device-id arithmetic.
#pragma once

#include <cstdint>
#include <vector>

namespace arlsim::graph {

enum class DeviceKind : uint8_t { gpu, cpu_thread };

// The process-group dimensions of a layout.
enum class GroupDim : uint8_t { tp, cp, dp, pp };

// Which of dp and pp is outermost in the numbering of ranks.
enum class RankOrder : uint8_t {
  pipeline_outer,  // training (Megatron-LM): tp, cp, dp, pp
  replica_outer,   // inference engines: tp, cp, pp, dp, each replica contiguous
};

struct PlacementShape {
  int64_t tp = 1, cp = 1, dp = 1, pp = 1;
  RankOrder order = RankOrder::pipeline_outer;
  int64_t ranks() const { return tp * cp * dp * pp; }
};

class Placement {
 public:
  // `shape` on devices [first_device, first_device + shape.ranks()), devices_per_node per node.
  Placement(PlacementShape shape, int64_t first_device, int64_t devices_per_node, DeviceKind kind = DeviceKind::gpu);

  const PlacementShape& shape() const { return shape_; }
  DeviceKind kind() const { return kind_; }
  int64_t ranks() const { return shape_.ranks(); }
  int64_t first_device() const { return first_; }
  int64_t devices_per_node() const { return per_node_; }

  // The rank with these coordinates, and its device and node.
  int64_t rank(int64_t tp, int64_t cp, int64_t dp, int64_t pp) const;
  int64_t device(int64_t rank) const { return first_ + rank; }
  int64_t node(int64_t rank) const { return device(rank) / per_node_; }
  int64_t node_of_device(int64_t device) const { return device / per_node_; }

  // The first device of data-parallel replica `dp` (its tp = cp = pp = 0 rank): where a rollout
  // engine's weights start, and where a training rank reads its samples.
  int64_t replica_device(int64_t dp) const { return device(rank(0, 0, dp, 0)); }
  // The devices of data-parallel replica `dp`, all of its stages.
  std::vector<int64_t> replica_devices(int64_t dp) const;
  // The ranks of `rank`'s group along `dim` (its TP group, its DP group, ...), in order.
  std::vector<int64_t> group(GroupDim dim, int64_t rank) const;
  // The nodes the placement spans: [first_node, last_node].
  int64_t first_node() const { return first_ / per_node_; }
  int64_t last_node() const { return (first_ + ranks() - 1) / per_node_; }
  // Whether the group of `rank` along `dim` stays inside one node.
  bool group_in_node(GroupDim dim, int64_t rank) const;

 private:
  struct Coords {
    int64_t tp, cp, dp, pp;
  };
  Coords coords(int64_t rank) const;

  PlacementShape shape_;
  int64_t first_ = 0;
  int64_t per_node_ = 1;
  DeviceKind kind_ = DeviceKind::gpu;
};

}  // namespace arlsim::graph
