#include "runtime/program.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/core/assert.h"
#include "sim/model/memory.h"
#include "sim/model/transformer.h"
#include "sim/rl/rollout.h"
#include "sim/rl/step.h"

namespace arlsim::runtime {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

Kernel gemm(int64_t m, int64_t n, int64_t k, int32_t weight = -1) {
  Kernel g;
  g.weight = weight;
  g.kind = Kernel::Kind::gemm;
  g.m = std::max<int64_t>(1, m);
  g.n = std::max<int64_t>(1, n);
  g.k = std::max<int64_t>(1, k);
  return g;
}
Kernel memory(double bytes, int64_t launches, model::ElementwiseKind kind) {
  Kernel k;
  k.kind = Kernel::Kind::memory;
  k.bytes = bytes;
  k.launches = launches;
  k.elementwise = kind;
  return k;
}
// Causal attention doing `forward_flops` of work at length `seq_len`: as many heads of the
// calibration's kernel (2 s^2 d FLOPs forward per head, FlashAttention's convention) as make it.
Kernel attention(double forward_flops, int64_t seq_len, int64_t head_dim, bool backward) {
  Kernel k;
  k.kind = Kernel::Kind::attention;
  k.seq_len = std::max<int64_t>(1, seq_len);
  k.head_dim = head_dim;
  k.backward = backward;
  const double per_head = 2.0 * d(k.seq_len) * d(k.seq_len) * d(head_dim);
  k.heads = std::max<int64_t>(1, std::llround(forward_flops / per_head));
  return k;
}
// A weight gradient: `in` x `out` from the `tokens` of the layer's input and output gradient.
Kernel weight_gradient(int64_t in, int64_t out, int64_t tokens) {
  Kernel g = gemm(in, out, tokens);
  g.weight_gradient = true;
  return g;
}
}  // namespace

Kernel copy(double bytes, int64_t peer) {
  Kernel k;
  k.kind = Kernel::Kind::copy;
  k.bytes = bytes;
  k.peer = peer;
  return k;
}

const char* kernel_kind_name(Kernel::Kind kind) {
  switch (kind) {
    case Kernel::Kind::gemm: return "gemm";
    case Kernel::Kind::attention: return "attention";
    case Kernel::Kind::decode_attention: return "decode_attention";
    case Kernel::Kind::memory: return "memory";
    case Kernel::Kind::collective: return "collective";
    case Kernel::Kind::copy: return "copy";
    case Kernel::Kind::wait: return "wait";
  }
  return "kernel";
}

Kernel collective(model::CollectiveOp op, double bytes, int32_t group) {
  Kernel k;
  k.kind = Kernel::Kind::collective;
  k.op = op;
  k.bytes = bytes;
  k.group = group;
  return k;
}

std::vector<Kernel>& Program::on(int64_t device) {
  for (auto& [dev, kernels] : devices)
    if (dev == device) return kernels;
  devices.emplace_back(device, std::vector<Kernel>{});
  return devices.back().second;
}

int32_t Program::group(const DeviceGroup& g) {
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i] == g) return static_cast<int32_t>(i);
  groups.push_back(g);
  return static_cast<int32_t>(groups.size() - 1);
}

void merge_into(Program& into, Program from) {
  std::vector<int32_t> renumbered;
  for (const DeviceGroup& g : from.groups) renumbered.push_back(into.group(g));
  for (auto& [device, kernels] : from.devices) {
    auto& ks = into.on(device);
    for (Kernel& k : kernels) {
      if (k.group >= 0) k.group = renumbered[static_cast<size_t>(k.group)];
      ks.push_back(k);
    }
  }
}

namespace {

// What of one pair of layouts (the base ones, or a schedule entry's) the runtime cannot execute;
// `train_at` and `rollout_at` point at them.
std::string layout_reason(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& t,
                          const std::string& train_at, const std::string& rollout_at) {
  if (t.ep > 1 && t.tp * t.cp > 1)
    return train_at + "/ep: with tp or cp above 1 the experts' groups are ep consecutive devices of the tp x cp x dp "
                      "ones (expert tp 1, as the model prices them), which the runtime does not build yet (its groups "
                      "are data-parallel peers)";
  if (t.ep > 1 && t.dp % t.ep != 0)
    return train_at + "/ep: the runtime's expert-parallel groups are ep consecutive data-parallel ranks, so ep must divide dp";
  if (t.cp > 1 && !t.ulysses)
    return train_at + "/cp_kind: ring attention hides its K and V exchanges under the attention, which the runtime "
                      "does not execute yet (cp_kind \"ulysses\" runs)";
  if (t.pp > 1 && t.vpp > 1 && t.zero >= 3)
    return train_at + "/vpp: ZeRO-3 with virtual pipeline stages is not executed (each chunk would gather its own parameters)";
  if (t.offload_params)
    return train_at + "/offload_params: offloaded weights are not executed yet (their uploads overlap the compute, "
                      "which the runtime does not do)";
  // Pipeline transfers run as blocking transfers between the stages' operations.
  if (t.overlaps_tp_comm() || t.overlaps_grad_reduce() || t.overlaps_param_gather() || (t.pp > 1 && t.overlaps_p2p()))
    return train_at + "/overlap: overlapped communication is not executed yet (set its switches to false)";
  if (r.pp != 1 || r.ep != 1) return rollout_at + ": pp and ep must be 1";
  const std::pair<const char*, const std::optional<input::InferenceLayout>*> passes[] = {
      {"/policy/old_logprob", &s.policy.old_logprob}, {"/policy/ref_logprob", &s.policy.ref_logprob},
      {"/policy/critic", &s.policy.critic}};
  for (const auto& [where, pass] : passes) {
    if (*pass && (*pass)->cp != 1)
      return std::string(where) + "/cp: a pass's context parallelism is ring attention, which the runtime does not "
                                  "execute yet";
    const input::TrainLayout tl = rl::pass_layout(t, *pass);
    // A pass in a layout of its own keeps the training's expert parallelism over its own ranks.
    if (*pass && tl.ep > 1 && (tl.dp % tl.ep != 0 || tl.tp * tl.cp > 1))
      return std::string(where) + ": the training's ep = " + std::to_string(tl.ep) +
             " over this pass's ranks is executed only where ep divides its dp and its tp and cp are 1";
    if (*pass && tl.pp > 1 && tl.overlaps_p2p())
      return std::string(where) + ": its pipeline would overlap its transfers (" + train_at +
             "/overlap/p2p), which is not executed yet";
  }
  return {};
}

}  // namespace

std::string unsupported_reason(const input::ScenarioSpec& s) {
  const bool colocated = s.policy.placement == input::Placement::colocated;
  if (colocated && s.policy.weight_sync == input::WeightSync::broadcast)
    return "/policy/weight_sync/method: broadcast in a colocated plan is not executed (the engines share the training GPUs)";
  if (s.workload.unfused_attention) return "/workload/attention_kernel: unfused attention is not executed yet";
  if (s.policy.weight_sync_state == input::StateSwap::to_cpu && s.policy.swaps_training_state())
    return "/policy/weight_sync/state: a swap through pageable host memory (\"to-cpu\") is not executed yet "
           "(\"pinned\" runs)";
  if (std::string why = layout_reason(s, s.policy.rollout, s.policy.train, "/policy/train", "/policy/rollout"); !why.empty())
    return why;
  // Every scheduled layout too, as it runs: the entry's, the base layout where it gives none.
  for (size_t i = 0; i < s.policy.schedule.size(); ++i) {
    const auto& e = s.policy.schedule[i];
    const std::string at = "/policy/schedule/" + std::to_string(i);
    if (std::string why = layout_reason(s, e.rollout.value_or(s.policy.rollout), e.train.value_or(s.policy.train),
                                        e.train ? at + "/train" : "/policy/train", e.rollout ? at + "/rollout" : "/policy/rollout");
        !why.empty())
      return why;
  }
  if (!colocated && s.policy.weight_sync != input::WeightSync::automatic && s.policy.weight_sync != input::WeightSync::broadcast)
    return "/policy/weight_sync/method: a disaggregated plan's weights are broadcast to its engines";
  return {};
}

void add_engine_iteration(Program& p, const input::ModelSpec& m, const DeviceGroup& engine, const model::IterationBatch& batch,
                          int64_t iterations, double kv_element_bytes, const model::EngineExecution& exec) {
  const int64_t tp = static_cast<int64_t>(engine.size()), h = m.hidden_size, layers = m.num_layers;
  const model::AttentionWidths widths = model::attention_widths(m);
  const int64_t qk = widths.qk, qkv = widths.qkv, out_in = widths.out_in;
  const bool mla = m.attention == input::AttentionKind::mla;
  const bool gated = m.mlp == input::MlpKind::gated;
  const int32_t group = tp > 1 ? p.group(engine) : -1;
  const double kv_per_token = model::kv_bytes_per_token_per_gpu(m, tp, 1, kv_element_bytes);
  for (int64_t it = 0; it < iterations; ++it) {
    const int64_t decode_rows = batch.decode_seqs * batch.decode_rows_per_seq;
    int64_t prefill = 0, sampled = decode_rows;
    for (const auto& ch : batch.prefill) {
      prefill += ch.tokens;
      sampled += ch.completes ? 1 : 0;
    }
    const int64_t rows = prefill + decode_rows;
    const int64_t sequences = batch.decode_seqs + static_cast<int64_t>(batch.prefill.size());
    const double host_s =
        exec.host_fixed_s + exec.host_per_sequence_s * d(sequences) +
        (exec.eager ? exec.dispatch_s * d(model::short_kernels_per_iteration(m, tp, !batch.prefill.empty(), batch.decode_seqs > 0))
                    : 0.0);
    for (int64_t device : engine) {
      auto& ks = p.on(device);
      if (host_s > 0) {
        Kernel host;
        host.kind = Kernel::Kind::wait;
        host.seconds = host_s;
        host.busy = true;
        ks.push_back(host);
      }
      for (int64_t layer = 0; layer < layers; ++layer) {
        const auto w = static_cast<int32_t>(4 * layer);
        ks.push_back(gemm(rows, qkv / tp, h, w));
        for (const auto& ch : batch.prefill) {
          const double pairs = d(ch.tokens) * d(ch.context) + d(ch.tokens) * d(ch.tokens + 1) / 2;
          ks.push_back(attention(2.0 * d(m.num_heads / tp) * d(qk + widths.v) * pairs, ch.context + ch.tokens, qk, false));
        }
        if (batch.decode_seqs > 0) {
          // The batch's cache split evenly over its sequences (the simulator prices the sum);
          // each layer reads its own.
          const int64_t kv_tokens = batch.decode_kv_tokens + it * batch.decode_seqs;
          Kernel a;
          a.kind = Kernel::Kind::decode_attention;
          a.weight = static_cast<int32_t>(layer);
          a.seqs = batch.decode_seqs;
          a.seq_len = std::max<int64_t>(1, (kv_tokens + batch.decode_seqs - 1) / batch.decode_seqs);
          if (mla) {
            // The latent cache, absorbed as engines decode MLA (DeepSeek-V2 sec. 2.1.2): every head
            // of the rank scores its query against each token's kv_lora_rank + qk_rope_head_dim
            // vector and sums its first kv_lora_rank as the value; one cache, whole on each tp rank.
            a.kv_heads = 1;
            a.heads = std::max<int64_t>(1, m.num_heads / tp);
            a.head_dim = m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
            a.value_dim = m.mla.kv_lora_rank;
          } else {
            a.kv_heads = std::max<int64_t>(1, m.num_kv_heads / tp);
            a.heads = std::max<int64_t>(a.kv_heads, m.num_heads / tp / a.kv_heads * a.kv_heads);
            a.head_dim = m.head_dim;
          }
          // A verification step's rows of a sequence query its cache together: more queries on
          // each KV head, the cache read once.
          a.heads *= std::max<int64_t>(1, batch.decode_rows_per_seq);
          a.bytes = kv_per_token * d(kv_tokens) / d(layers);
          ks.push_back(a);
        }
        ks.push_back(gemm(rows, h, out_in / tp, w + 1));
        if (group >= 0) ks.push_back(collective(model::CollectiveOp::all_reduce, d(rows) * d(h) * 2, group));
        if (m.has_moe && m.is_moe_layer(layer)) {
          // The router, the experts the batch's routed rows are expected to reach (grouped, each
          // reading its weights once) and the shared experts, as InferenceModel::gemm_seconds prices them.
          const auto& e = m.moe;
          const model::EngineExperts x = model::engine_experts(m, {tp, 1, 1}, rows);
          ks.push_back(gemm(rows, e.num_experts, h));
          Kernel up = gemm(x.rows_per_expert, (gated ? 2 : 1) * e.expert_ffn_hidden_size / x.expert_tp, h, w + 2);
          Kernel down = gemm(x.rows_per_expert, h, e.expert_ffn_hidden_size / x.expert_tp, w + 3);
          up.groups = down.groups = x.active;
          ks.push_back(up);
          ks.push_back(down);
          const int64_t shared = e.shared_experts * e.expert_ffn_hidden_size + e.shared_expert_ffn_hidden_size;
          if (shared > 0) {
            ks.push_back(gemm(rows, (gated ? 2 : 1) * shared / tp, h));
            ks.push_back(gemm(rows, h, shared / tp));
          }
        } else {
          ks.push_back(gemm(rows, (gated ? 2 : 1) * m.ffn_hidden_size / tp, h, w + 2));
          ks.push_back(gemm(rows, h, m.ffn_hidden_size / tp, w + 3));
        }
        if (group >= 0) ks.push_back(collective(model::CollectiveOp::all_reduce, d(rows) * d(h) * 2, group));
      }
      // The short kernels replay from a graph: their work without launches of their own, by kind
      // as the inference model prices it.
      for (const auto& share : model::inference_elementwise(m, tp))
        ks.push_back(memory(2.0 * d(rows) * share.elements * d(layers), 0, share.kind));
      if (sampled > 0) {
        ks.push_back(gemm(sampled, m.vocab_size / tp, h, static_cast<int32_t>(4 * layers)));
        ks.push_back(memory(3.0 * 4.0 * d(sampled) * d(m.vocab_size) / d(tp), 2, model::ElementwiseKind::norm));  // the sampler's softmax
      }
    }
  }
}

int32_t weights_after(const input::ModelSpec& m, int32_t weight_base) {
  return weight_base + static_cast<int32_t>(4 * m.num_layers) + 1;
}

namespace {
// ZeRO-3: the gathers of tp rank `tp_rank`'s parameters before a pass (bf16, as train.cpp gathers
// them): the dense ones over its shard group, a mixture-of-experts model's experts over their own
// data-parallel group.
std::vector<Kernel> parameter_gathers(Program& p, const input::ModelSpec& m, const input::TrainLayout& l,
                                      const RankGroups& groups, size_t tp_rank) {
  std::vector<Kernel> ks;
  const model::StageParams params = model::largest_stage_params(m, l);
  if (!groups.shard.empty())
    ks.push_back(collective(model::CollectiveOp::all_gather, 2.0 * params.dense, p.group(groups.shard[tp_rank])));
  if (!groups.experts.empty() && params.experts > 0)
    ks.push_back(collective(model::CollectiveOp::all_gather, 2.0 * params.experts, p.group(groups.experts[tp_rank])));
  return ks;
}
}  // namespace

void add_parameter_gathers(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, const DeviceGroup& tp_group,
                           bool forward_only, const RankGroups& groups) {
  for (size_t i = 0; i < tp_group.size(); ++i) {
    const std::vector<Kernel> gathers = parameter_gathers(p, m, l, groups, i);
    auto& ks = p.on(tp_group[i]);
    for (int pass = 0; pass < (forward_only ? 1 : 2); ++pass) ks.insert(ks.end(), gathers.begin(), gathers.end());
  }
}

std::vector<DeviceGroup> shard_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage) {
  std::vector<DeviceGroup> groups;
  const int64_t size = l.sharding_ranks();
  if (l.zero < 3 || size <= 1) return groups;
  for (int64_t tp = 0; tp < l.tp; ++tp) groups.push_back(shard_of(dp_group(l, first_device, tp, stage), size, rank));
  return groups;
}

DeviceGroup shard_of(const DeviceGroup& dp_group, int64_t size, int64_t rank) {
  const auto first = static_cast<size_t>(rank / size * size);
  return DeviceGroup(dp_group.begin() + static_cast<std::ptrdiff_t>(first),
                     dp_group.begin() + static_cast<std::ptrdiff_t>(std::min(dp_group.size(), first + static_cast<size_t>(size))));
}

DeviceGroup replicas_of(const DeviceGroup& dp_group, int64_t size, int64_t rank) {
  DeviceGroup g;
  for (auto i = static_cast<size_t>(rank % size); i < dp_group.size(); i += static_cast<size_t>(size)) g.push_back(dp_group[i]);
  return g;
}

void add_micro_batch(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                     bool forward_only, int32_t weight_base, const RankGroups& groups) {
  add_micro_batch_part(p, m, r, tp_group, {true, !forward_only, 0, m.num_layers, true, true}, weight_base, groups);
}

void add_micro_batch_joins(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                           bool forward_only, int32_t weight_base, const RankGroups& groups) {
  add_part_joins(p, m, r, tp_group, {true, !forward_only, 0, m.num_layers, true, true}, weight_base, groups);
}

void add_part_joins(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                    const PassPart& part, int32_t weight_base, const RankGroups& groups) {
  std::vector<size_t> before;
  for (int64_t device : tp_group) before.push_back(p.on(device).size());
  add_micro_batch_part(p, m, r, tp_group, part, weight_base, groups);
  const bool experts_gathered = !groups.experts.empty() && model::largest_stage_params(m, r.layout).experts > 0;
  for (size_t i = 0; i < tp_group.size(); ++i) {
    const int32_t shard = groups.shard.empty() ? -1 : p.group(groups.shard[i]);
    const int32_t ep = groups.ep.empty() ? -1 : p.group(groups.ep[i]);
    const int32_t experts = experts_gathered ? p.group(groups.experts[i]) : -1;
    auto& ks = p.on(tp_group[i]);
    ks.erase(std::remove_if(ks.begin() + static_cast<std::ptrdiff_t>(before[i]), ks.end(),
                            [&](const Kernel& k) {
                              return k.kind != Kernel::Kind::collective ||
                                     (k.group != shard && k.group != ep && k.group != experts);
                            }),
             ks.end());
  }
}

void add_micro_batch_part(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                          const PassPart& part, int32_t weight_base, const RankGroups& groups) {
  const auto& l = r.layout;
  // Ring attention is refused (unsupported_reason); ep > 1 comes with its groups.
  ARLSIM_ASSERT(l.cp == 1 || (l.ulysses && groups.cp.size() == tp_group.size()));
  ARLSIM_ASSERT(l.ep == 1 || groups.ep.size() == tp_group.size());
  // Each cp rank holds 1 / cp of the sequence's tokens (train.cpp's division).
  const int64_t tp = l.tp, h = m.hidden_size, tokens = l.micro_batch * r.seq_len / l.cp;
  const model::AttentionWidths widths = model::attention_widths(m);
  const int64_t qkv = widths.qkv, out_in = widths.out_in;
  const bool gated = m.mlp == input::MlpKind::gated;
  const int32_t group = tp > 1 ? p.group(tp_group) : -1;
  const std::vector<Kernel> gemms = {gemm(tokens, qkv / tp, h), gemm(tokens, h, out_in / tp),
                                     gemm(tokens, (gated ? 2 : 1) * m.ffn_hidden_size / tp, h),
                                     gemm(tokens, h, m.ffn_hidden_size / tp)};
  const int64_t attention_len = r.attention_len > 0 ? r.attention_len : r.seq_len;
  // Under Ulysses a rank's attention is the whole sequence's for 1 / cp of the tp rank's heads.
  const double attention_flops =
      d(l.micro_batch) * 2.0 * d(m.num_heads / tp) * d(widths.qk + widths.v) * d(r.seq_len) * (d(attention_len) + 1) / 2 / d(l.cp);
  const Kernel attn = attention(attention_flops, attention_len, widths.qk, false);
  Kernel attn_backward = attn;
  attn_backward.backward = true;
  const auto forward_kernels = model::layer_elementwise_kernels(m, r, tokens, m.ffn_hidden_size / tp, false);
  const auto backward_kernels = model::layer_elementwise_kernels(m, r, tokens, m.ffn_hidden_size / tp, true);
  // A mixture-of-experts layer's MLP block (train.cpp's layer_cost): the router, the local experts
  // as grouped GEMMs at the busiest expert's rows, the shared experts as dense MLPs; the permutes
  // of the tokens' top-k copies into expert order and back; their all-to-alls over the ep group.
  std::vector<Kernel> moe_gemms;  // in forward order; the experts' read the layer's MLP weights
  std::vector<model::ElementwiseKernel> moe_forward_kernels, moe_backward_kernels;
  double moe_copies = 0, moe_own = 0, ep_bytes = 0;
  if (m.has_moe) {
    const auto& e = m.moe;
    const model::TrainExperts x = model::train_experts(m, r, tokens);
    // Each tp rank routes its tp share of the tokens (model::routed_tokens).
    const int64_t routed = model::routed_tokens(r, tokens);
    moe_gemms.push_back(gemm(routed, e.num_experts, h));
    Kernel up = gemm(x.rows_per_expert, (gated ? 2 : 1) * e.expert_ffn_hidden_size, h, 2);
    Kernel down = gemm(x.rows_per_expert, h, e.expert_ffn_hidden_size, 3);
    up.groups = down.groups = x.local;
    moe_gemms.push_back(up);
    moe_gemms.push_back(down);
    for (const int64_t ffn : {e.shared_experts * e.expert_ffn_hidden_size, e.shared_expert_ffn_hidden_size})
      if (ffn > 0) {
        moe_gemms.push_back(gemm(tokens, (gated ? 2 : 1) * ffn / tp, h));
        moe_gemms.push_back(gemm(tokens, h, ffn / tp));
      }
    moe_forward_kernels = model::layer_elementwise_kernels(m, r, tokens, x.elementwise_width, false);
    moe_backward_kernels = model::layer_elementwise_kernels(m, r, tokens, x.elementwise_width, true);
    moe_copies = d(routed) * d(e.experts_per_token) * d(h) * 2;
    moe_own = d(routed) * d(h) * 2;
    // The busiest rank receives imbalance x the mean; the group exchanges its largest member's.
    const int64_t exchanged = model::routed_tokens(r, std::max(tokens, groups.ep_tokens));
    ep_bytes = d(exchanged) * d(e.experts_per_token) * d(h) * 2 * r.moe_imbalance;
  }
  const double tp_bytes = d(tokens) * d(h) * 2;
  struct {
    int64_t m, n, k;
  } const head{tokens, r.value_head ? 1 : m.vocab_size / tp, h};
  const double outputs = r.value_head ? 1.0 : d(m.vocab_size) / d(tp);
  // Ulysses' all-to-alls over the cp group: the rank's q, k and v before the attention and its
  // output after (bf16, as train.cpp counts them); the backward moves their gradients the other way.
  const double qkv_bytes = 2.0 * d(tokens) * d(qkv) / d(tp), out_bytes = 2.0 * d(tokens) * d(out_in) / d(tp);
  for (size_t tp_rank = 0; tp_rank < tp_group.size(); ++tp_rank) {
    const int32_t cp_group = groups.cp.empty() ? -1 : p.group(groups.cp[tp_rank]);
    const int32_t ep_group = groups.ep.empty() ? -1 : p.group(groups.ep[tp_rank]);
    // ZeRO-3: the parameters gathered before the forward and again before the backward.
    const std::vector<Kernel> gathers = parameter_gathers(p, m, l, groups, tp_rank);
    auto& ks = p.on(tp_group[tp_rank]);
    auto with_weight = [&](Kernel g, int64_t layer, size_t i) {
      g.weight = weight_base + static_cast<int32_t>(4 * layer) + static_cast<int32_t>(i);
      return g;
    };
    // Tensor parallelism: an all-reduce after the attention's and the MLP's output GEMMs; with
    // sequence parallelism instead an all-gather of the sequence before each block's first GEMM
    // and a reduce-scatter after its last (Korthikanti et al. 2022), as the cost model counts them.
    const auto tp_op = [&](model::CollectiveOp op) { ks.push_back(collective(op, tp_bytes, group)); };
    const bool sp = group >= 0 && l.sequence_parallel;
    const auto cp_op = [&](double bytes) {
      if (cp_group >= 0) ks.push_back(collective(model::CollectiveOp::all_to_all, bytes, cp_group));
    };
    // A mixture-of-experts MLP block, forward or backward (its GEMMs' input and weight gradients
    // in reverse order, the permutes and all-to-alls again, as the model prices them).
    auto moe_block = [&](int64_t layer, bool backward) {
      const auto layer_weight = [&](Kernel g) {
        if (g.weight >= 0) g.weight = weight_base + static_cast<int32_t>(4 * layer) + g.weight;
        return g;
      };
      ks.push_back(memory(moe_own + moe_copies, 1, model::ElementwiseKind::copy));  // into the experts' order
      if (ep_group >= 0) ks.push_back(collective(model::CollectiveOp::all_to_all, ep_bytes, ep_group));
      if (!backward) {
        for (const Kernel& g : moe_gemms) ks.push_back(layer_weight(g));
      } else {
        for (size_t i = moe_gemms.size(); i-- > 0;) {
          const Kernel& g = moe_gemms[i];
          Kernel input = layer_weight(gemm(g.m, g.k, g.n, g.weight)), weights = weight_gradient(g.k, g.n, g.m);
          input.groups = weights.groups = g.groups;
          ks.push_back(input);
          ks.push_back(weights);
        }
      }
      if (ep_group >= 0) ks.push_back(collective(model::CollectiveOp::all_to_all, ep_bytes, ep_group));
      ks.push_back(memory(moe_copies + moe_own, 1, model::ElementwiseKind::copy));  // and back
    };
    auto layer_forward = [&](int64_t layer) {
      if (sp) tp_op(model::CollectiveOp::all_gather);
      ks.push_back(with_weight(gemms[0], layer, 0));
      cp_op(qkv_bytes);
      ks.push_back(attn);
      cp_op(out_bytes);
      ks.push_back(with_weight(gemms[1], layer, 1));
      if (group >= 0) tp_op(sp ? model::CollectiveOp::reduce_scatter : model::CollectiveOp::all_reduce);
      if (sp) tp_op(model::CollectiveOp::all_gather);
      if (m.has_moe && m.is_moe_layer(layer)) {
        moe_block(layer, false);
      } else {
        ks.push_back(with_weight(gemms[2], layer, 2));
        ks.push_back(with_weight(gemms[3], layer, 3));
      }
      if (group >= 0) tp_op(sp ? model::CollectiveOp::reduce_scatter : model::CollectiveOp::all_reduce);
      for (const auto& e : m.has_moe && m.is_moe_layer(layer) ? moe_forward_kernels : forward_kernels)
        ks.push_back(memory(e.bytes, 1, e.kind));
    };
    const auto head_weight = weight_base + static_cast<int32_t>(4 * m.num_layers);
    const int64_t end_layer = part.first_layer + part.layers;
    if (part.forward) {
      ks.insert(ks.end(), gathers.begin(), gathers.end());
      if (part.first_stage) ks.push_back(memory(2.0 * d(tokens) * d(h), 1, model::ElementwiseKind::copy));  // embedding lookup
      for (int64_t layer = part.first_layer; layer < end_layer; ++layer) layer_forward(layer);
      if (part.last_stage) {
        ks.push_back(gemm(head.m, head.n, head.k, head_weight));
        ks.push_back(memory(3.0 * 4.0 * d(tokens) * outputs, 3, model::ElementwiseKind::norm));  // the loss's softmax
      }
    }
    if (!part.backward) continue;
    ks.insert(ks.end(), gathers.begin(), gathers.end());
    // Backward: the loss and the head, then the layers in reverse; each GEMM's input and weight
    // gradients, the attention's backward (recomputing what the layout's recompute drops).
    if (part.last_stage) {
      ks.push_back(memory(3.0 * 4.0 * d(tokens) * outputs, 3, model::ElementwiseKind::norm));  // the loss's softmax
      ks.push_back(gemm(head.m, head.k, head.n, head_weight));  // the input's gradient reads the weight
      ks.push_back(weight_gradient(head.k, head.n, head.m));
    }
    for (int64_t layer = end_layer; layer-- > part.first_layer;) {
      const bool moe = m.has_moe && m.is_moe_layer(layer);
      if (l.recompute == input::Recompute::full) layer_forward(layer);
      if (l.recompute == input::Recompute::selective) {
        // The attention recomputed from the q, k and v its all-to-all left (no all-to-all again).
        ks.push_back(attn);
      }
      for (const auto& e : moe ? moe_backward_kernels : backward_kernels) ks.push_back(memory(e.bytes, 1, e.kind));
      for (size_t g = gemms.size(); g-- > 0;) {
        // Backward the collectives mirror the forward's: a reduce-scatter's gradient is an
        // all-gather (before the block's last GEMM), an all-gather's a reduce-scatter (after its first).
        if (group >= 0 && (g == 3 || g == 1)) tp_op(sp ? model::CollectiveOp::all_gather : model::CollectiveOp::all_reduce);
        if (moe && g == 3) moe_block(layer, true);
        if (!moe || g < 2) {
          ks.push_back(gemm(gemms[g].m, gemms[g].k, gemms[g].n, weight_base + static_cast<int32_t>(4 * layer + static_cast<int64_t>(g))));
          ks.push_back(weight_gradient(gemms[g].k, gemms[g].n, gemms[g].m));
        }
        if (sp && (g == 2 || g == 0)) tp_op(model::CollectiveOp::reduce_scatter);
        if (g == 1) {
          cp_op(out_bytes);
          ks.push_back(attn_backward);
          cp_op(qkv_bytes);
        }
      }
    }
  }
}

void add_optimizer_step(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, const DeviceGroup& dp_group,
                        int64_t reductions) {
  const model::StageParams params = model::largest_stage_params(m, l);
  const double grad_bytes = l.grad_reduce_bytes() * params.dense;  // as train.cpp counts them
  const double weight_bytes = 2.0 * params.dense;
  const int64_t ranks = static_cast<int64_t>(dp_group.size());
  // ZeRO shards over groups of sharding_ranks() consecutive ranks (all of them unless hybrid);
  // hybrid sharding then all-reduces each shard across the groups' replicas, as train.cpp prices it.
  const int64_t size = l.zero >= 1 ? std::min(ranks, l.sharding_ranks()) : ranks;
  // The dense parameters over the shard group, the experts over their own data-parallel group.
  const double shard = l.zero >= 1 ? model::sharded_params(params, l) : params.total();
  for (size_t i = 0; i < dp_group.size(); ++i) {
    const int64_t device = dp_group[i];
    const DeviceGroup mine = shard_of(dp_group, size, static_cast<int64_t>(i));
    const DeviceGroup across = replicas_of(dp_group, size, static_cast<int64_t>(i));
    const int32_t group = mine.size() > 1 ? p.group(mine) : -1;
    auto& ks = p.on(device);
    for (int64_t k = 0; k < reductions; ++k) {
      if (group >= 0 && l.zero == 0) ks.push_back(collective(model::CollectiveOp::all_reduce, grad_bytes, group));
      if (group >= 0 && l.zero >= 1) ks.push_back(collective(model::CollectiveOp::reduce_scatter, grad_bytes, group));
      if (l.zero >= 1 && across.size() > 1)
        ks.push_back(collective(model::CollectiveOp::all_reduce, grad_bytes / d(size), p.group(across)));
    }
    if (l.offload_optimizer)
      // ZeRO-Offload, as train.cpp prices it: the fp32 gradients out to host memory and the bf16
      // weights back, 6 bytes per parameter over the host link, checksummed (the CPU's Adam is
      // not modelled, so not run).
      ks.push_back(copy(6.0 * shard, -1));
    else
      ks.push_back(memory(30.0 * shard, 4, model::ElementwiseKind::add));  // Adam: 30 bytes per parameter of the shard
    if (group >= 0 && l.zero >= 1 && l.zero < 3) ks.push_back(collective(model::CollectiveOp::all_gather, weight_bytes, group));
  }
}

void add_dispatch(Program& p, const std::vector<double>& bytes, const std::vector<int64_t>& producer,
                  const std::vector<int64_t>& receiver) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    Kernel in = copy(bytes[i], -1);  // producer to the controller's memory
    in.m = producer[i];
    p.on(receiver[i]).push_back(in);
    p.on(receiver[i]).push_back(copy(bytes[i], receiver[i]));  // the controller to the rank
  }
}

// Megatron-LM's numbering (graph/placement.h): tp fastest, then cp, then dp, pipeline stages
// outermost; a data rank (dp x cp + cp) is the tp group's index within its stage.
DeviceGroup tp_group(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage) {
  DeviceGroup g;
  for (int64_t i = 0; i < l.tp; ++i) g.push_back(first_device + (stage * l.dp * l.cp + rank) * l.tp + i);
  return g;
}

DeviceGroup dp_group(const input::TrainLayout& l, int64_t first_device, int64_t tp, int64_t stage) {
  DeviceGroup g;
  for (int64_t i = 0; i < l.dp * l.cp; ++i) g.push_back(first_device + (stage * l.dp * l.cp + i) * l.tp + tp);
  return g;
}

std::vector<DeviceGroup> ep_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage) {
  std::vector<DeviceGroup> groups;
  if (l.ep == 1) return groups;
  const int64_t dp = rank / l.cp, cp = rank % l.cp, first_dp = dp / l.ep * l.ep;
  for (int64_t tp = 0; tp < l.tp; ++tp) {
    DeviceGroup g;
    for (int64_t j = 0; j < l.ep; ++j)
      g.push_back(tp_group(l, first_device, (first_dp + j) * l.cp + cp, stage)[static_cast<size_t>(tp)]);
    groups.push_back(g);
  }
  return groups;
}

RankGroups rank_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage) {
  RankGroups g;
  g.shard = shard_groups(l, first_device, rank, stage);
  g.cp = cp_groups(l, first_device, rank, stage);
  g.ep = ep_groups(l, first_device, rank, stage);
  if (l.zero >= 3) {
    for (int64_t tp = 0; tp < l.tp; ++tp) g.experts.push_back(expert_group(l, first_device, rank, stage, tp));
    if (g.experts.front().size() <= 1) g.experts.clear();
  }
  return g;
}

DeviceGroup expert_group(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage, int64_t tp) {
  // Without ep the experts split over tp as the dense layers do: the group is the dense
  // data-parallel one at the device's tp place. With ep (tp 1 here, layout_reason), data rank
  // dp x cp + cp sits at place dp mod ep of its ep group.
  if (l.ep == 1) return dp_group(l, first_device, tp, stage);
  const int64_t place = rank / l.cp % l.ep;
  DeviceGroup g;
  for (int64_t other = 0; other < l.dp * l.cp; ++other)
    if (other / l.cp % l.ep == place) g.push_back(tp_group(l, first_device, other, stage)[static_cast<size_t>(tp)]);
  return g;
}

void add_expert_reduction(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, int64_t first_device,
                          int64_t stage, ExpertPhase phase, int64_t reductions) {
  const double experts = model::largest_stage_params(m, l).experts;
  if (experts <= 0) return;
  const int64_t data_ranks = l.dp * l.cp;
  // Each place's group built once a tp place (data ranks at ep consecutive places).
  std::vector<std::vector<DeviceGroup>> by_place;
  for (int64_t rank = 0; rank < std::min(data_ranks, l.ep * l.cp); rank += l.cp) {
    by_place.emplace_back();
    for (int64_t tp = 0; tp < l.tp; ++tp) by_place.back().push_back(expert_group(l, first_device, rank, stage, tp));
  }
  for (int64_t rank = 0; rank < data_ranks; ++rank) {
    const auto& groups = by_place[static_cast<size_t>(rank / l.cp % l.ep)];
    const DeviceGroup devices = tp_group(l, first_device, rank, stage);
    for (size_t tp = 0; tp < devices.size(); ++tp) {
      const DeviceGroup& g = groups[tp];
      if (g.size() <= 1) continue;
      const int32_t group = p.group(g);
      const double grad_bytes = l.grad_reduce_bytes() * experts;  // as train.cpp counts them
      auto& ks = p.on(devices[tp]);
      if (phase == ExpertPhase::gradients)
        for (int64_t k = 0; k < reductions; ++k)
          ks.push_back(collective(l.zero == 0 ? model::CollectiveOp::all_reduce : model::CollectiveOp::reduce_scatter, grad_bytes, group));
      else if (l.zero >= 1 && l.zero < 3)
        ks.push_back(collective(model::CollectiveOp::all_gather, 2.0 * experts, group));
    }
  }
}

std::vector<DeviceGroup> cp_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage) {
  std::vector<DeviceGroup> groups;
  if (l.cp == 1) return groups;
  const int64_t first_rank = rank / l.cp * l.cp;
  for (int64_t tp = 0; tp < l.tp; ++tp) {
    DeviceGroup g;
    for (int64_t c = 0; c < l.cp; ++c) g.push_back(tp_group(l, first_device, first_rank + c, stage)[static_cast<size_t>(tp)]);
    groups.push_back(g);
  }
  return groups;
}

}  // namespace arlsim::runtime
