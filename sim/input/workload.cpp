#include "sim/input/workload.h"

#include "sim/parse/reader.h"

namespace arlsim::input {

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::grpo: return "grpo";
    case Algorithm::dapo: return "dapo";
    case Algorithm::ppo: return "ppo";
    case Algorithm::reinforce: return "reinforce";
    case Algorithm::reinforce_pp: return "reinforce_pp";
    case Algorithm::rloo: return "rloo";
  }
  return "?";
}

namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 26;

void parse_engine(ObjectReader& parent, EngineSpec& e) {
  const Value* v = parent.field("engine");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("engine"), parent.diag());
  read_engine_settings(r, e);
  r.finish();
}

void parse_reward(ObjectReader& parent, WorkloadSpec& w) {
  const Value* v = parent.field("reward");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("reward"), parent.diag());
  static const EnumName<RewardKind> kinds[] = {{"rule", RewardKind::rule}, {"model", RewardKind::model}};
  r.read_enum("kind", w.reward, Presence::required, kinds);
  r.read_duration("cpu_time_per_sample", w.reward_cpu_time_per_sample, Presence::optional, 0, 3600);
  if (const Value* m = r.field("model", w.reward == RewardKind::model ? Presence::required : Presence::optional)) {
    ModelSpec spec;
    if (parse_model(*m, r.pointer_of("model"), r.diag(), spec)) w.reward_model = std::move(spec);
  }
  r.finish();
}

}  // namespace

void read_attention_kernel(ObjectReader& r, bool& unfused) {
  static const EnumName<bool> kernels[] = {{"flash", false}, {"unfused", true}};
  r.read_enum("attention_kernel", unfused, Presence::optional, kernels);
}

void read_engine_settings(ObjectReader& r, EngineSpec& e) {
  // The engine model is vLLM's scheduler (continuous batching, chunked prefill, prefix caching,
  // recompute preemption); another engine's is not modelled, so no other name is taken.
  if (r.read("name", e.name, Presence::optional) && e.name != "vllm")
    r.error("name", "the engine model follows vLLM's scheduler; " + quote(e.name) + " is not modelled separately",
            "use \"vllm\" or leave the key out");
  r.read("gpu_memory_utilization", e.gpu_memory_utilization, Presence::optional, 0.05, 1.0);
  r.read("max_num_seqs", e.max_num_seqs, Presence::optional, 1, 1 << 20);
  r.read("max_num_batched_tokens", e.max_num_batched_tokens, Presence::optional, 1, kMaxTokens);
  r.read("chunked_prefill", e.chunked_prefill, Presence::optional);
  r.read("prefix_caching", e.prefix_caching, Presence::optional);
  r.read("block_size", e.block_size, Presence::optional, 1, 1024);
  r.read("enforce_eager", e.enforce_eager, Presence::optional);
  e.eager_dispatch_given = r.read_duration("eager_dispatch", e.eager_dispatch, Presence::optional, 0, 1e-3) || e.eager_dispatch_given;
  r.read_duration("host_overhead_per_iteration", e.host_overhead_per_iteration, Presence::optional, 0, 1);
  r.read_duration("host_overhead_per_sequence", e.host_overhead_per_sequence, Presence::optional, 0, 1e-2);
  r.read("sleep_level", e.sleep_level, Presence::optional, 0, 2);
  if (const Value* s = r.field("speculative"); s && !s->is_null()) {
    ObjectReader sr(*s, r.pointer_of("speculative"), r.diag());
    sr.read("mean_accepted_tokens", e.speculative_mean_accepted, Presence::required, 1.0, 64.0);
    sr.read("draft_tokens", e.speculative_draft_tokens, Presence::required, 1, 64);
    sr.read_duration("draft_time", e.speculative_draft_time, Presence::optional, 0, 1);
    sr.finish();
    if (e.speculative_draft_tokens > 0 && e.speculative_mean_accepted > static_cast<double>(e.speculative_draft_tokens) + 1)
      sr.error("mean_accepted_tokens", "the mean accepted length cannot exceed draft_tokens + 1 (" +
                                           std::to_string(e.speculative_draft_tokens + 1) + ")");
  }
}

bool parse_workload(const Value& v, const std::string& pointer, Diagnostics& diag, WorkloadSpec& out) {
  const size_t errors_before = diag.error_count();
  WorkloadSpec w;
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  r.read("name", w.name, Presence::optional);
  r.read("description", w.description, Presence::optional);
  static const EnumName<Algorithm> algorithms[] = {{"grpo", Algorithm::grpo},           {"dapo", Algorithm::dapo},
                                                   {"ppo", Algorithm::ppo},             {"reinforce", Algorithm::reinforce},
                                                   {"reinforce_pp", Algorithm::reinforce_pp}, {"rloo", Algorithm::rloo}};
  r.read_enum("algorithm", w.algorithm, Presence::required, algorithms);
  r.read("prompts_per_step", w.prompts_per_step, Presence::required, 1, 1 << 24);
  r.read("samples_per_prompt", w.samples_per_prompt, Presence::optional, 1, 1 << 16);
  r.read("max_prompt_tokens", w.max_prompt_tokens, Presence::required, 1, kMaxTokens);
  r.read("max_response_tokens", w.max_response_tokens, Presence::required, 1, kMaxTokens);
  const bool has_context = r.read("max_context_tokens", w.max_context_tokens, Presence::optional, 1, kMaxTokens);
  r.read("max_turns", w.max_turns, Presence::optional, 1, 100000);
  r.read("ppo_epochs", w.ppo_epochs, Presence::optional, 1, 1000);
  r.read("mini_batches", w.mini_batches, Presence::optional, 1, 1 << 20);
  r.read("use_reference", w.use_reference, Presence::optional);
  r.read("use_rollout_log_probs", w.use_rollout_log_probs, Presence::optional);
  r.read("force_on_policy_ratio", w.force_on_policy_ratio, Presence::optional);
  r.read("moe_imbalance", w.moe_imbalance, Presence::optional, 1.0, 64.0);
  // fp32: a device measured by `arlsim calibrate --backend cpu` has only an fp32 peak.
  static const EnumName<Dtype> dtypes[] = {
      {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}, {"fp8", Dtype::fp8}, {"fp32", Dtype::fp32}};
  r.read_enum("dtype", w.dtype, Presence::optional, dtypes);
  read_attention_kernel(r, w.unfused_attention);
  if (const Value* p = r.field("padding"); p && !p->is_null()) {
    // Whether each model's passes remove the padding (packed sequences) or compute the padded
    // tensors, every sequence as wide as the limits (verl without use_remove_padding).
    ObjectReader pr(*p, r.pointer_of("padding"), diag);
    if (pr.is_object()) {
      static const EnumName<bool> kinds[] = {{"removed", false}, {"limits", true}};
      pr.read_enum("policy", w.pad_policy, Presence::optional, kinds);
      pr.read_enum("critic", w.pad_critic, Presence::optional, kinds);
      pr.finish();
    }
  }
  if (const Value* c = r.field("critic"); c && !c->is_null()) {
    ModelSpec critic;
    if (parse_model(*c, r.pointer_of("critic"), diag, critic)) w.critic = std::move(critic);
  }
  parse_reward(r, w);
  parse_engine(r, w.engine);
  r.finish();

  if (!has_context) w.max_context_tokens = w.max_prompt_tokens + w.max_response_tokens;
  if (has_context && w.max_prompt_tokens > 0 && w.max_response_tokens > 0 &&
      w.max_prompt_tokens + w.max_response_tokens > w.max_context_tokens) {
    r.error("max_context_tokens",
            "max_prompt_tokens (" + std::to_string(w.max_prompt_tokens) + ") + max_response_tokens (" +
                std::to_string(w.max_response_tokens) + ") = " +
                std::to_string(w.max_prompt_tokens + w.max_response_tokens) + " exceeds max_context_tokens (" +
                std::to_string(w.max_context_tokens) + ")");
  }
  if (has_context && w.max_prompt_tokens > w.max_context_tokens)
    r.error("max_prompt_tokens", "max_prompt_tokens (" + std::to_string(w.max_prompt_tokens) +
                                     ") exceeds max_context_tokens (" + std::to_string(w.max_context_tokens) + ")");
  if (w.algorithm == Algorithm::ppo && !w.critic && r.is_object() && !r.has("critic"))
    r.error_here("PPO needs a value model: set \"critic\" (a model preset name, path or object)");
  if (w.mini_batches > 0 && w.trajectories_per_step() % w.mini_batches != 0)
    r.error("mini_batches", "prompts_per_step x samples_per_prompt = " + std::to_string(w.trajectories_per_step()) +
                                " trajectories do not split into " + std::to_string(w.mini_batches) +
                                " equal mini-batches");
  // A ratio forced to 1 is the truth only at the first update of a step's samples: NeMo RL refuses
  // it unless the training batch is the step's whole batch.
  if (w.force_on_policy_ratio && w.use_rollout_log_probs)
    if (const Value* f = r.field("force_on_policy_ratio"))
      r.diag().warning(*f, r.pointer_of("force_on_policy_ratio"),
                       "with use_rollout_log_probs too: the ratio is forced to 1, so the rollout's log-probabilities "
                       "go unused (either skips the old-log-prob pass)");
  if (w.force_on_policy_ratio && (w.mini_batches > 1 || w.ppo_epochs > 1))
    r.error("force_on_policy_ratio", "needs one optimizer step a step (mini_batches 1 and ppo_epochs 1; here " +
                                         std::to_string(w.mini_batches) + " and " + std::to_string(w.ppo_epochs) +
                                         "), as NeMo RL requires train_global_batch_size = num_prompts_per_step x "
                                         "num_generations_per_prompt");
  out = std::move(w);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
