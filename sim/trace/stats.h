// Per-step statistics of a trace: how many trajectories, how long their responses and contexts
// are (mean and percentiles), how many turns, how heavy the tail is (p99/p50, max/median), how
// many hit a limit, and how much of a trajectory's time its tool calls take. Collected by a sink,
// so a trace of any size is summarised holding one step at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace arlsim::trace {

// Percentiles are nearest-rank: the p-th percentile of n sorted values is the value at rank
// ceil(p/100 * n) (1-based), so every reported percentile is a value that occurs.
struct Distribution {
  double mean = 0;
  int64_t min = 0;
  int64_t p50 = 0;
  int64_t p90 = 0;
  int64_t p99 = 0;
  int64_t max = 0;
};

// Sorts `values` and summarises them (all zero when empty).
Distribution summarize(std::vector<int64_t>& values);

struct StepStats {
  int32_t step = 0;
  size_t trajectories = 0;
  size_t groups = 0;
  Distribution prompt_tokens;
  Distribution response_tokens;
  Distribution context_tokens;
  Distribution turns;
  double truncated_fraction = 0;
  double tool_calls_mean = 0;          // per trajectory
  Distribution tool_ms;                // tool time per trajectory, in milliseconds
  double tool_time_share = 0;          // tool time / (tool time + generation time at the decode rate)
  int64_t generated_tokens = 0;
  double tail_p99_over_p50 = 0;        // of response tokens
  double tail_max_over_median = 0;
};

struct ToolStats {
  std::string name;
  size_t calls = 0;
  double seconds = 0;
  double max_seconds = 0;
};

struct TraceStats {
  TraceHeader header;
  std::vector<StepStats> steps;
  std::vector<ToolStats> tools;
  size_t trajectories = 0;
  size_t turns = 0;
  double decode_tokens_per_s = 0;
  double tool_time_share = 0;  // over the whole trace
};

class StatsCollector final : public TraceSink {
 public:
  // `decode_tokens_per_s`: the per-sequence generation speed assumed for the tool time share
  // (generation time is not in a trace; the simulator computes it, this is only a yardstick).
  explicit StatsCollector(double decode_tokens_per_s);

  void header(const TraceHeader& h) override { stats_.header = h; }
  void tool_kind(int16_t index, std::string_view name) override;
  void trajectory(const TrajectoryView& t) override;

  // Closes the last step and returns everything.
  TraceStats finish();

 private:
  void close_step();

  TraceStats stats_;
  bool open_ = false;
  int32_t step_ = 0;
  std::vector<int64_t> prompt_, response_, context_, turns_, tool_ms_;
  std::vector<int64_t> prompt_ids_;
  size_t truncated_ = 0;
  size_t tool_calls_ = 0;
  int64_t generated_ = 0;
  double tool_seconds_ = 0;
  double total_tool_seconds_ = 0;
  int64_t total_generated_ = 0;
};

}  // namespace arlsim::trace
