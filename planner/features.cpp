#include "planner/features.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

// Keeps the points that no other point dominates in both coordinates.
std::vector<TailTrajectory> frontier(std::vector<TailTrajectory> points) {
  std::sort(points.begin(), points.end(), [](const TailTrajectory& a, const TailTrajectory& b) {
    return a.gen_tokens != b.gen_tokens ? a.gen_tokens > b.gen_tokens : a.tool_s > b.tool_s;
  });
  std::vector<TailTrajectory> kept;
  double best_tool = -1;
  for (const auto& p : points)
    if (p.tool_s > best_tool) {
      kept.push_back(p);
      best_tool = p.tool_s;
    }
  return kept;
}

void finish(StepFeatures& f) {
  std::sort(f.contexts.begin(), f.contexts.end(), std::greater<>());
  f.max_context = f.contexts.empty() ? 0 : f.contexts.front();
  f.mean_context = f.trajectories > 0 ? static_cast<double>(f.total_tokens) / static_cast<double>(f.trajectories) : 0;
  f.attention_context = rl::token_weighted_length(f.contexts);
  f.decode_kv_tokens = f.gen_tokens > 0 ? f.decode_kv_tokens / f.gen_tokens : 0;
  f.tail = frontier(std::move(f.tail));
}

}  // namespace

StepFeatures StepFeatures::scaled(double factor) const {
  StepFeatures s = *this;
  s.prefill_tokens *= factor;
  s.gen_tokens *= factor;
  s.decode_kv_tokens *= factor;
  s.mean_context *= factor;
  s.attention_context *= factor;
  s.total_tokens = static_cast<int64_t>(std::llround(static_cast<double>(total_tokens) * factor));
  for (auto& c : s.contexts) c = std::max<int64_t>(1, std::llround(static_cast<double>(c) * factor));
  s.max_context = s.contexts.empty() ? 0 : s.contexts.front();
  for (auto& t : s.tail) t.gen_tokens *= factor;
  return s;
}

std::vector<StepFeatures> step_features(const trace::Trace& t, const FeatureOptions& o) {
  std::vector<StepFeatures> steps;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto v = t.trajectory(i);
    if (o.first_step >= 0 && v.info.step < o.first_step) continue;
    if (o.last_step >= 0 && v.info.step > o.last_step) continue;
    if (steps.empty() || steps.back().step != v.info.step) {
      if (!steps.empty()) finish(steps.back());
      if (o.max_steps > 0 && static_cast<int64_t>(steps.size()) == o.max_steps) return steps;
      steps.emplace_back().step = v.info.step;
    }
    StepFeatures& f = steps.back();
    // Each generated token attends to the context so far: a turn of g tokens after a context of
    // c reads c, c + 1, ..., c + g - 1 cached tokens.
    double context = 0, tool_s = 0;
    for (const auto& turn : v.turns) {
      context += turn.prefill_tokens;
      f.prefill_tokens += turn.prefill_tokens;
      f.gen_tokens += turn.gen_tokens;
      f.decode_kv_tokens += turn.gen_tokens * context + 0.5 * turn.gen_tokens * (turn.gen_tokens - 1.0);
      context += turn.gen_tokens + turn.obs_tokens;
      f.prefill_tokens += turn.obs_tokens;
      tool_s += turn.tool_latency.seconds();
    }
    int64_t tokens = v.context_tokens();
    if (o.max_context > 0) tokens = std::min(tokens, o.max_context);
    ++f.trajectories;
    f.total_tokens += tokens;
    f.contexts.push_back(std::max<int64_t>(1, tokens));
    f.tail.push_back({static_cast<double>(v.generated_tokens()), tool_s});
  }
  if (!steps.empty()) finish(steps.back());
  return steps;
}

}  // namespace arlsim::planner
