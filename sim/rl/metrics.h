// Figures of a rollout as inference benchmarks and ARL-Tangram report them: throughput, time to
// first token (TTFT), time per output token (TPOT), end-to-end latency, the long tail, engine
// utilisation and KV-cache use, and per tool pool the action completion time (ACT), queueing
// delay, busy resource-seconds and peak resources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/rl/rollout.h"

namespace arlsim::rl {

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Percentiles by the nearest-rank method.
Distribution summarize(std::vector<double> values);

struct PoolMetrics {
  std::string name;
  int64_t actions = 0;
  Distribution act_s;    // request to completion
  Distribution queue_s;  // request to start (waiting for a unit, including cold starts)
  double busy_resource_s = 0;
  double provisioned_resource_s = 0;
  int64_t peak_in_use = 0;
  int64_t peak_provisioned = 0;
  uint64_t cold_starts = 0;
};

struct RolloutMetrics {
  double makespan_s = 0;
  double p90_done_s = 0;
  double long_tail_s = 0;  // from 90% of trajectories done to all done
  int64_t trajectories = 0;
  int64_t requests = 0;    // turns served
  int64_t generated_tokens = 0;
  int64_t truncated = 0;
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  Distribution ttft_s, tpot_s, latency_s, trajectory_s;
  int64_t preemptions = 0;
  double engine_busy_fraction = 0;  // mean over engines of busy time / makespan
  double kv_peak_fraction = 0;      // the fullest engine's peak KV blocks / its blocks
  int64_t prefill_tokens = 0;
  int64_t cached_tokens = 0;  // served from the prefix cache
  std::vector<PoolMetrics> pools;
};

// `starts` are the trajectories' arrival times (empty: all at zero).
RolloutMetrics rollout_metrics(const RolloutResult& r, const std::vector<SimTime>& starts);

}  // namespace arlsim::rl
