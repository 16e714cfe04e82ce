// What a rollout's options say before it runs: the engines' speculation, execution and memory
// settings, whether the engines fit and its trajectories can run, and its result's totals.
#include "sim/rl/rollout.h"

#include <algorithm>
#include <string>

#include "sim/input/scenario.h"
#include "sim/model/memory.h"

namespace arlsim::rl {

int64_t RolloutResult::preemptions() const {
  int64_t n = 0;
  for (const auto& e : engines) n += e.stats.preemptions;
  return n;
}

int64_t RolloutResult::recomputed_tokens() const {
  int64_t n = 0;
  for (const auto& e : engines) n += e.stats.recomputed_tokens;
  return n;
}

model::Speculation engine_speculation(const input::EngineSpec& e) {
  return {e.speculative_mean_accepted, e.speculative_draft_tokens, e.speculative_draft_time.seconds()};
}

model::EngineExecution engine_execution(const input::EngineSpec& e) {
  return {e.enforce_eager, e.eager_dispatch.seconds(), e.host_overhead_per_iteration.seconds(),
          e.host_overhead_per_sequence.seconds()};
}

model::EngineMemoryOptions engine_memory_options(const RolloutOptions& o) {
  return {o.layout.tp, o.layout.pp, o.layout.ep, o.engine.gpu_memory_utilization, o.engine.max_num_batched_tokens,
          o.engine.max_num_seqs};
}

std::string check_rollout(const RolloutOptions& o, const RolloutInput* in) {
  const auto mem = model::inference_memory(*o.model, o.cluster->gpu, engine_memory_options(o));
  if (o.model->num_layers % o.layout.pp != 0 || o.model->num_heads % o.layout.tp != 0)
    return "tp " + std::to_string(o.layout.tp) + " x pp " + std::to_string(o.layout.pp) +
           " does not split the model's heads and layers";
  if (mem.kv_capacity_tokens < o.engine.block_size)
    return "the engine's KV cache does not fit: weights and workspace take " +
           std::to_string(static_cast<int64_t>((mem.breakdown.total() - mem.breakdown.get("kv_cache")) / (1 << 30))) +
           " GiB of the " + std::to_string(static_cast<int64_t>(mem.breakdown.capacity_bytes / (1 << 30))) +
           " GiB gpu_memory_utilization allows per GPU";
  // A pool grows towards max_count only as a sandbox pool under the pooled policy; otherwise it has
  // `count` units for good.
  for (const auto& p : o.cluster->pools) {
    if (p.kind == input::PoolKind::reward_server) continue;
    const bool grows = input::pool_grows(p, o.tool_policy);
    if (input::pool_max_units(p, o.tool_policy) == 0)
      return "the pool " + p.name + " has no units (count" + (grows ? " and max_count are" : " is") +
             " 0" + (grows ? "" : p.kind == input::PoolKind::api ? ", and an API pool does not grow" : ", and only the pooled tool policy grows a pool") +
             "): its actions could never run";
  }
  // A request must fit the cache alone (vLLM refuses a max_model_len beyond it).
  const int64_t capacity = mem.kv_capacity_tokens / o.engine.block_size * o.engine.block_size;
  int64_t longest = o.max_context;
  if (in) {
    longest = 0;
    for (const auto& t : in->trajectories) longest = std::max(longest, t.context_tokens());
    if (o.max_context > 0) longest = std::min(longest, o.max_context);
  }
  if (longest > capacity)
    return "a context of " + std::to_string(longest) + " tokens does not fit the engine's KV cache of " +
           std::to_string(capacity) + " tokens";
  return {};
}

}  // namespace arlsim::rl
