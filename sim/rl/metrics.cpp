#include "sim/rl/metrics.h"

#include <algorithm>

#include "sim/core/percentile.h"
#include "sim/core/sort.h"

namespace arlsim::rl {

Distribution summarize(std::vector<double> values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  core::sort_ascending(values);
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  d.p50 = nearest_rank(values, 50);
  d.p90 = nearest_rank(values, 90);
  d.p99 = nearest_rank(values, 99);
  d.max = values.back();
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
