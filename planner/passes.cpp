#include "planner/passes.h"

#include <cmath>
#include <limits>

#include "planner/analytic.h"
#include "sim/model/train.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

int64_t tokens(double v) { return std::max<int64_t>(1, std::llround(v)); }

// The pass at each of the trace's steps in `pass` (nullopt: each step's training layout); empty
// when it does not fit in memory at some step's longest sequence.
std::vector<double> per_step(const input::ScenarioSpec& s, const input::ModelSpec& m, bool value_head, bool reference,
                             const std::optional<input::InferenceLayout>& pass, const std::vector<StepFeatures>& features,
                             int64_t& evaluations) {
  std::vector<double> out;
  for (const auto& f : features) {
    if (f.trajectories == 0) {
      out.push_back(0);
      continue;
    }
    const input::TrainLayout tl = rl::model_layout_of(m, rl::pass_layout(rl::layouts_at(s.policy, f.step).train, pass), value_head);
    // A model that computes padded tensors: every sequence at least as wide as the limits, under a
    // token budget about budget / mean length of them a micro-batch.
    const int64_t padded = s.workload.padded_length(value_head);
    // Memory at the step's longest sequence rounded up as the training estimator rounds it, or a
    // token budget's micro-batch.
    const int64_t widest = rl::widest_micro_batch_estimate(tl, padded, f.trajectories / std::max<int64_t>(1, tl.dp),
                                                           tokens(f.mean_context), rl::most_packed(tl, padded, f.contexts));
    const int64_t width = rl::memory_width(tl, padded, grid_length(static_cast<double>(f.max_context), true), widest);
    if (!rl::forward_memory_at(s, m, tl, width, value_head).fits()) return {};
    // The reference pass also brings its weights in from host memory when they live there, as
    // many bytes as a rank of this layout holds.
    out.push_back(rl::forward_pass_seconds(s, m, tl, f.trajectories, s.workload.computed_length(value_head, tokens(f.mean_context)),
                                           value_head, s.workload.computed_length(value_head, tokens(f.attention_context))) +
                  (reference ? rl::reference_swap_seconds(s, tl) : 0.0));
    ++evaluations;
  }
  return out;
}

double total(const std::vector<double>& v, size_t steps) {
  if (v.size() != steps) return std::numeric_limits<double>::infinity();  // does not fit
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

std::vector<PassChoice> choose_pass_layouts(const input::ScenarioSpec& s, const std::vector<StepFeatures>& features,
                                            int64_t& evaluations) {
  std::vector<PassChoice> out;
  struct Pass {
    const char* stage;
    const std::optional<input::InferenceLayout>* layout;
    const input::ModelSpec* model;
    bool runs;
  };
  const Pass passes[] = {
      {"old_logprob", &s.policy.old_logprob, &s.model, s.workload.old_logprob_pass()},
      {"ref_logprob", &s.policy.ref_logprob, &s.model, s.workload.use_reference},
      {"critic", &s.policy.critic, s.workload.critic ? &*s.workload.critic : nullptr, s.workload.critic.has_value()}};
  const int64_t gpus = s.train_gpus();
  for (const auto& p : passes) {
    if (!p.runs) continue;
    PassChoice c;
    c.stage = p.stage;
    c.chosen = *p.layout;
    const bool value_head = c.stage == "critic", reference = c.stage == "ref_logprob";
    const size_t steps = features.size();
    const auto baseline = per_step(s, *p.model, value_head, reference, *p.layout, features, evaluations);
    c.chosen_s = c.training_layout_s = total(baseline, steps);
    c.saved_s.assign(steps, 0.0);
    if (*p.layout) {  // the user's: kept
      out.push_back(c);
      continue;
    }
    c.searched = true;
    const input::ModelSpec& m = *p.model;
    for (int64_t tp = 1; tp <= std::min(gpus, s.cluster.gpus_per_node); tp *= 2) {
      if (gpus % tp != 0 || m.num_heads % tp != 0 || (m.num_kv_heads > 0 && m.num_kv_heads % tp != 0)) continue;
      const input::InferenceLayout l{tp, 1, gpus / tp, 1};
      bool valid = true;  // beside every training layout the policy's schedule uses
      for (const auto& f : features) {
        const input::TrainLayout tl = rl::layout_of(m, rl::pass_layout(rl::layouts_at(s.policy, f.step).train, l));
        valid = valid && model::check_train_request(m, s.cluster, rl::train_request(tl, tl.dp, 1024, s.workload)).empty();
      }
      if (!valid) continue;
      const auto times = per_step(s, m, value_head, reference, l, features, evaluations);
      const double t = total(times, steps);
      if (!std::isfinite(t)) continue;
      ++c.candidates;
      if (t < c.chosen_s) {
        c.chosen_s = t;
        c.chosen = l;
        // What each step saves against its training layout (the baseline fits wherever a plan
        // adopted it; where it does not, nothing is counted as saved).
        for (size_t i = 0; i < steps; ++i) c.saved_s[i] = baseline.size() == steps ? baseline[i] - times[i] : 0.0;
      }
    }
    out.push_back(c);
  }
  return out;
}

void apply_pass_layouts(input::PolicySpec& policy, const std::vector<PassChoice>& choices) {
  for (const auto& c : choices) {
    if (c.stage == "old_logprob") policy.old_logprob = c.chosen;
    else if (c.stage == "ref_logprob") policy.ref_logprob = c.chosen;
    else if (c.stage == "critic") policy.critic = c.chosen;
  }
}

}  // namespace arlsim::planner
