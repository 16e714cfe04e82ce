#include "sim/input/scenario.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "sim/parse/reader.h"
#include "sim/trace/gen_options.h"

namespace arlsim::input {

bool pool_grows(const PoolSpec& p, ToolPolicy tool_policy) {
  return p.kind == PoolKind::sandbox && tool_policy == ToolPolicy::pooled;
}

int64_t pool_max_units(const PoolSpec& p, ToolPolicy tool_policy) {
  return pool_grows(p, tool_policy) ? std::max(p.count, p.max_count) : p.count;
}

int64_t ScenarioSpec::train_gpus() const {
  return policy.placement == Placement::colocated ? cluster.total_gpus() : cluster.total_gpus() - policy.rollout_gpus;
}

int64_t ScenarioSpec::rollout_gpus() const {
  return policy.placement == Placement::colocated ? cluster.total_gpus() : policy.rollout_gpus;
}

namespace {

// Reports at the policy field when it exists in the document, else at the policy object.
class PolicyAt {
 public:
  PolicyAt(const Value& scenario, Diagnostics& diag) : scenario_(scenario), diag_(diag) {
    policy_ = scenario.find("policy");
    if (!policy_) policy_ = &scenario;
  }
  // An error about the policy field at `path` and the `fields` of the scenario's `other` object
  // together (the cluster's GPUs against a layout): at the policy field, unless only those fields
  // hold what the user wrote (a --set of the cluster's size on a preset's policy), which then
  // made it wrong.
  void error_with(std::string_view path, std::string_view other, std::initializer_list<std::string_view> fields,
                  std::string message, std::string hint = {}) {
    const Value* o = scenario_.find(other);
    const Value* user = nullptr;
    if (o && o->is_object() && !parse::user_written_inside(*field(path)))
      for (const auto key : fields)
        if (const Value* v = o->find(key); v && !user) user = parse::user_written_inside(*v);
    if (user) diag_.error(*user, pointer_of(path), std::move(message), std::move(hint));
    else error(path, std::move(message), std::move(hint));
  }
  void error(std::string_view path, std::string message, std::string hint = {}) {
    diag_.error(*field(path), pointer_of(path), std::move(message), std::move(hint));
  }
  void warning(std::string_view path, std::string message) { diag_.warning(*field(path), pointer_of(path), std::move(message)); }

 private:
  // The deepest value on `path` that the document has, and its pointer.
  const Value* field(std::string_view path) const { return walk(path).first; }
  std::string pointer_of(std::string_view path) const { return walk(path).second; }
  std::pair<const Value*, std::string> walk(std::string_view path) const {
    const Value* node = policy_;
    std::string ptr = "/policy";
    std::string_view rest = path;
    while (!rest.empty() && (node->is_object() || node->is_array())) {
      const size_t slash = rest.find('/');
      const std::string_view key = rest.substr(0, slash);
      const Value* next = nullptr;
      if (node->is_object()) {
        next = node->find(key);
      } else {
        size_t index = 0;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
        if (ec == std::errc() && end == key.data() + key.size() && index < node->items().size()) next = &node->items()[index];
      }
      if (!next) break;
      node = next;
      ptr = pointer_append(ptr, key);
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    }
    return {node, ptr};
  }

  const Value& scenario_;
  const Value* policy_;
  Diagnostics& diag_;
};

std::string n(int64_t v) { return std::to_string(v); }

void check_heads(PolicyAt& at, const ModelSpec& m, std::string_view where, int64_t tp, bool training) {
  const std::string path = std::string(where) + "/tp";
  if (m.num_heads % tp != 0) {
    at.error(path, "the model's " + n(m.num_heads) + " attention heads do not split over tp = " + n(tp),
             "choose a tp that divides " + n(m.num_heads));
    return;
  }
  if (m.attention != AttentionKind::gqa) return;
  if (training && m.num_kv_heads % tp != 0) {
    at.error(path, "the model's " + n(m.num_kv_heads) + " key-value heads do not split over tp = " + n(tp),
             "tensor-parallel training shards whole key-value groups; choose a tp that divides " + n(m.num_kv_heads));
  } else if (!training && m.num_kv_heads % tp != 0 && tp % m.num_kv_heads != 0) {
    at.error(path, "tp = " + n(tp) + " neither divides nor is a multiple of the model's " + n(m.num_kv_heads) +
                       " key-value heads");
  }
}

void check_train(PolicyAt& at, const ScenarioSpec& s, const TrainLayout& t, std::string_view where) {
  const ModelSpec& m = s.model;
  check_heads(at, m, where, t.tp, true);
  const int64_t gpus = s.train_gpus();
  if (t.gpus() != gpus) {
    at.error_with(std::string(where), "cluster", {"nodes", "gpus_per_node"},
             "tp x pp x dp x cp = " + n(t.tp) + " x " + n(t.pp) + " x " + n(t.dp) + " x " + n(t.cp) + " = " + n(t.gpus()) +
                 " GPUs, but training has " + n(gpus) +
                 (s.policy.placement == Placement::colocated ? " (all GPUs of the cluster)"
                                                             : " (the cluster's GPUs less rollout_gpus)"));
  }
  if (t.pp > m.num_layers) {
    at.error(std::string(where) + "/pp", "pp = " + n(t.pp) + " exceeds the model's " + n(m.num_layers) + " layers");
  } else if (const std::string problem = t.stage_split_problem(m.num_layers); !problem.empty()) {
    at.error(std::string(where) + (t.uneven_stages() ? (t.first_stage_layers > 0 ? "/first_stage_layers" : "/last_stage_layers")
                                                     : t.vpp > 1 ? "/vpp" : "/pp"),
             problem);
  }
  if (t.shard_group > 0 && ((t.dp * t.cp) % t.shard_group != 0 || t.zero < 1))
    at.error(std::string(where) + "/shard_group", "a hybrid shard group of " + n(t.shard_group) +
                                                      " ranks must divide dp x cp = " + n(t.dp * t.cp) +
                                                      " and needs ZeRO 1-3");
  if (t.ulysses && t.cp > 1 && t.tp > 0 && (m.num_heads / t.tp) % t.cp != 0)
    at.error(std::string(where) + "/cp_kind", "Ulysses context parallelism splits heads: cp = " + n(t.cp) +
                                                  " does not divide the " + n(m.num_heads / t.tp) +
                                                  " heads of a tensor-parallel rank",
             "choose \"ring\", or a cp that divides them");
  if (t.ep > 1) {
    if (!m.has_moe) at.error(std::string(where) + "/ep", "expert parallelism needs a mixture-of-experts model");
    else if (m.moe.num_experts % t.ep != 0)
      at.error(std::string(where) + "/ep",
               "the model's " + n(m.moe.num_experts) + " experts do not split over ep = " + n(t.ep));
    else if ((t.dp * t.cp * t.tp) % t.ep != 0)
      at.error(std::string(where) + "/ep", "ep = " + n(t.ep) + " must divide tp x dp x cp = " + n(t.dp * t.cp * t.tp));
  }
  if (const std::string warning = moe_sequence_parallel_warning(m.has_moe, t); !warning.empty())
    at.warning(std::string(where) + "/sequence_parallel", warning);
  if (t.tp > s.cluster.gpus_per_node)
    at.error(std::string(where) + "/tp", "tp = " + n(t.tp) + " spans more than the " + n(s.cluster.gpus_per_node) +
                                             " GPUs of one node");
  const WorkloadSpec& w = s.workload;
  if (const DpSplit split = dp_split(t, w); split == DpSplit::refused) {
    at.error(std::string(where) + "/dp", uneven_dp_text(t, w));
  } else if (split == DpSplit::uneven) {
    // Packed first fit into token budgets, as AReaL splits a batch by tokens, the ranks take their
    // samples balanced by tokens, however many; verl, NeMo RL and OpenRLHF split by count.
    const int64_t per_rank = w.trajectories_per_step() / w.mini_batches / t.dp;
    at.warning(std::string(where) + "/dp",
               uneven_dp_text(t, w) + ": the ranks take " + n(per_rank) + " or " + n(per_rank + 1) +
                   (s.policy.batch_assignment == BatchAssignment::in_order
                        ? ", in order (balance_batch is false), where AReaL balances them by tokens"
                        : ", balanced by tokens, as AReaL splits a batch") +
                   "; verl, NeMo RL and OpenRLHF require an even split");
  }
}

}  // namespace

DpSplit dp_split(const TrainLayout& t, const WorkloadSpec& w) {
  if (w.mini_batches <= 0 || t.dp <= 0) return DpSplit::even;  // reported where they are read
  const int64_t per_mini_batch = w.trajectories_per_step() / w.mini_batches;
  if (per_mini_batch % t.dp == 0) return DpSplit::even;
  return t.fit_packing && t.max_tokens_per_gpu > 0 && per_mini_batch >= t.dp ? DpSplit::uneven : DpSplit::refused;
}

std::string uneven_dp_text(const TrainLayout& t, const WorkloadSpec& w) {
  return "a mini-batch of " + std::to_string(w.trajectories_per_step() / std::max<int64_t>(1, w.mini_batches)) +
         " trajectories does not split evenly over dp = " + std::to_string(t.dp);
}

namespace {

// Model `m` split over tp and into pp pipeline stages (of vpp chunks each), at `where`.
void check_split(PolicyAt& at, const ScenarioSpec& s, const ModelSpec& m, int64_t tp, int64_t pp, int64_t vpp,
                 const std::string& where) {
  const std::string whose = &m == &s.model ? "the model's " : "the critic's ";
  if (m.num_heads % tp != 0)
    at.error(where + "/tp", whose + n(m.num_heads) + " attention heads do not split over tp = " + n(tp),
             "choose a tp that divides " + n(m.num_heads));
  else if (m.attention == AttentionKind::gqa && m.num_kv_heads % tp != 0)
    at.error(where + "/tp", whose + n(m.num_kv_heads) + " key-value heads do not split over tp = " + n(tp),
             "Megatron-style tensor parallelism shards whole key-value groups; choose a tp that divides " + n(m.num_kv_heads));
  if (pp > m.num_layers)
    at.error(where + "/pp", "pp = " + n(pp) + " exceeds " + whose + n(m.num_layers) + " layers");
  else if (m.num_layers % (pp * vpp) != 0)
    at.error(where + (vpp > 1 ? "/vpp" : "/pp"),
             whose + n(m.num_layers) + " layers do not split into " + (vpp > 1 ? "pp x vpp = " : "pp = ") + n(pp * vpp) +
                 " equal pipeline " + (vpp > 1 ? "chunks" : "stages"),
             "choose a pp that divides " + n(m.num_layers));
}

// A forward-only pass of model `m` in its own layout `l` on the training GPUs.
void check_pass(PolicyAt& at, const ScenarioSpec& s, const ModelSpec& m, const InferenceLayout& l, const std::string& where) {
  if (l.gpus() != s.train_gpus())
    at.error(where, "tp x pp x dp x cp = " + n(l.gpus()) + " GPUs, but the pass runs on the " + n(s.train_gpus()) +
                        " training GPUs");
  if (l.tp > s.cluster.gpus_per_node)
    at.error(where + "/tp", "tp = " + n(l.tp) + " spans more than the " + n(s.cluster.gpus_per_node) + " GPUs of one node");
  // A mixture-of-experts pass keeps the training's expert parallelism over its own ranks.
  if (const int64_t ep = s.policy.train.ep; m.has_moe && ep > 1 && (l.tp * l.dp * l.cp) % ep != 0)
    at.error(where, "the training's ep = " + n(ep) + " must divide this pass's tp x dp x cp = " + n(l.tp * l.dp * l.cp));
  check_split(at, s, m, l.tp, l.pp, 1, where);
}

void check_rollout(PolicyAt& at, const ScenarioSpec& s, const RolloutLayout& r, std::string_view where) {
  const ModelSpec& m = s.model;
  check_heads(at, m, where, r.tp, false);
  const int64_t gpus = s.rollout_gpus();
  const int64_t per_engine = r.gpus_per_engine();
  if (per_engine > gpus) {
    at.error(std::string(where), "one engine needs tp x pp = " + n(per_engine) + " GPUs, but rollout has " + n(gpus));
  } else if (r.replicas > 0 && r.replicas * per_engine > gpus) {
    at.error(std::string(where) + "/replicas", n(r.replicas) + " engines of " + n(per_engine) + " GPUs need " +
                                                   n(r.replicas * per_engine) + " GPUs, but rollout has " + n(gpus));
  } else if (r.replicas == 0 && gpus % per_engine != 0) {
    at.error(std::string(where), "rollout's " + n(gpus) + " GPUs do not split into engines of tp x pp = " +
                                     n(per_engine) + " GPUs",
             "set \"replicas\" to use fewer GPUs");
  }
  // An engine may span nodes (vLLM TP16 or TP32 for DeepSeek-V3-class models): then it takes
  // whole nodes, and its all-reduces cross the network.
  if (r.tp > s.cluster.gpus_per_node && r.tp % s.cluster.gpus_per_node != 0)
    at.error(std::string(where) + "/tp", "tp = " + n(r.tp) + " spans nodes but not whole ones (" +
                                             n(s.cluster.gpus_per_node) + " GPUs each)",
             "choose a tp that divides " + n(s.cluster.gpus_per_node) + " or a multiple of it");
  if (r.ep > 1 && (!m.has_moe || m.moe.num_experts % r.ep != 0))
    at.error(std::string(where) + "/ep", m.has_moe ? "the model's " + n(m.moe.num_experts) +
                                                         " experts do not split over ep = " + n(r.ep)
                                                   : std::string("expert parallelism needs a mixture-of-experts model"));
}

}  // namespace

void check_scenario(const Value& v, const ScenarioSpec& s, Diagnostics& diag) {
  PolicyAt at(v, diag);
  const int64_t total = s.cluster.total_gpus();
  if (s.policy.placement == Placement::disaggregated && s.policy.rollout_gpus >= total) {
    at.error("rollout_gpus", "rollout_gpus = " + n(s.policy.rollout_gpus) + " leaves no GPU for training; the cluster has " +
                                 n(total) + " GPUs (" + n(s.cluster.nodes) + " nodes x " + n(s.cluster.gpus_per_node) + ")");
    return;
  }
  if (s.policy.sync == SyncMode::async && s.policy.placement == Placement::colocated)
    at.error("sync", "asynchronous training overlaps rollout with training, which needs their own GPUs",
             "set \"placement\": \"disaggregated\" and \"rollout_gpus\"");
  check_train(at, s, s.policy.train, "train");
  check_rollout(at, s, s.policy.rollout, "rollout");
  for (size_t i = 0; i < s.policy.schedule.size(); ++i) {
    const auto& e = s.policy.schedule[i];
    const std::string base = "schedule/" + std::to_string(i);
    if (e.train) check_train(at, s, *e.train, base + "/train");
    if (e.rollout) check_rollout(at, s, *e.rollout, base + "/rollout");
  }
  // The forward-only passes run their own model (the critic's for values) in their own layout,
  // or in the training layout when they name none. The critic also trains in every training
  // layout the policy uses (its own and its schedule's), and the actor's layouts were checked above.
  const std::pair<const char*, const std::optional<InferenceLayout>*> passes[] = {
      {"old_logprob", &s.policy.old_logprob}, {"ref_logprob", &s.policy.ref_logprob}, {"critic", &s.policy.critic}};
  for (const auto& [key, layout] : passes) {
    const bool critic = std::string_view(key) == "critic";
    if (critic && !s.workload.critic) continue;
    if (*layout) check_pass(at, s, critic ? *s.workload.critic : s.model, **layout, key);
  }
  if (s.workload.critic) {
    // The critic trains in the training layout, uneven stages included.
    const auto critic_split = [&](const TrainLayout& t, const std::string& where) {
      if (t.uneven_stages()) {
        if (const std::string problem = t.stage_split_problem(s.workload.critic->num_layers); !problem.empty())
          at.error(where + (t.first_stage_layers > 0 ? "/first_stage_layers" : "/last_stage_layers"), "the critic: " + problem);
        check_split(at, s, *s.workload.critic, t.tp, 1, 1, where);  // its heads
      } else {
        check_split(at, s, *s.workload.critic, t.tp, t.pp, t.vpp, where);
      }
    };
    critic_split(s.policy.train, "train");
    for (size_t i = 0; i < s.policy.schedule.size(); ++i)
      if (const auto& e = s.policy.schedule[i].train) critic_split(*e, "schedule/" + std::to_string(i) + "/train");
  }
  // A pool grows towards max_count only as a sandbox pool under the pooled tool policy; otherwise
  // its `count` units are all it has, and none means its tool calls could never run.
  for (size_t i = 0; i < s.cluster.pools.size(); ++i) {
    const PoolSpec& p = s.cluster.pools[i];
    if (p.kind == PoolKind::reward_server) continue;
    if (pool_max_units(p, s.policy.tool_policy) > 0) continue;
    const bool grows = pool_grows(p, s.policy.tool_policy);
    const Value* pools = v.find("cluster") ? v.find("cluster")->find("pools") : nullptr;
    const Value* pool = pools && pools->is_array() && i < pools->items().size() ? &pools->items()[i] : nullptr;
    const Value* count = pool && pool->is_object() ? pool->find("count") : nullptr;
    diag.error(count ? *count : v, count ? "/cluster/pools/" + std::to_string(i) + "/count" : "",
               "pool " + quote(p.name) + " has no units: " +
                   (grows ? std::string("count and max_count are 0")
                          : p.kind == PoolKind::api ? std::string("count is 0, and an API pool does not grow")
                                                    : std::string("count is 0, and only the pooled tool policy grows a pool")),
               "give it at least one unit");
  }
  // Pooling schedules tool actions on the tool pools (sandboxes, APIs); with none, every call runs
  // at once, unqueued.
  if (s.policy.tool_policy == ToolPolicy::pooled && s.workload.max_turns > 1 &&
      std::all_of(s.cluster.pools.begin(), s.cluster.pools.end(), [](const PoolSpec& p) { return p.kind == PoolKind::reward_server; })) {
    const Value* policy = v.find("policy");
    const Value* tp = policy ? policy->find("tool_policy") : nullptr;
    diag.warning(tp ? *tp : v, "/policy/tool_policy",
                 "the pooled tool policy schedules tool actions on tool pools, and the cluster has none: every tool call "
                 "runs at once, with no queue and no cost",
                 "give the cluster a sandbox or API pool (\"pools\")");
  }
  // Every dispatch mode reaches the single controller (whole tensors, or per-sample scalars), whose
  // link hangs off the network: the GPUs reach it through their node's NICs, and its own link
  // defaults to one NIC's bandwidth. A profile without a NIC gives neither.
  if (s.cluster.nic_bandwidth_bytes_per_s <= 0 || s.cluster.controller_bandwidth_bytes_per_s <= 0) {
    const Value* c = v.find("cluster");
    const Value* gpu = c && c->is_object() ? c->find("gpu") : nullptr;
    diag.error(gpu ? *gpu : c ? *c : v, gpu ? "/cluster/gpu" : c ? "/cluster" : "",
               "dispatch reaches the controller process over the NICs, and GPU profile " + s.cluster.gpu.name +
                   " gives no NIC bandwidth",
               "set /cluster/network/nic_bandwidth");
  }
  // A training state swapped as PyTorch frameworks swap it moves through pageable host memory,
  // whose rates only the profile can give; a weight sync that swaps nothing ignores it.
  if (s.policy.weight_sync_state == StateSwap::to_cpu && !s.policy.swaps_training_state())
    at.warning("weight_sync/state", "the weight sync broadcasts the weights and swaps no training state, so \"to-cpu\" changes nothing");
  else if (s.policy.weight_sync_state == StateSwap::to_cpu &&
           (s.cluster.gpu.host_pageable_out_bytes_per_s <= 0 || s.cluster.gpu.host_pageable_in_bytes_per_s <= 0))
    at.error("weight_sync/state",
             "the training state moves through pageable host memory (\"to-cpu\"), and GPU profile " + s.cluster.gpu.name +
                 " gives no rates for it (host_pageable: out and in)",
             "give the profile host_pageable {\"out\": ..., \"in\": ...} (calib/SOURCES.md), or set the state to \"pinned\"");
  if (s.policy.weight_sync_gather == RefitGather::full_model && s.policy.weight_sync == WeightSync::offload)
    at.error("weight_sync/gather",
             "\"offload\" loads each engine's shard from host memory, so there is no gather to make \"full-model\"",
             "set the method to \"allgather-swap\" (colocated) or \"broadcast\", or leave gather unset");
  if (s.policy.train.shard_fp32 && s.policy.train.zero < 3)
    at.warning("train/shard_dtype", "only ZeRO-3 shards the parameters, so the shard dtype changes nothing at ZeRO " +
                                        std::to_string(s.policy.train.zero));
  // Offloaded parameters are ZeRO-3's shards (DeepSpeed's offload_param, FSDP's CPU offload).
  if (s.policy.train.offload_params && s.policy.train.zero < 3)
    at.warning("train/offload_params", "DeepSpeed (offload_param) and FSDP (CPU offload) offload ZeRO-3's parameter "
                                       "shards; at ZeRO " + std::to_string(s.policy.train.zero) +
                                       " each rank offloads whole parameters, which neither runs");
  // Packing and padding need a token budget, padding a pipeline too (a schedule's layouts may add one).
  const auto& t = s.policy.train;
  if (t.fit_packing && t.max_tokens_per_gpu == 0)
    at.warning("train/packing", "fit packing fills bins of the token budget, and there is none (max_tokens_per_gpu), so it "
                                "changes nothing");
  if (t.pad_to_longest && (t.max_tokens_per_gpu == 0 || t.pp == 1))
    at.warning("train/pad_micro_batches", std::string("padding evens out the packed micro-batches of a pipeline, and there is ") +
                                              (t.pp == 1 ? "no pipeline (pp 1)" : "no token budget (max_tokens_per_gpu)") +
                                              ", so it changes nothing");
  // An eager dispatch without eager mode, and fixed micro-batches beside a token budget, are not used.
  if (const Value* w = v.find("workload"); w && w->is_object())
    if (const Value* e = w->find("engine"); e && e->is_object())
      if (const Value* d = e->find("eager_dispatch"); d && s.workload.engine.eager_dispatch_given && !s.workload.engine.enforce_eager)
        diag.warning(*d, "/workload/engine/eager_dispatch",
                     "the dispatch prices eager mode, and enforce_eager is off (CUDA graphs), so it changes nothing");
  if (const Value* p = v.find("policy"); p && p->is_object())
    if (const Value* tr = p->find("train"); tr && tr->is_object())
      if (const Value* mb = tr->find("micro_batch"); mb && t.max_tokens_per_gpu > 0)
        diag.warning(*mb, "/policy/train/micro_batch",
                     "a token budget (max_tokens_per_gpu) makes the micro-batches, so a count of sequences changes nothing");
  // Padded tensors are verl's FSDP engine's without use_remove_padding, which it refuses with
  // Ulysses context parallelism for the policy; and a critic's padding with no critic changes nothing.
  if (const Value* w = v.find("workload"); w && w->is_object())
    if (const Value* padding = w->find("padding"); padding && padding->is_object()) {
      // (The critic trains in the policy's layout here; verl's runs its own, without Ulysses.)
      if (s.workload.pad_policy && t.cp > 1)
        diag.warning(*padding, "/workload/padding",
                     "padded tensors (\"limits\") are verl's FSDP engine without use_remove_padding, which refuses "
                     "context parallelism (cp " + std::to_string(t.cp) + "): no framework runs this pairing; set the "
                     "padding \"removed\" or cp 1");
      if (s.workload.pad_critic && !s.workload.critic)
        if (const Value* critic = padding->find("critic"))
          diag.warning(*critic, "/workload/padding/critic", "the workload has no critic, so its padding changes nothing");
    }
  // Groups laid out one after another tile a node only when their size divides it (or it theirs):
  // otherwise some straddle two nodes, and are priced as if their links were the node's.
  const int64_t per_node = s.cluster.gpus_per_node;
  if (const int64_t g = s.policy.rollout.gpus_per_engine(); s.cluster.straddles(g) && s.rollout_gpus() % g == 0)
    at.warning("rollout", "engines of " + std::to_string(g) + " GPUs do not tile nodes of " + std::to_string(per_node) +
                              ": some straddle two nodes and are priced as if on one");
  if (s.cluster.straddles(s.policy.train.tp))
    at.warning("train/tp", "tensor-parallel groups of " + std::to_string(s.policy.train.tp) + " do not tile nodes of " +
                               std::to_string(per_node) + ": some straddle two nodes and are priced as if on one");
  if (s.policy.continuous && s.policy.batches_held() == 1)
    at.warning("sync/continuous", "the engines hold one step's trajectories at a time (a staleness of 1, or continuous 1), so "
                                  "continuous generation changes nothing");
  if (s.policy.reference_weights == ReferenceWeights::swapped && !s.workload.use_reference)
    at.warning("reference_weights", "the workload has no reference model (use_reference is false), so its weights swap nothing");
  // Training runs in the workload's dtype, so the device must have a rate for it (engines serve in
  // fp32 on a device without a bf16 peak: sim/model/inference.h).
  if (s.cluster.gpu.peak(s.workload.dtype) <= 0) {
    std::string has;
    for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::int8})
      if (s.cluster.gpu.peak(d) > 0) has += std::string(has.empty() ? "" : ", ") + dtype_name(d);
    const Value* w = v.find("workload");
    const Value* field = w && w->is_object() ? w->find("dtype") : nullptr;
    diag.error(field ? *field : v, field ? "/workload/dtype" : "",
               std::string("the workload computes in ") + dtype_name(s.workload.dtype) + " and GPU profile " +
                   s.cluster.gpu.name + " gives no peak rate for it (it has " + (has.empty() ? "none" : has) + ")",
               has.empty() ? "give the profile a peak" : "set /workload/dtype to one the profile has, or use another profile");
  }
  if (s.workload.max_context_tokens > s.model.max_context) {
    const Value* w = v.find("workload");
    const Value* field = w && w->is_object() ? w->find("max_context_tokens") : nullptr;
    if (!field && w && w->is_object()) field = w->find("max_response_tokens");
    diag.error(field ? *field : v, field ? (w->find("max_context_tokens") ? "/workload/max_context_tokens" : "/workload/max_response_tokens") : "",
               "the workload's context of " + n(s.workload.max_context_tokens) + " tokens exceeds the model's " +
                   n(s.model.max_context) + " (max_position_embeddings)");
  }
}

bool parse_scenario(const Value& v, Diagnostics& diag, ScenarioSpec& out) {
  const size_t errors_before = diag.error_count();
  ScenarioSpec s;
  ObjectReader r(v, "", diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  if (r.read("name", s.name, Presence::optional) && s.name.empty()) r.error("name", "must not be empty (outputs are titled by it)");
  r.read("description", s.description, Presence::optional);
  bool parts_ok = true;
  if (const Value* c = r.field("cluster", Presence::required)) parts_ok &= parse_cluster(*c, "/cluster", diag, s.cluster);
  else parts_ok = false;
  if (const Value* m = r.field("model", Presence::required)) parts_ok &= parse_model(*m, "/model", diag, s.model);
  else parts_ok = false;
  if (const Value* w = r.field("workload", Presence::required)) parts_ok &= parse_workload(*w, "/workload", diag, s.workload);
  else parts_ok = false;
  if (const Value* p = r.field("policy", Presence::required)) parts_ok &= parse_policy(*p, "/policy", diag, s.policy);
  else parts_ok = false;
  if (const Value* t = r.usable("trace"); t && t->is_object()) {
    // {"generate": {"preset": ..., "steps": ..., "prompts_per_step": ..., "group_size": ..., "seed": ...,
    //               "options": {"response-mean": ..., ...}}}
    ObjectReader tr(*t, "/trace", diag);
    if (const Value* g = tr.field("generate", Presence::required)) {
      ObjectReader gr(*g, "/trace/generate", diag);
      ScenarioSpec::GeneratedTrace gen;
      if (gr.read("preset", gen.preset, Presence::optional) && !trace::find_gen_preset(gen.preset)) {
        const auto names = trace::gen_preset_names();
        const std::string guess = closest_match(gen.preset, names);
        gr.error("preset", "unknown trace generator preset " + quote(gen.preset) + "; expected one of " + join_quoted(names),
                 guess.empty() ? std::string() : "did you mean " + quote(guess) + "?");
      }
      gr.read("steps", gen.steps, Presence::optional, 1, 100000);
      gr.read("prompts_per_step", gen.prompts_per_step, Presence::optional, 1, 1 << 20);
      gr.read("group_size", gen.group_size, Presence::optional, 1, 1 << 16);
      gr.read("every", gen.every, Presence::optional, 1, 100000);
      int64_t seed = 1;
      if (gr.read("seed", seed, Presence::optional, 0, std::numeric_limits<int64_t>::max())) gen.seed = static_cast<uint64_t>(seed);
      if (const Value* opts = gr.field("options")) {
        if (!opts->is_object()) {
          gr.error("options", "expected an object of generator options (as `arlsim trace gen` names them), got " +
                                  opts->describe());
        } else {
          // Each option checked as the command line would apply it: on the preset's parameters,
          // a "tool" (a string or an array of them) replacing the preset's tools.
          const trace::GenPreset* preset = gen.preset.empty() ? nullptr : trace::find_gen_preset(gen.preset);
          trace::GenParams scratch = preset ? trace::preset_params(*preset) : trace::GenParams{};
          struct Entry {
            const Value* value;
            std::string ptr, key, text, problem, hint;
          };
          std::vector<Entry> entries;  // in the document's order
          for (const auto& member : opts->members()) {
            const std::string& key = member.key;
            const Value& val = *member.value;
            const std::string ptr = pointer_append("/trace/generate/options", key);
            if (!trace::find_gen_option(key) || key == "seed" || key == "steps" || key == "every" ||
                key == "prompts-per-step" || key == "group-size") {
              entries.push_back({&val, ptr, key, "", "not a generator option here: " + quote(key),
                                 "see `arlsim trace gen --help`; seed, steps, every, prompts_per_step and group_size are "
                                 "keys of \"generate\" itself"});
              continue;
            }
            const bool listed = key == "tool" && val.is_array();
            std::vector<const Value*> values;
            if (listed)
              for (const auto& item : val.items()) values.push_back(&item);
            else
              values.push_back(&val);
            for (size_t i = 0; i < values.size(); ++i) {
              const Value& one = *values[i];
              Entry e{&one, listed ? pointer_append(ptr, i) : ptr, key, "", "", ""};
              if (one.is_string() || one.is_number())
                e.text = one.is_string() ? one.as_string() : one.literal();
              else
                e.problem = "expected a number or a string, got " + one.describe();
              entries.push_back(std::move(e));
            }
          }
          std::vector<std::pair<std::string, std::string>> accepted;
          std::vector<Entry*> applied;
          for (auto& e : entries)
            if (e.problem.empty()) {
              accepted.emplace_back(e.key, e.text);
              applied.push_back(&e);
            }
          const auto problems = trace::apply_gen_options(scratch, accepted);
          for (size_t i = 0; i < problems.size(); ++i) applied[i]->problem = problems[i];
          for (const auto& e : entries) {
            if (e.problem.empty()) gen.options.emplace_back(e.key, e.text);
            else if (e.hint.empty()) diag.error(*e.value, e.ptr, e.problem);
            else diag.error(*e.value, e.ptr, e.problem, e.hint);
          }
        }
      }
      gr.finish();
      s.generated_trace = gen;
    }
    tr.finish();
  } else {
    r.read_file_path("trace", s.trace_path, Presence::optional, "trace file");
  }
  r.read("trace_sets_batch", s.trace_sets_batch, Presence::optional);
  r.read("steps", s.steps, Presence::optional, 1, 1000000);
  int64_t seed = 1;
  if (r.read("seed", seed, Presence::optional, 0, std::numeric_limits<int64_t>::max())) s.seed = static_cast<uint64_t>(seed);
  r.finish();
  if (parts_ok) check_scenario(v, s, diag);
  out = std::move(s);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
