#include "sim/trace/turns.h"

#include <algorithm>
#include <cmath>

#include "sim/core/assert.h"

namespace arlsim::trace {
namespace {

// Rounds to the millisecond (generated latencies need no more precision and write shorter),
// within what a trace may hold.
SimTime to_millis(double seconds) {
  const double capped = std::clamp(seconds, 0.0, static_cast<double>(kMaxToolLatencySeconds));
  return SimTime::from_ns(std::llround(capped * 1e3) * 1'000'000);
}

int32_t clamp_tokens(double v) {
  return static_cast<int32_t>(std::clamp(std::llround(v), 0LL, static_cast<long long>(INT32_MAX)));
}

}  // namespace

TurnBuilder::TurnBuilder(TurnShape shape) : shape_(std::move(shape)) {
  double total = 0;
  for (const auto& t : shape_.tools) cumulative_share_.push_back(total += t.share);
  used_.resize(shape_.tools.size());
}

int TurnBuilder::pick_tool(Rng& rng) const {
  if (cumulative_share_.empty()) return -1;
  if (cumulative_share_.size() == 1) return 0;
  const double u = rng.uniform01() * cumulative_share_.back();
  const auto it = std::upper_bound(cumulative_share_.begin(), cumulative_share_.end(), u);
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(it - cumulative_share_.begin()),
                                           cumulative_share_.size() - 1));
}

void TurnBuilder::draw_tool_calls(Rng& rng, int calls, std::vector<Turn>& out) {
  std::fill(used_.begin(), used_.end(), 0);
  for (int i = 0; i < calls; ++i) {
    Turn& turn = out[static_cast<size_t>(i)];
    const int k = pick_tool(rng);
    double obs_mean = shape_.obs_tokens, obs_sigma = shape_.obs_sigma;
    if (k >= 0) {
      const ToolSpec& tool = shape_.tools[static_cast<size_t>(k)];
      double seconds = tool.latency.sample(rng);
      if (tool.cold_start_s > 0 && !used_[static_cast<size_t>(k)] && rng.bernoulli(tool.cold_start_prob))
        seconds += tool.cold_start_s;
      used_[static_cast<size_t>(k)] = 1;
      if (tool.timeout_s > 0) seconds = std::min(seconds, tool.timeout_s);
      turn.tool = static_cast<int16_t>(k);
      turn.tool_latency = to_millis(seconds);
      if (tool.obs_tokens >= 0) obs_mean = tool.obs_tokens;
      if (tool.obs_sigma >= 0) obs_sigma = tool.obs_sigma;
    }
    const double z = rng.normal();
    turn.obs_tokens = obs_mean > 0 ? clamp_tokens(obs_mean * std::exp(obs_sigma * z - obs_sigma * obs_sigma / 2)) : 0;
  }
}

// Observations larger than the response leave no room for generation: shrink them in proportion
// so that every turn can still generate a token.
void TurnBuilder::fit_observations(std::vector<Turn>& out, int64_t room) const {
  int64_t total = 0;
  for (const Turn& t : out) total += t.obs_tokens;
  if (total <= room) return;
  const double f = room > 0 ? static_cast<double>(room) / static_cast<double>(total) : 0.0;
  for (Turn& t : out) t.obs_tokens = static_cast<int32_t>(std::floor(t.obs_tokens * f));
}

// Spreads `tokens` (at least one per turn) over the turns' generations, by largest remainder so
// that the parts add up exactly.
void TurnBuilder::split_generation(Rng& rng, int64_t tokens, std::vector<Turn>& out) {
  const size_t n = out.size();
  if (n == 1) {
    out[0].gen_tokens = clamp_tokens(static_cast<double>(tokens));
    return;
  }
  weights_.resize(n);
  double sum = 0;
  for (double& w : weights_) sum += (w = rng.exponential(1.0));
  const int64_t spare = tokens - static_cast<int64_t>(n);
  int64_t given = 0;
  std::vector<std::pair<double, size_t>> remainders(n);
  for (size_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(spare) * weights_[i] / sum;
    const int64_t whole = static_cast<int64_t>(std::floor(exact));
    out[i].gen_tokens = clamp_tokens(static_cast<double>(1 + whole));
    given += whole;
    remainders[i] = {exact - static_cast<double>(whole), i};
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < spare && i < n; ++i, ++given) ++out[remainders[i].second].gen_tokens;
}

bool TurnBuilder::apply_cap(int64_t cap, std::vector<Turn>& out) {
  int64_t used = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    Turn& t = out[i];
    const int64_t room = cap - used - (i == 0 ? 0 : t.prefill_tokens);
    if (i > 0 && room <= 0) {  // the previous observation filled the context: no further turn
      out.resize(i);
      return true;
    }
    const bool last = i + 1 == out.size();
    if (t.gen_tokens > room || (t.gen_tokens == room && !last)) {
      // The limit falls inside this generation: it stops there, before any tool call.
      t.gen_tokens = static_cast<int32_t>(std::max<int64_t>(0, room));
      t.tool = kNoTool;
      t.tool_latency = SimTime::zero();
      t.obs_tokens = 0;
      out.resize(i + 1);
      return true;
    }
    used = cap - room + t.gen_tokens;
    if (used + t.obs_tokens > cap) {  // the observation is cut and the trajectory ends with it
      t.obs_tokens = static_cast<int32_t>(cap - used);
      out.resize(i + 1);
      return true;
    }
    used += t.obs_tokens;
  }
  return false;
}

bool TurnBuilder::build(Rng& rng, const TurnTotals& totals, std::vector<Turn>& out) {
  const int n = std::max(1, totals.turns);
  out.assign(static_cast<size_t>(n), Turn{});
  const int32_t between_turns = clamp_tokens(static_cast<double>(shape_.turn_prefill_tokens));
  for (int i = 1; i < n; ++i) out[static_cast<size_t>(i)].prefill_tokens = between_turns;
  out[0].prefill_tokens = clamp_tokens(static_cast<double>(totals.prompt_tokens));
  draw_tool_calls(rng, n - 1, out);
  const int64_t between = static_cast<int64_t>(n - 1) * shape_.turn_prefill_tokens;
  fit_observations(out, totals.response_tokens - between - n);
  int64_t obs = 0;
  for (const Turn& t : out) obs += t.obs_tokens;
  // One token per turn at least, except that a single-turn response may be empty (an aborted sample).
  split_generation(rng, std::max<int64_t>(n == 1 ? 0 : n, totals.response_tokens - between - obs), out);
  return apply_cap(totals.response_cap, out);
}

}  // namespace arlsim::trace
