// The preparation passes' own layouts (old and reference log-probs, the critic's values): a
// forward pass keeps no optimizer state, so it may run faster with less tensor parallelism and
// more data parallelism than training needs. Where the policy gives a pass no layout, the plan
// tries every tp x dp layout of the training GPUs (pp = cp = 1) over the trace's steps, beside
// the training layouts the policy's schedule has at each step (a pass's memory depends on their
// sharding), and adopts the fastest that fits at every step, when it beats running the pass in
// the training layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/features.h"
#include "sim/input/scenario.h"

namespace arlsim::planner {

struct PassChoice {
  std::string stage;                                // "old_logprob", "ref_logprob" or "critic"
  bool searched = false;                            // false: the policy fixes its layout
  std::optional<input::InferenceLayout> chosen;     // nullopt: the training layout in force
  double training_layout_s = 0, chosen_s = 0;       // the pass over the trace's steps
  std::vector<double> saved_s;                      // per step (as the features): training layout less chosen
  int64_t candidates = 0;                           // layouts tried (that fit)
};

// One choice per pass the workload runs. `evaluations` counts the analytic passes priced.
std::vector<PassChoice> choose_pass_layouts(const input::ScenarioSpec& s, const std::vector<StepFeatures>& features,
                                            int64_t& evaluations);
// The policy with the choices' layouts set.
void apply_pass_layouts(input::PolicySpec& policy, const std::vector<PassChoice>& choices);

}  // namespace arlsim::planner
