// The whole RL step, step after step: rollout (with tools and rewards) on the rollout engines,
// experience preparation (old and reference log-probs, critic values), dispatch of the
// intermediate tensors, training (PPO epochs x mini-batches) and weight sync, in the scenario's
// mode — synchronous colocated, synchronous disaggregated, or asynchronous with staleness k, where
// the rollout of step t + 1 overlaps the training of step t. Layout switches from the policy's
// schedule are charged an engine relaunch. Memory is checked for the rollout engines and the
// training ranks; a stage that does not fit yields an OOM event instead of a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sim/rl/step_result.h"
#include "sim/spec/diagnostics.h"
#include "sim/spec/scenario.h"
#include "sim/trace/trace.h"

namespace arlsim::rl {

struct RunOptions {
  int64_t first_step = -1;  // trace steps to run, inclusive; -1: from the first / to the last
  int64_t last_step = -1;
  int64_t max_steps = 0;    // 0: the scenario's `steps`
  bool per_iteration = false;
  bool stop_on_oom = true;  // else record the OOM and go on with the next step
  bool timeline = true;     // collect timeline events
  bool detail_pipeline = false;  // timeline: each micro-batch's forward and backward on each stage
};

// The scenario's trace: its file (or `override_path`), or the one it asks to generate. With `run`,
// only the trajectories of the steps that simulate_run(s, trace, *run) simulates are kept (the
// whole file is still read and checked).
std::optional<trace::Trace> load_scenario_trace(const spec::ScenarioSpec& s, const std::string& override_path,
                                                spec::Diagnostics& diag, const RunOptions* run = nullptr);

// Called after each step with (steps done, steps to run).
using Progress = std::function<void(int64_t, int64_t)>;

RunResult simulate_run(const spec::ScenarioSpec& s, const trace::Trace& t, const RunOptions& o,
                       const Progress& progress = {});

}  // namespace arlsim::rl
