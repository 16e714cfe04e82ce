// Closed-form stage costs of one candidate layout on one trace step: what the planner evaluates
// for every candidate before it confirms the best few with the event simulator.
//
// Rollout (per engine, the step's load spread evenly over the engines): decoding runs in batches
// of B sequences, B limited by max_num_seqs, the engine's share of trajectories and how many mean
// contexts its KV cache holds; each iteration costs a + b x (KV tokens of the batch)
// (model::DecodeWindow). Prefill runs in chunks of max_num_batched_tokens. The step takes the
// longer of that throughput-bound time and its critical path: the trajectory whose generated
// tokens (one per iteration at batch B) and tool calls take longest. A step whose longest context
// does not fit one engine's KV cache cannot run on the layout (vLLM refuses it).
//
// Training: the cost model's iteration at the step's mean length (attention at the token-weighted
// mean length, sum(c^2) / sum(c)), PPO epochs x mini-batches of it,
// forward passes for old and reference log-probs (and critic values), memory at the longest
// sequence. Ranks are taken as balanced (the simulator adds the LPT remainder).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "planner/features.h"
#include "sim/model/inference.h"
#include "sim/input/scenario.h"

namespace arlsim::planner {

// "" when the step can run, else why not.
struct StageCost {
  double seconds = 0;
  std::string infeasible;
  bool feasible() const { return infeasible.empty(); }
};

class RolloutEstimator {
 public:
  RolloutEstimator(const input::ScenarioSpec& s, const input::RolloutLayout& layout);

  // Why no engine of this layout can run at all (weights do not fit, heads do not split), or "".
  const std::string& problem() const { return problem_; }
  int64_t engines() const { return engines_; }
  int64_t kv_capacity_tokens() const { return kv_capacity_; }
  StageCost cost(const StepFeatures& f) const;

 private:
  const input::ScenarioSpec& s_;
  input::RolloutLayout layout_;
  std::unique_ptr<model::InferenceModel> im_;
  std::string problem_;
  int64_t engines_ = 0;
  int64_t kv_capacity_ = 0;
};

// A length on the planner's grid of 8 points per doubling (steps of 9%): the nearest point for
// times, the next one up (up = true) for memory, never optimistic.
int64_t grid_length(double tokens, bool up);

class TrainEstimator {
 public:
  TrainEstimator(const input::ScenarioSpec& s, const input::TrainLayout& layout);

  const std::string& problem() const { return problem_; }
  // Experience preparation (forward passes) and training (PPO epochs x mini-batches).
  StageCost cost(const StepFeatures& f) const;

 private:
  // Costs are memoised per length on a geometric grid (see analytic.cpp).
  struct AtLength {
    double prepare_s = 0;
    double train_pipeline_s = 0;  // the micro-batches through the pipeline, every optimizer step
    double train_fixed_s = 0;     // gradient reduction and optimizer steps
  };
  AtLength at_length(int64_t mean_len, int64_t attention_len, int64_t sequences) const;
  // The first pass that does not fit at the step's longest sequence (and, where a model computes
  // padded tensors under a token budget, its micro-batches of about budget / mean_len sequences
  // each as wide as the limits); "" when all fit.
  std::string memory_problem(int64_t longest, int64_t sequences, int64_t mean_len = 0, int64_t policy_packed = 0,
                             int64_t critic_packed = 0) const;
  // The busiest rank's tokens over the mean rank's, averaged over the step's mini-batches, with
  // the samples assigned to ranks as the policy balances them.
  double mini_batch_skew(const StepFeatures& f) const;

  const input::ScenarioSpec& s_;
  input::TrainLayout layout_;
  std::string problem_;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t>, AtLength> times_;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, std::string> memory_;
  mutable std::map<std::pair<int64_t, size_t>, double> skew_;  // by step and trajectories
};

}  // namespace arlsim::planner
