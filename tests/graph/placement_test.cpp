// Placements: ranks numbered tp fastest, then cp, then dp, pp outermost for training (Megatron-LM)
// and replica by replica for engines; groups and nodes follow from the numbering.
#include <doctest/doctest.h>

#include "sim/graph/placement.h"

using namespace arlsim::graph;

TEST_CASE("placement: training ranks in Megatron-LM order on a block of GPUs") {
  // tp 2 x cp 2 x dp 2 x pp 2 = 16 GPUs from GPU 8, 8 GPUs a node.
  const Placement p({2, 2, 2, 2, RankOrder::pipeline_outer}, 8, 8);
  CHECK(p.ranks() == 16);
  CHECK(p.rank(1, 0, 0, 0) == 1);
  CHECK(p.rank(0, 1, 0, 0) == 2);   // cp after tp
  CHECK(p.rank(0, 0, 1, 0) == 4);   // then dp
  CHECK(p.rank(0, 0, 0, 1) == 8);   // pp outermost
  CHECK(p.device(5) == 13);
  CHECK(p.node(5) == 1);
  CHECK(p.node(8) == 2);
  CHECK(p.replica_device(1) == 12);  // dp rank 1's first GPU: 8 + tp x cp
  CHECK(p.replica_devices(1) == std::vector<int64_t>{12, 13, 14, 15, 20, 21, 22, 23});
  CHECK(p.group(GroupDim::tp, 5) == std::vector<int64_t>{4, 5});
  CHECK(p.group(GroupDim::cp, 5) == std::vector<int64_t>{5, 7});
  CHECK(p.group(GroupDim::dp, 5) == std::vector<int64_t>{1, 5});
  CHECK(p.group(GroupDim::pp, 5) == std::vector<int64_t>{5, 13});
  CHECK(p.first_node() == 1);
  CHECK(p.last_node() == 2);
  CHECK(p.group_in_node(GroupDim::dp, 5));
  CHECK_FALSE(p.group_in_node(GroupDim::pp, 5));
}

TEST_CASE("placement: engines keep their GPUs together, replica after replica") {
  // 4 engines of tp 2 x pp 2 from GPU 0, 4 GPUs a node: engine e on GPUs 4e .. 4e + 3.
  const Placement p({2, 1, 4, 2, RankOrder::replica_outer}, 0, 4);
  CHECK(p.replica_device(3) == 12);
  CHECK(p.replica_devices(2) == std::vector<int64_t>{8, 9, 10, 11});
  CHECK(p.node(p.rank(0, 0, 2, 1)) == 2);
  CHECK(p.group(GroupDim::pp, p.rank(1, 0, 1, 0)) == std::vector<int64_t>{5, 7});
  CHECK(p.group_in_node(GroupDim::pp, 5));
  // A CPU placement: threads as devices, one "node".
  const Placement cpu({1, 1, 4, 1, RankOrder::replica_outer}, 0, 64, DeviceKind::cpu_thread);
  CHECK(cpu.kind() == DeviceKind::cpu_thread);
  CHECK(cpu.last_node() == 0);
}
