// What simulating a run of RL steps produces: per-step stage times, tokens, memory peaks and OOM
// events, run totals, and the activity records and counter samples that the writers in
// sim/report/ turn into summary.json, steps.csv and Chrome-trace timeline.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/exec/analytic.h"
#include "sim/graph/stage.h"
#include "sim/rl/metrics.h"

namespace arlsim::rl {

using graph::StageTimes;

// A stage that does not fit in memory: where, by how much, and what takes the space.
struct OomEvent {
  int64_t step = 0;
  std::string stage;
  bool host = false;  // the node's host memory ran short (offloaded states, sleeping engines), not a GPU's
  int64_t rank = 0;
  double needed_gib = 0;
  double available_gib = 0;
  std::vector<std::pair<std::string, double>> contributors_gib;  // largest first
};

struct StepRecord {
  int64_t step = 0;
  double start_s = 0;  // when the step's first activity starts
  double end_s = 0;    // when its last activity ends: every activity of the step lies in [start_s, end_s]
  // The wall time the step adds to the run: end_s minus the previous step's end_s (the steps' times
  // sum to the run's). In asynchronous modes steps overlap, so start_s + time_s need not be end_s.
  double time_s = 0;
  StageTimes stages;
  int64_t tokens = 0;  // prompt and response tokens of the step's trajectories
  Distribution contexts;  // the finished trajectories' context lengths (tokens) as simulated
  double tokens_per_s = 0;
  std::vector<std::pair<std::string, double>> memory_peak_gib;  // per stage: the largest rank's use
  std::optional<OomEvent> oom;
  int64_t preemptions = 0;        // requests the engines preempted for KV space
  int64_t recomputed_tokens = 0;  // the KV those preemptions dropped, computed again
};

// Something a run did that a user should look at though it completed: a preemption storm (the
// engines recompute a large share of the step's tokens because the KV cache is too small).
struct RunWarning {
  int64_t step = 0;
  std::string kind;  // "kv_exhaustion", "interleaved_micro_batches"
  std::string message;
};

// A step's rollout thrashes when the KV its preemptions dropped and recomputed exceeds this share
// of the tokens its trajectories hold.
inline constexpr double kPreemptionStormShare = 0.10;

// A sample of a counter: a node's GPU memory in use (GiB), or an engine's KV cache in use (%).
struct CounterSample {
  enum class Kind : uint8_t { gpu_memory_gib, kv_used_percent };
  Kind kind = Kind::gpu_memory_gib;
  int64_t node = 0;
  int64_t engine = -1;  // kv_used_percent: the engine
  SimTime time;
  double value = 0;
};

struct RunResult {
  std::string scenario;
  int64_t gpus = 0;
  // A reward model's engines' GPUs (its reward_server pools, or one), held for the whole run beside
  // the cluster's: counted in gpu_hours and the cost.
  int64_t reward_gpus = 0;
  double price_usd_per_gpu_hour = 0;  // 0: unknown
  double gpu_memory_gib = 0;          // each GPU's memory
  std::string gpu_profile;            // the cluster's GPU profile (its validation bands)
  std::vector<StepRecord> steps;
  double total_time_s = 0;
  double gpu_hours = 0;
  double cost_usd = 0;  // 0 when the price is unknown
  // The whole run when the trace samples it (every k-th step, or a step range): its length in
  // steps, and its time, GPU-hours and cost projected from the simulated steps (each step between
  // two simulated ones taking the time interpolated between them, the ends held). 0: the
  // simulated steps are the whole run, or it stopped on an OOM.
  int64_t steps_total = 0;
  // The steps the run set out to simulate, and whether an OOM stopped it before their end (the
  // OOM's step is the last record; its stage is the first OOM event's).
  int64_t steps_planned = 0;
  bool stopped_on_oom = false;
  double projected_total_time_s = 0, projected_gpu_hours = 0, projected_cost_usd = 0;
  std::vector<OomEvent> oom_events;
  std::vector<RunWarning> warnings;
  // The step graph's activities and the parts of them the simulator looked inside, placed in time
  // (with RunOptions::timeline: the stages always, the parts and counters only then).
  std::vector<exec::ActivityRecord> activities;
  std::vector<CounterSample> counters;
  int64_t gpus_per_node = 1;            // for naming nodes
  std::vector<std::string> pool_names;  // tool pools, by the index tool-call records carry
  // Per tool pool over the run (ARL-Tangram's figures): each action's completion time (request to
  // done) and queueing delay (request to start, cold starts included), and the pool's resources.
  struct PoolRun {
    std::string name;
    std::vector<float> act_s, queue_s;
    double busy_resource_s = 0, provisioned_resource_s = 0;
    int64_t peak_in_use = 0, peak_provisioned = 0;
    uint64_t cold_starts = 0;
    double price_usd_per_unit_hour = 0;  // 0: unknown
  };
  std::vector<PoolRun> pools;
};

// Takes each step's records as the run places it, so that a long run's timeline is written as
// it goes instead of held to the end: `records` and `counters` are the step's (its stage records,
// the parts the simulator looked inside, its counter samples), cleared by the run after the call.
// `run` is the result so far (its names: scenario, pools, GPUs per node).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void step_placed(const RunResult& run, const std::vector<exec::ActivityRecord>& records,
                           const std::vector<CounterSample>& counters) = 0;
};

}  // namespace arlsim::rl
