#include "sim/graph/stage.h"

namespace arlsim::graph {

static_assert([] {
  for (size_t i = 0; i < kStageCount; ++i)
    if (static_cast<size_t>(kStages[i].id) != i) return false;
  return true;
}(), "kStages is indexed by Stage");

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::engine_run: return "engine_run";
    case OpKind::forward: return "forward";
    case OpKind::train: return "train";
    case OpKind::transfer: return "transfer";
    case OpKind::sync: return "sync";
  }
  return "?";
}

std::optional<Stage> find_stage(std::string_view name) {
  for (const auto& s : kStages)
    if (s.name == name) return s.id;
  return std::nullopt;
}

}  // namespace arlsim::graph
