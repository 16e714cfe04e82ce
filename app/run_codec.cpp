#include "app/run_codec.h"

#include <nlohmann/json.hpp>

#include "app/json_optional.h"

namespace arlsim::graph {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageTimes, rollout, reward, old_logprob, ref_logprob, critic, dispatch, train, weight_sync)
}  // namespace arlsim::graph

namespace arlsim::rl {

// nlohmann's conversions by field (found by argument-dependent lookup); doubles are written in
// their shortest round-trip form, so a run comes back bit for bit. A run travels without its
// activity records and counters, which only a timeline reads.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Distribution, count, mean, p50, p90, p99, max)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OomEvent, step, stage, host, rank, needed_gib, available_gib, contributors_gib)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunWarning, step, kind, message)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunResult::PoolRun, name, act_s, queue_s, busy_resource_s, provisioned_resource_s,
                                   peak_in_use, peak_provisioned, cold_starts, price_usd_per_unit_hour)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepRecord, step, start_s, end_s, time_s, stages, tokens, contexts, tokens_per_s,
                                   memory_peak_gib, oom, preemptions, recomputed_tokens)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunResult, scenario, gpus, reward_gpus, price_usd_per_gpu_hour, gpu_memory_gib, gpu_profile, steps, total_time_s,
                                   gpu_hours, cost_usd, steps_total, steps_planned, stopped_on_oom,
                                   projected_total_time_s, projected_gpu_hours, projected_cost_usd, oom_events, warnings,
                                   gpus_per_node, pool_names, pools)

}  // namespace arlsim::rl

namespace arlsim::app {

std::string pack_run(const rl::RunResult& r) { return nlohmann::json(r).dump(); }

rl::RunResult unpack_run(const std::string& text) { return nlohmann::json::parse(text).get<rl::RunResult>(); }

}  // namespace arlsim::app
