// `validate --scale S`: a plan made smaller in every dimension that costs time — fewer layers,
// shorter sequences, fewer prompts per step — applied to the scenario and its trace before both
// the prediction and the execution, so that they describe the same scaled step graph and the
// comparison stays exact.
#pragma once

#include <string>

#include "sim/input/scenario.h"
#include "sim/trace/trace.h"

namespace arlsim::runtime {

struct ScaleNote {
  int64_t layers_from = 0, layers_to = 0;
  int64_t prompts_from = 0, prompts_to = 0;
  double factor = 1;
  std::string text() const;  // one line for the report
};

// Scales `s` and `t` by `factor` in (0, 1]: layers round(L x S) (at least 1); every turn's prompt,
// generated and observation tokens ceil(n x S) (a non-zero count stays at least 1) and the
// workload's length limits as much (never below what the scaled trace's uncut trajectories hold:
// one the context limit cut stays cut); the first round(P x S) prompts' groups of each step (at
// least 1, rounded up so that the trajectories still split into the mini-batches and each
// mini-batch over the data-parallel ranks). Tool latencies are unchanged.
ScaleNote scale_plan(input::ScenarioSpec& s, trace::Trace& t, double factor);

}  // namespace arlsim::runtime
