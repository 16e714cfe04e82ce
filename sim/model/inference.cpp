#include "sim/model/inference.h"

#include <algorithm>
#include <cmath>

#include "sim/model/collective.h"
#include "sim/model/compute.h"
#include "sim/model/transformer.h"

namespace arlsim::model {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

}  // namespace

double DecodeWindow::sum(int64_t k, int64_t kv_tokens) const {
  const double kd = d(k);
  return kd * a + b * (kd * d(kv_tokens) + d(seqs) * kd * (kd - 1) / 2);
}

int64_t DecodeWindow::iterations_within(double seconds, int64_t kv_tokens) const {
  // Largest k with a k + b (k K + D k (k - 1) / 2) <= seconds: the positive root of the quadratic
  // (b D / 2) k^2 + (a + b K - b D / 2) k - seconds = 0, then corrected for rounding.
  if (seconds <= 0) return 0;
  const double qa = b * d(seqs) / 2, qb = a + b * d(kv_tokens) - qa;
  double k = qa > 0 ? (-qb + std::sqrt(qb * qb + 4 * qa * seconds)) / (2 * qa) : seconds / qb;
  auto n = static_cast<int64_t>(std::floor(std::max(0.0, k)));
  while (n > 0 && sum(n, kv_tokens) > seconds) --n;
  while (sum(n + 1, kv_tokens) <= seconds) ++n;
  return n;
}


InferenceModel::InferenceModel(const input::ModelSpec& m, const input::ClusterSpec& c, EngineLayout layout, Speculation spec)
    : InferenceModel(m, c, layout, spec, std::make_shared<AnalyticCostModel>(c, serving_dtype(c.gpu))) {}

InferenceModel::InferenceModel(const input::ModelSpec& m, const input::ClusterSpec& c, EngineLayout layout, Speculation spec,
                               std::shared_ptr<const CostModel> cost)
    : m_(m), c_(c), layout_(layout), spec_(spec), cost_(std::move(cost)) {}

EngineExperts engine_experts(const input::ModelSpec& m, const EngineLayout& layout, int64_t rows) {
  // Experts are spread over the engine's ep ranks. With rows x top-k routed tokens spread
  // uniformly, an expert receives none with probability (1 - 1/E)^(rows k): the expected number
  // of active experts, each of which reads its weights once.
  const auto& e = m.moe;
  const double local = d(e.num_experts) / d(layout.ep);
  const double routed = d(rows) * d(e.experts_per_token);
  const double active_fraction = 1.0 - std::pow(1.0 - 1.0 / d(e.num_experts), routed);
  EngineExperts x;
  x.active = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(local * active_fraction)));
  x.rows_per_expert = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(routed / d(layout.ep) / d(x.active))));
  // Without enough expert parallelism each expert's matrices split over the remaining tp ranks.
  x.expert_tp = std::max<int64_t>(1, layout.tp / layout.ep);
  return x;
}

double InferenceModel::gemm_seconds(int64_t rows) const {
  if (rows <= 0) return 0;
  const CostModel& ops = *cost_;
  const AttentionWidths w = attention_widths(m_);
  const int64_t tp = layout_.tp, h = m_.hidden_size;
  const bool gated = m_.mlp == input::MlpKind::gated;
  double dense_layer = ops.cost(GemmOp{rows, w.qkv / tp, h}).seconds + ops.cost(GemmOp{rows, h, w.out_in / tp}).seconds;
  double moe_layer = dense_layer;
  dense_layer += ops.cost(GemmOp{rows, (gated ? 2 : 1) * m_.ffn_hidden_size / tp, h}).seconds +
                 ops.cost(GemmOp{rows, h, m_.ffn_hidden_size / tp}).seconds;
  if (m_.has_moe) {
    const auto& e = m_.moe;
    const auto [active, per_expert, expert_tp] = engine_experts(m_, layout_, rows);
    moe_layer += ops.cost(GemmOp{rows, e.num_experts, h}).seconds;
    moe_layer += ops.cost(GemmOp{per_expert, (gated ? 2 : 1) * e.expert_ffn_hidden_size / expert_tp, h, active}).seconds +
                 ops.cost(GemmOp{per_expert, h, e.expert_ffn_hidden_size / expert_tp, active}).seconds;
    const int64_t shared = e.shared_experts * e.expert_ffn_hidden_size + e.shared_expert_ffn_hidden_size;
    if (shared > 0)
      moe_layer += ops.cost(GemmOp{rows, (gated ? 2 : 1) * shared / tp, h}).seconds + ops.cost(GemmOp{rows, h, shared / tp}).seconds;
  }
  const int64_t moe_layers = m_.num_moe_layers();
  // With pipeline parallelism the batch still passes through every layer, one stage after another.
  return d(m_.num_layers - moe_layers) * dense_layer + d(moe_layers) * moe_layer;
}

int64_t short_kernels_per_iteration(const input::ModelSpec& m, int64_t tp, bool prefill, bool decode) {
  // Two norms, rotary, two residual adds and the activation (as in training's forward), the
  // KV-cache write, one attention kernel per kind of work, two all-reduces under tensor
  // parallelism; then softmax, sampling and the token's write-back.
  const int64_t per_layer = 6 + 1 + (prefill ? 1 : 0) + (decode ? 1 : 0) + (tp > 1 ? 2 : 0);
  return m.num_layers * per_layer + 3;
}

std::vector<ElementwiseShare> inference_elementwise(const input::ModelSpec& m, int64_t tp) {
  const double h = static_cast<double>(m.hidden_size);
  return {{4.0 * h, ElementwiseKind::norm},
          {6.0 * h, ElementwiseKind::add},
          {3.0 * static_cast<double>(m.ffn_hidden_size) / static_cast<double>(tp), ElementwiseKind::activation}};
}

int64_t InferenceModel::short_kernels_per_iteration(bool prefill, bool decode) const {
  return model::short_kernels_per_iteration(m_, layout_.tp, prefill, decode);
}

double InferenceModel::sampled_rows_seconds(int64_t rows) const {
  if (rows <= 0) return 0;
  const CostModel& ops = *cost_;
  // LM head, then softmax and sampling over fp32 logits.
  return ops.cost(GemmOp{rows, m_.vocab_size / layout_.tp, m_.hidden_size}).seconds +
         ops.cost(MemoryBoundOp{3.0 * 4.0 * d(rows) * d(m_.vocab_size) / d(layout_.tp), 2, 0, ElementwiseKind::norm}).seconds;
}

InferenceModel::RowTerms InferenceModel::compute_row_terms(int64_t rows) const {
  const int64_t tp = layout_.tp;
  RowTerms t;
  t.gemm_s = gemm_seconds(rows);
  // The norms, residual adds and activation of every layer, each priced as its kind.
  const CostModel& ops = *cost_;
  t.elementwise_s = 0;
  for (const auto& share : inference_elementwise(m_, tp))
    t.elementwise_s += ops.cost(MemoryBoundOp{2.0 * d(rows) * share.elements * d(m_.num_layers), 0, 0, share.kind}).seconds;
  if (tp > 1) {
    CollectiveGroup g;
    g.ranks = tp;
    g.ranks_per_node = std::min(tp, c_.gpus_per_node);
    t.comm_s = 2.0 * d(m_.num_layers) * ops.cost(CollectiveCallOp{CollectiveOp::all_reduce, d(rows) * d(m_.hidden_size) * 2, g}).seconds;
  }
  if (layout_.pp > 1) {
    // Stages are tp GPUs apart: neighbours share a node only when two stages fit in one.
    CollectiveGroup g;
    g.ranks = 2;
    g.ranks_per_node = std::clamp<int64_t>(c_.gpus_per_node / tp, 1, 2);
    t.comm_s += d(layout_.pp - 1) * ops.seconds(PointToPointOp{d(rows) * d(m_.hidden_size) * 2, g.ranks_per_node < 2});
  }
  return t;
}

InferenceModel::RowTerms InferenceModel::row_terms(int64_t rows) const {
  // An engine's batches stay within max_num_batched_tokens rows (plus its decodes), so a table
  // indexed by rows covers them; a larger batch (an estimate, a prompt run alone) is priced afresh.
  constexpr int64_t kMaxMemoisedRows = int64_t{1} << 16;
  if (rows < 0 || rows >= kMaxMemoisedRows) return compute_row_terms(rows);
  if (row_terms_.size() <= static_cast<size_t>(rows)) row_terms_.resize(static_cast<size_t>(rows) + 1);
  RowTerms& t = row_terms_[static_cast<size_t>(rows)];
  if (!t.known) {
    t = compute_row_terms(rows);
    t.known = true;
  }
  return t;
}

IterationCost InferenceModel::iteration(const IterationBatch& batch) const {
  const CostModel& ops = *cost_;
  const AttentionWidths w = attention_widths(m_);
  const int64_t tp = layout_.tp;
  IterationCost cost;
  // A pipeline-parallel engine runs as pp virtual engines (vLLM) whose decode batches fill the
  // stages at once: a round gives every decoding sequence its token in the time the whole model
  // takes for 1/pp of them and of their KV (each micro-batch reads a stage's weights again; the KV
  // reads and the compute split). Prefill chunks keep their sequences and are priced whole.
  const int64_t in_flight = std::max<int64_t>(1, layout_.pp);
  const int64_t decode_seqs = (batch.decode_seqs + in_flight - 1) / in_flight;
  const double decode_kv = d(batch.decode_kv_tokens) / d(in_flight);
  const int64_t decode_rows = decode_seqs * batch.decode_rows_per_seq;
  int64_t prefill_tokens = 0, sampled = decode_rows;
  for (const auto& ch : batch.prefill) {
    prefill_tokens += ch.tokens;
    sampled += ch.completes ? 1 : 0;
    // Causal attention of the chunk over its context: q x c + q (q + 1) / 2 query-key pairs.
    const double pairs = d(ch.tokens) * d(ch.context) + d(ch.tokens) * d(ch.tokens + 1) / 2;
    const double layer_flops = 2.0 * d(m_.num_heads / tp) * d(w.qk + w.v) * pairs;
    cost.attention_prefill_s +=
        d(m_.num_layers) * ops.cost(AttentionOp{layer_flops, ch.context + ch.tokens, AttentionPass::forward, w.qk}).seconds;
  }
  const int64_t rows = prefill_tokens + decode_rows;
  const RowTerms terms = row_terms(rows);
  cost.gemm_s = terms.gemm_s + sampled_rows_seconds(sampled);
  const double kv_per_token = kv_bytes_per_token_per_gpu(m_, tp, 1, serving_element_bytes(c_.gpu));  // all layers of all stages
  if (batch.decode_seqs > 0)
    cost.attention_decode_s = ops.seconds(DecodeAttentionOp{kv_per_token * decode_kv, m_.num_layers, decode_seqs});
  cost.elementwise_s = terms.elementwise_s;
  cost.comm_s = terms.comm_s;
  const int64_t sequences = batch.decode_seqs + static_cast<int64_t>(batch.prefill.size());
  cost.overhead_s = exec_.host_fixed_s + exec_.host_per_sequence_s * d(sequences);
  cost.seconds = cost.gemm_s + cost.attention_prefill_s + cost.attention_decode_s + cost.elementwise_s + cost.comm_s +
                 cost.overhead_s;
  cost.short_kernels = short_kernels_per_iteration(!batch.prefill.empty(), batch.decode_seqs > 0);
  if (!exec_.eager) {
    // Replayed from a graph, each short kernel still takes the GPU its node's time.
    const double graph_s = ops.seconds(MemoryBoundOp{0, 0, cost.short_kernels});
    cost.elementwise_s += graph_s;
    cost.seconds += graph_s;
  }
  if (exec_.eager) {
    cost.eager_s = d(cost.short_kernels) * exec_.dispatch_s;
    cost.seconds += cost.eager_s;
  }
  return cost;
}

DecodeWindow InferenceModel::decode_window(int64_t seqs) const {
  if (seqs < static_cast<int64_t>(windows_.size()) && windows_[static_cast<size_t>(seqs)].seqs == seqs && seqs > 0)
    return windows_[static_cast<size_t>(seqs)];
  DecodeWindow w;
  w.seqs = seqs;
  IterationBatch at_zero;
  at_zero.decode_seqs = seqs;
  at_zero.decode_kv_tokens = 0;
  // The only context-dependent term: streaming each cached token's keys and values once (a
  // verification step's k + 1 queries read them once too).
  w.a = iteration(at_zero).seconds;
  // The closed form needs decode attention linear in the KV read: its cost per cached token.
  const int64_t per_slot = (seqs + std::max<int64_t>(1, layout_.pp) - 1) / std::max<int64_t>(1, layout_.pp);
  w.b = cost_->seconds(DecodeAttentionOp{kv_bytes_per_token_per_gpu(m_, layout_.tp, 1, serving_element_bytes(c_.gpu)), 0,
                                         per_slot}) /
        d(std::max<int64_t>(1, layout_.pp));  // a pipelined engine's round reads 1/pp of its KV per stage slot
  if (spec_.on()) {
    at_zero.decode_rows_per_seq = spec_.draft_tokens + 1;
    w.a = (iteration(at_zero).seconds + spec_.draft_s) / spec_.mean_accepted;
    w.b /= spec_.mean_accepted;
  }
  if (seqs > 0 && seqs < (int64_t{1} << 20)) {
    if (windows_.size() <= static_cast<size_t>(seqs)) windows_.resize(static_cast<size_t>(seqs) + 1);
    windows_[static_cast<size_t>(seqs)] = w;
  }
  return w;
}

}  // namespace arlsim::model
