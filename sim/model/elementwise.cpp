// The element-wise kernels of a transformer layer, fused (Megatron-Core's) or as a Hugging Face
// model runs them in eager PyTorch (train.h: layer_elementwise_kernels), which the training and
// forward estimates and the runtime's programs both take.
#include "sim/model/train.h"

#include <algorithm>

namespace arlsim::model {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

// What one layer's element-wise work runs on, for the eager kernels: elements of each tensor (a
// norm's rows and their width; the query and the key columns the rotary embedding and a per-head
// norm touch, apart, as the modules treat them), and the residual add's bytes as the fused
// kernels count them.
struct LayerTensors {
  double rows = 0;          // tokens a norm sees (the rank's share of the sequence under sequence parallelism)
  double tokens = 0;        // tokens the attention and MLP see
  double hidden = 0;        // a norm's width
  double q = 0, k = 0;      // query and key columns on the rank the rotary embedding turns
  bool qk_norm = false;     // a per-head norm on q and k (Qwen3), over rows of head_dim
  double head_dim = 1;
  bool rotary = true;
  double ffn = 0;           // the MLP's activation columns on the rank
  bool gated = true;
  bool layernorm = false;   // nn.LayerNorm: one native kernel each way, as fused
  double residual_add = 0;  // bytes of one residual add
};

// A norm as a Hugging Face model's module computes it in eager PyTorch, over `rows` x `width` bf16
// values. RMSNorm: the input to fp32 (reads 2 bytes an element, writes 4), squared, the mean over
// the row, plus epsilon and its reciprocal root (a value a row), times it, back to bf16, times the
// weight. Its backward as autograd's formulas run in reverse: the weight's gradient (a product and
// a sum over tokens), times the weight, to fp32, times the scale, the scale's gradient (a product
// and a sum over the row), the root's and epsilon's (a row each), the mean's (the gradient spread
// over the row), the square's (x.pow(1), times 2, times the gradient), the two paths summed, to
// bf16. nn.LayerNorm runs one native kernel each way, as the fused norms.
void eager_norm(std::vector<ElementwiseKernel>& k, double rows, double width, bool layernorm, bool backward) {
  const double e = rows * width, row = 8 * rows;  // elements; a row's fp32 value read and written
  if (layernorm) {
    if (!backward) k.push_back({"norm", 4 * e, ElementwiseKind::norm});
    else k.push_back({"norm backward", 6 * e, ElementwiseKind::norm});
    return;
  }
  if (!backward) {
    k.push_back({"norm: to fp32", 6 * e, ElementwiseKind::copy});
    k.push_back({"norm: square", 8 * e, ElementwiseKind::activation});
    k.push_back({"norm: mean", 4 * e, ElementwiseKind::norm});
    k.push_back({"norm: plus epsilon", row, ElementwiseKind::activation});
    k.push_back({"norm: reciprocal root", row, ElementwiseKind::activation});
    k.push_back({"norm: scale", 8 * e, ElementwiseKind::activation});
    k.push_back({"norm: to bf16", 6 * e, ElementwiseKind::copy});
    k.push_back({"norm: weight", 4 * e, ElementwiseKind::activation});
    return;
  }
  k.push_back({"norm backward: weight's gradient product", 6 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: weight's gradient sum", 2 * e, ElementwiseKind::norm});
  k.push_back({"norm backward: times weight", 4 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: to fp32", 6 * e, ElementwiseKind::copy});
  k.push_back({"norm backward: times scale", 8 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: scale's gradient product", 12 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: scale's gradient sum", 4 * e, ElementwiseKind::norm});
  k.push_back({"norm backward: reciprocal root", row, ElementwiseKind::activation});
  k.push_back({"norm backward: reciprocal root's factor", row, ElementwiseKind::activation});
  k.push_back({"norm backward: epsilon", row, ElementwiseKind::activation});
  k.push_back({"norm backward: mean", 4 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: x to the first", 8 * e, ElementwiseKind::copy});
  k.push_back({"norm backward: times 2", 8 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: square's gradient", 12 * e, ElementwiseKind::activation});
  k.push_back({"norm backward: paths summed", 12 * e, ElementwiseKind::add});
  k.push_back({"norm backward: to bf16", 6 * e, ElementwiseKind::copy});
}

// The rotary embedding of `cols` columns (q's or k's) as apply_rotary_pos_emb computes it: half
// negated, the halves concatenated, times cos, times sin, summed (20 bytes an element). Backward:
// the products' gradients, the negation's, the two slices' (each a zero-filled whole tensor and a
// copy of its half), and the input's three gradients summed twice (30 bytes an element).
void eager_rotary(std::vector<ElementwiseKernel>& k, double e, bool backward) {
  if (!backward) {
    k.push_back({"rotary: negate half", 2 * e, ElementwiseKind::activation});
    k.push_back({"rotary: concatenate", 4 * e, ElementwiseKind::copy});
    k.push_back({"rotary: times cos", 4 * e, ElementwiseKind::activation});
    k.push_back({"rotary: times sin", 4 * e, ElementwiseKind::activation});
    k.push_back({"rotary: sum", 6 * e, ElementwiseKind::add});
    return;
  }
  k.push_back({"rotary backward: times cos", 4 * e, ElementwiseKind::activation});
  k.push_back({"rotary backward: times sin", 4 * e, ElementwiseKind::activation});
  k.push_back({"rotary backward: negate half", 2 * e, ElementwiseKind::activation});
  for (const char* half : {"rotary backward: first half's zeros", "rotary backward: second half's zeros"})
    k.push_back({half, 2 * e, ElementwiseKind::copy});
  for (const char* half : {"rotary backward: first half", "rotary backward: second half"})
    k.push_back({half, 2 * e, ElementwiseKind::copy});
  k.push_back({"rotary backward: gradients summed", 6 * e, ElementwiseKind::add});
  k.push_back({"rotary backward: gradients summed again", 6 * e, ElementwiseKind::add});
}

// A layer's element-wise work as a Hugging Face model runs it in eager PyTorch (transformers'
// Llama, Qwen2 and Qwen3 modules: their norms, apply_rotary_pos_emb on q and on k, the gated MLP's
// act_fn(gate) * up), one kernel an operation. Backward, the normed inputs feed separate q, k and
// v projections and separate gate and up projections, so autograd sums their gradients: two adds
// before attention, one before the MLP, on the tokens the projections see.
void eager_layer_kernels(std::vector<ElementwiseKernel>& k, bool backward, const LayerTensors& x) {
  constexpr double b = 2;
  const double f = x.tokens * x.ffn, input_sum = 3 * b * x.tokens * x.hidden;
  if (!backward) {
    eager_norm(k, x.rows, x.hidden, x.layernorm, false);
    if (x.qk_norm) {
      eager_norm(k, x.tokens * x.q / x.head_dim, x.head_dim, x.layernorm, false);
      eager_norm(k, x.tokens * x.k / x.head_dim, x.head_dim, x.layernorm, false);
    }
    if (x.rotary) {
      eager_rotary(k, x.tokens * x.q, false);
      eager_rotary(k, x.tokens * x.k, false);
    }
    k.push_back({"attention residual add", x.residual_add, ElementwiseKind::add});
    eager_norm(k, x.rows, x.hidden, x.layernorm, false);
    if (x.gated) {
      k.push_back({"SiLU", 4 * f, ElementwiseKind::activation});
      k.push_back({"gate times up", 6 * f, ElementwiseKind::activation});
    } else {
      k.push_back({"activation", 4 * f, ElementwiseKind::activation});
    }
    k.push_back({"MLP residual add", x.residual_add, ElementwiseKind::add});
    return;
  }
  k.push_back({"MLP residual add backward", x.residual_add, ElementwiseKind::add});
  if (x.gated) {
    k.push_back({"gate times up backward: gate side", 6 * f, ElementwiseKind::activation});
    k.push_back({"gate times up backward: up side", 6 * f, ElementwiseKind::activation});
    k.push_back({"SiLU backward", 6 * f, ElementwiseKind::activation});
    k.push_back({"MLP input gradients summed", input_sum, ElementwiseKind::add});
  } else {
    k.push_back({"activation backward", 6 * f, ElementwiseKind::activation});
  }
  eager_norm(k, x.rows, x.hidden, x.layernorm, true);
  k.push_back({"attention residual add backward", x.residual_add, ElementwiseKind::add});
  if (x.rotary) {
    eager_rotary(k, x.tokens * x.q, true);
    eager_rotary(k, x.tokens * x.k, true);
  }
  if (x.qk_norm) {
    eager_norm(k, x.tokens * x.q / x.head_dim, x.head_dim, x.layernorm, true);
    eager_norm(k, x.tokens * x.k / x.head_dim, x.head_dim, x.layernorm, true);
  }
  k.push_back({"attention input gradients summed", input_sum, ElementwiseKind::add});
  k.push_back({"attention input gradients summed again", input_sum, ElementwiseKind::add});
  eager_norm(k, x.rows, x.hidden, x.layernorm, true);
}

}  // namespace

std::vector<ElementwiseKernel> layer_elementwise_kernels(const input::ModelSpec& m, const TrainRequest& r,
                                                         int64_t tokens, int64_t ffn_width, bool backward) {
  const auto& l = r.layout;
  constexpr double b = 2;  // bf16 activations
  const double t = d(tokens), h = d(m.hidden_size), tp = d(l.tp);
  // Norms and residual adds see the rank's share of the sequence under sequence parallelism.
  const double ts = l.sequence_parallel && l.tp > 1 ? t / tp : t;
  // Query and key columns the rotary embedding (and a per-head norm) touch on the rank (MLA: every
  // head's rotary part and the one shared key's).
  double q = d(m.num_heads * m.head_dim), kc = d(m.num_kv_heads * m.head_dim);
  if (m.attention == input::AttentionKind::mla) {
    q = d(m.num_heads * m.mla.qk_rope_head_dim);
    kc = d(m.mla.qk_rope_head_dim);
  }
  q /= tp;
  kc /= tp;
  const double qk_width = q + kc;
  const bool gated = m.mlp == input::MlpKind::gated;
  const bool rotary = m.position_embedding == input::PositionEmbedding::rotary;
  // A residual add reads the branch and the residual and writes the sum; with dropout it also
  // writes a one-byte mask. Backward the two gradients are summed (and the mask read).
  const double mask = m.hidden_dropout > 0 ? ts * h : 0.0;
  std::vector<ElementwiseKernel> k;
  if (l.eager_kernels()) {
    LayerTensors x;
    x.rows = ts;
    x.tokens = t;
    x.hidden = h;
    x.q = q;
    x.k = kc;
    x.qk_norm = m.qk_norm;
    x.head_dim = d(std::max<int64_t>(1, m.head_dim));
    x.rotary = rotary;
    x.ffn = d(ffn_width);
    x.gated = gated;
    x.layernorm = m.norm == input::NormKind::layernorm;
    x.residual_add = 3 * b * ts * h + mask;
    eager_layer_kernels(k, backward, x);
    return k;
  }
  if (!backward) {
    // A norm reads the hidden state and writes it normalised.
    k.push_back({"input norm", 2 * b * ts * h, ElementwiseKind::norm});
    if (m.qk_norm) k.push_back({"query-key norm", 2 * b * t * qk_width, ElementwiseKind::norm});
    if (rotary) k.push_back({"rotary embedding", 2 * b * t * qk_width, ElementwiseKind::activation});
    k.push_back({"attention residual add", 3 * b * ts * h + mask, ElementwiseKind::add});
    k.push_back({"post-attention norm", 2 * b * ts * h, ElementwiseKind::norm});
    // SwiGLU reads the gate and up halves and writes their product; GeLU reads and writes one.
    k.push_back({"activation", (gated ? 3 : 2) * b * t * d(ffn_width), ElementwiseKind::activation});
    k.push_back({"MLP residual add", 3 * b * ts * h + mask, ElementwiseKind::add});
  } else {
    // A norm's backward reads the input and the gradient and writes the input's gradient.
    k.push_back({"MLP residual add backward", 3 * b * ts * h + mask, ElementwiseKind::add});
    // SwiGLU backward reads gate, up and the gradient and writes both halves' gradients; GeLU
    // reads its input and the gradient and writes one.
    k.push_back({"activation backward", (gated ? 5 : 3) * b * t * d(ffn_width), ElementwiseKind::activation});
    k.push_back({"post-attention norm backward", 3 * b * ts * h, ElementwiseKind::norm});
    k.push_back({"attention residual add backward", 3 * b * ts * h + mask, ElementwiseKind::add});
    if (rotary) k.push_back({"rotary embedding backward", 2 * b * t * qk_width, ElementwiseKind::activation});
    if (m.qk_norm) k.push_back({"query-key norm backward", 3 * b * t * qk_width, ElementwiseKind::norm});
    k.push_back({"input norm backward", 3 * b * ts * h, ElementwiseKind::norm});
  }
  return k;
}

}  // namespace arlsim::model
