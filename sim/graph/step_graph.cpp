#include "sim/graph/step_graph.h"

#include <algorithm>
#include <cmath>

#include "sim/core/assert.h"

namespace arlsim::graph {

ActivityId StepGraphBuilder::add(int64_t step, Stage stage, double seconds, std::vector<ActivityId> after, int32_t part,
                                  int32_t parts) {
  Activity a;
  a.id = static_cast<ActivityId>(graph_.activities.size());
  a.step = step;
  a.stage = stage;
  a.op = stage_info(stage).op;
  a.side = stage_info(stage).side;
  a.seconds = seconds;
  a.flops = work_.flops[static_cast<size_t>(stage)] / parts;
  a.bytes = work_.bytes[static_cast<size_t>(stage)] / parts;
  a.part = part;
  a.parts = parts;
  after.erase(std::remove(after.begin(), after.end(), ActivityId{-1}), after.end());
  for (ActivityId d : after) ARLSIM_ASSERT(d >= 0 && d < a.id);
  ARLSIM_ASSERT(std::isfinite(seconds) && seconds >= 0);  // a cost model gives a time or an error
  a.after = std::move(after);
  const auto hold = [&](const DeviceRange& r) {
    if (r.count > 0 && (a.holds.empty() || !a.holds.front().overlaps(r))) a.holds.push_back(r);
  };
  hold(a.side == Side::rollout ? devices_.rollout : devices_.training);
  if (stage == Stage::weight_sync) hold(devices_.rollout);
  graph_.activities.push_back(std::move(a));
  return graph_.activities.back().id;
}

StepNodes StepGraphBuilder::add_step(int64_t step, const StageTimes& times, const StageWork& work, int32_t train_parts) {
  work_ = work;
  ARLSIM_ASSERT(train_parts >= 1);
  ARLSIM_ASSERT(!mode_.async || mode_.staleness >= 1);
  const size_t i = steps_.size();
  StepNodes n;
  n.step = step;
  std::vector<ActivityId> rollout_after;
  if (i > 0) {
    if (!mode_.async) {
      rollout_after.push_back(steps_[i - 1].last);
    } else {
      rollout_after.push_back(steps_[i - 1].rollout_end);
      const auto k = static_cast<size_t>(mode_.staleness);
      if (i >= k + 1) rollout_after.push_back(steps_[i - k - 1].last);
    }
  }
  ActivityId prev = -1;
  for (const auto& info : kStages) {
    std::vector<ActivityId> after;
    if (info.id == Stage::rollout) after = rollout_after;
    else after.push_back(prev);
    // Asynchronous training also waits for the training of the step before.
    const bool starts_training = info.side == Side::training && prev == n.rollout_end;
    if (starts_training && mode_.async && i > 0) after.push_back(steps_[i - 1].last);
    if (info.id == Stage::train) {
      for (int32_t k = 0; k < train_parts; ++k) {
        prev = add(step, info.id, times[info.id] / train_parts, std::move(after), k, train_parts);
        after = {prev};
      }
    } else {
      prev = add(step, info.id, times[info.id], std::move(after));
    }
    if (n.first < 0) n.first = prev;
    if (starts_training) n.training_first = prev;
    if (info.side == Side::rollout) n.rollout_end = prev;
  }
  n.last = prev;
  steps_.push_back(n);
  return n;
}

}  // namespace arlsim::graph
