#include "sim/rl/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "sim/core/percentile.h"

namespace arlsim::rl {

Distribution summarize(std::vector<double> values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  // Compensated (Neumaier) sum: the mean does not depend on the order the values come in.
  double sum = 0, carry = 0;
  for (double v : values) {
    const double t = sum + v;
    carry += std::abs(sum) >= std::abs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  // (An infinite value makes the carry infinite too: the plain sum then.)
  d.mean = (std::isfinite(sum) ? sum + carry : sum) / static_cast<double>(values.size());
  // The nearest-rank percentiles by selection, each in what lies above the one before: a step's
  // millions of turns and tool calls need their order statistics, not a sort.
  size_t from = 0;
  auto select = [&](double percent) {
    const size_t k = nearest_rank_index(values.size(), percent);
    std::nth_element(values.begin() + static_cast<std::ptrdiff_t>(from), values.begin() + static_cast<std::ptrdiff_t>(k),
                     values.end());
    from = k;
    return values[k];
  };
  d.p50 = select(50);
  d.p90 = select(90);
  d.p99 = select(99);
  d.max = *std::max_element(values.begin() + static_cast<std::ptrdiff_t>(from), values.end());
  return d;
}

RolloutMetrics rollout_metrics(const RolloutResult& r, const std::vector<SimTime>& starts) {
  RolloutMetrics m;
  m.makespan_s = r.makespan.seconds();
  m.p90_done_s = r.p90_done.seconds();
  m.long_tail_s = m.makespan_s - m.p90_done_s;
  m.trajectories = static_cast<int64_t>(r.trajectory_end.size());
  m.requests = static_cast<int64_t>(r.turns.size());
  m.generated_tokens = r.generated_tokens;
  for (bool t : r.truncated) m.truncated += t ? 1 : 0;
  if (m.makespan_s > 0) {
    m.requests_per_s = static_cast<double>(m.requests) / m.makespan_s;
    m.output_tokens_per_s = static_cast<double>(m.generated_tokens) / m.makespan_s;
  }
  std::vector<double> ttft, tpot, latency, trajectory;
  for (const auto& t : r.turns) {
    ttft.push_back((t.first_token - t.arrival).seconds());
    latency.push_back((t.end - t.arrival).seconds());
    if (t.generated > 1) tpot.push_back((t.end - t.first_token).seconds() / static_cast<double>(t.generated - 1));
  }
  for (size_t i = 0; i < r.trajectory_end.size(); ++i)
    trajectory.push_back((r.trajectory_end[i] - (starts.empty() ? SimTime::zero() : starts[i])).seconds());
  m.ttft_s = summarize(std::move(ttft));
  m.tpot_s = summarize(std::move(tpot));
  m.latency_s = summarize(std::move(latency));
  m.trajectory_s = summarize(std::move(trajectory));
  m.preemptions = r.preemptions();
  double busy = 0;
  for (const auto& e : r.engines) {
    busy += e.busy_s;
    if (e.kv_blocks > 0)
      m.kv_peak_fraction = std::max(m.kv_peak_fraction, static_cast<double>(e.stats.peak_blocks_used) / static_cast<double>(e.kv_blocks));
    m.prefill_tokens += e.stats.prefill_tokens;
    m.cached_tokens += e.stats.cached_tokens;
  }
  if (!r.engines.empty() && m.makespan_s > 0) m.engine_busy_fraction = busy / static_cast<double>(r.engines.size()) / m.makespan_s;
  for (size_t p = 0; p < r.pools.size(); ++p) {
    PoolMetrics pm;
    pm.name = r.pools[p].name;
    std::vector<double> act, queue;
    for (const auto& c : r.tool_calls) {
      if (c.pool != static_cast<int>(p)) continue;
      act.push_back((c.ended - c.requested).seconds());
      queue.push_back((c.started - c.requested).seconds());
    }
    pm.actions = static_cast<int64_t>(act.size());
    pm.act_s = summarize(std::move(act));
    pm.queue_s = summarize(std::move(queue));
    const auto& st = r.pools[p].stats;
    pm.busy_resource_s = st.busy_unit_seconds;
    pm.provisioned_resource_s = st.provisioned_unit_seconds;
    pm.peak_in_use = st.peak_in_use;
    pm.peak_provisioned = st.peak_provisioned;
    pm.cold_starts = st.cold_starts;
    m.pools.push_back(std::move(pm));
  }
  return m;
}

}  // namespace arlsim::rl
