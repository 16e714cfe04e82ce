#include "sim/model/memory.h"

#include <algorithm>
#include <cmath>

#include "sim/model/transformer.h"

namespace arlsim::model {

using input::Recompute;

double MemoryBreakdown::total() const {
  double t = 0;
  for (const auto& [name, bytes] : items) t += bytes;
  return t;
}

double MemoryBreakdown::get(const std::string& name) const {
  for (const auto& [n, bytes] : items)
    if (n == name) return bytes;
  return 0;
}

namespace {

double d(int64_t v) { return static_cast<double>(v); }

int64_t moe_layers_in_stage(const input::ModelSpec& m, int64_t first, int64_t count) {
  int64_t n = 0;
  for (int64_t l = first; l < first + count; ++l) n += m.is_moe_layer(l) ? 1 : 0;
  return n;
}

}  // namespace

StageParams params_per_rank(const input::ModelSpec& m, const input::TrainLayout& l, bool first_stage, bool last_stage) {
  return params_of_stage(m, l, first_stage ? 0 : last_stage ? l.pp - 1 : std::min<int64_t>(1, l.pp - 1));
}

StageParams largest_stage_params(const input::ModelSpec& m, const input::TrainLayout& l) {
  StageParams most;
  for (int64_t s = 0; s < l.pp; ++s) {
    const StageParams p = params_of_stage(m, l, s);
    if (p.total() > most.total()) most = p;
  }
  return most;
}

StageParams params_of_stage(const input::ModelSpec& m, const input::TrainLayout& l, int64_t stage) {
  // Experts split over ep ranks, and each expert over the experts' own tp (TrainLayout::expert_tp).
  return params_of_stage(m, l, stage, l.ep * l.expert_tp());
}

StageParams params_of_stage(const input::ModelSpec& m, const input::TrainLayout& l, int64_t stage, int64_t expert_shards) {
  StageParams p;
  const bool first_stage = stage == 0, last_stage = stage == l.pp - 1;
  const int64_t layers = l.stage_layers(m.num_layers, stage);
  const int64_t first_layer = l.stage_first_layer(m.num_layers, stage);
  const int64_t moe_layers = moe_layers_in_stage(m, first_layer, layers);
  const int64_t dense_layers = layers - moe_layers;
  const double tp = d(l.tp);
  const double norms = 2 * d(m.hidden_size) * (m.norm == input::NormKind::layernorm ? 2 : 1);
  p.dense = d(layers) * (attention_params(m) / tp + norms) + d(dense_layers) * dense_mlp_params(m, m.ffn_hidden_size) / tp;
  if (moe_layers > 0) {
    const auto& e = m.moe;
    const double expert = dense_mlp_params(m, e.expert_ffn_hidden_size);
    double shared = d(e.shared_experts) * expert;
    if (e.shared_expert_ffn_hidden_size > 0) shared += dense_mlp_params(m, e.shared_expert_ffn_hidden_size);
    p.dense += d(moe_layers) * (d(m.hidden_size) * d(e.num_experts) + shared / tp);
    p.experts = d(moe_layers) * d(e.num_experts) * expert / d(expert_shards);
  }
  const double embedding = d(m.vocab_size) * d(m.hidden_size) / tp;
  if (first_stage) p.dense += embedding;
  if (last_stage && (!m.tie_embeddings || l.pp > 1)) p.dense += embedding;  // the LM head
  return p;
}

double layer_activation_bytes(const input::ModelSpec& m, const input::TrainLayout& l, int64_t tokens, bool moe_layer) {
  const double t = d(tokens), h = d(m.hidden_size), tp = d(l.tp);
  const double outside_split = l.sequence_parallel ? tp : 1.0;  // SP splits the non-TP regions too
  if (l.recompute == Recompute::full) return 2 * t * h / outside_split;  // only the layer's input
  // Widths of Q + K + V and of the attention output.
  double qkv = d((m.num_heads + 2 * m.num_kv_heads) * m.head_dim), out = d(m.num_heads * m.head_dim);
  if (m.attention == input::AttentionKind::mla) {
    const double qk = d(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim);
    qkv = d(m.num_heads) * (2 * qk + d(m.mla.v_head_dim));
    out = d(m.num_heads * m.mla.v_head_dim);
  }
  // Two norm inputs, the attention input and the MLP input, 2 bytes each (bf16); with hidden
  // dropout, the two residual adds' one-byte masks.
  const double outside = (8 + (m.hidden_dropout > 0 ? 2 : 0)) * t * h / outside_split;
  // Q, K, V and the attention output, plus fp32 softmax statistics per head (FlashAttention).
  const double attention = (2 * t * qkv + 2 * t * out + 4 * t * d(m.num_heads)) / tp;
  auto mlp = [&](int64_t ffn) { return (m.mlp == input::MlpKind::gated ? 6.0 : 4.0) * t * d(ffn); };
  double mlp_bytes = mlp(m.ffn_hidden_size) / tp;
  if (moe_layer) {
    // Routed tokens: each token's hidden state is copied to its top-k experts; router logits in
    // fp32. A rank routes its tp share of the tokens (train.h, routed_tokens).
    const auto& e = m.moe;
    mlp_bytes = (d(e.experts_per_token) * (2 * t * h + mlp(e.expert_ffn_hidden_size)) + 4 * t * d(e.num_experts)) / tp;
    if (e.shared_experts > 0) mlp_bytes += d(e.shared_experts) * mlp(e.expert_ffn_hidden_size) / tp;
    if (e.shared_expert_ffn_hidden_size > 0) mlp_bytes += mlp(e.shared_expert_ffn_hidden_size) / tp;
  }
  return outside + attention + mlp_bytes;
}

double expert_data_parallel_ranks(const input::TrainLayout& l) {
  return std::max(1.0, d(l.tp * l.dp * l.cp) / d(l.ep * l.expert_tp()));
}

double sharded_params(const StageParams& p, const input::TrainLayout& l) {
  return p.dense / d(l.sharding_ranks()) + p.experts / expert_data_parallel_ranks(l);
}

TrainingState training_state(const input::ModelSpec& m, const input::TrainLayout& l, input::Dtype dtype, bool first_stage,
                             bool last_stage) {
  const double dp = d(l.sharding_ranks());  // states are sharded over dp x cp, or a hybrid shard group
  const double expert_dp = expert_data_parallel_ranks(l);
  const StageParams p = params_per_rank(m, l, first_stage, last_stage);
  auto sharded = [&](double bytes_per_param, int from_stage) {
    const bool shard = l.zero >= from_stage;
    return p.dense * bytes_per_param / (shard ? dp : 1.0) + p.experts * bytes_per_param / (shard ? expert_dp : 1.0);
  };
  const bool fp32 = dtype == input::Dtype::fp32 || dtype == input::Dtype::tf32;
  TrainingState t;
  t.weights = sharded(fp32 ? 4 : 2, 3);
  t.gradients = sharded(4, 2);
  t.optimizer = sharded(fp32 ? 8 : 12, 1);
  t.moments = sharded(8, 1);
  return t;
}

TrainingState training_state(const input::ModelSpec& m, const input::TrainLayout& l, input::Dtype dtype) {
  const TrainingState first = training_state(m, l, dtype, true, l.pp == 1);
  if (l.pp == 1) return first;
  const TrainingState last = training_state(m, l, dtype, false, true);
  return last.total() > first.total() ? last : first;
}

namespace {

// One layer's s x s attention probabilities on a rank when attention runs unfused (bf16; s / cp
// queries against the s keys), else 0.
double unfused_probability_bytes(const input::ModelSpec& m, const input::TrainLayout& l, const TrainShape& shape) {
  if (!shape.unfused_attention) return 0;
  // The bf16 softmax output, and with dropout its one-byte mask and bf16 output (Korthikanti et
  // al.'s 5as^2b: 2 + 1 + 2 bytes per score).
  const double per_score = m.attention_dropout > 0 ? 5.0 : 2.0;
  return per_score * d(shape.micro_batch) * d(m.num_heads / l.tp) * d(shape.seq_len / l.cp) * d(shape.seq_len);
}

}  // namespace

MemoryBreakdown train_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const input::TrainLayout& l,
                             const TrainShape& shape) {
  const int64_t tokens = shape.micro_batch * shape.seq_len / l.cp;
  MemoryBreakdown worst;
  // The first and last stages; with uneven stages every stage (the middle ones may hold the most
  // layers, and stage s keeps pp - s micro-batches in flight under 1F1B).
  std::vector<int64_t> stages{0};
  if (l.pp > 1) stages.push_back(l.pp - 1);
  if (l.uneven_stages())
    for (int64_t s = 1; s + 1 < l.pp; ++s) stages.push_back(s);
  for (const int64_t stage : stages) {
    const bool first = stage == 0, last = stage == l.pp - 1;
    const TrainingState state = training_state(m, l, shape.dtype, first, last);
    MemoryBreakdown b;
    b.capacity_bytes = gpu.memory_bytes * shape.usable_fraction;
    b.items.emplace_back("weights", l.offload_params ? 0.0 : state.weights);
    b.items.emplace_back("gradients", state.gradients);
    b.items.emplace_back("optimizer", l.offload_optimizer ? 0.0 : state.optimizer);
    // 1F1B keeps up to pp - s micro-batches in flight on stage s (pp on the first); interleaving
    // adds (pp - 1) / (pp x vpp) on the first (Korthikanti et al., sec. 4.2.3).
    const int64_t layers = l.stage_layers(m.num_layers, stage);
    double in_flight = d(std::max<int64_t>(1, std::min(l.pp - stage, shape.micro_batches)));
    if (first && l.vpp > 1) in_flight *= 1.0 + d(l.pp - 1) / d(l.pp * l.vpp);
    const int64_t first_layer = l.stage_first_layer(m.num_layers, stage);
    double act = 0, widest_layer = 0;
    input::TrainLayout kept_all = l;
    kept_all.recompute = Recompute::none;
    for (int64_t layer = first_layer; layer < first_layer + layers; ++layer) {
      act += layer_activation_bytes(m, l, tokens, m.is_moe_layer(layer));
      widest_layer = std::max(widest_layer, layer_activation_bytes(m, kept_all, tokens, m.is_moe_layer(layer)));
    }
    // Unfused attention keeps each layer's bf16 s x s probabilities for its backward (Korthikanti
    // et al.'s softmax output, 2as^2b, without dropout's), unless recompute drops them (selective
    // recompute exists for this) — then only the layer being recomputed holds them.
    const double probabilities = unfused_probability_bytes(m, l, shape);
    if (l.recompute == Recompute::none) act += d(layers) * probabilities;
    act *= in_flight;
    if (l.recompute == Recompute::full) act += widest_layer;  // the layer being recomputed
    if (l.recompute != Recompute::none) act += probabilities;
    b.items.emplace_back("activations", act);
    // The LM head's logits in fp32 for the loss, and their bf16 copy.
    b.items.emplace_back("logits", last ? 6.0 * d(tokens) * (shape.value_head ? 1.0 : d(m.vocab_size) / d(l.tp)) : 0.0);
    b.items.emplace_back("reserved", gpu.reserved_memory_bytes);
    if (worst.items.empty() || b.total() > worst.total()) worst = b;
  }
  return worst;
}

MemoryBreakdown forward_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const input::TrainLayout& l,
                               const TrainShape& shape) {
  const int64_t tokens = shape.micro_batch * shape.seq_len / l.cp;
  input::TrainLayout kept_all = l;
  kept_all.recompute = Recompute::none;
  MemoryBreakdown worst;
  for (int stage = 0; stage < (l.pp > 1 ? 2 : 1); ++stage) {
    const bool first = stage == 0, last = stage == 1 || l.pp == 1;
    MemoryBreakdown b;
    b.capacity_bytes = gpu.memory_bytes * shape.usable_fraction;
    b.items.emplace_back("weights", l.offload_params ? 0.0 : training_state(m, l, shape.dtype, first, last).weights);
    const int64_t layers = l.stage_layers(m.num_layers, first ? 0 : l.pp - 1);
    const int64_t first_layer = l.stage_first_layer(m.num_layers, first ? 0 : l.pp - 1);
    double widest_layer = 0;
    for (int64_t layer = first_layer; layer < first_layer + layers; ++layer)
      widest_layer = std::max(widest_layer, layer_activation_bytes(m, kept_all, tokens, m.is_moe_layer(layer)));
    b.items.emplace_back("activations", widest_layer + unfused_probability_bytes(m, l, shape));
    b.items.emplace_back("logits", last ? 6.0 * d(tokens) * (shape.value_head ? 1.0 : d(m.vocab_size) / d(l.tp)) : 0.0);
    b.items.emplace_back("reserved", gpu.reserved_memory_bytes);
    if (worst.items.empty() || b.total() > worst.total()) worst = b;
  }
  return worst;
}

input::Dtype serving_dtype(const input::GpuProfile& gpu) {
  return gpu.peak(input::Dtype::bf16) > 0 || gpu.peak(input::Dtype::fp32) <= 0 ? input::Dtype::bf16 : input::Dtype::fp32;
}

double serving_element_bytes(const input::GpuProfile& gpu) { return serving_dtype(gpu) == input::Dtype::fp32 ? 4.0 : 2.0; }

double kv_bytes_per_token_per_gpu(const input::ModelSpec& m, int64_t tp, int64_t pp, double element_bytes) {
  const double layers = d(m.num_layers) / d(pp);
  if (m.attention == input::AttentionKind::mla)
    return layers * d(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * element_bytes;
  const double heads = std::max(1.0, d(m.num_kv_heads) / d(tp));
  return layers * 2 * heads * d(m.head_dim) * element_bytes;
}

InferenceMemory inference_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const EngineMemoryOptions& o) {
  input::TrainLayout l;
  l.tp = o.tp;
  l.pp = o.pp;
  l.ep = o.ep;
  // An engine splits each expert over tp / ep ranks when tp is the larger (vLLM's expert tensor
  // parallelism without expert parallelism; SGLang's ep_size inside its tp), as the engine's
  // compute prices them (inference.cpp), not training's rule (TrainLayout::expert_tp).
  const StageParams p = params_of_stage(m, l, 0, std::max(l.ep, l.tp));
  InferenceMemory out;
  auto& b = out.breakdown;
  b.capacity_bytes = gpu.memory_bytes * o.gpu_memory_utilization;
  const double element = serving_element_bytes(gpu);  // weights, activations and KV alike
  b.items.emplace_back("weights", element * p.total());
  // Peak activation of one iteration over max_batched_tokens: the widest intermediate (the MLP's
  // gate and up projections, or the QKV output) and the hidden state, plus fp32 logits of the
  // rows that sample a token.
  const double t = d(o.max_batched_tokens);
  const double ffn = m.has_moe ? d(m.moe.expert_ffn_hidden_size * m.moe.experts_per_token) : d(m.ffn_hidden_size);
  const double widest = std::max(2 * ffn / d(o.tp), d((m.num_heads + 2 * m.num_kv_heads) * m.head_dim) / d(o.tp));
  const double sampled = d(std::min(o.max_seqs, o.max_batched_tokens));
  b.items.emplace_back("workspace", element * t * (2 * d(m.hidden_size) + widest) + 4 * sampled * d(m.vocab_size) / d(o.tp));
  b.items.emplace_back("reserved", gpu.reserved_memory_bytes);
  out.kv_bytes_per_token_gpu = kv_bytes_per_token_per_gpu(m, o.tp, o.pp, element);
  const double free_bytes = b.capacity_bytes - b.total();
  out.kv_capacity_tokens = free_bytes > 0 ? static_cast<int64_t>(free_bytes / out.kv_bytes_per_token_gpu) : 0;
  b.items.emplace_back("kv_cache", free_bytes > 0 ? free_bytes : 0.0);
  return out;
}

}  // namespace arlsim::model
