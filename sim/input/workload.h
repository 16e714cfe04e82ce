// WorkloadSpec: what one RL run asks of the cluster — the algorithm, batch shape, length limits,
// the models besides the actor, PPO epochs and mini-batches, and the rollout engine's settings
// (named and defaulted as vLLM's engine arguments).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "sim/core/time.h"
#include "sim/input/hardware.h"
#include "sim/input/model.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {


enum class Algorithm { grpo, dapo, ppo, reinforce, reinforce_pp, rloo };
const char* algorithm_name(Algorithm a);

struct EngineSpec {
  std::string name = "vllm";  // the scheduler modelled: vLLM's
  double gpu_memory_utilization = 0.9;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  bool prefix_caching = true;
  int64_t block_size = 16;
  double speculative_mean_accepted = 0;  // tau; 0 = no speculative decoding
  int64_t speculative_draft_tokens = 0;
  SimTime speculative_draft_time;  // host time to draft per step (suffix or history lookup)
  // Kernels dispatched one by one by the host instead of replayed from CUDA graphs (vLLM's
  // enforce_eager): the GPU waits `eager_dispatch` for each kernel besides the GEMMs. 8.7 us:
  // a published Llama-3-8B decode at batch 1 took 9.28 ms per token eager and 7.06 ms with CUDA
  // graphs (SGLang PR 1401), 2.22 ms over 32 layers of 8 such kernels (calib/SOURCES.md).
  bool enforce_eager = false;
  SimTime eager_dispatch = SimTime::from_seconds(8.7e-6);
  // The host's work per iteration, serial with the GPU's: scheduling, building the input tensors,
  // sampling's bookkeeping and detokenising; a fixed part and a part per sequence in the batch.
  // Defaults: vLLM 0.5.4's, measured per iteration (6.1 ms + 35 us per sequence: 10.6, 24.6 and
  // 42.1 ms at 128, 512 and 1,024 requests; 17.2 ms for Llama-3-8B on ShareGPT), the only
  // published per-iteration figures (calib/SOURCES.md). Later engines overlap or shrink it.
  SimTime host_overhead_per_iteration = SimTime::from_seconds(6.1e-3);
  SimTime host_overhead_per_sequence = SimTime::from_seconds(35e-6);
  // Whether the scenario gave eager_dispatch: the default is an x86 host's dispatch of a PyTorch
  // operation and runs at the GPU's host CPU's pace (GpuProfile::host_cpu_relative_time); a value
  // given is the user's engine on the user's hosts and taken as it is.
  bool eager_dispatch_given = false;
  // vLLM's sleep mode between rollouts when the engine shares its GPUs with training (colocated):
  // 1 offloads the weights to host memory and discards the KV cache, and waking copies the weights
  // back (NeMo RL's and verl's colocated engines); 2 discards both, the refit fills the weights;
  // 0 keeps the engine resident, its gpu_memory_utilization share of every GPU then unavailable
  // to training. Disaggregated engines never sleep.
  int64_t sleep_level = 1;
};

enum class RewardKind { rule, model };

struct WorkloadSpec {
  std::string name;
  std::string description;
  Algorithm algorithm = Algorithm::grpo;
  int64_t prompts_per_step = 0;
  int64_t samples_per_prompt = 1;
  int64_t max_prompt_tokens = 0;
  int64_t max_response_tokens = 0;
  int64_t max_context_tokens = 0;  // defaults to prompt + response
  int64_t max_turns = 1;
  int64_t ppo_epochs = 1;
  int64_t mini_batches = 1;  // optimizer steps per PPO epoch
  bool use_reference = true;
  // The old log-probabilities taken from the rollout engines instead of a forward pass of the
  // trainer (verl's and slime's use_rollout_log_probs, common in asynchronous recipes): the
  // old_logprob stage does not run.
  bool use_rollout_log_probs = false;
  // The ratio forced to 1, its old log-probabilities the training pass's own (NeMo RL's
  // loss_fn.force_on_policy_ratio, which asks for one optimizer step a step): the old_logprob
  // stage does not run.
  bool force_on_policy_ratio = false;
  // Whether the trainer runs a forward pass for the old log-probabilities.
  bool old_logprob_pass() const { return !use_rollout_log_probs && !force_on_policy_ratio; }
  // Tokens routed to the busiest expert over the mean (>= 1): the grouped GEMMs and all-to-alls of
  // MoE training wait for it. 1: balanced routing.
  double moe_imbalance = 1.0;
  Dtype dtype = Dtype::bf16;
  // The attention kernel of training and preparation passes: FlashAttention (fused, no s x s
  // scores in memory), or unfused attention as 2021-22 Megatron-LM ran it (QK^T and AV as batched
  // GEMMs, the s x s probabilities written and kept for the backward).
  bool unfused_attention = false;
  // Whether the policy's passes (training, old and reference log-probs) and the critic's compute
  // their sequences padded to the limits (max_prompt_tokens + max_response_tokens), as verl's
  // workers do without use_remove_padding: every tensor that wide, whatever the sample's length.
  bool pad_policy = false, pad_critic = false;
  int64_t padded_length(bool critic_model) const {
    return (critic_model ? pad_critic : pad_policy) ? max_prompt_tokens + max_response_tokens : 0;
  }
  // A length as the model computes it: at least the padded width where it pads.
  int64_t computed_length(bool critic_model, int64_t length) const { return std::max(padded_length(critic_model), length); }
  std::optional<ModelSpec> critic;  // required by PPO
  RewardKind reward = RewardKind::rule;
  std::optional<ModelSpec> reward_model;
  SimTime reward_cpu_time_per_sample;
  EngineSpec engine;

  int64_t trajectories_per_step() const { return prompts_per_step * samples_per_prompt; }
};

// The vLLM-named engine keys (name, gpu_memory_utilization, max_num_seqs, ...), shared by a
// workload's "engine" and a rollout stage's.
void read_engine_settings(ObjectReader& r, EngineSpec& e);
// "attention_kernel": "flash" or "unfused" (a workload's, or an estimate's train stage's).
void read_attention_kernel(ObjectReader& r, bool& unfused);

// Expects "critic" and "reward/model" already resolved to model objects (see loader.h).
bool parse_workload(const Value& v, const std::string& pointer, Diagnostics& diag, WorkloadSpec& out);

}  // namespace arlsim::input
