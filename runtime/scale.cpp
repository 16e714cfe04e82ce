#include "runtime/scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <unordered_set>
#include <vector>

namespace arlsim::runtime {

namespace {

int32_t scaled(int32_t n, double f) {
  if (n <= 0) return n;
  return std::max<int32_t>(1, static_cast<int32_t>(std::ceil(static_cast<double>(n) * f - 1e-9)));
}
int64_t scaled(int64_t n, double f) {
  if (n <= 0) return n;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(n) * f - 1e-9)));
}

}  // namespace

std::string ScaleNote::text() const {
  char line[256];
  std::snprintf(line, sizeof line, "scaled by %g: %lld of %lld layers, %lld of %lld prompts per step, every sequence's tokens",
                factor, static_cast<long long>(layers_to), static_cast<long long>(layers_from),
                static_cast<long long>(prompts_to), static_cast<long long>(prompts_from));
  return line;
}

ScaleNote scale_plan(input::ScenarioSpec& s, trace::Trace& t, double factor) {
  ScaleNote note;
  note.factor = factor;
  note.layers_from = s.model.num_layers;
  // Whole pipeline stages (and chunks, with virtual stages) in every layout the plan runs: the
  // layers stay a multiple of each pp x vpp.
  int64_t unit = 1;
  const auto keep = [&](int64_t stages) { unit = std::lcm(unit, std::max<int64_t>(1, stages)); };
  keep(s.policy.train.pp * s.policy.train.vpp);
  for (const auto& e : s.policy.schedule)
    if (e.train) keep(e.train->pp * e.train->vpp);
  for (const auto* pass : {&s.policy.old_logprob, &s.policy.ref_logprob, &s.policy.critic})
    if (*pass) keep((*pass)->pp);
  const auto layers = std::max<int64_t>(1, std::llround(static_cast<double>(s.model.num_layers) * factor));
  s.model.num_layers = std::min(s.model.num_layers, std::max(unit, (layers + unit - 1) / unit * unit));
  note.layers_to = s.model.num_layers;

  auto& w = s.workload;
  note.prompts_from = w.prompts_per_step;
  int64_t prompts = std::max<int64_t>(1, std::llround(static_cast<double>(w.prompts_per_step) * factor));
  // Each mini-batch must still split evenly over the data-parallel ranks.
  const int64_t split = std::max<int64_t>(1, w.mini_batches) * std::max<int64_t>(1, s.policy.train.dp);
  while (prompts < w.prompts_per_step && (prompts * w.samples_per_prompt) % split != 0) ++prompts;
  w.prompts_per_step = prompts;
  note.prompts_to = prompts;

  // The trace: each step's first `prompts` groups (in their order of appearance), shorter.
  trace::Trace out;
  out.header = t.header;
  for (const auto& name : t.tool_names()) out.intern_tool(name);
  std::map<int32_t, std::unordered_set<int64_t>> groups;  // step -> prompt ids kept
  std::vector<trace::Turn> turns;
  int64_t longest_prompt = 0, longest_response = 0, longest_context = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const trace::TrajectoryView v = t.trajectory(i);
    auto& kept = groups[v.info.step];
    if (!kept.count(v.info.prompt_id)) {
      if (static_cast<int64_t>(kept.size()) >= prompts) continue;
      kept.insert(v.info.prompt_id);
    }
    // A trajectory the context limit cuts stays cut: it does not raise the scaled limit.
    const bool cut = w.max_context_tokens > 0 && v.context_tokens() > w.max_context_tokens;
    turns.assign(v.turns.begin(), v.turns.end());
    for (auto& turn : turns) {
      turn.prefill_tokens = scaled(turn.prefill_tokens, factor);
      turn.gen_tokens = scaled(turn.gen_tokens, factor);
      turn.obs_tokens = scaled(turn.obs_tokens, factor);
    }
    out.add(v.info, turns);
    const trace::TrajectoryView back = out.trajectory(out.size() - 1);
    if (cut) continue;
    longest_prompt = std::max(longest_prompt, back.prompt_tokens());
    longest_response = std::max(longest_response, back.response_tokens());
    longest_context = std::max(longest_context, back.context_tokens());
  }
  t = std::move(out);
  w.max_prompt_tokens = std::max(scaled(w.max_prompt_tokens, factor), longest_prompt);
  w.max_response_tokens = std::max(scaled(w.max_response_tokens, factor), longest_response);
  if (w.max_context_tokens > 0) {
    // The limit scaled (never below an uncut trajectory, nor below prompt + response as the
    // workload requires): rounding up each count may add a token or two, never the cut it made.
    w.max_context_tokens = std::max({scaled(w.max_context_tokens, factor), longest_context,
                                     w.max_prompt_tokens + w.max_response_tokens});
  }
  return note;
}

}  // namespace arlsim::runtime
