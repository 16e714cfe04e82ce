// ScenarioSpec: one run to simulate — cluster, actor model, workload, policy and trace — with the
// checks that need several of them at once (layouts against the cluster's GPUs and the model's
// heads, context limits against the model).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/input/cluster.h"
#include "sim/input/model.h"
#include "sim/input/policy.h"
#include "sim/input/workload.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {


// Whether a tool pool grows towards max_count: a sandbox pool under the pooled tool policy. Any
// other pool has `count` units for good. Its units at the most follow.
bool pool_grows(const PoolSpec& p, ToolPolicy tool_policy);
int64_t pool_max_units(const PoolSpec& p, ToolPolicy tool_policy);

struct ScenarioSpec {
  std::string name;
  std::string description;
  ClusterSpec cluster;
  ModelSpec model;
  WorkloadSpec workload;
  PolicySpec policy;
  std::string trace_path;  // resolved against the scenario's directory; empty = none
  // ...or a trace generated at run time, from a generator preset and/or options (`arlsim trace gen`).
  struct GeneratedTrace {
    std::string preset;
    int64_t steps = 0;             // 0: the preset's
    int64_t prompts_per_step = 0;  // 0: the workload's
    int64_t group_size = 0;        // 0: the workload's samples_per_prompt
    int64_t every = 1;             // keep every k-th step (the growth still spans all steps)
    uint64_t seed = 1;
    // Generator options as `arlsim trace gen` names them ("response-mean": "linear 900..1100"),
    // applied after the preset, in order.
    std::vector<std::pair<std::string, std::string>> options;
  };
  std::optional<GeneratedTrace> generated_trace;
  // A trace file's steps set the batch (their trajectories), not the workload's prompts x samples;
  // otherwise a step of another size is an error.
  bool trace_sets_batch = false;
  int64_t steps = 1;
  uint64_t seed = 1;

  int64_t train_gpus() const;
  int64_t rollout_gpus() const;
};

// How a mini-batch splits over the training layout's dp ranks: evenly; unevenly, as AReaL packs a
// batch first fit into token budgets (a budget, fit packing, at least one sample a rank); or not.
enum class DpSplit { even, uneven, refused };
DpSplit dp_split(const TrainLayout& t, const WorkloadSpec& w);
// "a mini-batch of N trajectories does not split evenly over dp = D".
std::string uneven_dp_text(const TrainLayout& t, const WorkloadSpec& w);

// Parses a scenario whose references are resolved (see loader.h) and runs the cross checks.
bool parse_scenario(const Value& v, Diagnostics& diag, ScenarioSpec& out);

// The cross checks alone, for callers that assemble a scenario from parts.
void check_scenario(const Value& v, const ScenarioSpec& s, Diagnostics& diag);

}  // namespace arlsim::input
