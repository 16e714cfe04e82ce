// The trace a scenario's run simulates: its file or its generated trace, only the steps the run
// takes (a generated trace draws no other), checked against the workload's batch; and what a run
// of it holds in memory at its peak.
#include "sim/rl/step.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/assert.h"
#include "sim/model/topology.h"
#include "sim/rl/rollout.h"
#include "sim/trace/gen_options.h"
#include "sim/trace/generator.h"
#include "sim/trace/reader.h"

namespace arlsim::rl {

namespace {

// The steps a run simulates: those in its range, up to its limit on the number of steps. Steps
// are counted as runs of trajectories of one step, as RunSimulator groups them.
class StepSelection {
 public:
  StepSelection(const input::ScenarioSpec& s, const RunOptions& o)
      : first_(o.first_step), last_(o.last_step), limit_(o.max_steps > 0 ? o.max_steps : s.steps) {}

  // Called in order: for each trajectory of a file, or once for each step a generator would draw.
  bool keep(int64_t step) {
    if ((first_ >= 0 && step < first_) || (last_ >= 0 && step > last_)) return false;
    if (groups_ == 0 || step != current_) {
      ++groups_;
      current_ = step;
    }
    return groups_ <= limit_;
  }

 private:
  int64_t first_, last_, limit_;
  int64_t groups_ = 0;
  int64_t current_ = 0;
};

// A trace file's steps against the workload's batch: each step must hold prompts x samples
// trajectories, unless the scenario says the trace sets the batch (then steps whose size differs
// from the first's are reported: samples the trace lacks).
bool check_trace_batch(const input::ScenarioSpec& s, const std::string& path, const trace::Trace& t,
                       input::Diagnostics& diag) {
  std::vector<std::pair<int64_t, int64_t>> sizes;  // step, trajectories
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t step = t.trajectory(i).info.step;
    if (sizes.empty() || sizes.back().first != step) sizes.emplace_back(step, 0);
    ++sizes.back().second;
  }
  // A prompt that leaves no room for a response within the context limit cannot be generated from:
  // vLLM refuses a prompt beyond max_model_len, and frameworks filter them out before the rollout.
  const int64_t limit = s.workload.max_context_tokens;
  int64_t overlong = 0;
  size_t first_overlong = 0;
  for (size_t i = 0; i < t.size() && limit > 0; ++i) {
    const auto v = t.trajectory(i);
    if (!v.turns.empty() && v.turns.front().prefill_tokens >= limit && overlong++ == 0) first_overlong = i;
  }
  if (overlong > 0) {
    const auto v = t.trajectory(first_overlong);
    diag.error_global(path + ": " + std::to_string(overlong) + (overlong == 1 ? " trajectory's prompt leaves" : " trajectories' prompts leave") +
                          " no room for a response within /workload/max_context_tokens (" + std::to_string(limit) +
                          "); the first, in step " + std::to_string(v.info.step) + ", has " +
                          std::to_string(v.turns.front().prefill_tokens) + " tokens",
                      "raise max_context_tokens, or leave such prompts out of the trace as frameworks filter them "
                      "(verl's filter_overlong_prompts); vLLM refuses a prompt beyond max_model_len");
    return false;
  }
  const int64_t want = s.workload.trajectories_per_step();
  for (const auto& [step, n] : sizes) {
    if (!s.trace_sets_batch && n != want) {
      diag.error_global(path + ": step " + std::to_string(step) + " has " + std::to_string(n) + " trajectories; the workload's " +
                            std::to_string(s.workload.prompts_per_step) + " prompts x " +
                            std::to_string(s.workload.samples_per_prompt) + " samples make " + std::to_string(want) + " a step",
                        "set /workload/prompts_per_step and /workload/samples_per_prompt to the trace's, or "
                        "\"trace_sets_batch\": true to take each step's trajectories as its batch");
      return false;
    }
    if (s.trace_sets_batch && n != sizes.front().second) {
      input::Diagnostic d;
      d.severity = input::Severity::warning;
      d.file = path;
      d.message = "step " + std::to_string(step) + " has " + std::to_string(n) + " trajectories, step " +
                  std::to_string(sizes.front().first) + " " + std::to_string(sizes.front().second) +
                  ": the trace lacks samples, and the step runs with what it has";
      diag.add(d);
    }
  }
  // Steps that do not split evenly into the mini-batches: said once, with the first of them.
  if (s.trace_sets_batch && s.workload.mini_batches > 1) {
    int64_t uneven = 0;
    const std::pair<int64_t, int64_t>* first = nullptr;
    for (const auto& size : sizes)
      if (size.second % s.workload.mini_batches != 0 && uneven++ == 0) first = &size;
    if (first) {
      input::Diagnostic d;
      d.severity = input::Severity::warning;
      d.file = path;
      d.message = std::to_string(uneven) + (uneven == 1 ? " step's" : " steps'") + " trajectories do not split evenly into " +
                  std::to_string(s.workload.mini_batches) + " mini-batches (the first, step " + std::to_string(first->first) +
                  ", has " + std::to_string(first->second) + "): each rank's part is cut into near-equal ones" +
                  (first->second < s.workload.mini_batches ? ", some empty" : "") +
                  " (a framework with a fixed mini-batch size refuses such a batch)";
      diag.add(d);
    }
  }
  return true;
}

}  // namespace

trace::GenParams scenario_gen_params(const input::ScenarioSpec& s) {
  const auto& g = *s.generated_trace;
  trace::GenParams p = g.preset.empty() ? trace::GenParams{} : trace::preset_params(*trace::find_gen_preset(g.preset));
  for (const auto& problem : trace::apply_gen_options(p, g.options))  // checked when the scenario was read
    ARLSIM_ASSERT(problem.empty());
  p.seed = g.seed;
  if (g.steps > 0) p.steps = static_cast<int>(g.steps);
  p.prompts_per_step = static_cast<int>(g.prompts_per_step > 0 ? g.prompts_per_step : s.workload.prompts_per_step);
  p.group_size = static_cast<int>(g.group_size > 0 ? g.group_size : s.workload.samples_per_prompt);
  p.every = static_cast<int>(g.every);
  return p;
}

std::optional<trace::Trace> load_scenario_trace(const input::ScenarioSpec& s, const std::string& override_path,
                                                input::Diagnostics& diag, const RunOptions* run) {
  const std::string path = override_path.empty() ? s.trace_path : override_path;
  if (!path.empty()) {
    std::optional<trace::Trace> t;
    if (!run) {
      t = trace::load_trace(path, diag);
    } else {
      StepSelection selection(s, *run);
      t = trace::load_trace(path, diag, {}, [&](const trace::TrajectoryInfo& info) { return selection.keep(info.step); });
    }
    if (t && !check_trace_batch(s, path, *t, diag)) return std::nullopt;
    return t;
  }
  if (!s.generated_trace) {
    diag.error_global("the scenario names no trace: set \"trace\" (a file, or {\"generate\": {\"preset\": ...}}) or pass --trace");
    return std::nullopt;
  }
  const trace::GenParams p = scenario_gen_params(s);
  if (const auto problems = trace::check_gen_params(p); !problems.empty()) {
    for (const auto& problem : problems) diag.error_global("trace generator: " + problem);
    return std::nullopt;
  }
  trace::Trace t;
  trace::TraceBuilder builder(t);
  if (!run) {
    trace::generate(p, builder);
  } else {
    StepSelection selection(s, *run);  // only the steps the run simulates are drawn
    trace::generate(p, builder, [&](int step) { return selection.keep(step); });
  }
  return t;
}

std::optional<RunMemory> expected_run_memory(const input::ScenarioSpec& s, const RunOptions* run) {
  if (!s.trace_path.empty() || !s.generated_trace) return std::nullopt;
  const trace::GenParams p = scenario_gen_params(s);
  if (!trace::check_gen_params(p).empty()) return std::nullopt;  // load_scenario_trace() reports them
  std::vector<trace::StepSize> steps;
  if (!run) {
    steps = trace::expected_size(p);
  } else {
    StepSelection selection(s, *run);
    steps = trace::expected_size(p, [&](int step) { return selection.keep(step); });
  }
  RunMemory m;
  double trajectories = 0, turns = 0;
  for (const auto& step : steps) {
    trajectories += step.trajectories;
    turns += step.turns;
    if (static_cast<double>(m.trajectories) < step.trajectories) {  // the largest step
      m.step = step.step;
      m.trajectories = static_cast<int64_t>(std::min(step.trajectories, 9e15));
      m.turns = static_cast<int64_t>(std::min(step.turns, 9e15));
    }
  }
  m.trace_bytes = trace::Trace::bytes_for(trajectories, turns);
  m.bytes = m.trace_bytes;
  return m;
}

RunMemory run_memory(const input::ScenarioSpec& s, const trace::Trace& t, bool timeline) {
  RunMemory m;
  m.trace_bytes = static_cast<double>(t.storage_bytes());
  m.cluster_bytes = model::Topology::bytes_for(s.cluster);
  const auto pools = static_cast<int64_t>(s.cluster.pools.size());
  // Generating continuously, a step's rollout holds the trajectories of several steps (taken as
  // that many of the step's size).
  const int64_t held = s.policy.batches_held();
  double largest = 0;
  for (size_t i = 0; i < t.size();) {
    const int64_t step = t.trajectory(i).info.step;
    int64_t trajectories = 0, turns = 0, calls = 0;
    for (; i < t.size() && t.trajectory(i).info.step == step; ++i) {
      const auto view = t.trajectory(i);
      ++trajectories;
      turns += static_cast<int64_t>(view.turns.size());
      calls += view.tool_calls();
    }
    trajectories *= held;
    turns *= held;
    calls *= held;
    const RolloutOptions ro = rollout_options(s, layouts_at(s.policy, step).rollout);
    const int64_t engines = ro.engines + (ro.reward.kind == input::RewardKind::model ? ro.reward.engines : 0);
    // A run keeps no record per turn (RolloutOptions::record_turns), and one per tool call only
    // for a timeline (record_tool_calls); else its pools' times of each call.
    const double bytes = timeline ? rollout_memory_bytes(trajectories, 0, calls, pools, engines)
                                  : rollout_memory_bytes(trajectories, 0, 0, pools, engines, calls);
    if (bytes > largest) {
      largest = bytes;
      m.step = step;
      m.trajectories = trajectories;
      m.turns = turns;
    }
  }
  m.bytes = m.trace_bytes + m.cluster_bytes + largest;
  return m;
}

}  // namespace arlsim::rl
