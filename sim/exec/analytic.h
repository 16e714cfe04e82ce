// The analytic executor of a step graph: a critical-path evaluation. Each activity starts when the
// last activity it waits for ends (or at 0) and lasts its cost model's duration; nothing else
// contends. The simulator and the planner place steps in time with it, so that both compose a
// step the same way. Records come out in the graph's order and are what summaries and timelines
// read.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/graph/step_graph.h"

namespace arlsim::exec {

// An activity placed in time (seconds from the start of the run).
struct ActivityRecord {
  graph::ActivityId id = 0;
  int64_t step = 0;
  graph::Stage stage = graph::Stage::rollout;
  graph::OpKind op = graph::OpKind::engine_run;
  graph::Side side = graph::Side::rollout;
  double start_s = 0, end_s = 0;
};

class AnalyticExecutor {
 public:
  // Places the activities added to `g` since the last call (a graph grows step by step).
  void advance(const graph::StepGraph& g);
  const std::vector<ActivityRecord>& records() const { return records_; }
  const ActivityRecord& record(graph::ActivityId id) const { return records_[static_cast<size_t>(id)]; }

 private:
  std::vector<ActivityRecord> records_;
};

// When each step of a built graph starts (its rollout) and ends (its last activity).
struct StepSpan {
  int64_t step = 0;
  double start_s = 0, end_s = 0;
  double rollout_end_s = 0;  // the rollout side's end (its reward)
};
StepSpan step_span(const AnalyticExecutor& e, const graph::StepNodes& n);

// Builds the graph of steps with these stage times in `mode` and places it: each step's span.
std::vector<StepSpan> compose(graph::SyncMode mode, const std::vector<std::pair<int64_t, graph::StageTimes>>& steps);

}  // namespace arlsim::exec
