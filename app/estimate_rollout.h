// `arlsim estimate` for "kind": "rollout": requests served by inference engines, with the figures
// a vLLM benchmark prints.
#pragma once

#include <string>

#include "sim/input/stage.h"

namespace arlsim::app {

int estimate_rollout(const input::StageSpec& s, const std::string& file, bool json, bool per_iteration);

}  // namespace arlsim::app
