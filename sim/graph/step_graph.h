// The RL step as a graph of activities: each activity is one stage's work on one side of the
// cluster (an op kind, how long the cost model says it takes), with edges to the activities it
// waits for. Built in exactly one place, StepGraphBuilder, from the sync mode and each step's
// stage times; executors (sim/exec/) place it in time and return activity records.
//
// Edges within a step: reward after rollout; the training side's stages one after another in
// stage-table order, the first after the reward; training's optimizer steps one after another. Across steps:
// - synchronous (colocated or disaggregated): a step's rollout waits for the weight sync of the
//   step before;
// - asynchronous with staleness k (disaggregated): the rollout of step t waits for the rollout of
//   step t - 1 (the engines are busy) and for the weights of step t - k - 1; training of step t
//   waits for its rollout and for the training of step t - 1 (AReaL, slime's async mode).
// Partial rollout and continuous generation change what a rollout generates (paused trajectories
// carry over), not the edges.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/graph/stage.h"

namespace arlsim::graph {

using ActivityId = int32_t;

// A block of devices (GPUs, or CPU threads) that an activity holds alone while it runs.
struct DeviceRange {
  int64_t first = 0, count = 0;
  bool overlaps(const DeviceRange& o) const { return first < o.first + o.count && o.first < first + count; }
};

// Bytes that travel over a fixed route of network links (ids into StepGraph::link_capacities).
struct Transfer {
  std::vector<size_t> links;
  double bytes = 0;
};

struct Activity {
  ActivityId id = 0;
  int64_t step = 0;
  Stage stage = Stage::rollout;
  OpKind op = OpKind::engine_run;
  Side side = Side::rollout;  // the GPUs it holds
  double seconds = 0;        // its duration, from the cost model
  double flops = 0, bytes = 0;  // its work (StageWork)
  int32_t part = 0, parts = 1;  // training: optimizer step `part` of the step's `parts`
  std::vector<ActivityId> after;  // activities it waits for (all have smaller ids)
  // What the event executor also makes it wait for: the devices it holds alone, and flows that
  // share links with other activities' (it then lasts until they are done, plus `seconds`).
  std::vector<DeviceRange> holds;
  std::vector<Transfer> transfers;
};

struct StepGraph {
  std::vector<Activity> activities;  // in a topological order: ids are indices
  std::vector<double> link_capacities;  // bytes/s of each link that transfers name
};

struct SyncMode {
  bool async = false;
  int64_t staleness = 1;  // async: how many steps the rollout's weights may lag (>= 1)
};

// The activities of one step in the graph, by stage (-1 for none).
struct StepNodes {
  int64_t step = 0;
  ActivityId first = -1;  // its first activity (the rollout)
  ActivityId last = -1;   // its last activity (the weight sync)
  ActivityId rollout_end = -1;  // the last activity of the rollout side (the reward)
  ActivityId training_first = -1;  // the first activity of the training side
};

// The devices of each side of the cluster (the same block when colocated). The rollout side's
// activities hold the rollout devices, the training side's the training devices, and the weight
// sync both: the engines load the new weights, so no generation runs meanwhile.
struct SideDevices {
  DeviceRange rollout, training;
};

class StepGraphBuilder {
 public:
  explicit StepGraphBuilder(SyncMode mode, SideDevices devices = {}) : mode_(mode), devices_(devices) {}

  // Appends a step's activities, with their edges to the steps appended before. Training is
  // `train_parts` activities one after another (its optimizer steps: PPO epochs x mini-batches),
  // each with an equal share of its time and work.
  StepNodes add_step(int64_t step, const StageTimes& times, const StageWork& work = {}, int32_t train_parts = 1);

  const StepGraph& graph() const { return graph_; }
  const std::vector<StepNodes>& steps() const { return steps_; }

 private:
  ActivityId add(int64_t step, Stage stage, double seconds, std::vector<ActivityId> after, int32_t part = 0,
                 int32_t parts = 1);
  StageWork work_;  // of the step being added

  SyncMode mode_;
  SideDevices devices_;
  StepGraph graph_;
  std::vector<StepNodes> steps_;
};

}  // namespace arlsim::graph
