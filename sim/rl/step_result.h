// What simulating a run of RL steps produces: per-step stage times, tokens, memory peaks and OOM
// events, run totals, and the timeline (activities and counters) that the writers in sim/report/
// turn into summary.json, steps.csv and Chrome-trace timeline.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/graph/stage.h"

namespace arlsim::rl {

using graph::StageTimes;

// A stage that does not fit in memory: where, by how much, and what takes the space.
struct OomEvent {
  int64_t step = 0;
  std::string stage;
  int64_t rank = 0;
  double needed_gib = 0;
  double available_gib = 0;
  std::vector<std::pair<std::string, double>> contributors_gib;  // largest first
};

struct StepRecord {
  int64_t step = 0;
  double start_s = 0;
  double time_s = 0;  // wall time of the step (stages may overlap in asynchronous modes)
  StageTimes stages;
  int64_t tokens = 0;  // prompt and response tokens of the step's trajectories
  double tokens_per_s = 0;
  std::vector<std::pair<std::string, double>> memory_peak_gib;  // per stage: the largest rank's use
  std::optional<OomEvent> oom;
};

// One activity on the timeline: `process` is a node or an external pool, `thread` a GPU (or an
// engine, or a pool slot).
struct TimelineEvent {
  std::string process;
  std::string thread;
  std::string name;
  SimTime start, end;
  int64_t step = 0;
  std::string stage;
};

// A sample of a counter track (memory in GiB, KV utilisation, units in use).
struct TimelineCounter {
  std::string process;
  std::string name;
  SimTime time;
  double value = 0;
};

struct RunResult {
  std::string scenario;
  int64_t gpus = 0;
  double price_usd_per_gpu_hour = 0;  // 0: unknown
  std::vector<StepRecord> steps;
  double total_time_s = 0;
  double gpu_hours = 0;
  double cost_usd = 0;  // 0 when the price is unknown
  std::vector<OomEvent> oom_events;
  std::vector<TimelineEvent> events;
  std::vector<TimelineCounter> counters;
};

}  // namespace arlsim::rl
