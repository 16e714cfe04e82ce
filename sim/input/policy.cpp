#include "sim/input/policy.h"

#include <algorithm>

#include "sim/parse/reader.h"

namespace arlsim::input {

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const parse::Registry<Routing>& routing_policies() {
  static const parse::Registry<Routing> r{
      "routing policy",
      {{"round-robin", "each request to the next engine in turn", Routing::round_robin},
       {"least-loaded", "each request to the engine with the fewest requests in flight, then the fewest tokens to prefill",
        Routing::least_loaded},
       {"sticky", "a trajectory's first turn to the least-loaded engine, its later turns to the same one", Routing::sticky},
       {"length-aware", "longest predicted trajectories first, balanced by predicted tokens, then sticky (HistoPipe)",
        Routing::length_aware}}};
  return r;
}

const parse::Registry<ToolPolicy>& tool_policies() {
  static const parse::Registry<ToolPolicy> r{
      "tool policy",
      {{"static", "a trajectory binds one sandbox from its first tool call to its end", ToolPolicy::static_binding},
       {"pooled", "each action takes a unit from an elastic pool only for its own duration (ARL-Tangram)",
        ToolPolicy::pooled}}};
  return r;
}

const parse::Registry<DispatchMode>& dispatch_modes() {
  static const parse::Registry<DispatchMode> r{
      "dispatch mode",
      {{"centralized", "a single controller gathers every tensor, computes advantages, scatters them",
        DispatchMode::centralized},
       {"decentralized", "each tensor goes straight from its producer to its consumer (EARL)", DispatchMode::decentralized},
       {"transfer-dock", "per-node warehouses and a metadata controller (MindSpeed RL)", DispatchMode::transfer_dock}}};
  return r;
}

const parse::Registry<BatchAssignment>& batch_assignments() {
  static const parse::Registry<BatchAssignment> r{
      "batch assignment",
      {{"true", "tokens balanced over the training ranks longest first, as verl's balance_batch", BatchAssignment::balanced},
       {"false", "contiguous chunks in order", BatchAssignment::in_order},
       {"layout-aware",
        "longest first to the least-loaded rank of the producer's node while it stays within 2% above the mean, else to "
        "the least-loaded rank (EARL)",
        BatchAssignment::layout_aware}}};
  return r;
}

std::string_view dispatch_name(DispatchMode d) { return dispatch_modes().name(d); }

const DispatchTransport* find_dispatch_transport(std::string_view name) {
  // Ray's release microbenchmarks (release/perf_metrics/microbenchmark.json): 5,173 single-client
  // puts and 10,620 gets a second on the plasma store, 19.86 GB/s put into it from one client,
  // and 2,012 synchronous 1:1 actor calls a second (calib/SOURCES.md).
  static const DispatchTransport kTransports[] = {
      {"direct", 0, 0, 0, 0},
      {"ray", 1.0 / 5173.29, 1.0 / 10620.4, 19.86e9, 1.0 / 2011.92},
  };
  for (const auto& t : kTransports)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

constexpr int64_t kMaxDegree = 1 << 16;

void parse_rollout(const Value& v, const std::string& ptr, Diagnostics& diag, RolloutLayout& l) {
  ObjectReader r(v, ptr, diag);
  r.read("tp", l.tp, Presence::optional, 1, kMaxDegree);
  r.read("pp", l.pp, Presence::optional, 1, kMaxDegree);
  r.read("ep", l.ep, Presence::optional, 1, kMaxDegree);
  r.read("replicas", l.replicas, Presence::optional, 1, kMaxDegree);
  r.finish();
}

void parse_inference(const Value& v, const std::string& ptr, Diagnostics& diag, InferenceLayout& l) {
  ObjectReader r(v, ptr, diag);
  r.read("tp", l.tp, Presence::optional, 1, kMaxDegree);
  r.read("pp", l.pp, Presence::optional, 1, kMaxDegree);
  r.read("dp", l.dp, Presence::optional, 1, kMaxDegree);
  r.read("cp", l.cp, Presence::optional, 1, kMaxDegree);
  r.finish();
}

void parse_train(const Value& v, const std::string& ptr, Diagnostics& diag, TrainLayout& l) {
  const size_t errors_before = diag.error_count();
  ObjectReader r(v, ptr, diag);
  read_parallel_degrees(r, l);
  static const EnumName<Recompute> recompute[] = {
      {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};
  r.read_enum("recompute", l.recompute, Presence::optional, recompute);
  r.read("micro_batch", l.micro_batch, Presence::optional, 1, 1 << 20);
  r.read("max_tokens_per_gpu", l.max_tokens_per_gpu, Presence::optional, 1, int64_t{1} << 30);
  r.read("critic_max_tokens_per_gpu", l.critic_max_tokens_per_gpu, Presence::optional, 1, int64_t{1} << 30);
  r.finish();
  if (diag.error_count() != errors_before) return;  // cross checks on half-read fields would mislead
  if (l.sequence_parallel && l.tp == 1 && r.is_object())
    r.error("sequence_parallel", "sequence parallelism splits activations across the tensor-parallel group; it needs tp > 1");
  if (l.vpp > 1 && l.pp == 1)
    r.error("vpp", "virtual pipeline stages (vpp = " + std::to_string(l.vpp) + ") need pipeline parallelism (pp > 1)");
}

// "steps": "A:B" (inclusive, B may be empty for "to the end") or a single step number.
bool parse_steps(const Value& v, const std::string& ptr, Diagnostics& diag, ScheduleEntry& e) {
  if (v.is_number()) {
    int64_t s = 0;
    if (!read_int_value(v, ptr, diag, s, 0, int64_t{1} << 40)) return false;
    e.first_step = e.last_step = s;
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const size_t colon = s.find(':');
    auto number = [](const std::string& t, int64_t& out) {
      if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) return false;
      out = std::stoll(t);
      return true;
    };
    if (colon != std::string::npos && number(s.substr(0, colon), e.first_step)) {
      const std::string rest = s.substr(colon + 1);
      if (rest.empty()) {
        e.last_step = -1;
        return true;
      }
      if (number(rest, e.last_step) && e.last_step >= e.first_step) return true;
    }
  }
  diag.error(v, ptr, "expected a step range \"A:B\" (inclusive), \"A:\" or a step number, got " + v.describe());
  return false;
}

void parse_schedule(ObjectReader& parent, PolicySpec& p) {
  parent.for_each_object("schedule", [&](ObjectReader& r, size_t) {
    ScheduleEntry e;
    if (const Value* s = r.field("steps", Presence::required)) parse_steps(*s, r.pointer_of("steps"), r.diag(), e);
    if (const Value* ro = r.field("rollout")) {
      RolloutLayout l = p.rollout;
      parse_rollout(*ro, r.pointer_of("rollout"), r.diag(), l);
      e.rollout = l;
    }
    if (const Value* t = r.field("train")) {
      TrainLayout l = p.train;
      parse_train(*t, r.pointer_of("train"), r.diag(), l);
      l.keep_framework_of(p.train);
      e.train = l;
    }
    r.finish();
    if (r.is_object() && !e.rollout && !e.train) r.error_here("a schedule entry must set \"rollout\" or \"train\"");
    if (!p.schedule.empty() && p.schedule.back().last_step >= 0 && e.first_step <= p.schedule.back().last_step)
      r.error("steps", "schedule entries must be in increasing, non-overlapping step ranges");
    else if (!p.schedule.empty() && p.schedule.back().last_step < 0)
      r.error("steps", "the previous entry already runs to the end");
    p.schedule.push_back(std::move(e));
  });
}

void parse_sync(ObjectReader& parent, PolicySpec& p) {
  const Value* v = parent.field("sync");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("sync"), parent.diag());
  static const EnumName<SyncMode> modes[] = {{"sync", SyncMode::sync}, {"async", SyncMode::async}};
  r.read_enum("mode", p.sync, Presence::required, modes);
  const bool staleness_read = r.read("staleness", p.staleness, Presence::optional, 0, 64);
  if (const Value* pr = r.usable("partial_rollout"); pr && pr->is_bool()) {
    if (pr->as_bool()) r.error("partial_rollout", "partial rollout needs the fraction of trajectories that ends a step's rollout",
                               "write a number, e.g. 0.9");
  } else {
    r.read("partial_rollout", p.partial_rollout, Presence::optional, 0.01, 1.0);
  }
  // true (the engines hold `staleness` steps' batches, as NeMo RL's collector targets the next
  // `staleness` versions) or a number of batches (AReaL holds max_head_offpolicyness + 1).
  int64_t batches = 0;
  bool continuous_read = false;
  if (const Value* c = r.usable("continuous"); c && c->is_bool()) {
    r.read("continuous", p.continuous, Presence::optional);
  } else if (r.read("continuous", batches, Presence::optional, 1, 65)) {
    p.continuous = true;
    continuous_read = true;
  }
  static const EnumName<bool> kv_cache[] = {{"recompute", false}, {"keep", true}};
  r.read_enum("kv_cache", p.keep_kv_cache, Presence::optional, kv_cache);
  r.finish();
  if (p.keep_kv_cache && !p.continuous)
    r.error("kv_cache", "what the running requests keep across a weight update applies to continuous generation",
            "set \"continuous\": true, or leave kv_cache out");
  if (p.continuous && p.sync != SyncMode::async)
    r.error("continuous", "continuous generation applies to \"mode\": \"async\" only",
            "a synchronous step's rollout waits for the weights of the step before");
  if (p.continuous && p.partial_rollout > 0)
    r.error("continuous", "continuous generation and partial_rollout both decide when a step's rollout ends; set one");
  if (p.sync == SyncMode::async && p.staleness == 0 && r.has("staleness") && staleness_read)  // not after a range error
    r.error("staleness", "asynchronous mode needs a staleness of at least 1 step");
  if (p.sync == SyncMode::async && p.staleness == 0) p.staleness = 1;
  if (p.continuous) p.continuous_batches = continuous_read ? batches : std::max<int64_t>(1, p.staleness);
  if (continuous_read && p.sync == SyncMode::async && batches > p.staleness + 1)
    r.error("continuous", "the engines can hold at most staleness + 1 = " + std::to_string(p.staleness + 1) +
                              " steps' batches: trajectories of a later step would be older than the staleness allows");
  if (p.sync == SyncMode::sync && p.staleness > 0)
    r.error("staleness", "staleness applies to \"mode\": \"async\" only");
}

void parse_weight_sync(ObjectReader& parent, PolicySpec& p) {
  const Value* v = parent.field("weight_sync");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("weight_sync"), parent.diag());
  static const EnumName<WeightSync> methods[] = {{"auto", WeightSync::automatic},
                                                 {"offload", WeightSync::offload},
                                                 {"allgather-swap", WeightSync::allgather_swap},
                                                 {"broadcast", WeightSync::broadcast}};
  r.read_enum("method", p.weight_sync, Presence::optional, methods);
  r.read_quantity("bucket", Dimension::bytes, p.weight_sync_bucket_bytes, Presence::optional, 1 << 20, 1e12);
  static const EnumName<StateSwap> swaps[] = {{"pinned", StateSwap::pinned}, {"to-cpu", StateSwap::to_cpu}};
  r.read_enum("state", p.weight_sync_state, Presence::optional, swaps);
  static const EnumName<RefitGather> gathers[] = {{"engine-shard", RefitGather::engine_shard},
                                                  {"full-model", RefitGather::full_model}};
  if (RefitGather g{}; r.read_enum("gather", g, Presence::optional, gathers)) p.weight_sync_gather = g;
  r.finish();
}

}  // namespace

int64_t TrainLayout::stage_layers(int64_t num_layers, int64_t stage) const {
  if (pp <= 1) return num_layers;
  if (!uneven_stages()) return num_layers / pp;
  const int64_t first = first_stage_layers > 0 ? first_stage_layers : -1;
  const int64_t last = last_stage_layers > 0 ? last_stage_layers : -1;
  // The stages without a count share what the counted ones leave.
  const int64_t counted = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
  const int64_t rest = num_layers - std::max<int64_t>(first, 0) - std::max<int64_t>(last, 0);
  const int64_t even = pp > counted ? rest / (pp - counted) : 0;
  if (stage == 0 && first > 0) return first;
  if (stage == pp - 1 && last > 0) return last;
  return even;
}

int64_t TrainLayout::stage_first_layer(int64_t num_layers, int64_t stage) const {
  int64_t first = 0;
  for (int64_t s = 0; s < stage; ++s) first += stage_layers(num_layers, s);
  return first;
}

std::string TrainLayout::stage_split_problem(int64_t num_layers) const {
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (!uneven_stages()) {
    if (num_layers % (pp * vpp) != 0)
      return "the model's " + n(num_layers) + " layers do not split into " + (vpp > 1 ? "pp x vpp = " : "pp = ") +
             n(pp * vpp) + " equal pipeline " + (vpp > 1 ? "chunks" : "stages");
    return {};
  }
  if (pp < 2) return "first_stage_layers and last_stage_layers need pipeline parallelism (pp > 1)";
  if (vpp > 1) return "first_stage_layers and last_stage_layers are modelled without interleaving (vpp = 1)";
  const int64_t counted = (first_stage_layers > 0 ? 1 : 0) + (last_stage_layers > 0 ? 1 : 0);
  const int64_t rest = num_layers - first_stage_layers - last_stage_layers;
  if (rest < 0 || (pp > counted && (rest <= 0 || rest % (pp - counted) != 0)) || (pp == counted && rest != 0))
    return "the model's " + n(num_layers) + " layers less the first and last stages' (" + n(first_stage_layers) + " + " +
           n(last_stage_layers) + ") do not split evenly over the other " + n(pp - counted) + " stages";
  return {};
}

void read_parallel_degrees(ObjectReader& r, TrainLayout& l) {
  r.read("tp", l.tp, Presence::optional, 1, kMaxDegree);
  r.read("pp", l.pp, Presence::optional, 1, kMaxDegree);
  r.read("dp", l.dp, Presence::optional, 1, kMaxDegree);
  r.read("cp", l.cp, Presence::optional, 1, kMaxDegree);
  static const EnumName<bool> cp_kinds[] = {{"ring", false}, {"ulysses", true}};
  r.read_enum("cp_kind", l.ulysses, Presence::optional, cp_kinds);
  r.read("ep", l.ep, Presence::optional, 1, kMaxDegree);
  r.read("vpp", l.vpp, Presence::optional, 1, 1024);
  r.read("zero", l.zero, Presence::optional, 0, 3);
  r.read("first_stage_layers", l.first_stage_layers, Presence::optional, 1, 1 << 16);
  r.read("last_stage_layers", l.last_stage_layers, Presence::optional, 1, 1 << 16);
  if (r.read("shard_group", l.shard_group, Presence::optional, 1, 1 << 20) &&
      ((l.dp * l.cp) % l.shard_group != 0 || l.zero < 1))
    r.error("shard_group", "a hybrid shard group of " + std::to_string(l.shard_group) +
                               " ranks must divide dp x cp = " + std::to_string(l.dp * l.cp) + " and needs ZeRO 1-3");
  r.read("sequence_parallel", l.sequence_parallel, Presence::optional);
  r.read("offload_optimizer", l.offload_optimizer, Presence::optional);
  r.read("offload_params", l.offload_params, Presence::optional);
  static const EnumName<bool> reduce_dtypes[] = {{"bf16", false}, {"fp32", true}};
  if (bool fp32 = false; r.read_enum("grad_reduce_dtype", fp32, Presence::optional, reduce_dtypes)) l.grad_reduce_fp32 = fp32;
  if (bool fp32 = false; r.read_enum("shard_dtype", fp32, Presence::optional, reduce_dtypes)) l.shard_fp32 = fp32;
  static const EnumName<bool> kernel_kinds[] = {{"fused", false}, {"eager", true}};
  if (bool eager = false; r.read_enum("kernels", eager, Presence::optional, kernel_kinds)) l.eager = eager;
  static const EnumName<bool> paddings[] = {{"none", false}, {"longest", true}};
  r.read_enum("pad_micro_batches", l.pad_to_longest, Presence::optional, paddings);
  static const EnumName<bool> packings[] = {{"balanced", false}, {"fit", true}};
  r.read_enum("packing", l.fit_packing, Presence::optional, packings);
  if (const Value* v = r.field("overlap")) {
    ObjectReader o(*v, r.pointer_of("overlap"), r.diag());
    bool flag = false;
    if (o.read("tp_comm", flag, Presence::optional)) l.overlap.tp_comm = flag;
    if (o.read("grad_reduce", flag, Presence::optional)) l.overlap.grad_reduce = flag;
    if (o.read("param_gather", flag, Presence::optional)) l.overlap.param_gather = flag;
    if (o.read("p2p", flag, Presence::optional)) l.overlap.p2p = flag;
    o.finish();
    if (l.overlaps_tp_comm() && (!l.sequence_parallel || l.tp == 1))
      o.error("tp_comm", "tensor-parallel communication overlap pipelines the all-gathers and reduce-scatters of "
                         "sequence parallelism; it needs tp > 1 and sequence_parallel",
              "set \"sequence_parallel\": true, or remove tp_comm");
  }
}

namespace {

void parse_dispatch_transport(ObjectReader& r, PolicySpec& p) {
  const Value* v = r.field("dispatch_transport");
  if (!v) return;
  if (v->is_string()) {
    if (const DispatchTransport* t = find_dispatch_transport(v->as_string())) p.dispatch_transport = *t;
    else r.error("dispatch_transport", "unknown dispatch transport " + quote(v->as_string()),
                 "use \"direct\", \"ray\" or an object of send_per_message, receive_per_message, copy_bandwidth and "
                 "per_phase");
    return;
  }
  if (!v->is_object()) {
    r.error("dispatch_transport", "expected \"direct\", \"ray\" or an object, got " + v->describe());
    return;
  }
  ObjectReader t(*v, r.pointer_of("dispatch_transport"), r.diag());
  DispatchTransport out;
  out.name = "custom";
  SimTime send, receive, phase;
  t.read_duration("send_per_message", send, Presence::optional, 0, 10);
  t.read_duration("receive_per_message", receive, Presence::optional, 0, 10);
  t.read_duration("per_phase", phase, Presence::optional, 0, 60);
  t.read_quantity("copy_bandwidth", Dimension::bytes_per_s, out.copy_bytes_per_s, Presence::optional, 1e6, 1e13);
  t.finish();
  out.send_per_message_s = send.seconds();
  out.receive_per_message_s = receive.seconds();
  out.per_phase_s = phase.seconds();
  p.dispatch_transport = out;
}

}  // namespace

bool parse_policy(const Value& v, const std::string& pointer, Diagnostics& diag, PolicySpec& out) {
  const size_t errors_before = diag.error_count();
  PolicySpec p;
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  r.read("name", p.name, Presence::optional);
  r.read("description", p.description, Presence::optional);
  static const EnumName<Placement> placements[] = {{"colocated", Placement::colocated},
                                                   {"disaggregated", Placement::disaggregated}};
  r.read_enum("placement", p.placement, Presence::optional, placements);
  r.read("rollout_gpus", p.rollout_gpus, p.placement == Placement::disaggregated ? Presence::required : Presence::optional,
         1, 1 << 24);
  if (const Value* ro = r.field("rollout", Presence::required)) parse_rollout(*ro, r.pointer_of("rollout"), diag, p.rollout);
  if (const Value* t = r.field("train", Presence::required)) parse_train(*t, r.pointer_of("train"), diag, p.train);
  const std::pair<const char*, std::optional<InferenceLayout>*> passes[] = {
      {"old_logprob", &p.old_logprob}, {"ref_logprob", &p.ref_logprob}, {"critic", &p.critic}};
  for (const auto& [key, slot] : passes) {
    if (const Value* f = r.field(key)) {
      InferenceLayout l;
      parse_inference(*f, r.pointer_of(key), diag, l);
      *slot = l;
    }
  }
  r.read_choice("dispatch", p.dispatch, Presence::optional, dispatch_modes());
  parse_dispatch_transport(r, p);
  if (const Value* b = r.usable("balance_batch"); b && b->is_string()) {
    const auto* choice = batch_assignments().find(b->as_string());
    if (choice && choice->value == BatchAssignment::layout_aware) p.batch_assignment = choice->value;
    else r.error("balance_batch", "expected true, false or \"layout-aware\", got " + b->describe());
  } else {
    bool balance = true;
    r.read("balance_batch", balance, Presence::optional);
    p.batch_assignment = balance ? BatchAssignment::balanced : BatchAssignment::in_order;
  }
  parse_sync(r, p);
  r.read_choice("tool_policy", p.tool_policy, Presence::optional, tool_policies());
  r.read_choice("routing", p.routing, Presence::optional, routing_policies());
  parse_weight_sync(r, p);
  static const EnumName<ReferenceWeights> reference[] = {{"resident", ReferenceWeights::resident},
                                                         {"swapped", ReferenceWeights::swapped}};
  r.read_enum("reference_weights", p.reference_weights, Presence::optional, reference);
  parse_schedule(r, p);
  r.read_quantity("switch_overhead", Dimension::seconds, p.switch_overhead_s, Presence::optional, 0, 1e6);
  r.finish();
  if (p.placement == Placement::colocated && p.rollout_gpus > 0)
    r.error("rollout_gpus", "rollout_gpus applies to \"placement\": \"disaggregated\" only; colocated stages share all GPUs");
  out = std::move(p);
  return diag.error_count() == errors_before;
}

std::string moe_sequence_parallel_warning(bool moe, const TrainLayout& l) {
  if (!moe || l.tp <= 1 || l.sequence_parallel) return {};
  return "Megatron refuses a mixture-of-experts layer under tp > 1 without sequence parallelism; priced as with it "
         "(each rank routes its tp share of the tokens)";
}

}  // namespace arlsim::input
