// The launches of the frameworks that run their jobs on Ray with their own launchers: OpenRLHF,
// slime and AReaL (export.cpp has verl's, the entry point and what they share).
#include <algorithm>
#include <sstream>

#include "planner/export/export_detail.h"
#include "sim/rl/step.h"

namespace arlsim::planner::export_detail {

namespace {

// "0.10.1" before "0.10.2": the versions' numbers compared in turn.
bool version_before(const std::string& v, std::vector<int> than) {
  std::vector<int> parts;
  std::stringstream in(v.starts_with('v') ? v.substr(1) : v);  // "v0.10.2" as a tag writes it
  std::string item;
  while (std::getline(in, item, '.')) {
    try {
      parts.push_back(std::stoi(item));
    } catch (...) {
      parts.push_back(0);
    }
  }
  parts.resize(std::max(parts.size(), than.size()), 0);
  than.resize(parts.size(), 0);
  return parts < than;
}

std::string header_lines(const std::string& framework, const input::ScenarioSpec& s, const ExportRequest& r,
                         std::vector<std::string>& notes, const std::string& extra) {
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
  std::ostringstream o;
  o << "# Exported by `arlsim export --format " << framework << "` from " << one_line(r.source) << " (scenario " << safe_name(s.name) << " on "
    << s.cluster.total_gpus() << " x " << s.cluster.gpu.name << extra << ").\n";
  if (!notes.empty()) {
    o << "# Not expressible in " << framework << ", the closest setting taken:\n";
    for (const auto& n : notes) o << "#   - " << n << "\n";
  }
  return o.str();
}

}  // namespace

// OpenRLHF's `openrlhf.cli.train_ppo_ray`: dotted options from v0.10.2 on, flat names before.
// Training runs on DeepSpeed (data parallelism with ZeRO, ring attention); engines are vLLM's.
std::string openrlhf_script(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                            std::string& error) {
  const auto& w = s.workload;
  const auto& p = s.policy;
  const auto& l = p.train;
  const bool flat = !r.framework_version.empty() && version_before(r.framework_version, {0, 10, 2});
  std::vector<std::pair<std::string, std::string>> args;  // option (dotted name, flat name), value ("" = a switch)
  auto opt = [&](const char* dotted, const char* flat_name, const std::string& value) {
    const char* name = flat ? flat_name : dotted;
    if (!name) {
      notes.push_back(std::string(dotted) + ": no flag before OpenRLHF 0.10.2; left out");
      return;
    }
    args.emplace_back(name, value);
  };
  const int64_t per_node = s.cluster.gpus_per_node;
  int64_t nodes = 0, gpus = 0;
  if (!worker_grid(s.train_gpus(), per_node, nodes, gpus, error, "actor")) return {};
  const auto& ro = p.rollout;
  const int64_t engines = ro.replicas > 0 ? ro.replicas : s.rollout_gpus() / ro.gpus_per_engine();
  if (ro.pp > 1) notes.push_back("pipeline-parallel engines: OpenRLHF's vLLM engines take tensor parallelism only; pp left out");
  if (ro.ep > 1) notes.push_back("expert-parallel engines: not an OpenRLHF option; left out");
  const bool colocated = p.placement == input::Placement::colocated;
  if (colocated && s.train_gpus() != engines * ro.tp) {
    error = "OpenRLHF's colocate-all needs the actor's GPUs (" + num(s.train_gpus()) + ") to equal engines x vLLM TP (" +
            num(engines) + " x " + num(ro.tp) + ")";
    return {};
  }
  const int64_t trajectories = w.trajectories_per_step();
  if (w.mini_batches < 1 || trajectories % w.mini_batches != 0) {
    error = "OpenRLHF's train batch (" + num(trajectories) + " samples) does not split into " + num(w.mini_batches) +
            " optimizer steps";
    return {};
  }
  opt("--actor.model_name_or_path", "--pretrain", "\"$MODEL_PATH\"");
  opt("--data.prompt_dataset", "--prompt_data", "\"$TRAIN_FILES\"");
  opt("--actor.num_nodes", "--actor_num_nodes", num(nodes));
  opt("--actor.num_gpus_per_node", "--actor_num_gpus_per_node", num(gpus));
  if (w.use_reference) {
    opt("--ref.num_nodes", "--ref_num_nodes", num(nodes));
    opt("--ref.num_gpus_per_node", "--ref_num_gpus_per_node", num(gpus));
  }
  opt("--vllm.num_engines", "--vllm_num_engines", num(engines));
  opt("--vllm.tensor_parallel_size", "--vllm_tensor_parallel_size", num(ro.tp));
  opt("--vllm.gpu_memory_utilization", "--vllm_gpu_memory_utilization", num(w.engine.gpu_memory_utilization));
  if (!colocated && w.use_reference) opt("--train.colocate_actor_ref", "--colocate_actor_ref", "");  // ref on the actor's GPUs
  if (colocated) {
    opt("--train.colocate_all", "--colocate_all_models", "");
    opt("--vllm.enable_sleep", "--vllm_enable_sleep", "");
    opt("--ds.enable_sleep", "--deepspeed_enable_sleep", "");
  }
  // Training: DeepSpeed data parallelism with ZeRO and ring attention.
  if (l.tp > 1 || l.pp > 1 || l.ep > 1)
    notes.push_back("tensor, pipeline or expert parallelism in training: OpenRLHF trains with DeepSpeed (data "
                    "parallelism with ZeRO); exported as data parallelism over the same GPUs");
  opt("--ds.zero_stage", "--zero_stage", num(l.zero));
  if (l.cp > 1) {
    opt("--ds.ring_attn_size", "--ring_attn_size", num(l.cp));
    if (l.ulysses) notes.push_back("Ulysses context parallelism: OpenRLHF's is ring attention; exported as its ring size");
  }
  opt("--ds.packing_samples", "--packing_samples", "");
  // OpenRLHF trains a Hugging Face model in eager PyTorch; fused kernels are Liger's.
  if (!l.eager_kernels()) {
    opt("--ds.use_liger_kernel", "--use_liger_kernel", "");
    notes.push_back("fused kernels: OpenRLHF fuses with Liger (--ds.use_liger_kernel), which needs the liger-kernel "
                    "package and a model it patches");
  }
  if (l.recompute != input::Recompute::none) opt("--actor.gradient_checkpointing_enable", "--gradient_checkpointing", "");
  if (l.recompute == input::Recompute::selective)
    notes.push_back("selective recompute: OpenRLHF checkpoints whole layers; exported as gradient checkpointing");
  if (l.shard_group > 0) notes.push_back("a hybrid shard group: DeepSpeed's ZeRO shards over all data ranks");
  if (l.offload_optimizer) opt("--ds.adam_offload", "--adam_offload", "");
  if (l.offload_params) notes.push_back("offloaded parameters: OpenRLHF offloads the optimizer (Adam) only");
  if (l.grad_reduce_bytes() > 2)
    notes.push_back("gradients reduced in fp32: DeepSpeed reduces them in bf16 (its communication_data_type "
                    "default), which OpenRLHF's options do not change");
  opt("--rollout.batch_size", "--rollout_batch_size", num(w.prompts_per_step));
  opt("--rollout.n_samples_per_prompt", "--n_samples_per_prompt", num(w.samples_per_prompt));
  opt("--train.batch_size", "--train_batch_size", num(trajectories / w.mini_batches));
  opt("--train.micro_batch_size", "--micro_train_batch_size", num(l.micro_batch));
  if (l.max_tokens_per_gpu > 0) {
    opt("--train.dynamic_batch_enable", "--use_dynamic_batch", "");
    opt("--train.max_tokens_per_gpu", nullptr, num(l.max_tokens_per_gpu));
  }
  opt("--train.max_epochs", "--max_epochs", num(w.ppo_epochs));
  opt("--data.max_len", "--max_len", num(w.max_context_tokens));
  opt("--rollout.max_new_tokens", "--max_new_tokens", num(w.max_response_tokens));
  const char* estimator = "group_norm";
  switch (w.algorithm) {
    case input::Algorithm::grpo: break;
    case input::Algorithm::dapo: notes.push_back("DAPO: exported as group_norm (GRPO); its dynamic sampling is OpenRLHF's own option"); break;
    case input::Algorithm::ppo: estimator = "gae"; break;
    case input::Algorithm::rloo: estimator = "rloo"; break;
    case input::Algorithm::reinforce_pp: estimator = "reinforce"; break;
    case input::Algorithm::reinforce:
      estimator = "reinforce";
      notes.push_back("REINFORCE: OpenRLHF's reinforce estimator is REINFORCE++; the closest");
      break;
  }
  opt("--algo.advantage.estimator", "--advantage_estimator", estimator);
  if (p.sync == input::SyncMode::async) {
    if (colocated) notes.push_back("asynchronous training with colocate-all: OpenRLHF runs colocated models synchronously");
    else {
      opt("--train.async_enable", "--async_train", "");
      opt("--train.async_queue_size", nullptr, num(std::max<int64_t>(1, p.staleness)));
      if (p.batches_held() > 1)
        notes.push_back("continuous generation: OpenRLHF's asynchronous queue passes whole rollouts");
    }
  }
  if (p.partial_rollout > 0) {
    opt("--train.partial_rollout_enable", "--partial_rollout", "");
    if (p.partial_rollout < 1)
      notes.push_back("partial rollout at " + num(p.partial_rollout) + " of the batch: OpenRLHF's partial rollout "
                      "stops at its own settings, not a share of the batch");
  }
  if (p.old_logprob || p.ref_logprob || p.critic)
    notes.push_back("forward passes in their own layouts: OpenRLHF runs them in the models' own DeepSpeed engines");
  if (p.batch_assignment == input::BatchAssignment::layout_aware)
    notes.push_back("layout-aware batch assignment: OpenRLHF does not balance its batches by layout");
  if (w.reward_model) notes.push_back("a reward model: set OpenRLHF's --reward.* options (its model or remote URL); not set here");
  if (w.max_turns > 1)
    notes.push_back("multi-turn agents: OpenRLHF runs them through its agent function (--train.agent_path); not set here");
  if (w.critic) notes.push_back("PPO's critic: set --critic.* with its model; not set here");
  if (w.use_rollout_log_probs || w.force_on_policy_ratio)
    notes.push_back("the old policy's log-probabilities without a pass of their own: OpenRLHF computes them with the actor");
  if (p.dispatch != input::DispatchMode::centralized)
    notes.push_back(std::string("dispatch ") + std::string(input::dispatch_name(p.dispatch)) +
                    ": OpenRLHF moves batches through Ray's object store from its driver");
  if (!p.schedule.empty()) notes.push_back("a schedule of layouts: OpenRLHF keeps one layout per run; the first is exported");
  if (p.refit_gather() != input::RefitGather::full_model)
    notes.push_back("refit priced as an engine-shard gather: OpenRLHF gathers every parameter whole (DeepSpeed's "
                    "GatheredParameters) before its engines take it (weight_sync gather \"full-model\" prices that)");
  notes.push_back("the run's length follows the dataset (episodes x prompts), not a step count: arlsim's " +
                  num(run_steps(s)) + " steps are " + num(run_steps(s)) + " rollout batches of " + num(w.prompts_per_step) +
                  " prompts");
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
  std::ostringstream o;
  o << "#!/usr/bin/env bash\n# Exported by `arlsim export --format openrlhf" << (flat ? " --framework-version " + r.framework_version : "")
    << "` from " << one_line(r.source) << " (scenario " << safe_name(s.name) << " on " << s.cluster.total_gpus() << " x " << s.cluster.gpu.name
    << ", OpenRLHF " << (flat ? "flat options, before 0.10.2" : "dotted options, 0.10.2 and later") << ").\n";
  if (!notes.empty()) {
    o << "# Not expressible in OpenRLHF, the closest setting taken:\n";
    for (const auto& n : notes) o << "#   - " << n << "\n";
  }
  o << "set -euo pipefail\n"
    << "MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}\n"
    << "TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the prompt dataset}\n"
    << "ray job submit --address=\"${RAY_DASHBOARD:-http://127.0.0.1:8265}\" -- python3 -m openrlhf.cli.train_ppo_ray";
  for (const auto& [name, value] : args) o << " \\\n  " << name << (value.empty() ? "" : " " + value);
  o << "\n";
  return o.str();
}

// slime: `train.py` (synchronous) or `train_async.py` (the next rollout overlaps training) under
// `ray job submit`, with slime's flags, Megatron-LM's passed through and SGLang's `--sglang-*`.
std::string slime_script(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                         std::string& error) {
  const auto& w = s.workload;
  const auto& p = s.policy;
  const auto& l = p.train;
  const int64_t per_node = s.cluster.gpus_per_node;
  int64_t nodes = 0, gpus = 0;
  if (!worker_grid(s.train_gpus(), per_node, nodes, gpus, error, "actor")) return {};
  const int64_t trajectories = w.trajectories_per_step();
  if (w.mini_batches < 1 || trajectories % w.mini_batches != 0) {
    error = "slime asserts rollout_batch_size x n_samples_per_prompt = global_batch_size x num_steps_per_rollout: " +
            num(trajectories) + " samples do not split into " + num(w.mini_batches) + " steps";
    return {};
  }
  std::vector<std::pair<std::string, std::string>> a;
  auto flag_ = [&](const std::string& name, const std::string& value = "") { a.emplace_back(name, value); };
  flag_("--hf-checkpoint", "\"$MODEL_PATH\"");
  flag_("--ref-load", "\"$REF_LOAD\"");
  flag_("--prompt-data", "\"$TRAIN_FILES\"");
  flag_("--actor-num-nodes", num(nodes));
  flag_("--actor-num-gpus-per-node", num(gpus));
  flag_("--num-gpus-per-node", num(per_node));
  const auto& ro = p.rollout;
  flag_("--rollout-num-gpus", num(s.rollout_gpus()));
  flag_("--rollout-num-gpus-per-engine", num(ro.gpus_per_engine()));
  if (ro.pp > 1 || ro.ep > 1) notes.push_back("the engines' pipeline or expert parallelism: slime gives an engine its GPUs; set SGLang's own split with --sglang-* flags");
  if (p.placement == input::Placement::colocated) flag_("--colocate");  // implies offloading each side in turn
  // Megatron-LM's own flags, passed through.
  if (l.eager_kernels())
    notes.push_back("eager kernels (a Hugging Face model in eager PyTorch): slime trains with Megatron-LM's fused kernels");
  flag_("--tensor-model-parallel-size", num(l.tp));
  if (l.sequence_parallel) flag_("--sequence-parallel");
  if (l.grad_reduce_bytes() > 2) flag_("--accumulate-allreduce-grads-in-fp32");
  flag_("--pipeline-model-parallel-size", num(l.pp));
  // Uneven stages (Megatron-LM's own flags): the first and last stages' layers, the rest even.
  if (l.first_stage_layers > 0) flag_("--decoder-first-pipeline-num-layers", num(l.first_stage_layers));
  if (l.last_stage_layers > 0) flag_("--decoder-last-pipeline-num-layers", num(l.last_stage_layers));
  flag_("--context-parallel-size", num(l.cp));
  if (l.ep > 1) {
    flag_("--expert-model-parallel-size", num(l.ep));
    flag_("--expert-tensor-parallel-size", "1");  // as arlsim prices them, not Megatron's default tp
  }
  if (l.recompute == input::Recompute::full) {
    flag_("--recompute-granularity", "full");
    flag_("--recompute-method", "uniform");
    flag_("--recompute-num-layers", "1");
  } else if (l.recompute == input::Recompute::selective) {
    flag_("--recompute-granularity", "selective");
  }
  if (l.vpp > 1) notes.push_back("interleaved pipeline (vpp): pass Megatron-LM's own flag for it; not set here");
  if (l.ulysses && l.cp > 1) notes.push_back("Ulysses context parallelism: Megatron-LM's is ring attention; exported as its cp");
  if (l.zero >= 2)
    notes.push_back("ZeRO " + num(l.zero) + ": slime trains with Megatron-LM's distributed optimizer, which shards the "
                    "optimizer states only (ZeRO-1)");
  if (l.shard_group > 0) notes.push_back("a hybrid shard group: Megatron-LM's distributed optimizer shards over all data ranks");
  if (l.offload_optimizer)
    notes.push_back("the optimizer offloaded to the CPU: pass Megatron-LM's --optimizer-cpu-offload for it; not set here");
  if (l.offload_params) notes.push_back("offloaded parameters: Megatron-LM keeps the weights on the GPU");
  if (l.max_tokens_per_gpu > 0) {
    flag_("--use-dynamic-batch-size");
    flag_("--max-tokens-per-gpu", num(l.max_tokens_per_gpu));
    flag_("--log-probs-max-tokens-per-gpu", num(l.max_tokens_per_gpu));
  } else {
    flag_("--micro-batch-size", num(l.micro_batch));
  }
  if (p.batch_assignment != input::BatchAssignment::in_order) flag_("--balance-data");
  if (p.batch_assignment == input::BatchAssignment::layout_aware)
    notes.push_back("layout-aware batch assignment: slime balances by tokens (--balance-data)");
  // slime's estimators (grpo, ppo, reinforce_plus_plus, ...): each algorithm's, and what it leaves out.
  struct Estimator {
    input::Algorithm algorithm;
    const char* name;
    const char* note;
  };
  static constexpr Estimator kEstimators[] = {
      {input::Algorithm::ppo, "ppo", "PPO's critic: set slime's critic options with its model; not set here"},
      {input::Algorithm::reinforce, "reinforce_plus_plus", "REINFORCE: slime's reinforce estimator is REINFORCE++; the closest"},
      {input::Algorithm::reinforce_pp, "reinforce_plus_plus", nullptr},
      {input::Algorithm::rloo, "grpo", "RLOO: slime has no leave-one-out estimator; exported as grpo"},
      {input::Algorithm::dapo, "grpo",
       "DAPO: exported as grpo; its dynamic sampling is slime's own option (--dynamic-sampling-filter-path)"},
  };
  const Estimator* estimator = nullptr;
  for (const auto& e : kEstimators)
    if (e.algorithm == w.algorithm) estimator = &e;
  flag_("--advantage-estimator", estimator ? estimator->name : "grpo");
  if (w.use_rollout_log_probs) flag_("--use-rollout-logprobs");  // the old policy's from the engines
  if (estimator && estimator->note) notes.push_back(estimator->note);
  flag_("--rollout-batch-size", num(w.prompts_per_step));
  flag_("--n-samples-per-prompt", num(w.samples_per_prompt));
  flag_("--global-batch-size", num(trajectories / w.mini_batches));
  flag_("--num-steps-per-rollout", num(w.mini_batches));
  flag_("--num-rollout", num(run_steps(s)));
  flag_("--rollout-max-response-len", num(w.max_response_tokens));
  flag_("--rollout-max-context-len", num(w.max_context_tokens));
  flag_("--update-weight-buffer-size", num(static_cast<int64_t>(p.weight_sync_bucket_bytes)));
  flag_("--sglang-mem-fraction-static", num(w.engine.gpu_memory_utilization));
  if (p.partial_rollout > 0) {
    flag_("--partial-rollout");
    if (p.partial_rollout < 1)
      notes.push_back("partial rollout at " + num(p.partial_rollout) + " of the batch: slime's --partial-rollout "
                      "stops at its own over-sampling settings (--over-sampling-batch-size)");
  }
  if (p.old_logprob || p.ref_logprob || p.critic)
    notes.push_back("forward passes in their own layouts: slime runs them in the actor's layout");
  if (s.workload.reward_model) notes.push_back("a reward model: set slime's reward-model options (--rm-type, --rm-url); not set here");
  if (s.workload.force_on_policy_ratio)
    notes.push_back("force_on_policy_ratio: slime computes the old policy's log-probabilities with the actor (or takes "
                    "the engines', --use-rollout-logprobs); neither is the training pass's own");
  notes.push_back("the engines are SGLang's: the engine settings other than its memory share (batched tokens, "
                  "sequences, chunked prefill, prefix caching) are SGLang's own");
  if (w.ppo_epochs > 1) notes.push_back("PPO epochs: slime takes num_steps_per_rollout optimizer steps per rollout; one pass exported");
  const bool async = p.sync == input::SyncMode::async;
  if (async && p.staleness > 1) notes.push_back("staleness " + num(p.staleness) + ": train_async.py overlaps one rollout with training (staleness 1)");
  if (async && p.batches_held() > 1)
    notes.push_back("continuous generation: train_async.py generates each step's rollout whole");
  if (p.dispatch != input::DispatchMode::centralized)
    notes.push_back(std::string("dispatch ") + std::string(input::dispatch_name(p.dispatch)) + ": slime moves batches through Ray from its driver");
  if (!p.schedule.empty()) notes.push_back("a schedule of layouts: slime keeps one layout per run; the first is exported");
  if (w.max_turns > 1) notes.push_back("multi-turn agents: slime runs them through a custom rollout function (--custom-generate-function-path); not set here");
  std::string out = "#!/usr/bin/env bash\n" + header_lines("slime", s, r, notes, ", " + num(run_steps(s)) + " rollouts");
  out += "set -euo pipefail\n"
         "MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the Hugging Face checkpoint}\n"
         "REF_LOAD=${REF_LOAD:?set REF_LOAD to the Megatron (torch_dist) checkpoint of the reference model}\n"
         "TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the prompt data}\n"
         "# The model's architecture as Megatron-LM flags: slime's scripts/models/<model>.sh defines MODEL_ARGS.\n"
         "source \"${MODEL_ARGS_FILE:?set MODEL_ARGS_FILE to the slime model script scripts/models/<model>.sh}\"\n"
         "ray job submit --address=\"${RAY_DASHBOARD:-http://127.0.0.1:8265}\" -- python3 " +
         std::string(async ? "train_async.py" : "train.py") + " \\\n  \"${MODEL_ARGS[@]}\"";
  for (const auto& [name, value] : a) out += " \\\n  " + name + (value.empty() ? "" : " " + value);
  return out + "\n";
}

// AReaL v2: one backend string per engine and the cluster's shape, as YAML.
std::string areal_config(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                         std::string& error) {
  const auto& w = s.workload;
  const auto& p = s.policy;
  const auto& l = p.train;
  if (p.placement == input::Placement::colocated) {
    error = "AReaL runs rollout and training on separate GPUs: a colocated plan has no AReaL form (plan it disaggregated)";
    return {};
  }
  const auto& ro = p.rollout;
  const int64_t engines = ro.replicas > 0 ? ro.replicas : s.rollout_gpus() / ro.gpus_per_engine();
  const int64_t total = s.cluster.total_gpus();
  const int64_t used = engines * ro.gpus_per_engine() + l.gpus();
  if (used != total) {
    error = "AReaL needs its backends' GPUs (" + num(used) + ") to equal cluster.n_nodes x cluster.n_gpus_per_node (" +
            num(total) + ")";
    return {};
  }
  const bool megatron = needs_megatron(l);
  const std::string actor = megatron ? "megatron:d" + num(l.dp) + "p" + num(l.pp) + "t" + num(l.tp) + "c" + num(l.cp) + "e" + num(l.ep)
                                     : "fsdp:d" + num(l.dp * l.cp) + "p1t1";
  if (!megatron && l.cp > 1)
    notes.push_back("Ulysses context parallelism on FSDP: exported as data parallelism over the same GPUs (d" +
                    num(l.dp * l.cp) + ")");
  const int64_t max_len = w.max_context_tokens;
  if (l.max_tokens_per_gpu > 0 && l.max_tokens_per_gpu < max_len)
    notes.push_back("actor.mb_spec.max_tokens_per_mb must hold one whole sequence: raised from " + num(l.max_tokens_per_gpu) +
                    " to the longest context, " + num(max_len));
  const int64_t mb_tokens = std::max(l.max_tokens_per_gpu > 0 ? l.max_tokens_per_gpu : max_len, max_len);
  notes.push_back("the engines are SGLang's: settings other than its memory share are SGLang's own");
  if (p.dispatch != input::DispatchMode::centralized)
    notes.push_back(std::string("dispatch ") + std::string(input::dispatch_name(p.dispatch)) + ": AReaL's own data path");
  if (!p.schedule.empty()) notes.push_back("a schedule of layouts: AReaL keeps one allocation per run; the first is exported");
  if (w.use_rollout_log_probs || w.force_on_policy_ratio)
    notes.push_back("the old policy's log-probabilities without a pass of their own: AReaL computes them with the actor");
  if (p.sync == input::SyncMode::async && (!p.continuous || p.continuous_batches != p.staleness + 1))
    notes.push_back("AReaL's engines generate continuously, max_head_offpolicyness + 1 = " + num(p.staleness + 1) +
                    " batches in flight; the plan " + (p.continuous ? "holds " + num(p.continuous_batches) : std::string("generates whole steps")));
  if (p.keep_kv_cache) notes.push_back("kv_cache keep: AReaL recomputes the KV cache after a weight update");
  std::ostringstream o;
  o << header_lines("areal", s, r, notes, "");
  o << "experiment_name: " << safe_name(s.name) << "\n"
    << "cluster:\n"
    << "  n_nodes: " << s.cluster.nodes << "\n"
    << "  n_gpus_per_node: " << s.cluster.gpus_per_node << "\n"
    << "scheduler:\n"
    << "  type: ray\n"
    << "rollout:\n"
    << "  backend: \"sglang:d" << engines << "p" << ro.pp << "t" << ro.tp << "\"\n"
    << "  max_concurrent_rollouts: " << w.trajectories_per_step() << "\n"
    << "  max_head_offpolicyness: " << (p.sync == input::SyncMode::async ? p.staleness : int64_t{0}) << "\n"
    << "train_dataset:\n"
    << "  batch_size: " << w.prompts_per_step << "\n"
    << "actor:\n"
    << "  backend: \"" << actor << "\"\n"
    << "  gradient_checkpointing: " << (l.recompute != input::Recompute::none ? "true" : "false") << "\n"
    << "  ppo_n_minibatches: " << w.mini_batches << "\n"
    << "  mb_spec:\n"
    << "    max_tokens_per_mb: " << mb_tokens << "\n"
    << "gconfig:\n"
    << "  n_samples: " << w.samples_per_prompt << "\n"
    << "  max_new_tokens: " << w.max_response_tokens << "\n"
    << "  max_tokens: " << w.max_context_tokens << "\n"
    << "sglang:\n"
    << "  mem_fraction_static: " << num(w.engine.gpu_memory_utilization) << "\n";
  return o.str();
}

}  // namespace arlsim::planner::export_detail
