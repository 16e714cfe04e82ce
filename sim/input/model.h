// ModelSpec: the architecture of a decoder-only transformer, as far as time and memory depend on
// it. Read from arlsim's own JSON (documented in docs/formats.md) or from a Hugging Face
// config.json as published (Llama, Mistral, Qwen2/2.5, Qwen3, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3,
// GPT-NeoX).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "sim/input/parse_names.h"

namespace arlsim::input {


enum class MlpKind {
  gated,    // SwiGLU/GeGLU: gate, up and down projections (Llama, Qwen, Mistral, DeepSeek)
  plain,    // two matrices with a GELU between them (GPT-NeoX, Megatron GPT)
};

enum class NormKind { rmsnorm, layernorm };
// Rotary embeddings on queries and keys in every layer (Llama, Qwen), or learned absolute
// positions added to the input embedding once (GPT-2/3, Megatron's GPT).
enum class PositionEmbedding { rotary, learned };
enum class AttentionKind { gqa, mla };  // multi-head and multi-query attention are GQA's extremes

// Multi-head latent attention (DeepSeek-V2/V3): keys and values are cached as one compressed
// latent of kv_lora_rank plus a shared rotary key of qk_rope_head_dim per token and layer.
struct MlaSpec {
  int64_t q_lora_rank = 0;  // 0: queries are projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// Mixture of experts. Layers [0, first_dense_layers) and those not on the layer_frequency grid
// (or listed in dense_layers) use the dense MLP of ffn_hidden_size instead.
struct MoeSpec {
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_ffn_hidden_size = 0;
  int64_t shared_experts = 0;            // always-active experts of expert_ffn_hidden_size...
  int64_t shared_expert_ffn_hidden_size = 0;  // ...or one shared expert of this size (Qwen2-MoE)
  int64_t first_dense_layers = 0;
  int64_t layer_frequency = 1;
  std::vector<int64_t> dense_layers;
  bool router_bias = false;  // a learned per-expert correction bias (DeepSeek-V3)
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string family;  // llama, qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_neox, ... (informative)
  std::string source;  // "arlsim" or "huggingface"

  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // per-head size of queries, keys and values (GQA)
  int64_t ffn_hidden_size = 0;
  int64_t vocab_size = 0;
  int64_t max_context = 0;

  MlpKind mlp = MlpKind::gated;
  NormKind norm = NormKind::rmsnorm;
  PositionEmbedding position_embedding = PositionEmbedding::rotary;
  AttentionKind attention = AttentionKind::gqa;
  bool tie_embeddings = false;
  bool qkv_bias = false;   // biases on the q, k, v projections
  bool out_bias = false;   // bias on the attention output projection
  bool mlp_bias = false;
  bool qk_norm = false;    // per-head RMSNorm on queries and keys (Qwen3)
  // Dropout probabilities in training: on the hidden states before each residual add, and on the
  // attention probabilities. RL fine-tuning runs without; 2020-22 pre-training runs used 0.1.
  double hidden_dropout = 0;
  double attention_dropout = 0;
  int64_t mtp_layers = 0;  // multi-token-prediction modules, not counted in the main model

  MlaSpec mla;      // meaningful when attention == mla
  bool has_moe = false;
  MoeSpec moe;      // meaningful when has_moe

  bool is_moe_layer(int64_t layer) const;
  int64_t num_moe_layers() const;
};

// Reads a model from `v` (arlsim format, or Hugging Face config.json when it has "model_type" or
// "architectures"), then checks it. Returns false when anything was reported.
bool parse_model(const Value& v, const std::string& pointer, Diagnostics& diag, ModelSpec& out);

// True when the object looks like a Hugging Face config.json.
bool looks_like_hf_config(const Value& v);

}  // namespace arlsim::input
