// The run's figures for people and programs: summary.json (a public contract; keys documented in
// docs/formats.md, "Outputs of arlsim simulate") and steps.csv (one row per step, fixed decimals).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "sim/rl/metrics.h"
#include "sim/rl/step_result.h"

namespace arlsim::report {

inline constexpr size_t kStageCount = graph::kStageCount;

// Seconds of stage `stage` (an index into graph::kStages).
double stage_seconds(const rl::StageTimes& t, size_t stage);

// Step-time distribution; percentiles by the nearest-rank method (rl::summarize).
struct StepTimeStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// Figures over all steps, shared by summary.json and the table.
struct RunStats {
  StepTimeStats step_time_s;
  std::array<double, kStageCount> stage_total_s{};  // summed over steps
  // Each stage's part of the summed stage time (not of wall time: stages overlap in asynchronous
  // runs, and a share of the sum still adds up to 1). All 0 when no stage took time.
  std::array<double, kStageCount> stage_share{};
  int64_t tokens = 0;
  double tokens_per_s = 0;  // total tokens / total time; 0 when no time passed
};
RunStats run_stats(const rl::RunResult& r);

// The range the run's total time is expected in: the stages of a kind with a validation record
// (the engines' runs from the rollout record; forward passes and training from the training
// record) scaled by that record's band, the others at their point value. `covered_share` is the share of the stage time
// the band speaks for; 0 (and low = high = the total) when no record applies.
struct TotalBand {
  double low_s = 0, high_s = 0, covered_share = 0;
};
TotalBand total_time_band(const rl::RunResult& r, const RunStats& stats);

// A tool pool's figures over the run: its actions' completion and queueing times, and its
// resources (busy and provisioned unit-seconds, peaks, cold starts, cost when priced).
struct PoolSummary {
  std::string name;
  rl::Distribution act_s, queue_s;
  double busy_resource_s = 0, provisioned_resource_s = 0;
  int64_t peak_in_use = 0, peak_provisioned = 0;
  uint64_t cold_starts = 0;
  double cost_usd = 0;  // 0 with no price
};
std::vector<PoolSummary> pool_summaries(const rl::RunResult& r);

// summary.json: pretty-printed with two-space indents and a final newline. Numbers are the
// shortest text that reads back as the same double, so equal results give equal bytes.
std::string summary_json(const rl::RunResult& r);

// steps.csv: a header and one row per step; seconds with 6 decimals, tokens/s with 3, tokens as
// integers, `oom_stage` empty for a step without OOM. Fields are quoted (RFC 4180) only when
// they hold a comma, quote or line break.
std::string steps_csv(const rl::RunResult& r);

}  // namespace arlsim::report
