#include "sim/input/stage.h"

#include "sim/parse/reader.h"

#include <limits>

namespace arlsim::input {
namespace {

constexpr int64_t kMaxDegree = 1 << 16;
constexpr int64_t kMaxTokens = int64_t{1} << 26;

void parse_train_stage(ObjectReader& r, StageSpec& s) {
  TrainStage& t = s.train;
  if (const Value* l = r.field("layout", Presence::required)) {
    ObjectReader lr(*l, r.pointer_of("layout"), r.diag());
    read_parallel_degrees(lr, t.layout);
    lr.finish();
  }
  r.read("micro_batch", t.layout.micro_batch, Presence::required, 1, 1 << 20);
  r.read("global_batch", t.global_batch, Presence::required, 1, 1 << 24);
  r.read("seq_len", t.seq_len, Presence::required, 1, kMaxTokens);
  static const EnumName<Recompute> recompute[] = {
      {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};
  r.read_enum("recompute", t.layout.recompute, Presence::optional, recompute);
  if (r.field("overlap_grad_reduce"))
    r.error("overlap_grad_reduce", "overlap is set in the layout's \"overlap\" object",
            "write \"layout\": {\"overlap\": {\"grad_reduce\": true}}");
  r.read("moe_imbalance", t.moe_imbalance, Presence::optional, 1.0, 64.0);
  read_attention_kernel(r, t.unfused_attention);
}

void parse_inference_stage(ObjectReader& r, StageSpec& s) {
  InferenceStage& i = s.inference;
  if (const Value* l = r.field("layout")) {
    ObjectReader lr(*l, r.pointer_of("layout"), r.diag());
    lr.read("tp", i.tp, Presence::optional, 1, kMaxDegree);
    lr.read("pp", i.pp, Presence::optional, 1, kMaxDegree);
    lr.read("ep", i.ep, Presence::optional, 1, kMaxDegree);
    lr.finish();
  }
  if (const Value* b = r.field("batch", Presence::required)) {
    ObjectReader br(*b, r.pointer_of("batch"), r.diag());
    br.read("sequences", i.sequences, Presence::required, 1, 1 << 24);
    br.read("prefill_tokens", i.prefill_tokens, Presence::optional, 0, kMaxTokens);
    br.read("context_tokens", i.context_tokens, Presence::optional, 0, kMaxTokens);
    br.finish();
    if (br.is_object() && !br.has("prefill_tokens") && !br.has("context_tokens"))
      br.error_here("set \"prefill_tokens\" (a prefill pass) or \"context_tokens\" (a decode step over cached tokens)");
  }
  if (const Value* e = r.field("engine")) {
    ObjectReader er(*e, r.pointer_of("engine"), r.diag());
    er.read("gpu_memory_utilization", i.gpu_memory_utilization, Presence::optional, 0.05, 1.0);
    er.read("max_num_batched_tokens", i.max_num_batched_tokens, Presence::optional, 1, kMaxTokens);
    er.read("max_num_seqs", i.max_num_seqs, Presence::optional, 1, 1 << 20);
    er.finish();
  }
}

void parse_collective_stage(ObjectReader& r, StageSpec& s) {
  CollectiveStage& c = s.collective;
  static const EnumName<int> ops[] = {{"all_reduce", 0}, {"all_gather", 1}, {"reduce_scatter", 2},
                                      {"all_to_all", 3}, {"broadcast", 4},  {"send_recv", 5}};
  int op = 0;
  if (r.read_enum("op", op, Presence::required, ops)) c.op = std::string(ops[op].name);
  r.read_quantity("bytes", Dimension::bytes, c.bytes, Presence::required, 1, 1e15);
  r.read("ranks", c.ranks, Presence::required, 1, 1 << 20);
}

void parse_lengths(ObjectReader& parent, std::string_view key, RequestLengths& l) {
  const Value* v = parent.usable(key, Presence::required);
  if (!v) return;
  if (v->is_number()) {
    parent.read(key, l.mean, Presence::required, 1, 1e8);
    return;
  }
  ObjectReader r(*v, parent.pointer_of(key), parent.diag());
  r.read("mean", l.mean, Presence::required, 1, 1e8);
  r.read("sigma", l.sigma, Presence::optional, 0, 5);
  r.finish();
}

void parse_requests(ObjectReader& r, RolloutStage& ro) {
  const Value* v = r.usable("requests", Presence::required);
  if (!v) return;
  if (v->is_array()) {
    r.for_each_object("requests", [&](ObjectReader& q, size_t) {
      int64_t in = 0, out = 0;
      q.read("input_tokens", in, Presence::required, 1, kMaxTokens);
      q.read("output_tokens", out, Presence::required, 1, kMaxTokens);
      q.finish();
      ro.requests.emplace_back(in, out);
    });
    if (v->items().empty()) r.error("requests", "the request list is empty");
    return;
  }
  ObjectReader q(*v, r.pointer_of("requests"), r.diag());
  if (q.has("trace")) {
    q.read_file_path("trace", ro.trace_path, Presence::required, "trace file");
    q.read("step", ro.trace_step, Presence::optional, 0, int64_t{1} << 31);
  } else {
    q.read("count", ro.count, Presence::required, 1, 1 << 24);
    parse_lengths(q, "input_tokens", ro.input);
    parse_lengths(q, "output_tokens", ro.output);
  }
  q.finish();
}

void parse_rollout_stage(ObjectReader& r, StageSpec& s) {
  RolloutStage& ro = s.rollout;
  if (const Value* e = r.field("engine")) {
    ObjectReader er(*e, r.pointer_of("engine"), r.diag());
    er.read("tp", ro.tp, Presence::optional, 1, kMaxDegree);
    er.read("pp", ro.pp, Presence::optional, 1, kMaxDegree);
    er.read("ep", ro.ep, Presence::optional, 1, kMaxDegree);
    read_engine_settings(er, ro.engine);
    er.finish();
  }
  r.read("engines", ro.engines, Presence::optional, 1, 1 << 16);
  r.read_choice("routing", ro.routing, Presence::optional, routing_policies());
  r.read_choice("tool_policy", ro.tool_policy, Presence::optional, tool_policies());
  parse_requests(r, ro);
  r.read("arrival_rate_per_s", ro.arrival_rate_per_s, Presence::optional, 0, 1e9);
  int64_t seed = 1;
  if (r.read("seed", seed, Presence::optional, 0, std::numeric_limits<int64_t>::max())) ro.seed = static_cast<uint64_t>(seed);
}

// Nodes of gpus_per_node GPUs, as many as `gpus` needs, from the profile's figures.
void build_cluster(const GpuProfile& gpu, int64_t gpus_per_node, int64_t gpus, ClusterSpec& c) {
  c.name = gpu.name + " nodes";
  c.gpu = gpu;
  c.gpus_per_node = gpus_per_node;
  c.nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  c.gpu_link = gpu.gpu_link;
  c.nic_bandwidth_bytes_per_s = gpu.nic_bandwidth_bytes_per_s;
  c.nics_per_node = gpus_per_node;
}

}  // namespace

bool parse_stage(const Value& v, Diagnostics& diag, StageSpec& out) {
  const size_t errors_before = diag.error_count();
  StageSpec s;
  ObjectReader r(v, "", diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  r.read("name", s.name, Presence::optional);
  r.read("description", s.description, Presence::optional);
  static const EnumName<StageKind> kinds[] = {{"train", StageKind::train},
                                              {"inference", StageKind::inference},
                                              {"collective", StageKind::collective},
                                              {"rollout", StageKind::rollout}};
  if (!r.read_enum("kind", s.kind, Presence::required, kinds)) {
    r.finish_ignoring_unknown();
    return false;
  }
  const bool needs_model = s.kind != StageKind::collective;
  if (const Value* m = r.field("model", needs_model ? Presence::required : Presence::optional))
    s.has_model = parse_model(*m, "/model", diag, s.model);
  // fp32: a device measured by `arlsim calibrate --backend cpu` has only an fp32 peak.
  static const EnumName<Dtype> dtypes[] = {
      {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}, {"fp8", Dtype::fp8}, {"fp32", Dtype::fp32}};
  r.read_enum("dtype", s.dtype, Presence::optional, dtypes);
  r.read("memory_fraction", s.usable_memory_fraction, Presence::optional, 0.05, 1.0);
  int64_t gpus_per_node = 8;
  r.read("gpus_per_node", gpus_per_node, Presence::optional, 1, 576);
  switch (s.kind) {
    case StageKind::train: parse_train_stage(r, s); break;
    case StageKind::inference: parse_inference_stage(r, s); break;
    case StageKind::collective: parse_collective_stage(r, s); break;
    case StageKind::rollout: parse_rollout_stage(r, s); break;
  }
  int64_t gpus = s.collective.ranks;
  if (s.kind == StageKind::train) gpus = s.train.layout.gpus();
  if (s.kind == StageKind::inference) gpus = s.inference.tp * s.inference.pp;
  if (s.kind == StageKind::rollout) gpus = s.rollout.tp * s.rollout.pp * s.rollout.engines;
  const Value* cluster = r.field("cluster");
  const Value* gpu = r.field("gpu", cluster ? Presence::optional : Presence::required);
  if (cluster && gpu) r.error("gpu", "give either \"gpu\" or \"cluster\" (whose \"gpu\" it names), not both");
  if (cluster) {
    if (parse_cluster(*cluster, "/cluster", diag, s.cluster) && r.has("gpus_per_node") == false &&
        s.cluster.total_gpus() < gpus && !cluster->unresolved()) {
      // A cluster preset's node count is a default: grow it to what the layout needs.
      s.cluster.nodes = (gpus + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node;
    }
  } else if (gpu) {
    GpuProfile profile;
    if (parse_gpu_profile(*gpu, "/gpu", diag, profile)) build_cluster(profile, gpus_per_node, gpus, s.cluster);
  }
  // A training layout's tp group within a node, as a scenario's; MoE under tp with sequence
  // parallelism, as Megatron requires it (warned, as `check` warns of it).
  if (s.kind == StageKind::train && s.cluster.gpus_per_node > 0) {
    const auto& l = s.train.layout;
    if (l.tp > s.cluster.gpus_per_node)
      r.error("layout", "tp = " + std::to_string(l.tp) + " spans more than the " + std::to_string(s.cluster.gpus_per_node) +
                            " GPUs of one node");
    if (const std::string warning = moe_sequence_parallel_warning(s.has_model && s.model.has_moe, l); !warning.empty())
      if (const Value* layout = r.field("layout")) diag.warning(*layout, "/layout/sequence_parallel", warning);
  }
  // One iteration's batch within the engine's limits; requests within the model's context.
  if (s.kind == StageKind::inference) {
    const auto& in = s.inference;
    const int64_t tokens = in.sequences * std::max<int64_t>(1, in.prefill_tokens);
    if (in.sequences > in.max_num_seqs)
      r.error("batch", std::to_string(in.sequences) + " sequences in one iteration, more than the engine's max_num_seqs (" +
                           std::to_string(in.max_num_seqs) + ")");
    else if (tokens > in.max_num_batched_tokens)
      r.error("batch", std::to_string(tokens) + " tokens in one iteration, more than the engine's max_num_batched_tokens (" +
                           std::to_string(in.max_num_batched_tokens) + "): the engine splits them over iterations (a \"rollout\" "
                           "stage simulates that)");
    if (s.has_model && s.model.max_context > 0 && in.context_tokens + in.prefill_tokens > s.model.max_context)
      r.error("batch", "a context of " + std::to_string(in.context_tokens + in.prefill_tokens) + " tokens is more than the model's " +
                           std::to_string(s.model.max_context));
  }
  if (s.kind == StageKind::rollout && s.has_model && s.model.max_context > 0)
    for (const auto& [input, output] : s.rollout.requests)
      if (input + output > s.model.max_context) {
        r.error("requests", "a request of " + std::to_string(input) + " + " + std::to_string(output) +
                                " tokens is longer than the model's context of " + std::to_string(s.model.max_context));
        break;
      }
  r.finish();
  out = std::move(s);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
