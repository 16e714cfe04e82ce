// `arlsim estimate` for "kind": "rollout": requests served by inference engines, with the figures
// a vLLM benchmark prints.
#pragma once

#include <string>

#include "sim/spec/stage.h"

namespace arlsim::app {

int estimate_rollout(const spec::StageSpec& s, const std::string& file, bool json, bool per_iteration);

}  // namespace arlsim::app
