#include "planner/export/export.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "planner/export/export_detail.h"
#include "planner/plan_json.h"
#include "sim/rl/step.h"
#include "sim/trace/gen_options.h"

namespace arlsim::planner {

namespace export_detail {

std::string num(int64_t v) { return std::to_string(v); }
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string flag(bool b) { return b ? "True" : "False"; }

std::string one_line(std::string t) {
  std::replace(t.begin(), t.end(), '\n', ' ');
  std::replace(t.begin(), t.end(), '\r', ' ');
  return t;
}

std::string safe_name(const std::string& name) {
  std::string out = name.empty() ? std::string("arlsim-plan") : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  return out;
}

int64_t run_steps(const input::ScenarioSpec& s) {
  if (s.generated_trace) return std::max(1, rl::scenario_gen_params(s).steps);  // preset, options and "steps" alike
  return std::max<int64_t>(1, s.steps);
}

bool needs_megatron(const input::TrainLayout& l) {
  return l.tp > 1 || l.pp > 1 || l.ep > 1 || l.vpp > 1 || (l.cp > 1 && !l.ulysses);
}

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

}  // namespace export_detail

namespace {

using namespace export_detail;

// Hydra overrides of one verl launch, in the order they are added.
struct Overrides {
  std::vector<std::pair<std::string, std::string>> items;
  void set(const std::string& key, const std::string& value) { items.emplace_back(key, value); }
};

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
    if (l.ep > 1) {
      o.set(m + ".expert_model_parallel_size", num(l.ep));
      // The experts whole on each rank (expert tp 1, as arlsim prices them), not Megatron's default tp.
      o.set(m + ".expert_tensor_parallel_size", "1");
    }
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
    // Packed sequences, or the padded tensors verl computes by default (use_remove_padding False),
    // which it refuses beside Ulysses.
    const bool packed = !s.workload.pad_policy || l.cp > 1;
    if (s.workload.pad_policy && l.cp > 1)
      notes.push_back("padded tensors (workload padding \"limits\") with Ulysses (cp " + num(l.cp) + "): verl takes "
                      "Ulysses only with use_remove_padding, so the launch packs the sequences");
    o.set("actor_rollout_ref.model.use_remove_padding", flag(packed));
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
    if (!needs_megatron(train)) o.set("critic.model.use_remove_padding", flag(!w.pad_critic));
    if (train.max_tokens_per_gpu > 0) {
      const int64_t own = train.critic_max_tokens_per_gpu > 0 ? train.critic_max_tokens_per_gpu : train.max_tokens_per_gpu;
      const int64_t budget = std::max(own, w.max_context_tokens);
      if (budget > own && train.critic_max_tokens_per_gpu > 0)
        notes.push_back("a critic token budget of " + num(own) + " below the longest sequence: verl's must hold one whole "
                        "sequence; raised to " + num(budget));
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
  if (s.workload.force_on_policy_ratio)
    notes.push_back("force_on_policy_ratio: verl computes the old policy's log-probabilities with the actor");
  if (s.workload.reward_model) notes.push_back("a reward model: set verl's reward_model.* for it");
  if (p.sync == input::SyncMode::async && p.batches_held() > 1)
    notes.push_back("continuous generation: verl's asynchronous trainer generates each step's rollout whole");
  if (p.keep_kv_cache) notes.push_back("KV cache kept across the weight update: verl's engines rebuild it after each sync");
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
  // Padded tensors: verl's FSDP engine computes them unless use_remove_padding (export sets it);
  // its Megatron engine and the other frameworks' packed or per-batch padding are theirs.
  if (r.format != ExportFormat::json && (w.pad_policy || (w.pad_critic && w.critic)) &&
      (target != ExportFormat::verl || needs_megatron(tl)))
    out.notes.push_back("sequences padded to the length limits (workload padding \"limits\", verl's FSDP engine without "
                        "use_remove_padding): the framework's engine here pads or packs in its own way");
  if (r.format != ExportFormat::json && s.cluster.host_gpus() < s.cluster.gpus_per_node)
    out.notes.push_back("a node here is an NVLink domain of " + num(s.cluster.gpus_per_node) + " GPUs, hosts of " +
                        num(s.cluster.host_gpus()) + ": the GPU counts per node below are the domain's; Slurm, Ray "
                        "and the framework count hosts (" + num(s.cluster.total_gpus() / s.cluster.host_gpus()) + " of " +
                        num(s.cluster.host_gpus()) + " GPUs), so set them so and keep each domain's hosts together");
  if (r.format != ExportFormat::json && (w.engine.speculative_mean_accepted > 0 || w.engine.speculative_draft_tokens > 0))
    out.notes.push_back("speculative decoding (" + num(w.engine.speculative_draft_tokens) +
                        " draft tokens): set the engine's own speculative options; not set here");
  if (const auto& ro = s.policy.rollout; r.format != ExportFormat::json && target != ExportFormat::openrlhf && ro.replicas > 0 &&
                                         ro.replicas * ro.gpus_per_engine() < s.rollout_gpus())
    out.notes.push_back(num(ro.replicas) + " engines on " + num(ro.replicas * ro.gpus_per_engine()) + " of the " +
                        num(s.rollout_gpus()) + " rollout GPUs: the framework starts an engine on each group of " +
                        num(ro.gpus_per_engine()) + " (" + num(s.rollout_gpus() / ro.gpus_per_engine()) + ")");
  if (r.format != ExportFormat::json && target != ExportFormat::areal && input::dp_split(tl, w) != input::DpSplit::even)
    out.notes.push_back(input::uneven_dp_text(tl, w) + ": the framework requires it to");
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
