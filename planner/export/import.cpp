// `arlsim import`'s first half: a framework's launch (verl's, OpenRLHF's, slime's command line)
// read word by word into a Launch; import_scenario.cpp makes the launches a scenario.
#include "planner/export/import.h"

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "planner/export/import_launch.h"

namespace arlsim::planner {

namespace {

using import_detail::areal;
using import_detail::boolean;
using import_detail::integer;
using import_detail::note_at;
using import_detail::ReadLaunches;
using import_detail::Json;
using import_detail::Launch;
using import_detail::Origins;
using import_detail::real;
using import_detail::shell_commands;
using import_detail::Word;

// The names a framework's reader knows (its chain's keys), for did-you-mean.
const std::vector<std::string>& known_keys(ImportSource from);

class Reader {
 public:
  Reader(const ImportRequest& r, ImportResult& out) : r_(r), out_(out) {}
  void error(const Word& w, const std::string& key, const std::string& problem) {
    out_.errors.push_back(r_.file + ":" + std::to_string(w.line) + ": " + key + ": " + problem);
  }
  void unmodelled(const Word& w, const std::string& key, const std::string& why) {
    out_.unmodelled.push_back(r_.file + ":" + std::to_string(w.line) + ": " + key + ": " + why);
  }
  void note(const Word& w, const std::string& key, const std::string& how) { note_at(out_, r_.file, w, key, how); }
  // A key compared with a name the reader knows; collecting (known_ set), the name is noted: a
  // key that matches none, read once, lists every name of the reader's chain (known_keys).
  bool is(const std::string& key, const std::string& name) {
    if (known_) known_->push_back(name);
    return key == name;
  }
  std::vector<std::string>* known_ = nullptr;
  // "not modelled by arlsim", with the name the reader knows that the key is a slip of, if any.
  std::string not_modelled(const std::string& key, ImportSource source, const std::string& dashes = "") const {
    std::string why = "not modelled by arlsim";
    if (known_) return why;  // collecting the names themselves
    const std::string closest = import_detail::slip_of(key, known_keys(source));
    return closest.empty() ? why : why + "; did you mean " + dashes + closest + "?";
  }
  // Where a word is, with what it says: an origin (Launch::origin).
  std::string at(const Word& w, const std::string& what) const {
    return r_.file + ":" + std::to_string(w.line) + ": " + what;
  }
  // A key given again: the framework takes the last, which is said (a launch edited twice over).
  void once(std::set<std::string>& seen, const Word& w, const std::string& key) {
    if (!seen.insert(key).second) note(w, key, "given more than once; the last is taken, as the framework takes it");
  }
  template <typename T>
  bool number(const Word& w, const std::string& key, const std::string& value, std::optional<T> parsed, T& into) {
    if (!parsed) {
      if constexpr (std::is_same_v<T, bool>) error(w, key, "expected true or false, got \"" + value + "\"");
      else if constexpr (std::is_integral_v<T>) error(w, key, "expected a whole number of at least 0, got \"" + value + "\"");
      else error(w, key, "expected a finite number, got \"" + value + "\"");
      return false;
    }
    into = *parsed;
    return true;
  }

  // A count that 0 would make meaningless (steps, engines, a queue): at least 1.
  bool count_of(const Word& w, const std::string& key, const std::string& value, int64_t& into) {
    const auto v = integer(value);
    if (!v || *v < 1) {
      error(w, key, "expected a whole number of at least 1, got \"" + value + "\"");
      return false;
    }
    into = *v;
    return true;
  }

  // verl's Hydra overrides.
  void verl(const std::vector<Word>& words, size_t from, Launch& l) {
    std::set<std::string> seen;
    for (size_t i = from; i < words.size(); ++i) {
      const Word& w = words[i];
      std::string t = w.text;
      if (t.empty() || t[0] == '$') continue;  // a shell expansion ("$@"): nothing to read
      if (t.rfind("--", 0) == 0) {  // Hydra's own options: the config chosen may be Megatron's
        if (t.find("ppo_megatron_trainer") != std::string::npos) l.megatron = true;
        continue;
      }
      while (!t.empty() && t[0] == '+') t.erase(0, 1);  // Hydra's +key / ++key
      const size_t eq = t.find('=');
      if (eq == std::string::npos || eq == 0) {
        error(w, t, "expected a Hydra override key=value");
        continue;
      }
      const std::string key = t.substr(0, eq), v = t.substr(eq + 1);
      once(seen, w, key);
      Origins origin(l, at(w, key + "=" + v));
      verl_key(w, key, v, l);
    }
  }

  void verl_key(const Word& w, const std::string& key, const std::string& v, Launch& l) {
    const std::string a = "actor_rollout_ref.actor.", m = a + "megatron.", f = a + "fsdp_config.",
                      t = m + "override_transformer_config.", ro = "actor_rollout_ref.rollout.";
    int64_t n = 0;
    double x = 0;
    bool b = false;
    auto flag = [&](std::map<std::string, Json>& into, const char* name) {
      if (number<bool>(w, key, v, boolean(v), b)) into[name] = b;
    };
    auto count = [&](std::map<std::string, Json>& into, const char* name) {
      if (number<int64_t>(w, key, v, integer(v), n)) into[name] = n;
    };
    if (is(key, "model_engine")) {
      if (v != "dp" && v != "megatron") error(w, key, "expected dp or megatron, got \"" + v + "\"");
      l.megatron = v == "megatron";
    } else if (is(key, "algorithm.adv_estimator")) {
      static const std::map<std::string, std::string> alg{
          {"grpo", "grpo"}, {"gae", "ppo"}, {"reinforce_plus_plus", "reinforce_pp"}, {"rloo", "rloo"}};
      if (const auto it = alg.find(v); it != alg.end()) {
        l.workload["algorithm"] = it->second;
      } else {
        unmodelled(w, key, "estimator \"" + v + "\" is not one arlsim models; grpo assumed");
        l.workload["algorithm"] = "grpo";
      }
    } else if (is(key, "data.train_batch_size")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.prompts = n;
    } else if (is(key, "data.max_prompt_length")) {
      count(l.workload, "max_prompt_tokens");
    } else if (is(key, "data.max_response_length")) {
      count(l.workload, "max_response_tokens");
    } else if (is(key, ro + "max_model_len")) {
      count(l.workload, "max_context_tokens");
    } else if (is(key, a + "ppo_mini_batch_size")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.mini_batch_prompts = n;
    } else if (is(key, a + "ppo_epochs")) {
      count(l.workload, "ppo_epochs");
    } else if (is(key, a + "use_kl_loss")) {
      flag(l.workload, "use_reference");
    } else if (is(key, m + "tensor_model_parallel_size")) {
      count(l.train, "tp");
    } else if (is(key, m + "pipeline_model_parallel_size")) {
      count(l.train, "pp");
    } else if (is(key, m + "virtual_pipeline_model_parallel_size")) {
      count(l.train, "vpp");
    } else if (is(key, m + "context_parallel_size")) {
      count(l.train, "cp");
    } else if (is(key, m + "expert_model_parallel_size")) {
      count(l.train, "ep");
    } else if (is(key, m + "expert_tensor_parallel_size")) {
      if (count_of(w, key, v, n)) expert_tp_ = {w, n};
      else expert_tp_bad_ = true;  // an error already
    } else if (is(key, m + "sequence_parallel")) {
      flag(l.train, "sequence_parallel");
    } else if (is(key, m + "optimizer_offload") || is(key, f + "optimizer_offload")) {
      if (number<bool>(w, key, v, boolean(v), b)) l.optimizer_offload = b ? std::optional<Word>(w) : std::nullopt;
    } else if (is(key, m + "param_offload") || is(key, f + "param_offload")) {
      if (number<bool>(w, key, v, boolean(v), b)) l.param_offload = b ? std::optional<Word>(w) : std::nullopt;
    } else if (is(key, t + "recompute_granularity")) {
      if (v == "full" || v == "selective") l.train["recompute"] = v;
      else error(w, key, "expected full or selective, got \"" + v + "\"");
    } else if (is(key, t + "recompute_method") || is(key, t + "recompute_num_layers")) {
      // arlsim's full recompute is Megatron's uniform method over one layer at a time.
    } else if (is(key, t + "num_layers_in_first_pipeline_stage")) {
      count(l.train, "first_stage_layers");
    } else if (is(key, t + "num_layers_in_last_pipeline_stage")) {
      count(l.train, "last_stage_layers");
    } else if (is(key, a + "strategy")) {
      if (v == "megatron") l.megatron = true;  // as ppo_megatron_trainer's configuration sets it
      else if (v != "fsdp" && v != "fsdp2") unmodelled(w, key, "strategy \"" + v + "\"");
    } else if (is(key, a + "ulysses_sequence_parallel_size")) {
      ulysses_at_ = w;
      if (number<int64_t>(w, key, v, integer(v), n)) {
        l.train["cp"] = n;
        if (n > 1) l.train["cp_kind"] = "ulysses";
      }
    } else if (is(key, f + "fsdp_size")) {
      if (number<int64_t>(w, key, v, integer(v), n) && n > 0) l.train["shard_group"] = n;
    } else if (is(key, f + "mixed_precision.reduce_dtype")) {
      // The FSDP engine's gradient reduction dtype (fp32 unless set).
      if (v == "bf16" || v == "bfloat16") l.train["grad_reduce_dtype"] = "bf16";
      else if (v == "fp32" || v == "float32") l.train["grad_reduce_dtype"] = "fp32";
      else error(w, key, "expected bf16 or fp32, got \"" + v + "\"");
    } else if (is(key, "actor_rollout_ref.model.use_remove_padding")) {
      if (number<bool>(w, key, v, boolean(v), b)) remove_padding_ = b;
    } else if (is(key, "critic.model.use_remove_padding")) {
      critic_keys_.emplace_back(w, key);
      if (number<bool>(w, key, v, boolean(v), b)) critic_remove_padding_ = b;
    } else if (is(key, "actor_rollout_ref.model.use_liger")) {
      if (number<bool>(w, key, v, boolean(v), b)) liger_ = b;
    } else if (is(key, "actor_rollout_ref.model.enable_gradient_checkpointing")) {
      if (number<bool>(w, key, v, boolean(v), b)) l.train["recompute"] = b ? "full" : "none";
    } else if (is(key, a + "use_dynamic_bsz")) {
      if (number<bool>(w, key, v, boolean(v), b)) dynamic_ = b;
    } else if (is(key, a + "ppo_max_token_len_per_gpu")) {
      if (count_of(w, key, v, n)) {
        tokens_ = n;
        tokens_at_ = w;
      }
    } else if (is(key, a + "ppo_micro_batch_size_per_gpu")) {
      count(l.train, "micro_batch");
    } else if (key.rfind("actor_rollout_ref.rollout.log_prob_", 0) == 0 || key.rfind("actor_rollout_ref.ref.log_prob_", 0) == 0) {
      // The preparation passes micro-batch as training does in arlsim.
    } else if (is(key, ro + "n")) {
      count(l.workload, "samples_per_prompt");
    } else if (is(key, ro + "tensor_model_parallel_size")) {
      count(l.rollout, "tp");
    } else if (is(key, ro + "pipeline_model_parallel_size")) {
      count(l.rollout, "pp");
    } else if (is(key, ro + "expert_parallel_size")) {
      count(l.rollout, "ep");
    } else if (is(key, ro + "gpu_memory_utilization")) {
      if (number<double>(w, key, v, real(v), x)) l.engine["gpu_memory_utilization"] = x;
    } else if (is(key, ro + "max_num_batched_tokens")) {
      count(l.engine, "max_num_batched_tokens");
    } else if (is(key, ro + "max_num_seqs")) {
      count(l.engine, "max_num_seqs");
    } else if (is(key, ro + "enable_chunked_prefill")) {
      flag(l.engine, "chunked_prefill");
    } else if (is(key, ro + "enable_prefix_caching")) {
      flag(l.engine, "prefix_caching");
    } else if (is(key, ro + "enforce_eager")) {
      flag(l.engine, "enforce_eager");
    } else if (is(key, ro + "free_cache_engine")) {
      if (number<bool>(w, key, v, boolean(v), b)) l.engine["sleep_level"] = b ? 1 : 0;
    } else if (is(key, ro + "checkpoint_engine.update_weights_bucket_megabytes")) {
      if (number<int64_t>(w, key, v, integer(v), n)) bucket_mb_ = n;
    } else if (is(key, ro + "multi_turn.enable")) {
      if (number<bool>(w, key, v, boolean(v), b)) multi_turn_ = b;
    } else if (is(key, ro + "multi_turn.max_assistant_turns")) {
      if (number<int64_t>(w, key, v, integer(v), n)) {
        if (n < 1) error(w, key, "must be at least 1, got " + v);
        else turns_ = n;
      }
    } else if (is(key, ro + "name")) {
      if (v != "vllm") unmodelled(w, key, "engine \"" + v + "\": arlsim models vLLM's scheduler; vllm assumed");
    } else if (is(key, ro + "mode")) {
    } else if (is(key, ro + "nnodes")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.rollout_nodes = n;
    } else if (is(key, ro + "n_gpus_per_node")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.rollout_gpus_per_node = n;
    } else if (is(key, "trainer.nnodes")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.nodes = n;
    } else if (is(key, "trainer.n_gpus_per_node")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.gpus_per_node = n;
    } else if (is(key, "trainer.balance_batch")) {
      if (number<bool>(w, key, v, boolean(v), b)) l.balance = b;
    } else if (is(key, "trainer.total_training_steps")) {
      if (count_of(w, key, v, n)) l.steps = n;
    } else if (is(key, "trainer.experiment_name")) {
      l.name = v;
    } else if (is(key, "trainer.v1.trainer_mode")) {
      if (v == "separate_async") l.disaggregated = true;
      else unmodelled(w, key, "trainer mode \"" + v + "\"");
    } else if (is(key, "trainer.v1.sampler.max_off_policy_threshold")) {
      if (number<int64_t>(w, key, v, integer(v), n)) l.staleness = n;
    } else if (is(key, "critic.ppo_max_token_len_per_gpu")) {
      // The critic's own budget (its values pass takes it too), where dynamic batching is on.
      critic_keys_.emplace_back(w, key);
      if (count_of(w, key, v, n)) critic_tokens_ = n;
    } else if (is(key, "critic.model.path") || is(key, "critic.ppo_mini_batch_size") ||
               is(key, "critic.forward_max_token_len_per_gpu")) {
      critic_keys_.emplace_back(w, key);
      // The critic trains in the actor's layout and mini-batches in arlsim; one budget serves its
      // training and its values pass.
    } else if (is(key, "trainer.v1.separate_async.parameter_sync_step") || is(key, ro + "checkpoint_engine.backend") ||
               is(key, "data.train_files") || is(key, "data.val_files") || is(key, "actor_rollout_ref.model.path") ||
               is(key, "trainer.project_name") || is(key, "trainer.resume_mode") || is(key, ro + "multi_turn.tool_config_path")) {
      // Paths, names and what the batch settings already imply.
    } else {
      unmodelled(w, key, not_modelled(key, ImportSource::verl));
    }
  }

  // After a launch's words: what depends on several keys.
  void finish_verl(Launch& l) {
    // Only GAE (PPO) trains a critic; verl leaves the critic's settings unused under the others.
    const bool critic = !l.workload.count("algorithm") || l.workload.at("algorithm") == "ppo";
    if (!critic) {
      std::set<std::string> said;  // a key given twice is said once (and its repetition by once())
      for (const auto& [at, key] : critic_keys_)
        if (said.insert(key).second) note(at, key, "not used: " + l.workload.at("algorithm").get<std::string>() + " has no critic");
    }
    // verl's budget unless the launch gives one (its actor configuration's 16,384 tokens a GPU);
    // a budget without dynamic batching is not used.
    if (dynamic_ && tokens_ == 0) {
      tokens_ = 16384;
      out_.notes.push_back(r_.file + ": actor_rollout_ref.actor.ppo_max_token_len_per_gpu: not given with dynamic batching; "
                           "verl's default 16384 taken");
    }
    if (!dynamic_ && tokens_at_)
      note(*tokens_at_, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
           "not used: use_dynamic_bsz is off (micro-batches of ppo_micro_batch_size_per_gpu sequences)");
    if (dynamic_ && tokens_ > 0) {
      l.train["max_tokens_per_gpu"] = tokens_;
      l.train.erase("micro_batch");  // the budget makes the micro-batches
    }
    if (critic && dynamic_ && critic_tokens_ > 0 && critic_tokens_ != tokens_) l.train["critic_max_tokens_per_gpu"] = critic_tokens_;
    // Unset, a multi-turn rollout of at least two turns; set, what it says (1: one turn).
    if (multi_turn_) l.workload["max_turns"] = turns_ > 0 ? turns_ : 2;
    if (bucket_mb_ > 0) weight_sync_bucket_mb = bucket_mb_;
    l.train["zero"] = l.megatron ? 1 : 3;  // the distributed optimizer; FSDP's full sharding
    // verl's rollout configuration gives its engines 1,024 sequences unless the launch says.
    if (!l.engine.count("max_num_seqs")) l.engine["max_num_seqs"] = 1024;
    // The Megatron engine runs Megatron-Core's fused kernels; the FSDP engine a Hugging Face model
    // in eager PyTorch, unless Liger's fused kernels are patched in.
    l.train["kernels"] = l.megatron || liger_ ? "fused" : "eager";
    // The FSDP engine's Hugging Face model computes the padded tensors (every sequence as wide as
    // the prompt and response limits) unless use_remove_padding packs them; False is verl's
    // default for the actor's model and the critic's. The Megatron engine packs.
    if (!l.megatron) {
      // GAE (verl's default estimator) has a critic, which pads by its own key.
      Json padding{{"policy", remove_padding_.value_or(false) ? "removed" : "limits"}};
      if (critic) padding["critic"] = critic_remove_padding_.value_or(false) ? "removed" : "limits";
      l.workload["padding"] = padding;
      const auto defaulted = [&](const char* key) {
        out_.notes.push_back(r_.file + ": " + key + ": not given; verl's default (False) computes every sequence padded "
                             "to the length limits, priced so (workload padding \"limits\"); set it True to pack them");
      };
      if (!remove_padding_) defaulted("actor_rollout_ref.model.use_remove_padding");
      if (critic && !critic_remove_padding_) defaulted("critic.model.use_remove_padding");
      // verl's FSDP workers take Ulysses sequence parallelism only with padding removed.
      if (ulysses_at_ && l.train.count("cp") && l.train.at("cp").get<int64_t>() > 1 && !remove_padding_.value_or(false))
        error(*ulysses_at_, "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
              "verl refuses Ulysses sequence parallelism without actor_rollout_ref.model.use_remove_padding=True");
    }
    if (l.megatron) check_expert_tp(l, "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size");
    expert_tp_.reset();
    expert_tp_bad_ = false;
    dynamic_ = multi_turn_ = liger_ = false;
    remove_padding_.reset();
    critic_remove_padding_.reset();
    ulysses_at_.reset();
    tokens_at_.reset();
    critic_keys_.clear();
    tokens_ = critic_tokens_ = turns_ = bucket_mb_ = 0;
  }

  int64_t weight_sync_bucket_mb = 0;

  // `--name value` and `--switch` words after the program: a flag takes the next word as its value
  // unless that is another flag (or there is none). Shell expansions ("${ARRAY[@]}") are skipped.
  struct Flag {
    Word word;
    std::string name, value;
    bool has_value = false;
  };
  std::string at(const Flag& f) const { return at(f.word, "--" + f.name + (f.has_value ? " " + f.value : "")); }
  static std::vector<Flag> flags(const std::vector<Word>& words, size_t from) {
    std::vector<Flag> out;
    for (size_t i = from; i < words.size(); ++i) {
      const Word& w = words[i];
      if (w.text.rfind("--", 0) != 0) continue;
      Flag f{w, w.text.substr(2), "", false};
      if (const size_t eq = f.name.find('='); eq != std::string::npos) {
        f.value = f.name.substr(eq + 1);
        f.name = f.name.substr(0, eq);
        f.has_value = true;
      } else if (i + 1 < words.size() && words[i + 1].text.rfind("--", 0) != 0) {
        f.value = words[++i].text;
        f.has_value = true;
      }
      out.push_back(f);
    }
    return out;
  }

  // OpenRLHF: dotted names from 0.10.2, flat before; both read.
  void openrlhf(const std::vector<Word>& words, size_t from, Launch& l) {
    static const std::map<std::string, std::string> flat{
        {"pretrain", "actor.model_name_or_path"}, {"prompt_data", "data.prompt_dataset"},
        {"actor_num_nodes", "actor.num_nodes"}, {"actor_num_gpus_per_node", "actor.num_gpus_per_node"},
        {"ref_num_nodes", "ref.num_nodes"}, {"ref_num_gpus_per_node", "ref.num_gpus_per_node"},
        {"vllm_num_engines", "vllm.num_engines"}, {"vllm_tensor_parallel_size", "vllm.tensor_parallel_size"},
        {"vllm_gpu_memory_utilization", "vllm.gpu_memory_utilization"}, {"colocate_all_models", "train.colocate_all"},
        {"vllm_enable_sleep", "vllm.enable_sleep"}, {"deepspeed_enable_sleep", "ds.enable_sleep"},
        {"zero_stage", "ds.zero_stage"}, {"ring_attn_size", "ds.ring_attn_size"}, {"packing_samples", "ds.packing_samples"},
        {"adam_offload", "ds.adam_offload"}, {"gradient_checkpointing", "actor.gradient_checkpointing_enable"},
        {"rollout_batch_size", "rollout.batch_size"}, {"n_samples_per_prompt", "rollout.n_samples_per_prompt"},
        {"train_batch_size", "train.batch_size"}, {"micro_train_batch_size", "train.micro_batch_size"},
        {"use_dynamic_batch", "train.dynamic_batch_enable"}, {"max_epochs", "train.max_epochs"}, {"max_len", "data.max_len"},
        {"max_new_tokens", "rollout.max_new_tokens"}, {"advantage_estimator", "algo.advantage.estimator"},
        {"async_train", "train.async_enable"}, {"partial_rollout", "train.partial_rollout_enable"},
        {"colocate_actor_ref", "train.colocate_actor_ref"}, {"use_liger_kernel", "ds.use_liger_kernel"}};
    if (known_)
      for (const auto& [before, now] : flat) known_->push_back(before);
    int64_t engines = 0, max_len = 0, train_batch = 0, samples = 1, tokens = 0;
    std::string engines_at;  // where --vllm.num_engines is
    bool dynamic = false, colocated = false, liger = false;
    std::set<std::string> seen;
    for (const auto& f : flags(words, from)) {
      Origins origin(l, at(f));
      std::string key = f.name;
      if (const auto it = flat.find(key); it != flat.end()) key = it->second;
      once(seen, f.word, "--" + key);
      int64_t n = 0;
      double x = 0;
      auto value = [&](auto parsed, auto& into) { return number(f.word, "--" + f.name, f.value, parsed, into); };
      if (is(key, "actor.num_nodes")) { if (value(integer(f.value), n)) l.nodes = n; }
      else if (is(key, "actor.num_gpus_per_node")) { if (value(integer(f.value), n)) l.gpus_per_node = n; }
      else if (is(key, "ref.num_nodes") || is(key, "ref.num_gpus_per_node")) l.workload["use_reference"] = true;
      else if (is(key, "vllm.num_engines")) {
        if (count_of(f.word, "--" + f.name, f.value, n)) {
          engines = n;
          engines_at = at(f);
        }
      }
      else if (is(key, "vllm.tensor_parallel_size")) { if (value(integer(f.value), n)) l.rollout["tp"] = n; }
      else if (is(key, "vllm.gpu_memory_utilization")) { if (value(real(f.value), x)) l.engine["gpu_memory_utilization"] = x; }
      else if (is(key, "train.colocate_all")) colocated = true;
      else if (is(key, "vllm.enable_sleep") || is(key, "ds.enable_sleep")) l.engine["sleep_level"] = 1;
      else if (is(key, "ds.zero_stage")) { if (value(integer(f.value), n)) l.train["zero"] = n; }
      else if (is(key, "ds.ring_attn_size")) { if (value(integer(f.value), n)) l.train["cp"] = n; }
      else if (is(key, "ds.adam_offload")) l.train["offload_optimizer"] = true;
      else if (is(key, "ds.use_liger_kernel")) liger = true;
      else if (is(key, "actor.gradient_checkpointing_enable")) l.train["recompute"] = "full";
      else if (is(key, "rollout.batch_size")) { if (value(integer(f.value), n)) l.prompts = n; }
      else if (is(key, "rollout.n_samples_per_prompt")) { if (value(integer(f.value), n)) { samples = n; l.workload["samples_per_prompt"] = n; } }
      else if (is(key, "train.batch_size")) { if (value(integer(f.value), n)) train_batch = n; }
      else if (is(key, "train.micro_batch_size")) { if (value(integer(f.value), n)) l.train["micro_batch"] = n; }
      else if (is(key, "train.dynamic_batch_enable")) dynamic = true;
      else if (is(key, "train.max_tokens_per_gpu")) { if (count_of(f.word, "--" + f.name, f.value, n)) tokens = n; }
      else if (is(key, "train.max_epochs")) { if (value(integer(f.value), n)) l.workload["ppo_epochs"] = n; }
      else if (is(key, "data.max_len")) { if (value(integer(f.value), n)) max_len = n; }
      else if (is(key, "rollout.max_new_tokens")) { if (value(integer(f.value), n)) l.workload["max_response_tokens"] = n; }
      else if (is(key, "algo.advantage.estimator")) {
        static const std::map<std::string, std::string> alg{
            {"group_norm", "grpo"}, {"gae", "ppo"}, {"rloo", "rloo"}, {"reinforce", "reinforce_pp"}};
        if (const auto it = alg.find(f.value); it != alg.end()) l.workload["algorithm"] = it->second;
        else unmodelled(f.word, "--" + f.name, "estimator \"" + f.value + "\" is not one arlsim models; grpo assumed");
      }
      else if (is(key, "train.async_enable")) l.async = true;
      else if (is(key, "train.async_queue_size")) { if (count_of(f.word, "--" + f.name, f.value, n)) l.staleness = n; }
      else if (is(key, "ds.packing_samples") || is(key, "actor.model_name_or_path") || is(key, "data.prompt_dataset") ||
               is(key, "train.colocate_actor_ref")) {}
      else unmodelled(f.word, "--" + f.name, not_modelled(key, ImportSource::openrlhf, "--"));
    }
    // Dynamic batching without a budget flag (OpenRLHF before 0.10.2): a budget of one longest sequence.
    if (dynamic) l.train["max_tokens_per_gpu"] = tokens > 0 ? tokens : std::max<int64_t>(1, max_len);
    if (max_len > 0) {
      l.workload["max_context_tokens"] = max_len;
      if (l.workload.count("max_response_tokens"))
        l.workload["max_prompt_tokens"] = std::max<int64_t>(1, max_len - l.workload.at("max_response_tokens").get<int64_t>());
    }
    if (!l.workload.count("algorithm")) l.workload["algorithm"] = "grpo";
    if (!l.workload.count("use_reference")) l.workload["use_reference"] = false;
    // DeepSpeed reduces gradients in the training dtype (its communication_data_type's default).
    l.train["grad_reduce_dtype"] = "bf16";
    // ZeRO-3 keeps bf16 partitions of the parameters (the fp32 masters are the optimizer's).
    if (l.train.count("zero") && l.train.at("zero").get<int64_t>() >= 3) l.train["shard_dtype"] = "bf16";
    // A Hugging Face model in eager PyTorch, unless Liger's fused kernels are patched in.
    l.train["kernels"] = liger ? "fused" : "eager";
    // Mini-batches: the step's samples over the samples of one optimizer step.
    if (train_batch > 0 && l.prompts > 0) l.mini_batch_prompts = train_batch / std::max<int64_t>(1, samples);
    l.disaggregated = !colocated;
    const int64_t tp = l.rollout.count("tp") ? l.rollout.at("tp").get<int64_t>() : 1;
    if (!colocated) {
      l.rollout_gpus_per_node = l.gpus_per_node;
      l.rollout_nodes = (engines * tp + std::max<int64_t>(1, l.gpus_per_node) - 1) / std::max<int64_t>(1, l.gpus_per_node);
    }
    if (engines > 0) {
      l.rollout["replicas"] = engines;
      l.origin["/policy/rollout/replicas"] = engines_at;
    }
    if (l.async && l.staleness < 0) l.staleness = 1;
  }

  // slime: its own flags, Megatron-LM's and SGLang's.
  void slime(const std::vector<Word>& words, size_t from, bool async, Launch& l) {
    int64_t rollout_gpus = 0, per_engine = 1, global = 0, steps_per_rollout = 0, tokens = 0, samples = 1;
    bool dynamic = false, colocated = false, balance = false;
    std::set<std::string> seen;
    for (const auto& f : flags(words, from)) {
      Origins origin(l, at(f));
      const std::string& key = f.name;
      once(seen, f.word, "--" + key);
      int64_t n = 0;
      double x = 0;
      auto value = [&](auto parsed, auto& into) { return number(f.word, "--" + f.name, f.value, parsed, into); };
      if (is(key, "actor-num-nodes")) { if (value(integer(f.value), n)) l.nodes = n; }
      else if (is(key, "actor-num-gpus-per-node")) { if (value(integer(f.value), n)) l.gpus_per_node = n; }
      else if (is(key, "rollout-num-gpus")) { if (value(integer(f.value), n)) rollout_gpus = n; }
      else if (is(key, "rollout-num-gpus-per-engine")) { if (value(integer(f.value), n)) { per_engine = n; l.rollout["tp"] = n; } }
      else if (is(key, "colocate")) colocated = true;
      else if (is(key, "tensor-model-parallel-size")) { if (value(integer(f.value), n)) l.train["tp"] = n; }
      else if (is(key, "sequence-parallel")) l.train["sequence_parallel"] = true;
      else if (is(key, "pipeline-model-parallel-size")) { if (value(integer(f.value), n)) l.train["pp"] = n; }
      else if (is(key, "decoder-first-pipeline-num-layers")) { if (value(integer(f.value), n)) l.train["first_stage_layers"] = n; }
      else if (is(key, "decoder-last-pipeline-num-layers")) { if (value(integer(f.value), n)) l.train["last_stage_layers"] = n; }
      else if (is(key, "context-parallel-size")) { if (value(integer(f.value), n)) l.train["cp"] = n; }
      else if (is(key, "expert-model-parallel-size")) { if (value(integer(f.value), n)) l.train["ep"] = n; }
      else if (is(key, "expert-tensor-parallel-size")) {
        if (count_of(f.word, "--" + key, f.value, n)) expert_tp_ = {f.word, n};
        else expert_tp_bad_ = true;  // an error already
      }
      else if (is(key, "recompute-granularity")) {
        if (f.value == "full" || f.value == "selective") l.train["recompute"] = f.value;
        else error(f.word, "--" + key, "expected full or selective, got \"" + f.value + "\"");
      }
      else if (is(key, "use-dynamic-batch-size")) dynamic = true;
      else if (is(key, "max-tokens-per-gpu")) { if (count_of(f.word, "--" + key, f.value, n)) tokens = n; }
      else if (is(key, "micro-batch-size")) { if (value(integer(f.value), n)) l.train["micro_batch"] = n; }
      else if (is(key, "balance-data")) balance = true;
      else if (is(key, "rollout-batch-size")) { if (value(integer(f.value), n)) l.prompts = n; }
      else if (is(key, "n-samples-per-prompt")) { if (value(integer(f.value), n)) { samples = n; l.workload["samples_per_prompt"] = n; } }
      else if (is(key, "global-batch-size")) { if (value(integer(f.value), n)) global = n; }
      else if (is(key, "num-steps-per-rollout")) { if (count_of(f.word, "--" + key, f.value, n)) steps_per_rollout = n; }
      else if (is(key, "num-rollout")) { if (count_of(f.word, "--" + key, f.value, n)) l.steps = n; }
      else if (is(key, "rollout-max-response-len")) { if (value(integer(f.value), n)) l.workload["max_response_tokens"] = n; }
      else if (is(key, "rollout-max-context-len")) { if (value(integer(f.value), n)) l.workload["max_context_tokens"] = n; }
      else if (is(key, "update-weight-buffer-size")) { if (value(integer(f.value), n)) weight_sync_bucket_mb = n / (1024 * 1024); }
      else if (is(key, "sglang-mem-fraction-static")) { if (value(real(f.value), x)) l.engine["gpu_memory_utilization"] = x; }
      // Megatron-LM's reduction dtype: fp32 asked for (slime's recipes do), or bf16.
      else if (is(key, "accumulate-allreduce-grads-in-fp32")) l.train["grad_reduce_dtype"] = "fp32";
      else if (is(key, "grad-reduce-in-bf16")) l.train["grad_reduce_dtype"] = "bf16";
      else if (is(key, "use-rollout-logprobs")) l.workload["use_rollout_log_probs"] = true;
      else if (is(key, "advantage-estimator")) {
        static const std::map<std::string, std::string> alg{
            {"grpo", "grpo"}, {"ppo", "ppo"}, {"reinforce_plus_plus", "reinforce_pp"}, {"reinforce_plus_plus_baseline", "reinforce_pp"}};
        if (const auto it = alg.find(f.value); it != alg.end()) l.workload["algorithm"] = it->second;
        else unmodelled(f.word, "--" + key, "estimator \"" + f.value + "\" is not one arlsim models; grpo assumed");
      }
      else if (is(key, "recompute-method") || is(key, "recompute-num-layers") || is(key, "log-probs-max-tokens-per-gpu") ||
               is(key, "num-gpus-per-node") || is(key, "hf-checkpoint") || is(key, "ref-load") || is(key, "prompt-data")) {}
      else unmodelled(f.word, "--" + key, not_modelled(key, ImportSource::slime, "--"));
    }
    l.balance = balance;
    if (dynamic && tokens > 0) l.train["max_tokens_per_gpu"] = tokens;
    if (l.workload.count("max_context_tokens") && l.workload.count("max_response_tokens"))
      l.workload["max_prompt_tokens"] = std::max<int64_t>(1, l.workload.at("max_context_tokens").get<int64_t>() -
                                                                 l.workload.at("max_response_tokens").get<int64_t>());
    if (!l.workload.count("algorithm")) l.workload["algorithm"] = "grpo";
    if (global > 0) l.mini_batch_prompts = global / std::max<int64_t>(1, samples);
    else if (steps_per_rollout > 0 && l.prompts > 0) l.mini_batch_prompts = l.prompts / steps_per_rollout;
    l.megatron = true;
    l.train["zero"] = 1;
    l.disaggregated = !colocated;
    if (!colocated) {
      l.rollout_gpus_per_node = l.gpus_per_node;
      l.rollout_nodes = (rollout_gpus + std::max<int64_t>(1, l.gpus_per_node) - 1) / std::max<int64_t>(1, l.gpus_per_node);
    }
    (void)per_engine;
    l.async = async;
    if (async) l.staleness = 1;
    check_expert_tp(l, "--expert-tensor-parallel-size");
  }

  // The experts' tensor parallelism the launch asks against the one arlsim prices
  // (TrainLayout::expert_tp: the tp size without expert parallelism, 1 with it); Megatron's
  // default is the tp size.
  void check_expert_tp(const Launch& l, const std::string& key) {
    const auto size = [&](const char* name) { return l.train.count(name) ? l.train.at(name).get<int64_t>() : int64_t{1}; };
    const int64_t ep = size("ep"), tp = size("tp");
    if (ep > 1 && expert_tp_ && expert_tp_->second != 1)
      unmodelled(expert_tp_->first, key, std::to_string(expert_tp_->second) + " under expert parallelism: arlsim prices "
                 "each rank's experts whole (1, Megatron's parallel folding)");
    else if (ep > 1 && !expert_tp_ && !expert_tp_bad_ && tp > 1)
      out_.notes.push_back(r_.file + ": " + key + ": not given: Megatron's default is the tensor-parallel size (" +
                           std::to_string(tp) + "), where arlsim prices each rank's experts whole (1); set it to 1 "
                           "to run what is priced");
    else if (ep == 1 && expert_tp_ && expert_tp_->second != tp)
      unmodelled(expert_tp_->first, key, std::to_string(expert_tp_->second) + " without expert parallelism: arlsim "
                 "splits the experts over tp (" + std::to_string(tp) + ") as the dense layers");
    expert_tp_.reset();
    expert_tp_bad_ = false;
  }

 private:
  const ImportRequest& r_;
  ImportResult& out_;
  bool dynamic_ = false, multi_turn_ = false;
  bool liger_ = false;  // verl's actor_rollout_ref.model.use_liger
  std::optional<bool> remove_padding_, critic_remove_padding_;  // verl's use_remove_padding, the actor's and the critic's
  std::optional<Word> ulysses_at_;  // where the actor's Ulysses size was given
  std::optional<Word> tokens_at_;   // where the actor's token budget was given
  std::vector<std::pair<Word, std::string>> critic_keys_;  // the critic's keys the launch gave, where
  std::optional<std::pair<Word, int64_t>> expert_tp_;  // Megatron's expert_tensor_parallel_size, where given
  bool expert_tp_bad_ = false;                          // given, but not a count (an error said)
  int64_t tokens_ = 0, critic_tokens_ = 0, turns_ = 0, bucket_mb_ = 0;
};

const std::vector<std::string>& known_keys(ImportSource from) {
  // Read once per framework: a key that none of the reader's names matches, into a scratch
  // launch, with the names it is compared with collected.
  static const auto collect = [](ImportSource source) {
    std::vector<std::string> names;
    const ImportRequest request;
    ImportResult scratch;
    Reader reader(request, scratch);
    reader.known_ = &names;
    Launch l;
    const std::string none = "\x01";
    if (source == ImportSource::verl) reader.verl_key(Word{none, 0}, none, "", l);
    if (source == ImportSource::openrlhf) reader.openrlhf({Word{"--" + none, 0}}, 0, l);
    if (source == ImportSource::slime) reader.slime({Word{"--" + none, 0}}, 0, false, l);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  };
  static const std::vector<std::string> verl = collect(ImportSource::verl), openrlhf = collect(ImportSource::openrlhf),
                                        slime = collect(ImportSource::slime), none;
  switch (from) {
    case ImportSource::verl: return verl;
    case ImportSource::openrlhf: return openrlhf;
    case ImportSource::slime: return slime;
    default: return none;
  }
}

}  // namespace

ReadLaunches import_detail::read_launches(const ImportRequest& r, ImportResult& out) {
  Reader reader(r, out);
  std::vector<Launch> launches;
  if (r.from == ImportSource::areal) {
    Launch l;
    if (!areal(r, out, l)) return {};
    launches.push_back(std::move(l));
  }
  int unclosed = 0;
  const auto commands = r.from == ImportSource::areal ? std::vector<std::vector<Word>>{} : shell_commands(r.text, unclosed);
  if (unclosed > 0) {
    out.errors.push_back(r.file + ":" + std::to_string(unclosed) + ": a quote opened here is never closed");
    return {};
  }
  for (const auto& words : commands) {
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& t = words[i].text;
      Launch l;
      if (r.from == ImportSource::verl && t == "verl.trainer.main_ppo") {  // python3 -m verl.trainer.main_ppo k=v ...
        reader.verl(words, i + 1, l);
        reader.finish_verl(l);
      } else if (r.from == ImportSource::openrlhf && t == "openrlhf.cli.train_ppo_ray") {
        reader.openrlhf(words, i + 1, l);
      } else if (r.from == ImportSource::slime && (t == "train.py" || t == "train_async.py" ||
                                                   (t.size() > 9 && t.substr(t.size() - 9) == "/train.py"))) {
        reader.slime(words, i + 1, t.find("train_async.py") != std::string::npos, l);
      } else {
        continue;
      }
      launches.push_back(std::move(l));
      break;
    }
  }
  if (launches.empty()) {
    static const char* programs[] = {"python3 -m verl.trainer.main_ppo", "python3 -m openrlhf.cli.train_ppo_ray",
                                     "python3 train.py or train_async.py", "an AReaL configuration"};
    out.errors.push_back(r.file + ": no launch (" + programs[static_cast<int>(r.from)] + " ...) found");
    return {};
  }
  if (!out.errors.empty()) return {};
  return {std::move(launches), reader.weight_sync_bucket_mb};
}

}  // namespace arlsim::planner
