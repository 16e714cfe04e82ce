// The cost-model interface: the analytic implementation prices each typed operation exactly as the
// kernel and collective models do, and composite estimates are built from the interface alone, so
// a fake cost model (a table-driven one, later) changes them as the arithmetic says.
#include <doctest/doctest.h>

#include <memory>

#include "sim/model/cost_model.h"
#include "sim/model/inference.h"
#include "sim/model/train.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;
using namespace arlsim::model;

namespace {

// Every GEMM kernel takes 1 ms (a grouped one 1 ms per group); nothing else takes time.
class GemmOnly final : public CostModel {
 public:
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* g = std::get_if<GemmOp>(&op)) c.seconds = 1e-3 * static_cast<double>(g->groups);
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

}  // namespace

TEST_CASE("cost model: the analytic implementation is the kernel and collective models") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const AnalyticCostModel a(c, input::Dtype::bf16);
  const ComputeModel cm(c.gpu, input::Dtype::bf16);
  const CollectiveModel coll(c);
  CHECK(a.seconds(GemmOp{4096, 4096, 4096}) == cm.gemm(4096, 4096, 4096).seconds);
  CHECK(a.seconds(GemmOp{512, 1024, 2048, 8}) == cm.grouped_gemm(8, 512, 1024, 2048).seconds);
  CHECK(a.seconds(AttentionOp{1e12, 8192, AttentionPass::forward}) == cm.attention(1e12, 8192, AttentionPass::forward).seconds);
  CHECK(a.seconds(MemoryBoundOp{1e9, 3}) == cm.memory_bound(1e9, 3).seconds);
  {
    // A kind the profile measured is priced by its own table.
    auto k = c;
    k.gpu.memory_by_kernel[static_cast<int>(input::ElementwiseKind::norm)] = {{1 << 20, 1e12}, {1 << 30, 1e12}};
    const AnalyticCostModel ak(k, input::Dtype::bf16);
    const ComputeModel ck(k.gpu, input::Dtype::bf16);
    CHECK(ak.seconds(MemoryBoundOp{1e9, 1, 0, input::ElementwiseKind::norm}) ==
          test::near(1e9 / 1e12 + ck.launch_overhead_s()));
    CHECK(ak.seconds(MemoryBoundOp{1e9, 1, 0, input::ElementwiseKind::copy}) == ck.memory_bound(1e9, 1).seconds);
  }
  // Decode attention: the KV bytes at the memory-bound rate, one launch per layer.
  CHECK(a.seconds(DecodeAttentionOp{1e9, 32}) == test::near(1e9 / cm.memory_rate() + 32 * cm.launch_overhead_s()));
  const CollectiveGroup g{16, 8};
  CHECK(a.seconds(CollectiveCallOp{CollectiveOp::all_reduce, 1e8, g}) == coll.cost(CollectiveOp::all_reduce, 1e8, g).seconds);
  // A host copy: its bytes at the host link's rate and the copy's fixed time (5.4 us on an H100).
  CHECK(c.gpu.host_copy_overhead.seconds() == test::near(5.4e-6));
  CHECK(a.seconds(HostTransferOp{1e9}) == test::near(1e9 / c.gpu.host_link.achieved() + 5.4e-6));
  // Point to point: NCCL send/recv between two ranks on one node, or on two.
  CHECK(a.seconds(PointToPointOp{1e8, false}) == coll.cost(CollectiveOp::send_recv, 1e8, {2, 2}).seconds);
  CHECK(a.seconds(PointToPointOp{1e8, true}) == coll.cost(CollectiveOp::send_recv, 1e8, {2, 1}).seconds);
  CHECK(a.seconds(PointToPointOp{1e8, true}) > a.seconds(PointToPointOp{1e8, false}));
  CHECK(a.seconds(WaitOp{2.5}) == 2.5);
  CHECK(a.peak_flops() == cm.peak_flops());
}

TEST_CASE("cost model: a training forward pass is the sum of its operations' costs") {
  // Llama-3.1-8B, no parallelism, one micro-batch: each of the 32 dense layers runs 4 GEMMs (QKV,
  // output, gated MLP up, down) and the last stage the LM head: 4 x 32 + 1 = 129 ms with the fake.
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  TrainRequest r;
  r.seq_len = 1024;
  r.global_batch = 1;
  REQUIRE(check_train_request(m, c, r).empty());
  CHECK(estimate_forward_seconds(m, c, r, GemmOnly()) == test::near(0.129));
  // Training: the backward runs each GEMM twice more (3 x 129 ms per iteration), the optimizer
  // step and the gradient reduction are not GEMMs.
  const auto e = estimate_train(m, c, r, GemmOnly());
  CHECK(e.breakdown.forward_s == test::near(0.129));
  CHECK(e.breakdown.backward_s == test::near(0.258));
  // The analytic model gives a different, positive time through the same code.
  CHECK(estimate_forward_seconds(m, c, r) > 0);
  CHECK(estimate_forward_seconds(m, c, r) != test::near(0.129));
}

TEST_CASE("cost model: an engine iteration is priced by the cost model it is given") {
  // One decode row through Llama-3.1-8B at tp 1: 4 GEMMs per layer x 32 layers, and the LM head for
  // the sampled row: 129 ms with the fake, whatever the KV length (decode attention is free).
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  const InferenceModel im(m, c, {1, 1, 1}, {}, std::make_shared<GemmOnly>());
  IterationBatch b;
  b.decode_seqs = 1;
  b.decode_kv_tokens = 4096;
  CHECK(im.iteration(b).gemm_s == test::near(0.129));
  CHECK(im.decode_window(1).b == 0);
}

TEST_CASE("cost model: collective groups come from placements") {
  // tp 4 x dp 4 from GPU 0, 8 GPUs a node: a TP group is 4 ranks on one node; a DP group is 4
  // ranks 4 apart, two to a node; a TP group of 8 ranks across 2 nodes of 4 spans both.
  const graph::Placement p({4, 1, 4, 1, graph::RankOrder::pipeline_outer}, 0, 8);
  const auto tp = collective_group(p, graph::GroupDim::tp, 5);
  CHECK(tp.ranks == 4);
  CHECK(tp.ranks_per_node == 4);
  const auto dp = collective_group(p, graph::GroupDim::dp, 5);
  CHECK(dp.ranks == 4);
  CHECK(dp.ranks_per_node == 2);
  CHECK(dp.nodes() == 2);
  const graph::Placement wide({8, 1, 1, 1, graph::RankOrder::pipeline_outer}, 0, 4);
  CHECK(collective_group(wide, graph::GroupDim::tp, 0).nodes() == 2);
  CHECK(crosses_nodes(wide, 3, wide, 4));
  CHECK_FALSE(crosses_nodes(wide, 0, wide, 3));
}

TEST_CASE("cost model: attention's work goes with the token-weighted mean length of unequal sequences") {
  // Attention priced at 1 s per TFLOP, nothing else: Llama-3.1-8B (32 layers, 32 heads of 128 for
  // q.k and for v), one sequence of mean length 1,000 per micro-batch. Equal lengths:
  // 32 x 2 x 32 x 256 x 1000 x 1001 / 2 FLOPs. Lengths whose sum(L^2) / sum(L) is 3,000 (a mean
  // of 1,000 with a long tail): 1000 x 3001 / 2 query-key pairs per sequence.
  class AttentionOnly final : public CostModel {
   public:
    OpCost cost(const Op& op) const override {
      OpCost c;
      if (const auto* a = std::get_if<AttentionOp>(&op)) c.seconds = a->forward_flops * 1e-12;
      return c;
    }
    double peak_flops() const override { return 1e15; }
  };
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  TrainRequest r;
  r.seq_len = 1000;
  r.global_batch = 1;
  const double per_pair = 32 * 2.0 * 32 * 256 * 1e-12;
  CHECK(estimate_forward_seconds(m, c, r, AttentionOnly()) == test::near(per_pair * 1000 * 1001 / 2));
  r.attention_len = 3000;
  CHECK(estimate_forward_seconds(m, c, r, AttentionOnly()) == test::near(per_pair * 1000 * 3001 / 2));
}

TEST_CASE("cost model: unfused attention is two batched GEMMs per head and keeps the probabilities") {
  // With every GEMM at 1 ms per group: Llama-3.1-8B, one 1,000-token sequence, tp 1. Per layer the
  // 4 linear GEMMs, then QK^T and AV batched over the 32 heads (32 ms each): 68 ms; 32 layers and
  // the LM head: 2,177 ms. (Flash attention is not a GEMM: 129 ms, as above.)
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  TrainRequest r;
  r.seq_len = 1000;
  r.global_batch = 1;
  r.unfused_attention = true;
  CHECK(estimate_forward_seconds(m, c, r, GemmOnly()) == test::near(2.177));
  // Memory: each layer keeps 32 heads x 1000 x 1000 bf16 probabilities for its backward.
  const auto unfused = estimate_train(m, c, r).memory.get("activations");
  r.unfused_attention = false;
  const auto flash = estimate_train(m, c, r).memory.get("activations");
  CHECK(unfused - flash == test::near(32 * 2.0 * 32 * 1000 * 1000));
  // Selective recompute drops them but for the layer being recomputed.
  r.layout.recompute = input::Recompute::selective;
  r.unfused_attention = true;
  const auto selective = estimate_train(m, c, r).memory.get("activations");
  r.unfused_attention = false;
  CHECK(selective - estimate_train(m, c, r).memory.get("activations") == test::near(2.0 * 32 * 1000 * 1000));
  // With attention dropout each score also keeps a one-byte mask and the bf16 dropped copy: 5 bytes.
  auto dropped = m;
  dropped.attention_dropout = 0.1;
  r.layout.recompute = input::Recompute::none;
  r.unfused_attention = true;
  CHECK(estimate_train(dropped, c, r).memory.get("activations") - flash == test::near(32 * 5.0 * 32 * 1000 * 1000));
}

namespace {

// GEMMs at 1 PFLOP/s (time proportional to FLOPs, so splitting one changes nothing); all-gathers
// 3 ms, reduce-scatters 0.5 ms, all-reduces 2 ms; nothing else takes time.
class GemmsAndCollectives final : public CostModel {
 public:
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* g = std::get_if<GemmOp>(&op))
      c.seconds = 2.0 * static_cast<double>(g->m * g->n * g->k * g->groups) / 1e15;
    if (const auto* k = std::get_if<CollectiveCallOp>(&op)) {
      if (k->group.ranks <= 1) return c;
      c.seconds = k->op == CollectiveOp::all_gather ? 3e-3 : k->op == CollectiveOp::reduce_scatter ? 0.5e-3 : 2e-3;
    }
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

TrainRequest overlap_request(int64_t tp, int64_t dp, int64_t zero) {
  TrainRequest r;
  r.layout.tp = tp;
  r.layout.dp = dp;
  r.layout.zero = zero;
  r.layout.sequence_parallel = tp > 1;
  r.seq_len = 1024;
  r.global_batch = dp;
  return r;
}

}  // namespace

TEST_CASE("cost model: tensor-parallel overlap hides each collective under its GEMM, never its last chunk") {
  const auto m = test::preset_model("llama-3.1-8b");  // 32 dense layers, h 4096, 8 KV heads, MLP 14336
  const auto c = test::own_cluster(1);                // 128 SMs
  const GemmsAndCollectives fake;
  auto r = overlap_request(4, 1, 1);
  const auto plain = estimate_train(m, c, r, fake).breakdown;
  // Per layer and pass: 2 all-gathers (3 ms) and 2 reduce-scatters (0.5 ms), all exposed.
  CHECK(plain.tp_comm_s == test::near(32 * 2 * 2 * 3.5e-3));
  CHECK(plain.tp_comm_exposed_s == test::near(plain.tp_comm_s));
  r.layout.overlap.tp_comm = true;
  const auto hidden = estimate_train(m, c, r, fake).breakdown;
  CHECK(hidden.tp_comm_s == test::near(plain.tp_comm_s));
  // 1,024 tokens on the rank. The all-gathers feed QKV (1024 x 1536 x 4096) and the MLP's input
  // (1024 x 7168 x 4096), run as 4 row chunks (same time here); the reduce-scatters drain the
  // output projection (1024 x 4096 x 1024) and the MLP's output (1024 x 4096 x 3584), run in four
  // chunks on 128 - 24 of the 128 SMs. Each collective shows beyond its GEMM, and at least a
  // quarter of it.
  const double flop_s = 2.0 / 1e15, margin = 128.0 / 104;
  const double qkv = flop_s * 1024 * 1536 * 4096, up = flop_s * 1024 * 7168 * 4096;
  const double out = flop_s * 1024 * 4096 * 1024 * margin, down = flop_s * 1024 * 4096 * 3584 * margin;
  auto shown = [](double comm, double gemm) { return std::max(comm - gemm, comm / 4); };
  const double per_pass = shown(3e-3, qkv) + shown(3e-3, up) + shown(0.5e-3, out) + shown(0.5e-3, down);
  CHECK(hidden.tp_comm_exposed_s == test::near(32 * 2 * per_pass));
  // The forward and backward lose what stopped being exposed, and pay the drained GEMMs' lost SMs.
  const double margin_cost = 32 * (out + down) * (1 - 1 / margin);
  CHECK(plain.forward_s + plain.backward_s - hidden.forward_s - hidden.backward_s ==
        test::near(plain.tp_comm_exposed_s - hidden.tp_comm_exposed_s - margin_cost));
  CHECK(hidden.dp_comm_exposed_s == plain.dp_comm_exposed_s);
}

TEST_CASE("cost model: gradient-reduce and parameter-gather overlap hide under the last backward and first forward") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  const GemmsAndCollectives fake;
  auto r = overlap_request(1, 8, 1);  // ZeRO-1: reduce-scatter 0.5 ms, all-gather 3 ms
  const auto plain = estimate_train(m, c, r, fake).breakdown;
  CHECK(plain.dp_comm_s == test::near(3.5e-3));
  CHECK(plain.dp_comm_exposed_s == test::near(3.5e-3));  // Megatron's default: no overlap
  r.layout.overlap.grad_reduce = true;
  r.layout.overlap.param_gather = true;
  const auto both = estimate_train(m, c, r, fake).breakdown;
  // 8B parameters on the rank, buckets of max(40M, 8M) = 40M: the last bucket's share of each
  // collective stays exposed, as the backward (about 32 ms) and forward (16 ms) outlast them.
  const double share = 40e6 / model::params_per_rank(m, r.layout, true, true).total();
  CHECK(both.dp_comm_exposed_s == test::near(share * 3.5e-3));
  r.layout.overlap.param_gather = false;
  CHECK(estimate_train(m, c, r, fake).breakdown.dp_comm_exposed_s == test::near(share * 0.5e-3 + 3e-3));
  // ZeRO-3 (FSDP) overlaps both by default and gathers no updated parameters.
  auto z3 = overlap_request(1, 8, 3);
  const auto fsdp = estimate_train(m, c, z3, fake).breakdown;
  CHECK(fsdp.dp_comm_s == test::near(0.5e-3));
  z3.layout.overlap.param_gather = false;  // the per-micro-batch gathers: 2 x 3 ms on the critical path
  CHECK(estimate_train(m, c, z3, fake).breakdown.dp_comm_exposed_s == test::near(fsdp.dp_comm_exposed_s + 6e-3));
}

namespace {

// GemmsAndCollectives with its collectives priced by their bytes instead (1 ms a GB, times
// `scale`), counting the bytes it was asked to gather and to reduce.
struct CollectivesByBytes final : CostModel {
  explicit CollectivesByBytes(double s = 1.0) : scale(s) {}
  double scale;
  mutable double gathered = 0, reduced = 0;
  OpCost cost(const Op& op) const override {
    const auto* k = std::get_if<CollectiveCallOp>(&op);
    if (!k || k->group.ranks <= 1) return GemmsAndCollectives().cost(op);
    (k->op == CollectiveOp::all_gather ? gathered : reduced) += k->bytes;
    OpCost c;
    c.seconds = scale * k->bytes / 1e12;
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

}  // namespace

TEST_CASE("cost model: ZeRO-2 and -3 reduce the gradients after every micro-batch, ZeRO 0-1 once an optimizer step") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  const GemmsAndCollectives fake;  // all-gathers 3 ms, reduce-scatters 0.5 ms, all-reduces 2 ms
  auto request = [](int64_t zero) {
    auto r = overlap_request(1, 8, zero);
    r.global_batch = 4 * 8;  // four micro-batches a rank
    return r;
  };
  // ZeRO-0: one all-reduce; ZeRO-1: one reduce-scatter and the updated parameters' all-gather.
  CHECK(estimate_train(m, c, request(0), fake).breakdown.dp_comm_s == test::near(2e-3));
  CHECK(estimate_train(m, c, request(1), fake).breakdown.dp_comm_s == test::near(0.5e-3 + 3e-3));
  // ZeRO-2 keeps only its gradients' shard: four reduce-scatters, then the one all-gather, all on
  // the critical path without overlap (DeepSpeed's and Megatron's default).
  const auto z2 = estimate_train(m, c, request(2), fake).breakdown;
  CHECK(z2.dp_comm_s == test::near(4 * 0.5e-3 + 3e-3));
  CHECK(z2.dp_comm_exposed_s == test::near(z2.dp_comm_s));
  // ZeRO-3: four reduce-scatters and no updated parameters to gather; FSDP overlaps them and the
  // per-micro-batch gathers (8 x 3 ms) under the compute, which outlasts them (four micro-batches
  // of 1,024 tokens of 8B parameters, about 50 ms each): only the last layer's share of the last
  // reduction shows.
  const auto z3 = estimate_train(m, c, request(3), fake).breakdown;
  CHECK(z3.dp_comm_s == test::near(4 * 0.5e-3));
  CHECK(z3.pipeline_s > 8 * 3e-3 + 4 * 0.5e-3);
  CHECK(z3.dp_comm_exposed_s == test::near(0.5e-3 / 32));
}

TEST_CASE("cost model: FSDP's gathers and reductions share the links under the compute; beyond it they show") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  auto r = overlap_request(1, 8, 3);
  r.global_batch = 4 * 8;
  r.layout.grad_reduce_fp32 = false;  // bf16 both ways: the dense parameters' 2 bytes each
  const double params = model::params_per_rank(m, r.layout, true, true).dense;
  const CollectivesByBytes slow(1e4);  // 10 s a GB: the collectives outlast the compute
  const auto b = estimate_train(m, c, r, slow).breakdown;
  const double gathers = 8 * 1e4 * 2 * params / 1e12, reductions = 4 * 1e4 * 2 * params / 1e12;
  CHECK(gathers + reductions > b.pipeline_s);
  CHECK(b.dp_comm_exposed_s == test::near(gathers + reductions - b.pipeline_s));
}

TEST_CASE("cost model: gradients reduce in the layout's dtype, FSDP's fp32 by default, bf16 below ZeRO-3") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  auto bytes = [&](int64_t zero, std::optional<bool> fp32) {
    auto r = overlap_request(1, 8, zero);
    r.layout.grad_reduce_fp32 = fp32;
    const CollectivesByBytes priced;
    (void)estimate_train(m, c, r, priced);
    return std::pair{priced.reduced, priced.gathered};
  };
  const double params = model::params_per_rank(m, overlap_request(1, 8, 1).layout, true, true).dense;
  // ZeRO-1: bf16 gradients reduced, bf16 parameters gathered; in fp32 the reduction doubles only.
  CHECK(bytes(1, std::nullopt) == std::pair{2 * params, 2 * params});
  CHECK(bytes(1, true) == std::pair{4 * params, 2 * params});
  // ZeRO-3: fp32 reductions unless told bf16; its gathers (one priced, run before the forward and
  // the backward) stay bf16.
  CHECK(bytes(3, std::nullopt) == std::pair{4 * params, 2 * params});
  CHECK(bytes(3, false) == std::pair{2 * params, 2 * params});
}

namespace {

// A forward-only pass of four micro-batches on each of 8 ranks under ZeRO-1, and its ZeRO-3 copy
// whose micro-batches each wait for their gathers.
std::pair<TrainRequest, TrainRequest> four_micro_batches() {
  auto r = overlap_request(1, 8, 1);
  r.global_batch = 4 * 8;
  auto z3 = r;
  z3.layout.zero = 3;
  z3.layout.overlap.param_gather = false;
  return {r, z3};
}

}  // namespace

TEST_CASE("cost model: a forward-only pass under ZeRO-3 gathers the parameters once per micro-batch") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  const GemmsAndCollectives fake;  // every all-gather 3 ms
  auto [r, z3] = four_micro_batches();  // each micro-batch waits for its gather: 4 x 3 ms
  const double compute = estimate_forward_seconds(m, c, r, fake);
  CHECK(estimate_forward_seconds(m, c, z3, fake) == test::near(compute + 4 * 3e-3));
  // Prefetched (FSDP's default), the gathers hide behind the compute as far as it lasts.
  z3.layout.overlap.param_gather = std::nullopt;
  CHECK(estimate_forward_seconds(m, c, z3, fake) == test::near(std::max(compute, 4 * 3e-3)));
  // With one rank there is nothing to gather.
  auto alone = overlap_request(1, 1, 3);
  alone.global_batch = 4;
  auto alone1 = alone;
  alone1.layout.zero = 1;
  CHECK(estimate_forward_seconds(m, c, alone, fake) == test::near(estimate_forward_seconds(m, c, alone1, fake)));
}

TEST_CASE("cost model: ZeRO-3 of a mixture-of-experts model gathers the experts too, over their own group") {
  const auto m = test::preset_model("qwen3-30b-a3b");
  const auto c = test::own_cluster(1);
  const GemmsAndCollectives fake;  // every all-gather 3 ms
  auto [r, z3] = four_micro_batches();
  const double compute = estimate_forward_seconds(m, c, r, fake);
  // Each micro-batch gathers the dense parameters from the shard group and the experts from the
  // eight ranks that hold them (ep 1): 4 x (3 + 3) ms.
  CHECK(estimate_forward_seconds(m, c, z3, fake) == test::near(compute + 4 * 2 * 3e-3));
  // With ep 8 every rank holds its own experts whole: nothing of them to gather.
  z3.layout.ep = 8;
  auto z1 = r;
  z1.layout.ep = 8;
  CHECK(estimate_forward_seconds(m, c, z3, fake) == test::near(estimate_forward_seconds(m, c, z1, fake) + 4 * 3e-3));
}

namespace {

// Records the groups of the collectives it prices whose bytes are the experts' gradients.
class ExpertGroupRecorder final : public CostModel {
 public:
  explicit ExpertGroupRecorder(double expert_bytes) : expert_bytes_(expert_bytes) {}
  mutable std::vector<CollectiveGroup> groups;
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* g = std::get_if<CollectiveCallOp>(&op); g && g->bytes == expert_bytes_) groups.push_back(g->group);
    c.seconds = 1e-3;
    return c;
  }
  double peak_flops() const override { return 1e15; }

 private:
  double expert_bytes_;
};

}  // namespace

TEST_CASE("cost model: experts split over tp without expert parallelism and are held whole with it") {
  const auto m = test::preset_model("qwen3-30b-a3b");
  input::TrainLayout l;
  const double all = model::params_of_stage(m, l, 0).experts;
  // ep 1, tp 4: each expert split over the four (Megatron's default expert tp = tp); their
  // data-parallel group is the dense one, dp x cp.
  l.tp = 4;
  l.dp = 2;
  CHECK(l.expert_tp() == 4);
  CHECK(model::params_of_stage(m, l, 0).experts == test::near(all / 4));
  CHECK(model::expert_data_parallel_ranks(l) == 2);
  // ep 2 below tp 4: parallel folding, each rank holds its 64 experts whole; 4 x 2 / 2 ranks share
  // each expert's state.
  l.ep = 2;
  CHECK(l.expert_tp() == 1);
  CHECK(model::params_of_stage(m, l, 0).experts == test::near(all / 2));
  CHECK(model::expert_data_parallel_ranks(l) == 4);
}

TEST_CASE("cost model: the experts' data-parallel group sits where Megatron's numbering puts its devices") {
  const auto m = test::preset_model("qwen3-30b-a3b");
  auto group = [&](int64_t nodes, int64_t per_node, int64_t tp, int64_t dp, int64_t ep) {
    auto c = test::own_cluster(nodes);
    c.gpus_per_node = per_node;
    TrainRequest r;
    r.seq_len = 1024;
    r.layout.tp = tp;
    r.layout.dp = dp;
    r.layout.ep = ep;
    r.global_batch = dp;
    const ExpertGroupRecorder rec(2.0 * largest_stage_params(m, r.layout).experts);
    estimate_train(m, c, r, rec);
    REQUIRE_FALSE(rec.groups.empty());
    return rec.groups.front();
  };
  // ep 1: the experts split over tp as the dense layers, their group the dense data-parallel one:
  // tp 2 x dp 4 on a node of 8, 4 ranks 2 apart.
  const auto whole = group(1, 8, 2, 4, 1);
  CHECK(whole.ranks == 4);
  CHECK(whole.ranks_per_node == 4);
  // tp 2 x dp 4 x ep 2 on 8 (expert tp 1): the ep groups are devices {0, 1}, {2, 3}, ...; one place
  // of each, 4 ranks 2 apart, one node.
  const auto split = group(1, 8, 2, 4, 2);
  CHECK(split.ranks == 4);
  CHECK(split.ranks_per_node == 4);
  // The same on two nodes of 4: two a node.
  const auto spread = group(2, 4, 2, 4, 2);
  CHECK(spread.ranks_per_node == 2);
  CHECK(spread.nodes() == 2);
  // tp 4 x dp 4 x ep 8 on two nodes of 8: the 2 ranks at one place sit 8 apart, one a node (a
  // tp block of 4 at each place would have put two on a node).
  const auto folded = group(2, 8, 4, 4, 8);
  CHECK(folded.ranks == 2);
  CHECK(folded.ranks_per_node == 1);
}

namespace {

// Records the shapes of the GEMMs it prices (each 1 ms).
class GemmRecorder final : public CostModel {
 public:
  mutable std::vector<GemmOp> seen;
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* g = std::get_if<GemmOp>(&op)) {
      seen.push_back(*g);
      c.seconds = 1e-3;
    }
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

}  // namespace

TEST_CASE("cost model: the backward prices each GEMM's input and weight gradients at their own shapes") {
  const auto m = test::preset_model("llama-3.1-8b");  // h 4096, MLP 14336 gated
  const auto c = test::own_cluster(1);
  TrainRequest r;
  r.seq_len = 2048;
  r.global_batch = 1;
  const GemmRecorder rec;
  estimate_train(m, c, r, rec);
  auto has = [&](int64_t mm, int64_t n, int64_t k) {
    for (const auto& g : rec.seen)
      if (g.m == mm && g.n == n && g.k == k) return true;
    return false;
  };
  // The MLP's down projection (2048 x 14336) x (14336 x 4096): its input gradient
  // (2048 x 4096) x (4096 x 14336) and its weight gradient (14336 x 2048) x (2048 x 4096), whose
  // depth is the 2,048 tokens.
  CHECK(has(2048, 4096, 14336));
  CHECK(has(2048, 14336, 4096));
  CHECK(has(14336, 4096, 2048));
}

namespace {

// Records the attention kernels it prices (each 1 ms).
class AttentionRecorder final : public CostModel {
 public:
  mutable std::vector<AttentionOp> seen;
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* a = std::get_if<AttentionOp>(&op)) {
      seen.push_back(*a);
      c.seconds = 1e-3;
    }
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

}  // namespace

TEST_CASE("cost model: context parallelism runs attention as cp kernels over blocks of s / cp") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(1);
  TrainRequest r;
  r.seq_len = 8192;
  r.global_batch = 2;
  r.layout.cp = 2;
  r.layout.dp = 1;
  const AttentionRecorder rec;
  estimate_train(m, c, r, rec);
  REQUIRE_FALSE(rec.seen.empty());
  for (const auto& a : rec.seen) {
    CHECK(a.seq_len == 4096);
    CHECK(a.calls == 2);
  }
}

namespace {

// Every GEMM 1 ms, every point-to-point transfer 0.5 ms; nothing else takes time.
class GemmsAndSends final : public CostModel {
 public:
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (std::holds_alternative<GemmOp>(op)) c.seconds = 1e-3;
    if (std::holds_alternative<PointToPointOp>(op)) c.seconds = 0.5e-3;
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

}  // namespace

TEST_CASE("cost model: the interleaved schedule hides its pipeline transfers under the next chunk, 1F1B does not") {
  const auto m = test::preset_model("llama-3.1-8b");  // 32 layers
  const auto c = test::own_cluster(1);
  const GemmsAndSends fake;
  TrainRequest r;
  r.layout.pp = 4;
  r.layout.vpp = 2;
  r.seq_len = 1024;
  r.global_batch = 8;
  const auto interleaved = estimate_train(m, c, r, fake).breakdown;
  // 2 x vpp = 4 sends of 0.5 ms per micro-batch, all under the compute by default.
  CHECK(interleaved.pp_comm_s == test::near(4 * 0.5e-3));
  CHECK(interleaved.pp_comm_exposed_s == 0);
  r.layout.overlap.p2p = false;
  const auto exposed = estimate_train(m, c, r, fake).breakdown;
  CHECK(exposed.pp_comm_exposed_s == test::near(4 * 0.5e-3));
  // The pipeline's slots grow by exactly the exposed transfers.
  CHECK(exposed.pipeline_s - interleaved.pipeline_s ==
        test::near((8 + 3.0 / 2) * 4 * 0.5e-3));
  // Plain 1F1B batches its transfers: exposed unless asked otherwise.
  r.layout.vpp = 1;
  r.layout.overlap.p2p.reset();
  CHECK(estimate_train(m, c, r, fake).breakdown.pp_comm_exposed_s == test::near(2 * 0.5e-3));
}

namespace {

// Every all-to-all takes 1 ns per byte; memory-bound work 1 ns per byte; nothing else takes time.
class AllToAllAndMemory final : public CostModel {
 public:
  OpCost cost(const Op& op) const override {
    OpCost c;
    if (const auto* k = std::get_if<CollectiveCallOp>(&op); k && k->op == CollectiveOp::all_to_all)
      c.seconds = k->bytes * 1e-9;
    if (const auto* b = std::get_if<MemoryBoundOp>(&op)) c.seconds = b->bytes * 1e-9;
    return c;
  }
  double peak_flops() const override { return 1e15; }
};

// One micro-batch of 1,024 tokens on each of 8 ranks, ep 8.
TrainRequest moe_request() {
  TrainRequest r;
  r.layout.ep = 8;
  r.layout.dp = 8;
  r.seq_len = 1024;
  r.global_batch = 8;
  return r;
}

}  // namespace

TEST_CASE("cost model: MoE layers permute their tokens, and the busiest expert's rank sets the all-to-all") {
  const auto m = test::preset_model("qwen3-30b-a3b");  // 48 MoE layers, h 2048, top-8 of 128 experts
  const auto c = test::own_cluster(1);
  const AllToAllAndMemory fake;
  TrainRequest r = moe_request();
  const auto balanced = estimate_train(m, c, r, fake).breakdown;
  // Per layer and pass: dispatch and combine of 1,024 tokens x 8 copies x 2,048 x 2 bytes.
  const double a2a = 1024.0 * 8 * 2048 * 2;
  CHECK(balanced.ep_comm_s == test::near(48 * 2 * 2 * a2a * 1e-9));
  r.moe_imbalance = 1.5;
  const auto skewed = estimate_train(m, c, r, fake).breakdown;
  CHECK(skewed.ep_comm_s == test::near(1.5 * balanced.ep_comm_s));
  // The permutation: t x h read and the t x k copies written, then back: 2 (t h + t k h) x 2 bytes
  // per layer, forward and again backward.
  const double permute = 2 * (1024.0 * 2048 * 2 + a2a);
  r.moe_imbalance = 1;
  r.layout.ep = 1;  // no all-to-all: the forward is its memory-bound work alone
  const auto local = estimate_train(m, c, r, fake).breakdown;
  // Per layer the element-wise kernels (the activation over the busiest expert's rows: 64 tokens
  // x 128 local experts x 768 / 1,024 = 6,144 columns a token) and the permutations; then the
  // embedding lookup and the loss over fp32 logits.
  double elementwise = 0;
  for (const auto& k : model::layer_elementwise_kernels(m, r, 1024, 6144, false)) elementwise += k.bytes;
  const double embedding = 2.0 * 1024 * 2048, loss = 3.0 * 4 * 1024 * m.vocab_size;
  CHECK(local.forward_s == test::near((48 * (elementwise + permute) + embedding + loss) * 1e-9));
}

TEST_CASE("cost model: under tensor parallelism each rank routes its tp share of the tokens to the experts") {
  const auto m = test::preset_model("qwen3-30b-a3b");
  const auto c = test::own_cluster(1);
  const AllToAllAndMemory fake;
  TrainRequest r = moe_request();
  const auto whole = estimate_train(m, c, r, fake).breakdown;
  CHECK(model::routed_tokens(r, 1024) == 1024);
  CHECK(model::train_experts(m, r, 1024).rows_per_expert == 512);  // 1,024 x 8 ep ranks x 8 / 128
  // tp 2 (with sequence parallelism, as Megatron requires it of MoE): the layer's input is split
  // over the pair and each routes its 512 tokens (expert tensor parallelism 1): the busiest
  // expert's rows and the all-to-alls' bytes halve.
  r.layout.tp = 2;
  r.layout.sequence_parallel = true;
  r.layout.dp = 4;
  r.global_batch = 4;
  CHECK(model::routed_tokens(r, 1024) == 512);
  CHECK(model::train_experts(m, r, 1024).rows_per_expert == 256);
  CHECK(estimate_train(m, c, r, fake).breakdown.ep_comm_s == test::near(whole.ep_comm_s / 2));
  // An odd count rounds up: no rank routes a fraction of a token.
  CHECK(model::routed_tokens(r, 1025) == 513);
}

TEST_CASE("cost model: uneven pipeline stages: the heaviest stage sets the pace") {
  const auto m = test::preset_model("llama-3.1-8b");  // 32 layers
  const auto c = test::own_cluster(1);
  const GemmOnly fake;  // every GEMM 1 ms
  TrainRequest r;
  r.layout.pp = 4;
  r.layout.dp = 2;
  r.seq_len = 1024;
  r.global_batch = 2;
  // Even: 8 layers a stage; the last adds the LM head: 8 x 4 GEMMs x (1 forward + 2 backward) + 3.
  const auto even = estimate_train(m, c, r, fake).breakdown;
  CHECK(even.forward_s + even.backward_s == test::near(8 * 12e-3 + 3e-3));
  // First and last stages of 5 layers leave 11 to each middle stage, now the slowest.
  r.layout.first_stage_layers = 5;
  r.layout.last_stage_layers = 5;
  CHECK(r.layout.stage_layers(32, 0) == 5);
  CHECK(r.layout.stage_layers(32, 1) == 11);
  CHECK(r.layout.stage_first_layer(32, 3) == 27);
  const auto uneven = estimate_train(m, c, r, fake).breakdown;
  CHECK(uneven.forward_s + uneven.backward_s == test::near(11 * 12e-3));
  // DeepSeek-V3's 61 layers over 4 stages: 16 first, 15 last, 15 each between.
  input::TrainLayout l;
  l.pp = 4;
  l.first_stage_layers = 16;
  l.last_stage_layers = 15;
  CHECK(l.stage_split_problem(61).empty());
  CHECK(l.stage_layers(61, 2) == 15);
  l.last_stage_layers = 14;
  CHECK(l.stage_split_problem(61) ==
        "the model's 61 layers less the first and last stages' (16 + 14) do not split evenly over the other 2 stages");
}

TEST_CASE("cost model: hybrid sharding reduces within a shard group and all-reduces the shards across groups") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::own_cluster(2);
  const GemmsAndCollectives fake;  // reduce-scatter 0.5 ms, all-reduce 2 ms, all-gather 3 ms
  auto r = overlap_request(1, 16, 3);  // FSDP over 16 ranks
  r.layout.overlap.grad_reduce = false;
  r.layout.overlap.param_gather = false;
  const auto full = estimate_train(m, c, r, fake);
  CHECK(full.breakdown.dp_comm_s == test::near(0.5e-3));
  r.layout.shard_group = 8;  // HSDP: 8 ranks shard, 2 replicas
  const auto hybrid = estimate_train(m, c, r, fake);
  CHECK(hybrid.breakdown.dp_comm_s == test::near(0.5e-3 + 2e-3));
  // Each rank keeps twice the optimizer state of full sharding.
  CHECK(hybrid.memory.get("optimizer") == test::near(2 * full.memory.get("optimizer")));
  CHECK(model::check_train_request(m, c, [&] {
          auto bad = r;
          bad.layout.shard_group = 5;
          return bad;
        }()) == "shard_group = 5 must divide dp x cp = 16 and needs ZeRO 1-3");
}

TEST_CASE("cost model: Ulysses context parallelism trades the ring's exchanges for four all-to-alls a layer") {
  const auto m = test::preset_model("llama-3.1-8b");  // 32 heads and 8 KV heads of 128, h 4096
  const auto c = test::own_cluster(1);
  const AllToAllAndMemory fake;  // all-to-alls and memory-bound work at 1 ns a byte
  TrainRequest r;
  r.layout.cp = 4;
  r.layout.dp = 2;
  r.layout.ulysses = true;
  r.seq_len = 8192;
  r.global_batch = 2;
  const auto u = estimate_train(m, c, r, fake).breakdown;
  // A rank holds 2,048 tokens: q, k and v ((32 + 16) x 128 columns) in, the output (32 x 128) out,
  // forward and backward, in each of the 32 layers.
  const double per_layer = 2.0 * 2048 * (48 * 128) + 2.0 * 2048 * (32 * 128);
  CHECK(u.cp_comm_exposed_s == test::near(32 * 2 * per_layer * 1e-9));
  // 32 heads split over cp = 4, but not over cp = 3.
  r.layout.cp = 3;
  r.seq_len = 8190;
  CHECK(model::check_train_request(m, c, r) ==
        "Ulysses context parallelism splits heads: cp = 3 does not divide the 32 heads of a tensor-parallel rank");
}
