#include "sim/model/transformer.h"

namespace arlsim::model {

using input::AttentionKind;
using input::MlpKind;
using input::ModelSpec;
using input::NormKind;

namespace {

double norm_params(const ModelSpec& m, int64_t width) {
  return static_cast<double>(width) * (m.norm == NormKind::layernorm ? 2.0 : 1.0);  // LayerNorm has a bias
}

// Matmul weights an MoE layer uses per token, and all it holds.
struct MoeLayer {
  double total = 0;
  double active = 0;
};

MoeLayer moe_layer_params(const ModelSpec& m) {
  const auto& e = m.moe;
  const double expert = dense_mlp_params(m, e.expert_ffn_hidden_size);
  double shared = static_cast<double>(e.shared_experts) * expert;
  if (e.shared_expert_ffn_hidden_size > 0)  // Qwen2-MoE: one wide shared expert and its sigmoid gate
    shared += dense_mlp_params(m, e.shared_expert_ffn_hidden_size) + static_cast<double>(m.hidden_size);
  double router = static_cast<double>(m.hidden_size) * static_cast<double>(e.num_experts);
  if (e.router_bias) router += static_cast<double>(e.num_experts);
  return {router + shared + static_cast<double>(e.num_experts) * expert,
          router + shared + static_cast<double>(e.experts_per_token) * expert};
}

}  // namespace

double attention_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden_size);
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    const double heads = static_cast<double>(m.num_heads);
    const double qk_dim = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    double q = 0;
    if (a.q_lora_rank > 0) {
      const double r = static_cast<double>(a.q_lora_rank);
      q = h * r + r + r * heads * qk_dim;  // down projection, its RMSNorm, up projection
    } else {
      q = h * heads * qk_dim;
    }
    const double c = static_cast<double>(a.kv_lora_rank);
    const double kv = h * (c + static_cast<double>(a.qk_rope_head_dim)) + c +
                      c * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
    const double o = heads * static_cast<double>(a.v_head_dim) * h;
    return q + kv + o;
  }
  const double q_out = static_cast<double>(m.num_heads * m.head_dim);
  const double kv_out = static_cast<double>(m.num_kv_heads * m.head_dim);
  double p = h * q_out + 2 * h * kv_out + q_out * h;
  if (m.qkv_bias) p += q_out + 2 * kv_out;
  if (m.out_bias) p += h;
  if (m.qk_norm) p += 2 * static_cast<double>(m.head_dim);
  return p;
}

double dense_mlp_params(const ModelSpec& m, int64_t ffn) {
  const double h = static_cast<double>(m.hidden_size);
  const double f = static_cast<double>(ffn);
  if (m.mlp == MlpKind::gated) return 3 * h * f + (m.mlp_bias ? 2 * f + h : 0);
  return 2 * h * f + (m.mlp_bias ? f + h : 0);
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden_size);
  const double vocab = static_cast<double>(m.vocab_size);
  c.embedding = vocab * h * (m.tie_embeddings ? 1.0 : 2.0);
  const double attn = attention_params(m);
  const double layer_norms = 2 * norm_params(m, m.hidden_size);
  const double dense = dense_mlp_params(m, m.ffn_hidden_size);
  const MoeLayer moe = m.has_moe ? moe_layer_params(m) : MoeLayer{};
  double active_mlp = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const bool is_moe = m.is_moe_layer(l);
    c.mlp += is_moe ? moe.total : dense;
    active_mlp += is_moe ? moe.active : dense;
  }
  const double layers = static_cast<double>(m.num_layers);
  c.attention = layers * attn;
  c.norms = layers * layer_norms + norm_params(m, m.hidden_size);  // plus the final norm
  c.total = c.embedding + c.attention + c.mlp + c.norms;
  c.active = c.embedding + c.attention + active_mlp + c.norms;
  if (m.mtp_layers > 0) {
    // DeepSeek-V3 MTP module (tech report sec. 2.2): two RMSNorms, a 2h -> h projection and one
    // MoE transformer block, sharing the embedding and the output head with the main model.
    c.mtp = static_cast<double>(m.mtp_layers) *
            (2 * norm_params(m, m.hidden_size) + 2 * h * h + attn + layer_norms + (m.has_moe ? moe.total : dense) +
             norm_params(m, m.hidden_size));
  }
  return c;
}

AttentionWidths attention_widths(const ModelSpec& m) {
  AttentionWidths w;
  if (m.attention == AttentionKind::mla) {
    w.qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    w.v = m.mla.v_head_dim;
    w.qkv = m.num_heads * (2 * w.qk + w.v);
  } else {
    w.qk = w.v = m.head_dim;
    w.qkv = (m.num_heads + 2 * m.num_kv_heads) * m.head_dim;
  }
  w.out_in = m.num_heads * w.v;
  return w;
}

int64_t kv_bytes_per_token(const ModelSpec& m, int64_t bytes_per_element) {
  if (m.attention == AttentionKind::mla)
    return m.num_layers * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * bytes_per_element;
  return m.num_layers * 2 * m.num_kv_heads * m.head_dim * bytes_per_element;
}

double forward_flops_per_token(const ModelSpec& m, int64_t context) {
  const ParamCounts c = count_params(m);
  // The input embedding is a lookup; the LM head is a matmul whether or not it is tied.
  const double lm_head = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
  const double matmul_weights = c.active - c.embedding - c.norms + lm_head;
  const AttentionWidths w = attention_widths(m);
  const double attention = 2.0 * static_cast<double>(m.num_layers) * static_cast<double>(m.num_heads) *
                           static_cast<double>(w.qk + w.v) * static_cast<double>(context);
  return 2.0 * matmul_weights + attention;
}

double forward_flops_per_token_causal(const ModelSpec& m, int64_t seq_len) {
  // Attention is linear in the context, so the mean over i = 1..L is the value at (L + 1) / 2.
  const double base = forward_flops_per_token(m, 0);
  const double per_context = forward_flops_per_token(m, 1) - base;
  return base + per_context * (static_cast<double>(seq_len) + 1.0) / 2.0;
}

}  // namespace arlsim::model
