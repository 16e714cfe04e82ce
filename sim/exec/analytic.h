// The analytic executor of a step graph: a critical-path evaluation. Each activity starts when the
// last activity it waits for ends (or at 0) and lasts its cost model's duration; nothing else
// contends (devices and links are the event executor's, event.h). The planner composes runs with
// it (planner/analytic_run.h), on the graph the simulator builds; records come out in the graph's
// order, in the shape every executor gives.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/graph/step_graph.h"

namespace arlsim::exec {

// What a record is: a step-graph activity, or a part of one that the simulator looked inside.
enum class RecordKind : uint8_t {
  stage,        // a step-graph activity (training's: one optimizer step, a = epoch, b = mini-batch)
  engine_span,  // rollout engine `index` busy; a = 1 when the span includes prefill
  tool_call,    // a tool call on pool `index` (-1: a tool without a pool)
  pipeline_op,  // pipeline stage `index`: micro-batch a, b = 1 for its forward, 0 for its backward
};

// An activity placed in time (seconds from the start of the run), on the devices it held. Every
// output (summary, timeline, reports, the viewer) is written from these records.
struct ActivityRecord {
  graph::ActivityId id = 0;  // the step-graph activity (for parts: the one they are part of)
  int64_t step = 0;
  graph::Stage stage = graph::Stage::rollout;
  graph::OpKind op = graph::OpKind::engine_run;
  graph::Side side = graph::Side::rollout;
  double start_s = 0, end_s = 0;
  RecordKind kind = RecordKind::stage;
  int64_t index = -1;
  int32_t a = 0, b = 0;
  graph::DeviceRange devices;  // empty for work off the GPUs (tool calls)
  double flops = 0, bytes = 0;  // the stage's work (stage records only)
  int32_t part = 0, parts = 1;  // training's stage records: optimizer step `part` of `parts`
};

// A record of activity `a`, not yet placed in time (every executor starts from it).
ActivityRecord unplaced_record(const graph::Activity& a);

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
std::vector<StepSpan> compose(graph::SyncMode mode, const std::vector<std::pair<int64_t, graph::StageTimes>>& steps,
                              int32_t train_parts = 1);

}  // namespace arlsim::exec
