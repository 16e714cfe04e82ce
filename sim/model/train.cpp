#include "sim/model/train.h"

#include <algorithm>
#include <cmath>

#include "sim/core/assert.h"
#include "sim/model/collective.h"
#include "sim/model/compute.h"
#include "sim/model/cost_model.h"
#include "sim/model/transformer.h"

namespace arlsim::model {

using input::Recompute;

namespace {

double d(int64_t v) { return static_cast<double>(v); }

// Chunks a tensor-parallel reduce-scatter is split into when pipelined with its GEMM, and the SMs
// it takes from the GEMM (Transformer Engine userbuffers as NeMo configures them for H100:
// num_splits 4, num_sm 24 with set_sm_margin).
constexpr double kTpOverlapChunks = 4;
constexpr double kTpOverlapSms = 24;

struct LayerCost {
  OpCost gemm;       // forward matmuls of the layer on one rank
  OpCost gemm_backward;  // their input and weight gradients
  OpCost attention;  // forward attention core
  OpCost attention_fwd_bwd;
  OpCost elementwise;  // forward
  OpCost elementwise_backward;
  OpCost moe_permute;  // forward; the backward moves the same bytes
  double tp_comm_s = 0;  // forward; backward has the same volume
  double tp_comm_exposed_s = 0;  // of it, what the GEMMs do not hide
  double ep_comm_s = 0;  // forward dispatch + combine
  double cp_comm_s = 0;  // forward KV exchange
  double ulysses_comm_s = 0;  // forward all-to-alls (Ulysses context parallelism)
};

// Where the ranks of each parallel group sit: Megatron orders them tp, cp, ep/dp, pp from the
// innermost, so tp peers share a node first.
CollectiveGroup group_of(const input::ClusterSpec& c, int64_t size, int64_t stride) {
  return strided_group(size, stride, c.gpus_per_node);
}

// Neighbours `stride` ranks apart sit on different nodes when fewer than two such ranks fit one
// node (ranks fill nodes in order).
bool crosses_node(const input::ClusterSpec& c, int64_t stride) { return group_of(c, 2, stride).ranks_per_node < 2; }

// The backward of a forward GEMM (m x k) x (k x n): the input's gradient, (m x n) x (n x k), and
// the weight's, (k x m) x (m x n), which reduces over the m tokens. Same FLOPs as the forward each,
// but other shapes: the weight gradient's depth is the token count.
OpCost backward_gemms(const CostModel& cost, const GemmOp& f) {
  OpCost c = cost.cost(GemmOp{f.m, f.k, f.n, f.groups});
  c += cost.cost(GemmOp{f.k, f.n, f.m, f.groups});
  return c;
}

}  // namespace

// The experts' data-parallel group (model::expert_data_parallel_ranks): with ep, Megatron's expert
// grid (expert tp 1) numbers the stage's tp x cp x dp devices ep first, so the ranks at one place
// of the ep groups sit ep devices apart (the ep groups themselves being ep consecutive devices, as
// the all-to-alls' group_of(c, ep, 1)); without, the experts split over tp as the dense layers do
// and the group is the dense data-parallel one, tp apart.
CollectiveGroup expert_group_of(const input::ClusterSpec& c, const input::TrainLayout& l) {
  return strided_group(static_cast<int64_t>(expert_data_parallel_ranks(l)), l.ep > 1 ? l.ep : l.tp, c.gpus_per_node);
}

int64_t routed_tokens(const TrainRequest& r, int64_t tokens) {
  return std::max<int64_t>(1, (tokens + r.layout.tp - 1) / r.layout.tp);
}

TrainExperts train_experts(const input::ModelSpec& m, const TrainRequest& r, int64_t tokens) {
  // The ep ranks' routed tokens are spread over their experts; the busiest expert sets the pace.
  const auto& e = m.moe;
  const auto& l = r.layout;
  TrainExperts x;
  x.local = e.num_experts / l.ep;
  const double per_expert = d(routed_tokens(r, tokens)) * d(l.ep) * d(e.experts_per_token) / d(e.num_experts) * r.moe_imbalance;
  x.rows_per_expert = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(per_expert)));
  x.elementwise_width = x.rows_per_expert * x.local * e.expert_ffn_hidden_size / std::max<int64_t>(tokens, 1);
  return x;
}

namespace {

LayerCost layer_cost(const input::ModelSpec& m, const input::ClusterSpec& c, const CostModel& cost, const TrainRequest& r,
                     int64_t tokens, bool moe_layer) {
  const auto& l = r.layout;
  const int64_t tp = l.tp, h = m.hidden_size;
  LayerCost lc;
  const AttentionWidths widths = attention_widths(m);
  const int64_t qk = widths.qk, v = widths.v;
  // The GEMMs each tensor-parallel all-gather feeds (QKV, the MLP's input) and each
  // reduce-scatter drains (the attention output, the MLP's output): what overlap hides them under.
  double feeds[2] = {0, 0}, drains[2] = {0, 0};
  // Overlapped, Transformer Engine's userbuffers run a fed GEMM as tp chunks of rows, one per
  // all-gather step (ring exchange), and a drained GEMM as four chunks pipelined with the
  // reduce-scatter on the SMs the reduce-scatter leaves it (NeMo's H100 settings: 24 SMs with an
  // SM margin); backward the drained GEMM's input gradient runs as tp chunks (ring exchange).
  const bool chunked = l.overlaps_tp_comm() && l.sequence_parallel && tp > 1;
  const double sm = d(c.gpu.sm_count);
  const double margin = sm > kTpOverlapSms ? sm / (sm - kTpOverlapSms) : 1.0;
  auto in_chunks = [&](const GemmOp& op, int64_t chunks, double slowdown) {
    OpCost one = cost.cost(GemmOp{(op.m + chunks - 1) / chunks, op.n, op.k, op.groups});
    one.seconds *= d(chunks) * slowdown;
    one.flops *= d(chunks);
    one.bytes *= d(chunks);
    return one;
  };
  enum class Role { none, feed, drain };
  auto add_gemm = [&](const GemmOp& op, double* slot, Role role) {
    const bool split = chunked && role != Role::none && op.groups == 1;
    const OpCost g = !split              ? cost.cost(op)
                     : role == Role::feed ? in_chunks(op, tp, 1.0)
                                          : in_chunks(op, static_cast<int64_t>(kTpOverlapChunks), margin);
    lc.gemm += g;
    if (split && role == Role::drain) {
      lc.gemm_backward += in_chunks(GemmOp{op.m, op.k, op.n, op.groups}, tp, 1.0);
      lc.gemm_backward += cost.cost(GemmOp{op.k, op.n, op.m, op.groups});
    } else {
      lc.gemm_backward += backward_gemms(cost, op);
    }
    if (slot) *slot += g.seconds;
  };
  add_gemm(GemmOp{tokens, widths.qkv / tp, h}, &feeds[0], Role::feed);
  add_gemm(GemmOp{tokens, h, widths.out_in / tp}, &drains[0], Role::drain);
  const bool gated = m.mlp == input::MlpKind::gated;
  auto dense_mlp = [&](int64_t ffn, int64_t split) {
    add_gemm(GemmOp{tokens, (gated ? 2 : 1) * ffn / split, h}, &feeds[1], Role::feed);
    add_gemm(GemmOp{tokens, h, ffn / split}, &drains[1], Role::drain);
  };
  int64_t ffn_elementwise = m.ffn_hidden_size / tp;
  if (moe_layer) {
    const auto& e = m.moe;
    // Under tensor parallelism the layer's input is split over the tp ranks (sequence
    // parallelism, which Megatron requires with MoE and tp): each rank routes its tokens/tp.
    // With ep the experts are whole on each rank (expert tp 1); without, they split over tp
    // (TrainLayout::expert_tp), priced here at the same FLOPs as t/tp rows of the whole width.
    const int64_t routed = routed_tokens(r, tokens);
    add_gemm(GemmOp{routed, e.num_experts, h}, nullptr, Role::none);  // router
    const auto [local_experts, m_tokens, elementwise_width] = train_experts(m, r, tokens);
    add_gemm(GemmOp{m_tokens, (gated ? 2 : 1) * e.expert_ffn_hidden_size, h, local_experts}, &feeds[1], Role::feed);
    add_gemm(GemmOp{m_tokens, h, e.expert_ffn_hidden_size, local_experts}, &drains[1], Role::drain);
    if (e.shared_experts > 0) dense_mlp(e.shared_experts * e.expert_ffn_hidden_size, tp);
    if (e.shared_expert_ffn_hidden_size > 0) dense_mlp(e.shared_expert_ffn_hidden_size, tp);
    ffn_elementwise = elementwise_width;
    if (l.ep > 1) {
      // Dispatch and combine: each rank sends its tokens' top-k copies; the rank whose experts are
      // busiest receives moe_imbalance times the mean, and the all-to-all waits for it.
      // The ep group is ep consecutive ranks of the tp x cp x dp ones (Megatron's expert grid,
      // expert tensor parallelism 1), so tp peers sit in one group.
      const double bytes = d(routed) * d(e.experts_per_token) * d(h) * 2 * r.moe_imbalance;
      lc.ep_comm_s = 2 * cost.cost(CollectiveCallOp{CollectiveOp::all_to_all, bytes, group_of(c, l.ep, 1)}).seconds;
    }
    // Permuting the routed tokens into their experts' order (read t x h, write the top-k copies)
    // and back (read the copies and their weights, write t x h), forward and backward.
    const double copies = d(routed) * d(e.experts_per_token) * d(h) * 2;
    const double own = d(routed) * d(h) * 2;
    lc.moe_permute += cost.cost(MemoryBoundOp{own + copies, 1, 0, ElementwiseKind::copy});
    lc.moe_permute += cost.cost(MemoryBoundOp{copies + own, 1, 0, ElementwiseKind::copy});
  } else {
    dense_mlp(m.ffn_hidden_size, tp);
  }
  // Causal attention over each sequence, split over cp ranks (load-balanced chunks) and tp heads:
  // L (L + 1) / 2 query-key pairs a sequence, whose mean over sequences of unequal lengths is
  // seq_len x (attention_len + 1) / 2. The kernel runs at the length the work is done at.
  const double seq = d(r.seq_len);
  const int64_t attention_len = r.attention_len > 0 ? r.attention_len : r.seq_len;
  const double attention_flops =
      d(l.micro_batch) * 2.0 * d(m.num_heads / tp) * d(qk + v) * seq * (d(attention_len) + 1) / 2 / d(l.cp);
  if (!r.unfused_attention) {
    // Context parallelism runs the attention as cp ring steps, each a kernel over a block of s / cp
    // queries and s / cp keys: the kernel's efficiency is that of the block's length.
    // Ulysses instead runs one kernel over the whole sequence for heads / cp of the heads.
    const int64_t block = l.ulysses ? attention_len : std::max<int64_t>(1, attention_len / l.cp);
    const int64_t calls = l.ulysses ? 1 : l.cp;
    lc.attention = cost.cost(AttentionOp{attention_flops, block, AttentionPass::forward, qk, calls});
    lc.attention_fwd_bwd = cost.cost(AttentionOp{attention_flops, block, AttentionPass::forward_backward, qk, calls});
  } else {
    // Unfused: per head, the full s x s scores QK^T and the product with V as batched GEMMs (the
    // causal mask is applied to the whole matrix, so no half is saved), and the scale, mask and
    // softmax streaming the scores through HBM: read the scores and write the bf16 probabilities
    // forward; read the probabilities and their gradient and write the scores' gradient backward.
    // Each context-parallel rank holds s / cp queries against the s keys.
    const int64_t groups = l.micro_batch * (m.num_heads / tp);
    const int64_t queries = std::max<int64_t>(1, attention_len / l.cp);
    const GemmOp scores_op{queries, attention_len, qk, groups}, values_op{queries, v, attention_len, groups};
    const OpCost scores = cost.cost(scores_op);
    const OpCost values = cost.cost(values_op);
    const double elements = d(groups) * d(queries) * d(attention_len);
    OpCost softmax = cost.cost(MemoryBoundOp{2.0 * 2 * elements, 1, 0, ElementwiseKind::norm});
    OpCost softmax_backward = cost.cost(MemoryBoundOp{3.0 * 2 * elements, 1, 0, ElementwiseKind::norm});
    if (m.attention_dropout > 0) {
      // Dropout on the probabilities: read them, write the kept ones and a one-byte mask; backward
      // read the gradient and the mask, write the gradient.
      softmax += cost.cost(MemoryBoundOp{(2.0 * 2 + 1) * elements, 1, 0, ElementwiseKind::activation});
      softmax_backward += cost.cost(MemoryBoundOp{(2.0 * 2 + 1) * elements, 1, 0, ElementwiseKind::activation});
    }
    lc.attention = scores;
    lc.attention += values;
    lc.attention += softmax;
    // The backward runs both operands' gradients of each GEMM and the softmax backward.
    lc.attention_fwd_bwd = lc.attention;
    lc.attention_fwd_bwd += backward_gemms(cost, scores_op);
    lc.attention_fwd_bwd += backward_gemms(cost, values_op);
    lc.attention_fwd_bwd += softmax_backward;
  }
  for (const auto& k : layer_elementwise_kernels(m, r, tokens, ffn_elementwise, false))
    lc.elementwise += cost.cost(MemoryBoundOp{k.bytes, 1, 0, k.kind});
  for (const auto& k : layer_elementwise_kernels(m, r, tokens, ffn_elementwise, true))
    lc.elementwise_backward += cost.cost(MemoryBoundOp{k.bytes, 1, 0, k.kind});
  if (tp > 1) {
    const double bytes = d(tokens) * d(h) * 2;
    const auto g = group_of(c, tp, 1);
    if (l.sequence_parallel) {
      // Before the attention and the MLP an all-gather, after each a reduce-scatter.
      const double gather = cost.cost(CollectiveCallOp{CollectiveOp::all_gather, bytes, g}).seconds;
      const double scatter = cost.cost(CollectiveCallOp{CollectiveOp::reduce_scatter, bytes, g}).seconds;
      lc.tp_comm_s = 2 * (gather + scatter);
      lc.tp_comm_exposed_s = lc.tp_comm_s;
      if (l.overlaps_tp_comm()) {
        // Transformer Engine's userbuffers split each collective into chunks pipelined with the
        // GEMM it feeds or drains: the communication shows only beyond the GEMM, and never less
        // than one chunk of it (a quarter: its default of four splits).
        auto exposed = [](double comm, double gemm) { return std::max(comm - gemm, comm / kTpOverlapChunks); };
        lc.tp_comm_exposed_s = 0;
        for (int part = 0; part < 2; ++part)
          lc.tp_comm_exposed_s += exposed(gather, feeds[part]) + exposed(scatter, drains[part]);
      }
    } else {
      // Two all-reduces after the attention and MLP outputs, which wait on them.
      lc.tp_comm_s = 2 * cost.cost(CollectiveCallOp{CollectiveOp::all_reduce, bytes, g}).seconds;
      lc.tp_comm_exposed_s = lc.tp_comm_s;
    }
  }
  if (l.cp > 1 && l.ulysses) {
    // Ulysses: an all-to-all of the rank's q, k and v before the attention and one of its output
    // after, over the cp ranks; the backward moves the same. Nothing hides them.
    const auto g = group_of(c, l.cp, tp);
    lc.ulysses_comm_s = cost.cost(CollectiveCallOp{CollectiveOp::all_to_all, 2.0 * d(tokens) * d(widths.qkv) / d(tp), g}).seconds +
                        cost.cost(CollectiveCallOp{CollectiveOp::all_to_all, 2.0 * d(tokens) * d(widths.out_in) / d(tp), g}).seconds;
  } else if (l.cp > 1) {
    // Ring attention passes the K and V chunks around the cp ranks: cp - 1 exchanges.
    const double kv_bytes = 2.0 * d(tokens) * d(widths.qkv - m.num_heads * qk) / d(tp);  // the keys and values
    lc.cp_comm_s = d(l.cp - 1) * cost.seconds(PointToPointOp{kv_bytes, crosses_node(c, tp)});
  }
  return lc;
}

struct StageTimes {
  double forward = 0, backward = 0, tp = 0, tp_exposed = 0, ep = 0, cp_exposed = 0;
};

StageTimes stage_times(const input::ModelSpec& m, const input::ClusterSpec& c, const CostModel& cost, const TrainRequest& r,
                       int64_t tokens, int64_t stage) {
  const auto& l = r.layout;
  const bool first = stage == 0, last = stage == l.pp - 1;
  const int64_t layers = l.stage_layers(m.num_layers, stage);
  const int64_t first_layer = l.stage_first_layer(m.num_layers, stage);
  StageTimes st;
  // Layers of one kind (dense or MoE) cost the same: price each kind once.
  int64_t moe_layers = 0;
  for (int64_t layer = first_layer; layer < first_layer + layers; ++layer) moe_layers += m.is_moe_layer(layer) ? 1 : 0;
  for (const bool moe : {false, true}) {
    const int64_t count = moe ? moe_layers : layers - moe_layers;
    if (count == 0) continue;
    const LayerCost lc = layer_cost(m, c, cost, r, tokens, moe);
    const double attention_bwd = lc.attention_fwd_bwd.seconds - lc.attention.seconds;
    const double cp_fwd = std::max(0.0, lc.cp_comm_s - lc.attention.seconds) + lc.ulysses_comm_s;
    const double cp_bwd = std::max(0.0, 2 * lc.cp_comm_s - attention_bwd) + lc.ulysses_comm_s;
    const double fwd = lc.gemm.seconds + lc.attention.seconds + lc.elementwise.seconds + lc.moe_permute.seconds +
                       lc.tp_comm_exposed_s + lc.ep_comm_s + cp_fwd;
    double bwd = lc.gemm_backward.seconds + attention_bwd + lc.elementwise_backward.seconds + lc.moe_permute.seconds +
                 lc.tp_comm_exposed_s + lc.ep_comm_s + cp_bwd;
    if (l.recompute == Recompute::full) bwd += fwd;
    if (l.recompute == Recompute::selective) bwd += lc.attention.seconds;
    const double n = d(count);
    st.forward += n * fwd;
    st.backward += n * bwd;
    st.tp += n * 2 * lc.tp_comm_s;
    st.tp_exposed += n * 2 * lc.tp_comm_exposed_s;
    st.ep += n * 2 * lc.ep_comm_s;
    st.cp_exposed += n * (cp_fwd + cp_bwd);
  }
  const int64_t h = m.hidden_size;
  if (first) st.forward += cost.cost(MemoryBoundOp{2.0 * d(tokens) * d(h), 1, 0, ElementwiseKind::copy}).seconds;  // embedding lookup
  if (last) {
    // LM head and the cross-entropy over fp32 logits (a critic's value head: one output per token).
    const GemmOp head_op{tokens, r.value_head ? 1 : m.vocab_size / l.tp, h};
    const OpCost head = cost.cost(head_op);
    const double outputs = r.value_head ? 1.0 : d(m.vocab_size) / d(l.tp);
    const OpCost loss = cost.cost(MemoryBoundOp{3.0 * 4.0 * d(tokens) * outputs, 3, 0, ElementwiseKind::norm});
    st.forward += head.seconds + loss.seconds;
    st.backward += backward_gemms(cost, head_op).seconds + loss.seconds;
  }
  return st;
}

// The pipeline stages whose times can differ.
std::vector<int64_t> pipeline_stages_to_price(const input::ModelSpec& m, const input::TrainLayout& l) {
  // Every stage when they can differ beyond the first and last: uneven stages, or an MoE model
  // whose dense layers fill some stages and not others.
  const bool mixed = m.has_moe && m.num_moe_layers() < m.num_layers;
  std::vector<int64_t> stages{0};
  if (l.uneven_stages() || mixed)
    for (int64_t s = 1; s < l.pp; ++s) stages.push_back(s);
  else if (l.pp > 1)
    stages.push_back(l.pp - 1);
  return stages;
}

// Every stage's times: those priced, and the even stages between the first and the last as the
// first (the embedding lookup that sets it apart is a kernel of microseconds).
std::vector<StageTimes> all_stage_times(const input::ModelSpec& m, const input::ClusterSpec& c, const CostModel& cost,
                                        const TrainRequest& r, int64_t tokens) {
  const auto& l = r.layout;
  std::vector<StageTimes> all(static_cast<size_t>(std::max<int64_t>(1, l.pp)));
  std::vector<bool> priced(all.size(), false);
  for (int64_t stage : pipeline_stages_to_price(m, l)) {
    all[static_cast<size_t>(stage)] = stage_times(m, c, cost, r, tokens, stage);
    priced[static_cast<size_t>(stage)] = true;
  }
  for (size_t s = 0; s < all.size(); ++s)
    if (!priced[s]) all[s] = all[0];
  return all;
}

// The slowest of those by forward + backward (a training slot), and the fill in its slots: the
// other stages' slots, each with `extra` (the exposed sends), over the slowest's. A flow shop of
// micro-batches through stages of unequal times takes its slowest stage's slot per micro-batch
// plus, once, each other stage's slot as the first micro-batch fills and the last drains the
// pipeline (exact when the slowest stage is the last, as the head makes it; an upper bound
// otherwise); with equal stages the fill is the familiar p - 1 (Narayanan et al. 2021, sec. 2.2).
double fill_of(const std::vector<double>& slots, double extra) {
  double most = 0;
  for (double t : slots) most = std::max(most, t + extra);
  if (most <= 0) return d(slots.size()) - 1;
  double fill = -1;  // the slowest's own ratio is exactly 1, so equal stages give exactly p - 1
  for (double t : slots) fill += (t + extra) / most;
  return fill;
}

// Parameters a rank keeps: its ZeRO-3 shard (experts shard over their own data-parallel group),
// or all of its stage's.
double resident_params(const StageParams& p, const input::TrainLayout& l) {
  return l.zero >= 3 ? sharded_params(p, l) : p.total();
}

// ZeRO-3 shards the expert weights over their own data-parallel group (resident_params), so a
// pass of a micro-batch gathers them from it too (bf16), as it gathers the dense ones from the
// shard group; nothing below ZeRO-3 or without experts.
double expert_gather_seconds(const input::ClusterSpec& c, const CostModel& cost, const StageParams& p,
                             const input::TrainLayout& l) {
  const CollectiveGroup g = expert_group_of(c, l);
  if (l.zero < 3 || p.experts <= 0 || g.ranks <= 1) return 0;
  return cost.cost(CollectiveCallOp{CollectiveOp::all_gather, 2.0 * p.experts, g}).seconds;
}

// Uploading a rank's offloaded bf16 weights from host memory, once per pass of a micro-batch.
double weight_upload_seconds(const CostModel& cost, const StageParams& p, const input::TrainLayout& l) {
  return cost.seconds(HostTransferOp{2.0 * resident_params(p, l)});
}

}  // namespace

std::string check_train_request(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r) {
  const auto& l = r.layout;
  if (m.num_heads % l.tp != 0) return "tp = " + std::to_string(l.tp) + " does not divide the model's " + std::to_string(m.num_heads) + " heads";
  if (l.uneven_stages()) {
    if (const std::string problem = l.stage_split_problem(m.num_layers); !problem.empty()) return problem;
  } else if (m.num_layers % (l.pp * l.vpp) != 0) {
    return "pp x vpp = " + std::to_string(l.pp * l.vpp) + " does not divide the model's " + std::to_string(m.num_layers) + " layers";
  }
  if (l.ep > 1 && !m.has_moe) return "expert parallelism (ep = " + std::to_string(l.ep) + ") needs a mixture-of-experts model";
  if (l.ep > 1 && m.moe.num_experts % l.ep != 0) return "ep = " + std::to_string(l.ep) + " does not divide the model's experts";
  if (l.ep > 1 && (l.tp * l.dp * l.cp) % l.ep != 0)
    return "ep = " + std::to_string(l.ep) + " must divide tp x dp x cp = " + std::to_string(l.tp * l.dp * l.cp);
  if (l.gpus() > c.total_gpus())
    return "the layout needs " + std::to_string(l.gpus()) + " GPUs; the cluster has " + std::to_string(c.total_gpus());
  if (r.seq_len % l.cp != 0) return "cp = " + std::to_string(l.cp) + " does not divide seq_len " + std::to_string(r.seq_len);
  if (l.ulysses && l.cp > 1 && (m.num_heads / l.tp) % l.cp != 0)
    return "Ulysses context parallelism splits heads: cp = " + std::to_string(l.cp) + " does not divide the " +
           std::to_string(m.num_heads / l.tp) + " heads of a tensor-parallel rank";
  if (r.global_batch % (l.dp * l.micro_batch) != 0)
    return "global_batch " + std::to_string(r.global_batch) + " is not a multiple of dp x micro_batch = " +
           std::to_string(l.dp * l.micro_batch);
  if (l.shard_group > 0 && ((l.dp * l.cp) % l.shard_group != 0 || l.zero < 1))
    return "shard_group = " + std::to_string(l.shard_group) + " must divide dp x cp = " + std::to_string(l.dp * l.cp) +
           " and needs ZeRO 1-3";
  if ((l.offload_optimizer || l.offload_params) && c.gpu.host_link.achieved() <= 0)
    return "offloading moves weights or optimizer states over the host link, and GPU profile " + c.gpu.name +
           " has no host link bandwidth";
  return {};
}

double estimate_forward_seconds(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r) {
  return estimate_forward_seconds(m, c, r, AnalyticCostModel(c, r.dtype));
}

namespace {
// A forward-only micro-batch's slot on the slowest stage (its sends to the next stage included,
// as far as they are exposed) and the pipeline's fill in such slots.
struct ForwardSlot {
  double seconds = 0, fill = 0;
};
ForwardSlot forward_slot(const input::ModelSpec& m, const input::ClusterSpec& c, const CostModel& cost, const TrainRequest& r) {
  const auto& l = r.layout;
  const int64_t tokens = l.micro_batch * r.seq_len / l.cp;
  std::vector<double> forwards;
  for (const auto& st : all_stage_times(m, c, cost, r, tokens)) forwards.push_back(st.forward);
  const double slowest = *std::max_element(forwards.begin(), forwards.end());
  double sends = 0;
  if (l.pp > 1) {
    const double bytes = d(tokens) * d(m.hidden_size) * 2 / (l.sequence_parallel ? d(l.tp) : 1.0);
    const double p2p = d(l.vpp) * cost.seconds(PointToPointOp{bytes, crosses_node(c, l.tp * l.cp * l.dp)});  // per chunk
    sends = l.overlaps_p2p() ? std::max(0.0, p2p - slowest) : p2p;
  }
  return {slowest + sends, l.pp > 1 ? fill_of(forwards, sends) : 0.0};
}
}  // namespace

double forward_fill_slots(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r) {
  if (r.layout.pp <= 1) return 0;
  ARLSIM_ASSERT(check_train_request(m, c, r).empty());
  return forward_slot(m, c, AnalyticCostModel(c, r.dtype), r).fill;
}

std::vector<double> pipeline_stage_shares(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r) {
  ARLSIM_ASSERT(check_train_request(m, c, r).empty());
  const auto all = all_stage_times(m, c, AnalyticCostModel(c, r.dtype), r, r.layout.micro_batch * r.seq_len / r.layout.cp);
  double most = 0;
  for (const auto& st : all) most = std::max(most, st.forward + st.backward);
  std::vector<double> shares;
  for (const auto& st : all) shares.push_back(most > 0 ? (st.forward + st.backward) / most : 1.0);
  return shares;
}

double estimate_forward_seconds(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r,
                                const CostModel& cost) {
  ARLSIM_ASSERT(check_train_request(m, c, r).empty());
  const auto& l = r.layout;
  const int64_t micro_batches = r.global_batch / (l.dp * l.micro_batch);
  const ForwardSlot slot = forward_slot(m, c, cost, r);
  const double forward = slot.seconds;
  // Forward-only micro-batches fill the pipeline once: (m + fill) slots, the fill p - 1 with equal
  // stages (see fill_of). Offloaded weights are
  // uploaded for each micro-batch, behind the compute as far as it lasts. Under ZeRO-3 (FSDP)
  // every micro-batch's forward first gathers the parameters from the shard group, once: prefetched
  // behind the compute with param_gather overlap (FSDP's default), before it without. The gathers
  // do not shrink as ranks are added, so such a pass scales less than its compute.
  // With virtual stages the pass runs through the interleaved schedule too, filling with pp - 1
  // chunks' forwards: the stages' fill over vpp.
  const double compute = (d(micro_batches) + slot.fill / d(l.vpp)) * forward;
  const StageParams p = largest_stage_params(m, l);
  const double uploads = l.offload_params ? d(micro_batches) * weight_upload_seconds(cost, p, l) : 0.0;
  double gathers = 0;
  const auto shard_group = group_of(c, l.sharding_ranks(), l.tp);
  if (l.zero >= 3 && shard_group.ranks > 1)
    gathers = d(micro_batches) * cost.cost(CollectiveCallOp{CollectiveOp::all_gather, 2.0 * p.dense, shard_group}).seconds;
  gathers += d(micro_batches) * expert_gather_seconds(c, cost, p, l);
  return l.overlaps_param_gather() ? std::max(compute, gathers + uploads) : gathers + std::max(compute, uploads);
}

TrainEstimate estimate_train(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r) {
  return estimate_train(m, c, r, AnalyticCostModel(c, r.dtype));
}

TrainEstimate estimate_train(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r,
                             const CostModel& cost) {
  ARLSIM_ASSERT(check_train_request(m, c, r).empty());
  const auto& l = r.layout;
  TrainEstimate e;
  e.micro_batches = r.global_batch / (l.dp * l.micro_batch);
  const int64_t tokens = l.micro_batch * r.seq_len / l.cp;

  // The slowest stage sets the pipeline's pace: the first (embedding), the last (LM head, loss),
  // and with uneven stages one of the others.
  StageTimes slowest;
  const std::vector<StageTimes> stages = all_stage_times(m, c, cost, r, tokens);
  std::vector<double> stage_slots;
  for (const StageTimes& st : stages) {
    if (st.forward + st.backward > slowest.forward + slowest.backward) slowest = st;
    stage_slots.push_back(st.forward + st.backward);
  }
  auto& b = e.breakdown;
  b.forward_s = slowest.forward;
  b.backward_s = slowest.backward;
  b.tp_comm_s = slowest.tp;
  b.tp_comm_exposed_s = slowest.tp_exposed;
  b.ep_comm_s = slowest.ep;
  b.cp_comm_exposed_s = slowest.cp_exposed;
  if (l.pp > 1) {
    // Activations forward and gradients backward between neighbouring stages, once per model chunk:
    // with interleaving a micro-batch crosses each stage vpp times, so the point-to-point traffic
    // grows by vpp as the bubble shrinks by it (Narayanan et al. 2021, sec. 2.2).
    const double bytes = d(tokens) * d(m.hidden_size) * 2 / (l.sequence_parallel ? d(l.tp) : 1.0);
    b.pp_comm_s = 2 * d(l.vpp) * cost.seconds(PointToPointOp{bytes, crosses_node(c, l.tp * l.cp * l.dp)});
  }
  // Overlapped (the interleaved schedule's default), each chunk's transfers run under the next
  // chunk's compute and show only beyond it.
  b.pp_comm_exposed_s = l.overlaps_p2p() ? std::max(0.0, b.pp_comm_s - b.forward_s - b.backward_s) : b.pp_comm_s;
  const double slot = b.forward_s + b.backward_s + b.pp_comm_exposed_s;
  b.fill_slots = l.pp > 1 ? fill_of(stage_slots, b.pp_comm_exposed_s) : 0.0;
  const double bubble_slots = b.fill_slots / d(l.vpp);
  b.pipeline_s = (d(e.micro_batches) + bubble_slots) * slot;
  b.bubble_fraction = bubble_slots / d(e.micro_batches);  // (p - 1) / (v m), relative to the ideal time

  // Gradient reduction over dp x cp ranks (experts over their own data-parallel group), in the
  // layout's reduction dtype; ZeRO-3 gathers the bf16 weights.
  const StageParams p = largest_stage_params(m, l);
  const auto dp_group = group_of(c, l.dp * l.cp, l.tp);
  const double grad_bytes = l.grad_reduce_bytes() * p.dense;
  // Gradients are reduce-scattered under ZeRO (the distributed optimizer, FSDP) and all-reduced
  // otherwise; under ZeRO 1-2 the updated parameters are then all-gathered in bf16, whatever the
  // gradients' dtype (ZeRO-3 keeps them sharded and gathers them for each micro-batch, below).
  struct Traffic {
    double grads = 0, params = 0;
  };
  auto data_parallel = [&](double parameters, const CollectiveGroup& g) {
    Traffic t;
    if (g.ranks <= 1 || parameters <= 0) return t;
    const CollectiveOp reduce = l.zero == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
    t.grads = cost.cost(CollectiveCallOp{reduce, l.grad_reduce_bytes() * parameters, g}).seconds;
    if (l.zero == 1 || l.zero == 2) t.params = cost.cost(CollectiveCallOp{CollectiveOp::all_gather, 2.0 * parameters, g}).seconds;
    return t;
  };
  Traffic dense = data_parallel(p.dense, group_of(c, l.zero >= 1 ? l.sharding_ranks() : dp_group.ranks, l.tp));
  if (l.zero >= 1 && l.sharding_ranks() < dp_group.ranks) {
    // Hybrid sharding: the reduce-scatter within a shard group, then each shard all-reduced across
    // the groups' replicas (ranks sharding_ranks() x tp apart).
    CollectiveGroup across;
    across.ranks = dp_group.ranks / l.sharding_ranks();
    across.ranks_per_node = std::clamp<int64_t>(c.gpus_per_node / (l.tp * l.sharding_ranks()), 1, across.ranks);
    dense.grads += cost.cost(CollectiveCallOp{CollectiveOp::all_reduce, grad_bytes / d(l.sharding_ranks()), across}).seconds;
  }
  const Traffic experts = data_parallel(p.experts, expert_group_of(c, l));
  // One reduction of the gradients an optimizer step, or one a micro-batch where ZeRO-2 and -3
  // reduce them after every backward.
  const double reductions = l.reduces_each_micro_batch() ? d(e.micro_batches) : 1.0;
  const double reduction = dense.grads + experts.grads, params = dense.params + experts.params;
  const double grads = reductions * reduction;
  b.dp_comm_s = grads + params;
  // With overlap the gradient buckets reduce while the backward that filled them runs (the last
  // micro-batch's when reduced once), and the updated parameters are gathered bucket by bucket as
  // the next iteration's first forward needs them; the last bucket reduced after a backward and
  // the first gathered cannot hide. Megatron's buckets hold max(40M, 1M x dp) parameters
  // (Megatron-Core's DistributedDataParallel); FSDP's unit is a layer.
  const double rank_params = p.total();
  const double bucket_params =
      l.zero >= 3 ? rank_params / d(std::max<int64_t>(1, l.stage_layers(m.num_layers, 0))) : std::max(40e6, 1e6 * d(l.dp * l.cp));
  const double bucket_share = rank_params > 0 ? std::min(1.0, bucket_params / rank_params) : 1.0;
  // Parameters fetched for the forward and the backward of each micro-batch: ZeRO-3 gathers them
  // from the data-parallel ranks (prefetched behind the compute with param_gather overlap, FSDP's
  // default; on the critical path without), and with offloaded weights each rank first uploads its
  // part (its shard under ZeRO-3, else all its weights) from host memory over the host link,
  // prefetched.
  double gathers = 0, uploads = 0;
  const auto shard_group = group_of(c, l.sharding_ranks(), l.tp);  // ZeRO-3 gathers within it
  if (l.zero >= 3 && shard_group.ranks > 1)
    gathers = 2 * d(e.micro_batches) * cost.cost(CollectiveCallOp{CollectiveOp::all_gather, 2.0 * p.dense, shard_group}).seconds;
  gathers += 2 * d(e.micro_batches) * expert_gather_seconds(c, cost, p, l);
  if (l.offload_params) uploads = 2 * d(e.micro_batches) * weight_upload_seconds(cost, p, l);
  // Overlapped, each reduction runs under the backward that filled it (and the next micro-batch's
  // forward); only the last bucket of the last one has nothing after it. FSDP's gathers and its
  // reductions after every backward share the data-parallel links under the whole pipeline's
  // compute: what they need beyond it shows, or at least that last tail.
  const double tail = reduction * bucket_share;
  const bool shared_links = l.zero >= 3 && l.reduces_each_micro_batch() && l.overlaps_grad_reduce() && l.overlaps_param_gather();
  double grads_exposed = grads, fetches_exposed = 0;
  if (shared_links) {
    grads_exposed = 0;
    fetches_exposed = std::max(tail, gathers + uploads + grads - b.pipeline_s);
  } else {
    if (l.overlaps_grad_reduce()) grads_exposed = std::max(tail, reductions * std::max(0.0, reduction - b.backward_s));
    fetches_exposed = l.overlaps_param_gather() ? std::max(0.0, gathers + uploads - b.pipeline_s)
                                                : gathers + std::max(0.0, uploads - b.pipeline_s);
  }
  const double params_exposed =
      l.overlaps_param_gather() ? std::max(params - b.forward_s, params * bucket_share) : params;
  b.dp_comm_exposed_s = grads_exposed + params_exposed + fetches_exposed;

  // Adam over the local shard: read fp32 master, gradient and two moments, write them back and
  // the bf16 copy: 30 bytes per parameter. Offloaded (ZeRO-Offload, Ren et al. 2021), the fp32
  // gradients go to host memory, Adam runs on the CPU and the bf16 weights come back: 6 bytes per
  // parameter over the host link (the CPU's Adam time itself is not modelled).
  const double shard = l.zero >= 1 ? sharded_params(p, l) : p.total();
  b.optimizer_s = l.offload_optimizer ? cost.seconds(HostTransferOp{6.0 * shard}) : cost.cost(MemoryBoundOp{30.0 * shard, 4, 0, ElementwiseKind::add}).seconds;

  e.iteration_s = b.pipeline_s + b.dp_comm_exposed_s + b.optimizer_s;
  const double tokens_per_iteration = d(r.global_batch) * d(r.seq_len);
  e.tokens_per_s = tokens_per_iteration / e.iteration_s;
  e.model_flops_per_token = 3.0 * forward_flops_per_token_causal(m, r.seq_len);
  e.model_tflops_per_gpu = e.model_flops_per_token * e.tokens_per_s / d(l.gpus()) / 1e12;
  e.mfu = e.model_tflops_per_gpu * 1e12 / cost.peak_flops();
  TrainShape shape;
  shape.micro_batch = l.micro_batch;
  shape.seq_len = r.seq_len;
  shape.micro_batches = e.micro_batches;
  shape.usable_fraction = r.usable_memory_fraction;
  shape.value_head = r.value_head;
  shape.dtype = r.dtype;
  shape.unfused_attention = r.unfused_attention;
  e.memory = train_memory(m, c.gpu, l, shape);
  return e;
}

}  // namespace arlsim::model
