// Per-layer arithmetic of a decoder-only transformer: parameter counts, KV-cache bytes per token
// and forward FLOPs per token. Counts follow the weights as the reference implementations create
// them (Hugging Face transformers modeling files); FLOPs count 2 per multiply-accumulate, as in
// Kaplan et al. 2020 ("Scaling laws", section 2.1) and Narayanan et al. 2021 (Megatron-LM, appendix).
#pragma once

#include <cstdint>

#include "sim/input/model.h"

namespace arlsim::model {

struct ParamCounts {
  double total = 0;         // every weight of the main model (MTP modules excluded)
  double active = 0;        // weights used for one token (routed experts: only the top-k)
  double embedding = 0;     // input embedding (+ LM head when untied)
  double attention = 0;     // all layers
  double mlp = 0;           // all layers, all experts
  double norms = 0;
  double mtp = 0;           // multi-token-prediction modules (DeepSeek-V3), reported apart
  double non_embedding() const { return total - embedding; }
};

// Parameters of one layer's attention block (projections, biases, q/k norms).
double attention_params(const input::ModelSpec& m);
// Parameters of one dense MLP of `ffn` hidden units.
double dense_mlp_params(const input::ModelSpec& m, int64_t ffn);
ParamCounts count_params(const input::ModelSpec& m);

// The widths a layer's attention block computes with, as the cost model prices its GEMMs and
// kernels: the query, key and value projections' outputs together (qkv), the output projection's
// input (out_in), and a head's query-key and value dimensions. MLA (DeepSeek-V2) is priced as
// full-width projections of heads x (qk + qk + v), its latent compression not counted apart.
struct AttentionWidths {
  int64_t qkv = 0, out_in = 0, qk = 0, v = 0;
};
AttentionWidths attention_widths(const input::ModelSpec& m);

// KV-cache bytes per token over all layers: 2 x kv_heads x head_dim per layer for GQA; the latent
// plus the rotary key (kv_lora_rank + qk_rope_head_dim) per layer for MLA (DeepSeek-V2, sec. 2.1.2).
int64_t kv_bytes_per_token(const input::ModelSpec& m, int64_t bytes_per_element = 2);

// Forward FLOPs to process one token that attends to `context` tokens (itself included):
// 2 x active matmul weights (LM head included, embedding lookup excluded) plus the attention
// scores and the weighted sum of values, 2 x heads x (qk_dim + v_dim) x context per layer.
double forward_flops_per_token(const input::ModelSpec& m, int64_t context);
// Mean over a causally masked sequence of `seq_len` tokens (token i attends to i + 1 tokens).
double forward_flops_per_token_causal(const input::ModelSpec& m, int64_t seq_len);

}  // namespace arlsim::model
