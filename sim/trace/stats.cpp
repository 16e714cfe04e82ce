#include "sim/trace/stats.h"

#include <algorithm>

#include "sim/core/assert.h"
#include "sim/core/percentile.h"

namespace arlsim::trace {
namespace {

double ratio(int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

double share(double tool_s, int64_t generated, double rate) {
  const double gen_s = rate > 0 ? static_cast<double>(generated) / rate : 0.0;
  return tool_s + gen_s > 0 ? tool_s / (tool_s + gen_s) : 0.0;
}

}  // namespace

Distribution summarize(std::vector<int64_t>& values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (int64_t v : values) sum += static_cast<double>(v);
  d.mean = sum / static_cast<double>(values.size());
  d.min = values.front();
  d.p50 = nearest_rank(values, 50);
  d.p90 = nearest_rank(values, 90);
  d.p99 = nearest_rank(values, 99);
  d.max = values.back();
  return d;
}

StatsCollector::StatsCollector(double decode_tokens_per_s) { stats_.decode_tokens_per_s = decode_tokens_per_s; }

void StatsCollector::tool_kind(int16_t index, std::string_view name) {
  if (static_cast<size_t>(index) >= stats_.tools.size()) stats_.tools.resize(static_cast<size_t>(index) + 1);
  stats_.tools[static_cast<size_t>(index)].name = std::string(name);
}

void StatsCollector::trajectory(const TrajectoryView& t) {
  if (open_ && t.info.step != step_) close_step();
  open_ = true;
  step_ = t.info.step;
  const int64_t context = t.context_tokens();
  prompt_.push_back(t.prompt_tokens());
  context_.push_back(context);
  response_.push_back(context - t.prompt_tokens());
  turns_.push_back(static_cast<int64_t>(t.turns.size()));
  prompt_ids_.push_back(t.info.prompt_id);
  truncated_ += t.info.truncated ? 1 : 0;
  double tool_s = 0;  // in seconds: nanoseconds of many long calls would overflow
  for (const Turn& turn : t.turns) {
    generated_ += turn.gen_tokens;
    if (turn.tool == kNoTool) continue;
    ++tool_calls_;
    tool_s += turn.tool_latency.seconds();
    ARLSIM_ASSERT(turn.tool >= 0 && static_cast<size_t>(turn.tool) < stats_.tools.size());  // announced first
    ToolStats& tool = stats_.tools[static_cast<size_t>(turn.tool)];
    ++tool.calls;
    tool.seconds += turn.tool_latency.seconds();
    tool.max_seconds = std::max(tool.max_seconds, turn.tool_latency.seconds());
  }
  tool_ms_.push_back(std::llround(tool_s * 1e3));
  tool_seconds_ += tool_s;
  ++stats_.trajectories;
  stats_.turns += t.turns.size();
}

void StatsCollector::close_step() {
  StepStats s;
  s.step = step_;
  s.trajectories = context_.size();
  std::sort(prompt_ids_.begin(), prompt_ids_.end());
  s.groups = static_cast<size_t>(std::unique(prompt_ids_.begin(), prompt_ids_.end()) - prompt_ids_.begin());
  s.prompt_tokens = summarize(prompt_);
  s.response_tokens = summarize(response_);
  s.context_tokens = summarize(context_);
  s.turns = summarize(turns_);
  s.tool_ms = summarize(tool_ms_);
  const auto n = static_cast<double>(s.trajectories);
  s.truncated_fraction = static_cast<double>(truncated_) / n;
  s.tool_calls_mean = static_cast<double>(tool_calls_) / n;
  s.generated_tokens = generated_;
  s.tool_time_share = share(tool_seconds_, generated_, stats_.decode_tokens_per_s);
  s.tail_p99_over_p50 = ratio(s.response_tokens.p99, s.response_tokens.p50);
  s.tail_max_over_median = ratio(s.response_tokens.max, s.response_tokens.p50);
  stats_.steps.push_back(s);
  total_tool_seconds_ += tool_seconds_;
  total_generated_ += generated_;
  for (auto* v : {&prompt_, &response_, &context_, &turns_, &tool_ms_, &prompt_ids_}) v->clear();
  truncated_ = tool_calls_ = 0;
  generated_ = 0;
  tool_seconds_ = 0;
}

TraceStats StatsCollector::finish() {
  if (open_) close_step();
  open_ = false;
  stats_.tool_time_share = share(total_tool_seconds_, total_generated_, stats_.decode_tokens_per_s);
  return stats_;
}

}  // namespace arlsim::trace
