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

model::EngineExecution engine_execution(const input::EngineSpec& e, const input::GpuProfile& gpu) {
  // Eager mode's default dispatch is an x86 host's dispatch of a PyTorch operation; the GPU's
  // hosts dispatch at their own pace. The engine loop's host work is vLLM V0's measured line
  // (workload.h), which V1 engines do not pay even on a slower host (docs/rollout.md): not scaled.
  const double dispatch_s = e.eager_dispatch.seconds() * (e.eager_dispatch_given ? 1.0 : gpu.host_cpu_relative_time);
  return {e.enforce_eager, dispatch_s, e.host_overhead_per_iteration.seconds(), e.host_overhead_per_sequence.seconds()};
}

model::EngineMemoryOptions engine_memory_options(const RolloutOptions& o) {
  return {o.layout.tp, o.layout.pp, o.layout.ep, o.engine.gpu_memory_utilization, o.engine.max_num_batched_tokens,
          o.engine.max_num_seqs};
}

namespace {

int64_t longest_context(const RolloutOptions& o, const RolloutInput* in) {
  if (!in) return o.max_context;
  int64_t longest = 0;
  for (const auto& t : in->trajectories) longest = std::max(longest, t.context_tokens());
  return o.max_context > 0 ? std::min(longest, o.max_context) : longest;
}

// The engine's KV cache must fit beside its weights, and a request must fit it alone (vLLM
// refuses a max_model_len beyond it).
std::string kv_problem(const RolloutOptions& e, int64_t longest, const std::string& whose) {
  const auto mem = model::inference_memory(*e.model, e.cluster->gpu, engine_memory_options(e));
  if (mem.kv_capacity_tokens < e.engine.block_size)
    return whose + "KV cache does not fit: weights and workspace take " +
           std::to_string(static_cast<int64_t>((mem.breakdown.total() - mem.breakdown.get("kv_cache")) / (1 << 30))) +
           " GiB of the " + std::to_string(static_cast<int64_t>(mem.breakdown.capacity_bytes / (1 << 30))) +
           " GiB gpu_memory_utilization allows per GPU";
  const int64_t capacity = mem.kv_capacity_tokens / e.engine.block_size * e.engine.block_size;
  if (longest > capacity)
    return "a context of " + std::to_string(longest) + " tokens does not fit " + whose + "KV cache of " +
           std::to_string(capacity) + " tokens";
  return {};
}

}  // namespace

RolloutOptions reward_engine_options(const RolloutOptions& o) {
  RolloutOptions r = o;
  if (o.reward.model) r.model = o.reward.model;
  r.layout = o.reward.layout;
  r.engine = o.reward.engine;
  return r;
}

std::string check_reward(const RolloutOptions& o, const RolloutInput* in) {
  if (o.reward.kind != input::RewardKind::model || !o.reward.model || o.reward.engines <= 0) return {};
  // The reward model scores each trajectory's whole context.
  const RolloutOptions r = reward_engine_options(o);
  if (r.model->num_layers % r.layout.pp != 0 || r.model->num_heads % r.layout.tp != 0)
    return "the reward model's engines (tp " + std::to_string(r.layout.tp) + ") do not split its heads and layers";
  const int64_t gpus = r.layout.tp * r.layout.pp;
  return kv_problem(r, longest_context(o, in),
                    "the reward model's engine (" + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") + "): its ");
}

std::string check_policy_engines(const RolloutOptions& o, const RolloutInput* in) {
  if (o.model->num_layers % o.layout.pp != 0 || o.model->num_heads % o.layout.tp != 0)
    return "tp " + std::to_string(o.layout.tp) + " x pp " + std::to_string(o.layout.pp) +
           " does not split the model's heads and layers";
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
  return kv_problem(o, longest_context(o, in), "the engine's ");
}

std::string check_rollout(const RolloutOptions& o, const RolloutInput* in) {
  if (std::string problem = check_policy_engines(o, in); !problem.empty()) return problem;
  return check_reward(o, in);
}

}  // namespace arlsim::rl
