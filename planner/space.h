// The search space: every layout of a stage the planner considers, with the constraints that
// prune a candidate before it is costed (divisibility of heads, layers and GPUs; engines and
// tensor-parallel groups inside a node; the cost model's memory verdict). Pruned candidates are
// kept with their reason, so a plan can say why a layout was not chosen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/input/scenario.h"

namespace arlsim::planner {

struct RolloutCandidate {
  input::RolloutLayout layout;
  std::string pruned;  // "" when it can run
  std::string misfit;  // the first step it cannot run, and why ("" when it runs them all)
};

struct TrainCandidate {
  input::TrainLayout layout;
  std::string pruned;
  std::string misfit;
};

// Rollout engines of tp x pp GPUs (tp inside a node; pp only across whole nodes), expert
// parallelism over the tensor-parallel ranks for MoE models, as many replicas as the rollout GPUs
// hold. The scenario's own layout is always included.
std::vector<RolloutCandidate> rollout_space(const input::ScenarioSpec& s);

// Training layouts over the training GPUs: tp inside a node, cp, pp dividing the layers (with
// interleaving v = 2 when pp > 1), dp for the rest; ZeRO 1 or 3; selective or full recompute (and
// none); the scenario's micro-batch or token budget. The scenario's own layout is always included.
std::vector<TrainCandidate> train_space(const input::ScenarioSpec& s);

// "tp4", "tp8 pp2 x2" — short names for tables.
std::string layout_name(const input::RolloutLayout& l);
std::string layout_name(const input::TrainLayout& l);

}  // namespace arlsim::planner
