#include "sim/graph/stage.h"

namespace arlsim::graph {

static_assert([] {
  for (size_t i = 0; i < kStageCount; ++i)
    if (static_cast<size_t>(kStages[i].id) != i) return false;
  return true;
}(), "kStages is indexed by Stage");

std::optional<Stage> find_stage(std::string_view name) {
  for (const auto& s : kStages)
    if (s.name == name) return s.id;
  return std::nullopt;
}

}  // namespace arlsim::graph
