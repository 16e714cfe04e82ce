// What the planner reads of a trace: per step, the load its rollout and training see (how many
// trajectories, tokens prefilled and generated, the KV length generated tokens attend to, the
// contexts training consumes, and the trajectories that can make up the critical path). Read
// once, then every candidate layout is costed from these figures in closed form.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "sim/trace/trace.h"

namespace arlsim::planner {

// Figures of a step's samples that many candidate layouts share (the planner's training estimators
// of every layout with the same data-parallel degree balance the same samples over the same
// ranks), kept once for all of them. Keyed by what they depend on besides the samples, and by a
// fingerprint of the samples themselves, so that copies of a step that share it stay right.
// Capacity sweeps cost configurations on threads: guarded.
struct SharedFigures {
  std::mutex mutex;
  std::map<std::tuple<int64_t, int64_t, bool, uint64_t>, double> mini_batch_skew;  // (dp, mini-batches, balanced, samples)
};

// A trajectory that may be the step's critical path: its generated tokens run one per engine
// iteration, its tool calls one after another. Only the upper-right frontier of (generated
// tokens, tool seconds) is kept: any other trajectory finishes before one of these, whatever the
// iteration time.
struct TailTrajectory {
  double gen_tokens = 0;
  double tool_s = 0;
};

struct StepFeatures {
  int64_t step = 0;
  int64_t trajectories = 0;
  double prefill_tokens = 0;      // prompts, later prefills and tool observations
  double gen_tokens = 0;
  double decode_kv_tokens = 0;    // mean KV length a generated token attends to
  double mean_context = 0;        // final context per trajectory, clamped to the workload's limit
  double attention_context = 0;   // sum(c^2) / sum(c) of those: what causal attention's work goes with
  int64_t max_context = 0;
  int64_t total_tokens = 0;       // sum of the final contexts (the step's tokens)
  std::vector<int64_t> contexts;  // per trajectory, sorted longest first
  std::vector<TailTrajectory> tail;
  std::shared_ptr<SharedFigures> shared = std::make_shared<SharedFigures>();

  // The same step with every token count scaled by `factor` (contexts `factor` times longer):
  // the probe the online selector measures candidate layouts on.
  StepFeatures scaled(double factor) const;
};

struct FeatureOptions {
  int64_t max_context = 0;  // clamp contexts to this (0: no limit)
  int64_t first_step = -1, last_step = -1;  // inclusive; -1: from the first / to the last
  int64_t max_steps = 0;                    // 0: every step in range
};

std::vector<StepFeatures> step_features(const trace::Trace& t, const FeatureOptions& o);

}  // namespace arlsim::planner
