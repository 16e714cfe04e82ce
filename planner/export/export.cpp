#include "planner/export/export.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "planner/plan_json.h"
#include "sim/rl/step.h"
#include "sim/trace/gen_options.h"

namespace arlsim::planner {

namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string flag(bool b) { return b ? "True" : "False"; }

// Text for a comment line: no line breaks.
std::string one_line(std::string t) {
  std::replace(t.begin(), t.end(), '\n', ' ');
  std::replace(t.begin(), t.end(), '\r', ' ');
  return t;
}

// A scenario's name as a word a shell, Hydra, Slurm and YAML take as is: letters, digits, `.`, `_`
// and `-`, anything else a `-`.
std::string safe_name(const std::string& name) {
  std::string out = name.empty() ? std::string("arlsim-plan") : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  return out;
}

// The training run's length in steps: a generated trace's steps (which a sampled trace, every
// k-th step kept, still spans), else the scenario's.
int64_t run_steps(const input::ScenarioSpec& s) {
  if (s.generated_trace) return std::max(1, rl::scenario_gen_params(s).steps);  // preset, options and "steps" alike
  return std::max<int64_t>(1, s.steps);
}


// Hydra overrides of one verl launch, in the order they are added.
struct Overrides {
  std::vector<std::pair<std::string, std::string>> items;
  void set(const std::string& key, const std::string& value) { items.emplace_back(key, value); }
};

// Whether the layout needs verl's Megatron engine (tensor, pipeline or expert parallelism, or ring
// context parallelism); otherwise its FSDP engine (`model_engine=dp`).
bool needs_megatron(const input::TrainLayout& l) {
  return l.tp > 1 || l.pp > 1 || l.ep > 1 || l.vpp > 1 || (l.cp > 1 && !l.ulysses);
}

std::string adv_estimator(input::Algorithm a, std::vector<std::string>& notes) {
  switch (a) {
    case input::Algorithm::grpo: return "grpo";
    case input::Algorithm::dapo:
      notes.push_back("DAPO: verl runs it as its DAPO recipe on the grpo estimator; exported as grpo (dynamic sampling "
                      "and the clip-higher settings are the recipe's, not set here)");
      return "grpo";
    case input::Algorithm::ppo: return "gae";
    case input::Algorithm::reinforce_pp: return "reinforce_plus_plus";
    case input::Algorithm::rloo: return "rloo";
    case input::Algorithm::reinforce:
      notes.push_back("REINFORCE: verl has no plain REINFORCE estimator; reinforce_plus_plus is the closest");
      return "reinforce_plus_plus";
  }
  return "grpo";
}

// Workers go on nnodes x n_gpus_per_node GPUs: whole nodes, or part of one.
bool worker_grid(int64_t gpus, int64_t per_node, int64_t& nnodes, int64_t& n_gpus, std::string& error,
                 const std::string& what) {
  if (gpus <= per_node) {
    nnodes = 1;
    n_gpus = gpus;
    return true;
  }
  if (gpus % per_node != 0) {
    error = "verl places the " + what + " workers on nnodes x n_gpus_per_node GPUs: " + num(gpus) +
            " GPUs do not fill whole nodes of " + num(per_node);
    return false;
  }
  nnodes = gpus / per_node;
  n_gpus = per_node;
  return true;
}

// The actor's training layout as verl's keys (the Megatron engine's, or the FSDP engine's: never
// both, they live in different generated configs).
void train_keys(const input::ScenarioSpec& s, const input::TrainLayout& l, Overrides& o, std::vector<std::string>& notes) {
  const std::string actor = "actor_rollout_ref.actor";
  const bool megatron = needs_megatron(l);
  // verl's actor offload moves its state to host memory between phases (Adam on the GPU): the
  // to-cpu swap. ZeRO-Offload (Adam on the CPU, weights streamed) has no verl setting; the actor
  // offload is the closest, both flags (which import as the to-cpu swap).
  const bool to_cpu = s.policy.weight_sync_state == input::StateSwap::to_cpu && s.policy.swaps_training_state();
  const bool offload = to_cpu || l.offload_optimizer || l.offload_params;
  if (l.offload_optimizer || l.offload_params)
    notes.push_back("offloaded optimizer or weights (ZeRO-Offload: Adam on the CPU, weights streamed to the GPU): "
                    "verl's actor offload, which moves the state to host memory between phases and runs Adam on the "
                    "GPU, exported instead");
  if (megatron) {
    if (l.eager_kernels())
      notes.push_back("eager kernels (a Hugging Face model in eager PyTorch): verl's Megatron engine runs Megatron-Core's "
                      "fused kernels");
    const std::string m = actor + ".megatron";
    o.set(m + ".tensor_model_parallel_size", num(l.tp));
    o.set(m + ".pipeline_model_parallel_size", num(l.pp));
    if (l.vpp > 1) o.set(m + ".virtual_pipeline_model_parallel_size", num(l.vpp));
    o.set(m + ".context_parallel_size", num(l.cp));
    if (l.ep > 1) o.set(m + ".expert_model_parallel_size", num(l.ep));
    o.set(m + ".sequence_parallel", flag(l.sequence_parallel));
    o.set(m + ".param_offload", flag(offload));
    o.set(m + ".optimizer_offload", flag(offload));
    const std::string t = m + ".override_transformer_config";
    if (l.recompute == input::Recompute::full) {
      o.set(t + ".recompute_granularity", "full");
      o.set(t + ".recompute_method", "uniform");
      o.set(t + ".recompute_num_layers", "1");
    } else if (l.recompute == input::Recompute::selective) {
      o.set(t + ".recompute_granularity", "selective");
    }
    // Megatron-Core fields verl's configuration does not list: Hydra adds them with `+`.
    if (l.first_stage_layers > 0) o.set("+" + t + ".num_layers_in_first_pipeline_stage", num(l.first_stage_layers));
    if (l.last_stage_layers > 0) o.set("+" + t + ".num_layers_in_last_pipeline_stage", num(l.last_stage_layers));
    if (l.ulysses && l.cp > 1)
      notes.push_back("Ulysses context parallelism: verl's Megatron engine runs ring attention; exported as its cp");
    if (l.zero == 0 || l.zero >= 2)
      notes.push_back("ZeRO " + num(l.zero) + ": verl's Megatron engine shards optimizer states (the distributed "
                      "optimizer, ZeRO-1); not set here");
  } else {
    const std::string f = actor + ".fsdp_config";
    o.set(actor + ".strategy", "fsdp");
    if (l.cp > 1) o.set(actor + ".ulysses_sequence_parallel_size", num(l.cp));
    o.set(f + ".param_offload", flag(offload));
    o.set(f + ".optimizer_offload", flag(offload));
    if (l.shard_group > 0) o.set(f + ".fsdp_size", num(l.shard_group));
    o.set("actor_rollout_ref.model.enable_gradient_checkpointing", flag(l.recompute != input::Recompute::none));
    // The FSDP engine runs a Hugging Face model in eager PyTorch; fused kernels are Liger's.
    if (!l.eager_kernels()) {
      o.set("actor_rollout_ref.model.use_liger", flag(true));
      notes.push_back("fused kernels: verl's FSDP engine fuses with Liger (use_liger=True), which needs the liger-kernel "
                      "package and a model it patches");
    }
    if (l.zero != 3)
      notes.push_back("ZeRO " + num(l.zero) + ": verl's FSDP engine shards parameters, gradients and optimizer "
                      "states (ZeRO-3); exported as FSDP");
    if (l.recompute == input::Recompute::selective)
      notes.push_back("selective recompute: verl's FSDP engine checkpoints whole layers; exported as gradient checkpointing");
    // verl's FSDP engine reduces in fp32 unless its mixed-precision policy says otherwise; Hydra's
    // ++ sets the key whether or not the configuration lists it.
    if (l.grad_reduce_bytes() < 4) o.set("++" + f + ".mixed_precision.reduce_dtype", "bf16");
  }
  // Micro-batches: the token budget (dynamic batching), or a fixed count of sequences. verl's
  // budget must hold one whole sequence (prompt and response).
  const bool dynamic = l.max_tokens_per_gpu > 0;
  const int64_t budget = std::max(l.max_tokens_per_gpu, s.workload.max_context_tokens);
  if (dynamic && budget > l.max_tokens_per_gpu)
    notes.push_back("a token budget of " + num(l.max_tokens_per_gpu) + " below the longest sequence: verl's must hold one "
                    "whole sequence; raised to " + num(budget));
  o.set(actor + ".use_dynamic_bsz", flag(dynamic));
  if (dynamic) o.set(actor + ".ppo_max_token_len_per_gpu", num(budget));
  else o.set(actor + ".ppo_micro_batch_size_per_gpu", num(l.micro_batch));
  for (const std::string part : {"actor_rollout_ref.rollout", "actor_rollout_ref.ref"}) {
    o.set(part + ".log_prob_use_dynamic_bsz", flag(dynamic));
    if (dynamic) o.set(part + ".log_prob_max_token_len_per_gpu", num(budget));
    else o.set(part + ".log_prob_micro_batch_size_per_gpu", num(l.micro_batch));
  }
}

// One verl launch for the steps [first, last] with these layouts.
std::string verl_command(const input::ScenarioSpec& s, const input::RolloutLayout& rollout, const input::TrainLayout& train,
                         int64_t last_step, bool resume, std::vector<std::string>& notes, std::string& error) {
  const auto& w = s.workload;
  const auto& p = s.policy;
  Overrides o;
  o.set("model_engine", needs_megatron(train) ? "megatron" : "dp");
  o.set("algorithm.adv_estimator", adv_estimator(w.algorithm, notes));
  o.set("data.train_files", "\"$TRAIN_FILES\"");
  o.set("data.val_files", "\"$VAL_FILES\"");
  o.set("data.train_batch_size", num(w.prompts_per_step));
  o.set("data.max_prompt_length", num(w.max_prompt_tokens));
  o.set("data.max_response_length", num(w.max_response_tokens));
  o.set("actor_rollout_ref.model.path", "\"$MODEL_PATH\"");
  o.set("actor_rollout_ref.actor.ppo_mini_batch_size", num(w.prompts_per_step / w.mini_batches));
  o.set("actor_rollout_ref.actor.ppo_epochs", num(w.ppo_epochs));
  o.set("actor_rollout_ref.actor.use_kl_loss", flag(w.use_reference));
  train_keys(s, train, o, notes);
  // Rollout engines.
  const std::string r = "actor_rollout_ref.rollout";
  const auto& e = w.engine;
  o.set(r + ".name", "vllm");
  o.set(r + ".mode", "async");
  o.set(r + ".n", num(w.samples_per_prompt));
  o.set(r + ".tensor_model_parallel_size", num(rollout.tp));
  if (rollout.pp > 1) o.set(r + ".pipeline_model_parallel_size", num(rollout.pp));
  if (rollout.ep > 1) o.set(r + ".expert_parallel_size", num(rollout.ep));
  o.set(r + ".gpu_memory_utilization", num(e.gpu_memory_utilization));
  o.set(r + ".max_num_batched_tokens", num(e.max_num_batched_tokens));
  o.set(r + ".max_num_seqs", num(e.max_num_seqs));
  o.set(r + ".enable_chunked_prefill", flag(e.chunked_prefill));
  o.set(r + ".enable_prefix_caching", flag(e.prefix_caching));
  o.set(r + ".max_model_len", num(w.max_context_tokens));
  o.set(r + ".enforce_eager", flag(e.enforce_eager));
  o.set(r + ".checkpoint_engine.update_weights_bucket_megabytes",
        num(static_cast<int64_t>(p.weight_sync_bucket_bytes / (1024.0 * 1024.0))));
  if (w.max_turns > 1) {
    o.set(r + ".multi_turn.enable", "True");
    o.set(r + ".multi_turn.max_assistant_turns", num(w.max_turns));
    o.set(r + ".multi_turn.tool_config_path", "\"$TOOL_CONFIG\"");
  }
  if (w.critic) {
    o.set("critic.model.path", "\"$CRITIC_PATH\"");
    o.set("critic.ppo_mini_batch_size", num(w.prompts_per_step / w.mini_batches));
    if (train.max_tokens_per_gpu > 0) {
      const int64_t budget = std::max(train.max_tokens_per_gpu, w.max_context_tokens);
      o.set("critic.ppo_max_token_len_per_gpu", num(budget));
      o.set("critic.forward_max_token_len_per_gpu", num(budget));
    }
  }
  // Placement and sync mode.
  const int64_t per_node = s.cluster.gpus_per_node;
  int64_t nnodes = 0, n_gpus = 0;
  if (p.placement == input::Placement::colocated) {
    o.set(r + ".free_cache_engine", flag(e.sleep_level > 0));
    if (!worker_grid(s.train_gpus(), per_node, nnodes, n_gpus, error, "colocated")) return {};
    if (p.sync == input::SyncMode::async)
      notes.push_back("asynchronous training with colocated engines: verl's colocated trainer is synchronous");
  } else {
    int64_t rn = 0, rg = 0;
    if (!worker_grid(s.rollout_gpus(), per_node, rn, rg, error, "rollout")) return {};
    if (!worker_grid(s.train_gpus(), per_node, nnodes, n_gpus, error, "training")) return {};
    o.set("trainer.v1.trainer_mode", "separate_async");
    o.set(r + ".nnodes", num(rn));
    o.set(r + ".n_gpus_per_node", num(rg));
    o.set(r + ".checkpoint_engine.backend", "nccl");
    o.set("trainer.v1.sampler.max_off_policy_threshold", num(p.sync == input::SyncMode::async ? p.staleness : int64_t{0}));
    // data.train_batch_size = parameter_sync_step x ppo_mini_batch_size.
    o.set("trainer.v1.separate_async.parameter_sync_step", num(w.mini_batches));
    if (p.sync != input::SyncMode::async)
      notes.push_back("synchronous training on separate pools: verl separates pools in its asynchronous trainer; "
                      "exported with staleness 0");
  }
  o.set("trainer.nnodes", num(nnodes));
  o.set("trainer.n_gpus_per_node", num(n_gpus));
  o.set("trainer.balance_batch", flag(p.batch_assignment != input::BatchAssignment::in_order));
  o.set("trainer.total_training_steps", num(last_step));
  o.set("trainer.project_name", "arlsim");
  o.set("trainer.experiment_name", safe_name(s.name));
  if (resume) o.set("trainer.resume_mode", "auto");
  std::string text = "python3 -m verl.trainer.main_ppo";
  for (const auto& [k, v] : o.items) text += " \\\n  " + k + "=" + v;
  return text + "\n";
}

// What verl does its own way, said once per export.
void verl_notes(const input::ScenarioSpec& s, std::vector<std::string>& notes) {
  const auto& p = s.policy;
  if (p.dispatch != input::DispatchMode::centralized)
    notes.push_back(std::string("dispatch ") + std::string(input::dispatch_name(p.dispatch)) +
                    ": verl moves batches through its single controller (centralized)");
  if (p.batch_assignment == input::BatchAssignment::layout_aware)
    notes.push_back("layout-aware batch assignment: verl balances by tokens (balance_batch=True)");
  if (p.tool_policy != input::ToolPolicy::static_binding)
    notes.push_back("tool policy: verl's agent loop runs each trajectory's tools itself; pooled sandboxes are the "
                    "tool server's business");
  if (p.old_logprob || p.ref_logprob || p.critic)
    notes.push_back("forward passes in their own layouts: verl runs them in the actor's layout");
  if (p.partial_rollout > 0) notes.push_back("partial rollout: not set in verl's mainline trainer");
  if (s.workload.use_rollout_log_probs)
    notes.push_back("the rollout's log-probabilities for the old policy: verl computes them with the actor");
  if (s.workload.reward_model) notes.push_back("a reward model: set verl's reward_model.* for it");
  if (p.refit_gather() != input::RefitGather::full_model)
    notes.push_back("refit priced as an engine-shard gather: verl's sharding managers make every parameter whole on "
                    "each training rank first (weight_sync gather \"full-model\" prices that)");
}

std::string shell_header(const input::ScenarioSpec& s, const ExportRequest& r, const std::vector<std::string>& notes) {
  std::ostringstream h;
  h << "# Exported by `arlsim export --format " << (r.format == ExportFormat::slurm ? "slurm" : "verl") << "` from "
    << one_line(r.source) << " (scenario " << safe_name(s.name) << " on " << s.cluster.total_gpus() << " x " << s.cluster.gpu.name << ", "
    << run_steps(s) << " steps).\n";
  if (!notes.empty()) {
    h << "# Not expressible in verl, the closest setting taken:\n";
    for (const auto& n : notes) h << "#   - " << n << "\n";
  }
  return h.str();
}

// A verl launch as a script's parts: the header comment, the inputs it asks the environment for,
// and the commands.
struct VerlScript {
  std::string header, inputs, body;
};

VerlScript verl_script(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                       std::string& error) {
  verl_notes(s, notes);
  // One launch per segment of the layout schedule, each resuming from the checkpoint of the one
  // before (verl cannot switch layouts in a run).
  struct Segment {
    int64_t last_step;
    input::RolloutLayout rollout;
    input::TrainLayout train;
  };
  std::vector<Segment> segments;
  const int64_t steps = run_steps(s);
  input::RolloutLayout rollout = s.policy.rollout;
  input::TrainLayout train = s.policy.train;
  int64_t from = 1;
  for (const auto& e : s.policy.schedule) {
    if (e.first_step > from) segments.push_back({std::min(steps, e.first_step - 1), rollout, train});
    if (e.rollout) rollout = *e.rollout;
    if (e.train) train = *e.train;
    from = std::max(from, e.first_step);
    if (e.last_step >= 0) {
      segments.push_back({std::min(steps, e.last_step), rollout, train});
      rollout = s.policy.rollout;
      train = s.policy.train;
      from = e.last_step + 1;
    }
  }
  if (segments.empty() || segments.back().last_step < steps) segments.push_back({steps, rollout, train});
  if (segments.size() > 1)
    notes.push_back("a schedule of " + num(static_cast<int64_t>(segments.size())) +
                    " layouts: one launch per segment, each resuming from the last checkpoint "
                    "(trainer.resume_mode=auto; save a checkpoint at each segment's last step)");
  std::string body;
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string problem;
    const std::string cmd =
        verl_command(s, segments[i].rollout, segments[i].train, segments[i].last_step, i > 0, notes, problem);
    if (!problem.empty()) {
      error = problem;
      return {};
    }
    if (segments.size() > 1) body += "\n# Steps to " + num(segments[i].last_step) + ".\n";
    body += cmd;
  }
  // The same note can come from several segments.
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
  std::string inputs =
      "MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}\n"
      "TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the training parquet files}\n"
      "VAL_FILES=${VAL_FILES:-$TRAIN_FILES}\n";
  if (s.workload.max_turns > 1) inputs += "TOOL_CONFIG=${TOOL_CONFIG:?set TOOL_CONFIG to the verl tool configuration file}\n";
  if (s.workload.critic) inputs += "CRITIC_PATH=${CRITIC_PATH:?set CRITIC_PATH to the critic model}\n";
  return {shell_header(s, r, notes), inputs, body};
}

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
  if (p.partial_rollout > 0) opt("--train.partial_rollout_enable", "--partial_rollout", "");
  if (w.max_turns > 1)
    notes.push_back("multi-turn agents: OpenRLHF runs them through its agent function (--train.agent_path); not set here");
  if (w.critic) notes.push_back("PPO's critic: set --critic.* with its model; not set here");
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
  flag_("--context-parallel-size", num(l.cp));
  if (l.ep > 1) flag_("--expert-model-parallel-size", num(l.ep));
  if (l.recompute == input::Recompute::full) {
    flag_("--recompute-granularity", "full");
    flag_("--recompute-method", "uniform");
    flag_("--recompute-num-layers", "1");
  } else if (l.recompute == input::Recompute::selective) {
    flag_("--recompute-granularity", "selective");
  }
  if (l.vpp > 1) notes.push_back("interleaved pipeline (vpp): pass Megatron-LM's own flag for it; not set here");
  if (l.ulysses && l.cp > 1) notes.push_back("Ulysses context parallelism: Megatron-LM's is ring attention; exported as its cp");
  if (l.max_tokens_per_gpu > 0) {
    flag_("--use-dynamic-batch-size");
    flag_("--max-tokens-per-gpu", num(l.max_tokens_per_gpu));
    flag_("--log-probs-max-tokens-per-gpu", num(l.max_tokens_per_gpu));
  } else {
    flag_("--micro-batch-size", num(l.micro_batch));
  }
  if (p.batch_assignment != input::BatchAssignment::in_order) flag_("--balance-data");
  flag_("--rollout-batch-size", num(w.prompts_per_step));
  flag_("--n-samples-per-prompt", num(w.samples_per_prompt));
  flag_("--global-batch-size", num(trajectories / w.mini_batches));
  flag_("--num-steps-per-rollout", num(w.mini_batches));
  flag_("--num-rollout", num(run_steps(s)));
  flag_("--rollout-max-response-len", num(w.max_response_tokens));
  flag_("--rollout-max-context-len", num(w.max_context_tokens));
  flag_("--update-weight-buffer-size", num(static_cast<int64_t>(p.weight_sync_bucket_bytes)));
  flag_("--sglang-mem-fraction-static", num(w.engine.gpu_memory_utilization));
  if (p.partial_rollout > 0) flag_("--partial-rollout");
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

}  // namespace

std::optional<ExportFormat> find_export_format(std::string_view name) {
  if (name == "json") return ExportFormat::json;
  if (name == "verl") return ExportFormat::verl;
  if (name == "slurm") return ExportFormat::slurm;
  if (name == "openrlhf") return ExportFormat::openrlhf;
  if (name == "slime") return ExportFormat::slime;
  if (name == "areal") return ExportFormat::areal;
  return std::nullopt;
}

std::string_view export_format_list() { return "json, verl, slurm, openrlhf, slime, areal"; }

namespace {

// An sbatch script: the header and input checks (`prologue`), a Ray cluster over the allocated
// nodes (the head on the first), then `command`: verl's driver on the head, or a job submitted to
// the head's dashboard.
std::string slurm_wrap(const input::ScenarioSpec& s, const std::string& prologue, const std::string& command, bool submit) {
  const int64_t nodes = s.cluster.nodes, g = s.cluster.gpus_per_node;
  std::ostringstream sb;
  sb << "#!/usr/bin/env bash\n"
     << "#SBATCH --job-name=" << safe_name(s.name) << "\n"
     << "#SBATCH --nodes=" << nodes << "\n"
     << "#SBATCH --ntasks-per-node=1\n"
     << "#SBATCH --gpus-per-node=" << g << "\n"
     << prologue
     << "nodes=($(scontrol show hostnames \"$SLURM_JOB_NODELIST\"))\n"
     << "head=${nodes[0]}\n"
     << "head_ip=$(srun --nodes=1 --ntasks=1 -w \"$head\" hostname --ip-address | awk '{print $1}')\n"
     << "srun --nodes=1 --ntasks=1 -w \"$head\" ray start --head --node-ip-address=\"$head_ip\" --port=6379 --num-gpus=" << g
     << " --block &\n"
     << "sleep 10\n"
     << "for node in \"${nodes[@]:1}\"; do\n"
     << "  srun --nodes=1 --ntasks=1 -w \"$node\" ray start --address \"$head_ip:6379\" --num-gpus=" << g << " --block &\n"
     << "  sleep 5\n"
     << "done\n"
     << (submit ? "export RAY_DASHBOARD=\"http://$head_ip:8265\"\n" : "export RAY_ADDRESS=\"$head_ip:6379\"\n")
     << command;
  return sb.str();
}

}  // namespace

ExportResult export_plan(const input::ScenarioSpec& s, const ExportRequest& r) {
  ExportResult out;
  const auto& w = s.workload;
  if (r.format != ExportFormat::json && w.use_reference && s.policy.reference_weights == input::ReferenceWeights::swapped)
    out.notes.push_back("reference weights kept in host memory and swapped in for each reference pass (NeMo RL's way): "
                        "the framework keeps its reference model apart, on the GPUs or offloaded by its own options");
  // How each framework packs a token budget's micro-batches: AReaL first fit decreasing into bins
  // of the budget, the others balanced sets; none pads them to one length but NeMo RL's Megatron
  // worker, which arlsim does not export to.
  const ExportFormat target = r.format == ExportFormat::slurm ? r.framework : r.format;
  const auto& tl = s.policy.train;
  if (r.format != ExportFormat::json && tl.max_tokens_per_gpu > 0) {
    const bool fits = target == ExportFormat::areal;
    if (tl.fit_packing && !fits)
      out.notes.push_back("micro-batches packed first fit decreasing into bins of the token budget (NeMo RL's way): the "
                          "framework balances its micro-batches instead");
    if (!tl.fit_packing && fits)
      out.notes.push_back("micro-batches in balanced sets (verl's way): AReaL packs first fit decreasing into bins of the "
                          "token budget");
    if (tl.pad_to_longest && tl.pp > 1)
      out.notes.push_back("pipeline micro-batches padded to the longest (NeMo RL's Megatron worker): the framework runs "
                          "each at its own length");
  }
  if (r.format != ExportFormat::json && s.cluster.host_gpus() < s.cluster.gpus_per_node)
    out.notes.push_back("a node here is an NVLink domain of " + num(s.cluster.gpus_per_node) + " GPUs, hosts of " +
                        num(s.cluster.host_gpus()) + ": the GPU counts per node below are the domain's; Slurm, Ray "
                        "and the framework count hosts (" + num(s.cluster.total_gpus() / s.cluster.host_gpus()) + " of " +
                        num(s.cluster.host_gpus()) + " GPUs), so set them so and keep each domain's hosts together");
  if (r.format != ExportFormat::json && target != ExportFormat::areal && w.mini_batches > 0 && tl.dp > 0 &&
      w.trajectories_per_step() / w.mini_batches % tl.dp != 0)
    out.notes.push_back("a mini-batch of " + num(w.trajectories_per_step() / w.mini_batches) + " trajectories does not "
                        "split evenly over dp = " + num(tl.dp) + ": the framework requires it to");
  if (r.format == ExportFormat::json) {
    if (r.document) out.text = document_json(*r.document);
    else out.error = "no document to write";
    return out;
  }
  if (r.format == ExportFormat::openrlhf) {
    out.text = openrlhf_script(s, r, out.notes, out.error);
    return out;
  }
  if (r.format == ExportFormat::slime) {
    out.text = slime_script(s, r, out.notes, out.error);
    return out;
  }
  if (r.format == ExportFormat::areal) {
    out.text = areal_config(s, r, out.notes, out.error);
    return out;
  }
  if (w.mini_batches < 1 || w.prompts_per_step % w.mini_batches != 0) {
    out.error = "verl splits data.train_batch_size (" + num(w.prompts_per_step) +
                " prompts) into ppo_mini_batch_size mini-batches: " + num(w.mini_batches) + " mini-batches do not divide it";
    return out;
  }
  if (r.format == ExportFormat::slurm && r.framework != ExportFormat::verl) {
    // OpenRLHF's and slime's scripts submit their job to Ray: their header and input checks first,
    // the Ray cluster next, then the submission to the head's dashboard.
    ExportRequest inner = r;
    inner.format = r.framework;
    std::string script = r.framework == ExportFormat::openrlhf ? openrlhf_script(s, inner, out.notes, out.error)
                                                               : slime_script(s, inner, out.notes, out.error);
    if (!out.error.empty()) return out;
    const std::string name = r.framework == ExportFormat::openrlhf ? "openrlhf" : "slime";
    const std::string as = "`arlsim export --format " + name;
    if (const size_t at = script.find(as); at != std::string::npos)
      script.replace(at, as.size(), "`arlsim export --format slurm --framework " + name);
    const size_t body = script.find("ray job submit");
    out.text = slurm_wrap(s, script.substr(script.find('\n') + 1, body - script.find('\n') - 1), script.substr(body), true);
    return out;
  }
  const VerlScript verl = verl_script(s, r, out.notes, out.error);
  if (!out.error.empty()) return out;
  if (r.format == ExportFormat::verl) {
    out.text = "#!/usr/bin/env bash\n" + verl.header + "set -euo pipefail\n" + verl.inputs + verl.body;
    return out;
  }
  out.text = slurm_wrap(s, verl.header + "set -euo pipefail\n" + verl.inputs, verl.body, false);
  return out;
}



}  // namespace arlsim::planner
