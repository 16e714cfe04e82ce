#include "sim/graph/placement.h"

#include "sim/core/assert.h"

namespace arlsim::graph {

Placement::Placement(PlacementShape shape, int64_t first_device, int64_t devices_per_node, DeviceKind kind)
    : shape_(shape), first_(first_device), per_node_(devices_per_node), kind_(kind) {
  ARLSIM_ASSERT(shape.tp >= 1 && shape.cp >= 1 && shape.dp >= 1 && shape.pp >= 1);
  ARLSIM_ASSERT(first_device >= 0 && devices_per_node >= 1);
}

int64_t Placement::rank(int64_t tp, int64_t cp, int64_t dp, int64_t pp) const {
  ARLSIM_ASSERT(tp >= 0 && tp < shape_.tp && cp >= 0 && cp < shape_.cp && dp >= 0 && dp < shape_.dp && pp >= 0 &&
                pp < shape_.pp);
  const int64_t inner = tp + shape_.tp * cp;  // tp and cp come first in both orders
  const int64_t outer = shape_.order == RankOrder::pipeline_outer ? dp + shape_.dp * pp : pp + shape_.pp * dp;
  return inner + shape_.tp * shape_.cp * outer;
}

Placement::Coords Placement::coords(int64_t r) const {
  ARLSIM_ASSERT(r >= 0 && r < ranks());
  const int64_t tp = r % shape_.tp, cp = r / shape_.tp % shape_.cp, outer = r / (shape_.tp * shape_.cp);
  if (shape_.order == RankOrder::pipeline_outer) return {tp, cp, outer % shape_.dp, outer / shape_.dp};
  return {tp, cp, outer / shape_.pp, outer % shape_.pp};
}

std::vector<int64_t> Placement::replica_devices(int64_t dp) const {
  std::vector<int64_t> out;
  for (int64_t pp = 0; pp < shape_.pp; ++pp)
    for (int64_t cp = 0; cp < shape_.cp; ++cp)
      for (int64_t tp = 0; tp < shape_.tp; ++tp) out.push_back(device(rank(tp, cp, dp, pp)));
  return out;
}

std::vector<int64_t> Placement::group(GroupDim dim, int64_t r) const {
  const auto [tp, cp, dp, pp] = coords(r);
  std::vector<int64_t> out;
  switch (dim) {
    case GroupDim::tp:
      for (int64_t i = 0; i < shape_.tp; ++i) out.push_back(rank(i, cp, dp, pp));
      break;
    case GroupDim::cp:
      for (int64_t i = 0; i < shape_.cp; ++i) out.push_back(rank(tp, i, dp, pp));
      break;
    case GroupDim::dp:
      for (int64_t i = 0; i < shape_.dp; ++i) out.push_back(rank(tp, cp, i, pp));
      break;
    case GroupDim::pp:
      for (int64_t i = 0; i < shape_.pp; ++i) out.push_back(rank(tp, cp, dp, i));
      break;
  }
  return out;
}

bool Placement::group_in_node(GroupDim dim, int64_t r) const {
  const auto g = group(dim, r);
  return node(g.front()) == node(g.back());
}

}  // namespace arlsim::graph
