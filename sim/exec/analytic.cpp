#include "sim/exec/analytic.h"

#include <algorithm>

namespace arlsim::exec {

ActivityRecord unplaced_record(const graph::Activity& a) {
  ActivityRecord r;
  r.id = a.id;
  r.step = a.step;
  r.stage = a.stage;
  r.op = a.op;
  r.side = a.side;
  if (!a.holds.empty()) r.devices = a.holds.front();
  r.flops = a.flops;
  r.bytes = a.bytes;
  r.part = a.part;
  r.parts = a.parts;
  return r;
}

void AnalyticExecutor::advance(const graph::StepGraph& g) {
  for (size_t i = records_.size(); i < g.activities.size(); ++i) {
    const auto& a = g.activities[i];
    ActivityRecord r = unplaced_record(a);
    for (graph::ActivityId d : a.after) r.start_s = std::max(r.start_s, records_[static_cast<size_t>(d)].end_s);
    r.end_s = r.start_s + a.seconds;
    records_.push_back(r);
  }
}

StepSpan step_span(const AnalyticExecutor& e, const graph::StepNodes& n) {
  return {n.step, e.record(n.first).start_s, e.record(n.last).end_s, e.record(n.rollout_end).end_s};
}

std::vector<StepSpan> compose(graph::SyncMode mode, const std::vector<std::pair<int64_t, graph::StageTimes>>& steps,
                              int32_t train_parts) {
  graph::StepGraphBuilder b(mode);
  for (const auto& [step, times] : steps) b.add_step(step, times, {}, train_parts);
  AnalyticExecutor e;
  e.advance(b.graph());
  std::vector<StepSpan> spans;
  for (const auto& n : b.steps()) spans.push_back(step_span(e, n));
  return spans;
}

}  // namespace arlsim::exec
