#include <doctest/doctest.h>

#include "sim/model/train.h"
#include "sim/model/transformer.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

model::TrainRequest request(int64_t tp, int64_t pp, int64_t dp, int64_t vpp, int64_t global_batch) {
  model::TrainRequest r;
  r.layout.tp = tp;
  r.layout.pp = pp;
  r.layout.dp = dp;
  r.layout.vpp = vpp;
  r.layout.zero = 1;
  r.seq_len = 4096;
  r.global_batch = global_batch;
  return r;
}

}  // namespace

TEST_CASE("train: model FLOPs per token are 6N plus the attention term") {
  const auto m = test::preset_model("qwen2.5-7b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto e = model::estimate_train(m, c, request(1, 1, 8, 1, 64));
  const auto p = model::count_params(m);
  // 2 x (matmul weights: all but the input embedding and norms, LM head included) per forward,
  // x3 for forward and backward; attention 2 x 2 x layers x heads x head_dim x (s + 1) / 2 per
  // forward token (QK^T and AV), x3.
  const double n = p.total - 152064.0 * 3584 - p.norms;
  const double attention = 2.0 * 2 * 28 * 28 * 128 * (4096 + 1) / 2;
  CHECK(e.model_flops_per_token == test::near(3 * (2 * n + attention)));
  CHECK(e.mfu == test::near(e.model_tflops_per_gpu * 1e12 / c.gpu.peak(input::Dtype::bf16)));
  CHECK(e.tokens_per_s == test::near(64.0 * 4096 / e.iteration_s));
}

TEST_CASE("train: the pipeline bubble is fill / (v m), the fill the other stages' slots over the slowest's") {
  const auto m = test::preset_model("llama-3.1-70b");
  const auto c = test::preset_cluster("dgx-h100", 4);
  auto r = request(8, 4, 1, 1, 16);
  auto e = model::estimate_train(m, c, r);
  CHECK(e.micro_batches == 16);
  // Four stages of 20 layers: the last also runs the LM head and the loss, so it is the slowest;
  // the first (with the embedding lookup) and the middle ones (priced as the first) are lighter.
  const auto shares = model::pipeline_stage_shares(m, c, r);
  REQUIRE(shares.size() == 4);
  CHECK(shares[3] == 1.0);
  CHECK(shares[0] < 1.0);
  CHECK(shares[1] == shares[0]);
  CHECK(shares[2] == shares[0]);
  // The fill: each stage's slot (its share of the slowest's forward + backward, plus the exposed
  // sends) over the slowest's, less its own; below p - 1 = 3, since the fill and drain pass the
  // lighter stages at their pace.
  const double work = e.breakdown.forward_s + e.breakdown.backward_s, sends = e.breakdown.pp_comm_exposed_s;
  double fill = -1;
  for (double share : shares) fill += (share * work + sends) / (work + sends);
  CHECK(e.breakdown.fill_slots == test::near(fill));
  CHECK(fill < 3.0);
  CHECK(fill > 2.5);
  CHECK(e.breakdown.bubble_fraction == test::near(fill / 16));
  const double slot = work + e.breakdown.pp_comm_s;
  CHECK(e.breakdown.pipeline_s == test::near((16 + fill) * slot));
  const double all_sends = e.breakdown.pp_comm_s;
  r.layout.vpp = 5;  // 80 layers = 4 stages x 5 chunks x 4 layers
  e = model::estimate_train(m, c, r);
  CHECK(e.breakdown.bubble_fraction == test::near(e.breakdown.fill_slots / (5 * 16)));
  const double sends_v = e.breakdown.pp_comm_s;
  // Each micro-batch now crosses every stage boundary once per chunk: 5 x the sends.
  CHECK(sends_v == test::near(5 * all_sends));
}

TEST_CASE("train: more data parallelism runs the same global batch faster") {
  const auto m = test::preset_model("qwen3-8b");
  const auto c = test::preset_cluster("dgx-h100", 2);
  const auto one_node = model::estimate_train(m, c, request(2, 1, 4, 1, 64));
  const auto two_nodes = model::estimate_train(m, c, request(2, 1, 8, 1, 64));
  CHECK(two_nodes.iteration_s < one_node.iteration_s);
  CHECK(two_nodes.iteration_s > one_node.iteration_s / 2);  // communication costs something
}

TEST_CASE("train: layouts the model cannot take are refused with a reason") {
  const auto m = test::preset_model("qwen2.5-7b");  // 28 heads, 28 layers
  const auto c = test::preset_cluster("dgx-h100", 1);
  CHECK(model::check_train_request(m, c, request(8, 1, 1, 1, 8)) == "tp = 8 does not divide the model's 28 heads");
  CHECK(model::check_train_request(m, c, request(1, 8, 1, 1, 8)) == "pp x vpp = 8 does not divide the model's 28 layers");
  CHECK(model::check_train_request(m, c, request(1, 1, 8, 1, 12)) ==
        "global_batch 12 is not a multiple of dp x micro_batch = 8");
}

TEST_CASE("train: full recompute trades memory for one more forward") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  auto r = request(2, 1, 4, 1, 32);
  const auto none = model::estimate_train(m, c, r);
  r.layout.recompute = input::Recompute::full;
  const auto full = model::estimate_train(m, c, r);
  // The layers' forward again, not the embedding, LM head and loss.
  CHECK(full.breakdown.backward_s < none.breakdown.backward_s + none.breakdown.forward_s);
  CHECK(full.breakdown.backward_s > none.breakdown.backward_s + 0.9 * none.breakdown.forward_s);
  CHECK(full.memory.get("activations") < none.memory.get("activations") / 5);
}

TEST_CASE("train: an MoE model's FLOPs per token count only the active experts") {
  const auto m = test::preset_model("qwen3-30b-a3b");  // 48 layers, 32 heads of 128, 8 of 128 experts
  const auto c = test::preset_cluster("dgx-h100", 1);
  auto r = request(1, 1, 8, 1, 64);
  r.layout.ep = 8;
  const auto e = model::estimate_train(m, c, r);
  const auto p = model::count_params(m);
  const double n_active = p.active - 151936.0 * 2048 - p.norms;  // less the input embedding and norms
  const double attention = 2.0 * 2 * 48 * 32 * 128 * (4096 + 1) / 2;
  CHECK(e.model_flops_per_token == test::near(3 * (2 * n_active + attention)));
  // About 3.35B active parameters: 6N ~ 20 GFLOP per token, far below 6 x 30.5B.
  CHECK(e.model_flops_per_token < 6 * 0.2 * p.total);
}

TEST_CASE("train: offloading saves GPU memory and pays the host link") {
  const auto m = test::preset_model("qwen2.5-7b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  auto r = request(1, 1, 8, 1, 64);
  const auto resident = model::estimate_train(m, c, r);
  r.layout.offload_optimizer = true;
  const auto optimizer = model::estimate_train(m, c, r);
  const double host = c.gpu.host_link.achieved();
  const double shard = model::count_params(m).total / 8;  // ZeRO-1 over dp 8
  // The fp32 gradients out and the bf16 weights back: 6 bytes per parameter of the shard.
  CHECK(optimizer.breakdown.optimizer_s == test::near(6.0 * shard / host).epsilon(0.01));
  CHECK(optimizer.breakdown.optimizer_s > resident.breakdown.optimizer_s);
  CHECK(optimizer.memory.total() < resident.memory.total());
  // Offloaded weights are uploaded for the forward and the backward of each micro-batch: with
  // short micro-batches the uploads outlast the compute that hides them.
  r.seq_len = 512;
  r.layout.offload_params = true;
  const auto params = model::estimate_train(m, c, r);
  const double uploads = 2.0 * params.micro_batches * 2.0 * model::count_params(m).total / host;
  CHECK(params.breakdown.dp_comm_exposed_s >= uploads - params.breakdown.pipeline_s - 1e-9);
  CHECK(params.breakdown.dp_comm_exposed_s > 0);
  // A forward-only pass uploads them once per micro-batch.
  auto forward_only = r;
  forward_only.layout.offload_params = false;
  CHECK(model::estimate_forward_seconds(m, c, r) > model::estimate_forward_seconds(m, c, forward_only));
  // No host link, no offload.
  auto no_link = c;
  no_link.gpu.host_link.bandwidth_bytes_per_s = 0;
  CHECK(model::check_train_request(m, no_link, r).find("host link") != std::string::npos);
}

TEST_CASE("train: a critic's value head replaces the vocabulary's logits") {
  const auto m = test::preset_model("qwen2.5-7b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  auto r = request(1, 1, 8, 1, 64);
  r.seq_len = 32768;
  const auto policy = model::estimate_train(m, c, r);
  r.value_head = true;
  const auto critic = model::estimate_train(m, c, r);
  CHECK(critic.iteration_s < policy.iteration_s);  // no hidden x vocabulary head, no vocabulary-wide loss
  CHECK(critic.memory.get("logits") == test::near(6.0 * 32768));
  CHECK(policy.memory.get("logits") == test::near(6.0 * 32768 * 152064));
  model::TrainShape shape;
  shape.seq_len = 32768;
  shape.value_head = true;
  CHECK(model::forward_memory(m, c.gpu, r.layout, shape).get("logits") == test::near(6.0 * 32768));
}

TEST_CASE("train: a layer's element-wise kernels, byte by byte") {
  auto m = test::preset_model("llama-3.1-8b");  // h 4096, 32 heads and 8 KV heads of 128, SwiGLU
  auto r = request(4, 1, 2, 1, 16);
  const int64_t t = 8192, ffn = 14336 / 4;
  auto bytes = [](const std::vector<model::ElementwiseKernel>& ks, const std::string& name) {
    for (const auto& k : ks)
      if (name == k.name) return k.bytes;
    FAIL("no kernel " << name);
    return 0.0;
  };
  const auto fwd = model::layer_elementwise_kernels(m, r, t, ffn, false);
  CHECK(fwd.size() == 6);  // two norms, rotary, two residual adds, the activation: six launches
  // A norm reads and writes t x h bf16 values.
  CHECK(bytes(fwd, "input norm") == test::near(2.0 * 2 * t * 4096));
  // Rotary on the rank's queries and keys: (32 + 8) x 128 / tp columns, read and written.
  CHECK(bytes(fwd, "rotary embedding") == test::near(2.0 * 2 * t * (40 * 128 / 4)));
  // SwiGLU reads two halves and writes one.
  CHECK(bytes(fwd, "activation") == test::near(3.0 * 2 * t * ffn));
  CHECK(bytes(fwd, "MLP residual add") == test::near(3.0 * 2 * t * 4096));
  const auto bwd = model::layer_elementwise_kernels(m, r, t, ffn, true);
  CHECK(bytes(bwd, "input norm backward") == test::near(3.0 * 2 * t * 4096));
  CHECK(bytes(bwd, "activation backward") == test::near(5.0 * 2 * t * ffn));
  // Sequence parallelism: norms and residual adds on t / tp tokens; rotary and activation not.
  r.layout.sequence_parallel = true;
  const auto sp = model::layer_elementwise_kernels(m, r, t, ffn, false);
  CHECK(bytes(sp, "input norm") == test::near(2.0 * 2 * t / 4 * 4096));
  CHECK(bytes(sp, "activation") == test::near(3.0 * 2 * t * ffn));
  // Hidden dropout writes a one-byte mask in each residual add.
  m.hidden_dropout = 0.1;
  CHECK(bytes(model::layer_elementwise_kernels(m, r, t, ffn, false), "attention residual add") ==
        test::near(3.0 * 2 * t / 4 * 4096 + t / 4 * 4096));
  // Learned absolute positions (GPT) leave the layers without rotary kernels.
  auto gpt = m;
  gpt.position_embedding = input::PositionEmbedding::learned;
  CHECK(model::layer_elementwise_kernels(gpt, r, t, ffn, false).size() == 5);
  // Qwen3-style per-head norms on queries and keys add a kernel each way.
  m.qk_norm = true;
  CHECK(model::layer_elementwise_kernels(m, r, t, ffn, false).size() == 7);
  CHECK(bytes(model::layer_elementwise_kernels(m, r, t, ffn, true), "query-key norm backward") ==
        test::near(3.0 * 2 * t * (40 * 128 / 4)));
}

TEST_CASE("train: each element-wise kernel pays a launch, so small layers are not free") {
  auto c = test::own_cluster(1);
  const auto m = test::preset_model("llama-3.1-8b");
  auto r = request(1, 1, 8, 1, 8);
  r.seq_len = 256;
  const auto base = model::estimate_train(m, c, r);
  c.gpu.kernel_launch_overhead = SimTime::from_seconds(c.gpu.kernel_launch_overhead.seconds() + 10e-6);
  const auto slower = model::estimate_train(m, c, r);
  // Per layer: 4 GEMMs forward and 8 backward, attention forward and backward (1 + 1 more), and
  // 6 + 6 element-wise kernels: 26 launches; then the embedding, LM head and loss (1 + 3 + 3 x 2).
  const double extra = slower.breakdown.forward_s + slower.breakdown.backward_s - base.breakdown.forward_s -
                       base.breakdown.backward_s;
  CHECK(extra == test::near((32 * 26 + 1 + 3 + 6) * 10e-6));
}

TEST_CASE("train: eager kernels (a Hugging Face model in eager PyTorch) run each operation of the norms, rotary and SwiGLU as its own kernel") {
  const auto m = test::preset_model("llama-3.1-8b");  // h 4096, 32 heads and 8 KV heads of 128, SwiGLU
  auto r = request(1, 1, 8, 1, 64);
  const int64_t t = 4096, ffn = 14336;
  auto total = [](const std::vector<model::ElementwiseKernel>& ks) {
    double b = 0;
    for (const auto& k : ks) b += k.bytes;
    return b;
  };
  REQUIRE_FALSE(r.layout.eager_kernels());  // ZeRO-1: Megatron's fused kernels
  const auto fused_fwd = model::layer_elementwise_kernels(m, r, t, ffn, false);
  r.layout.eager = true;
  const auto fwd = model::layer_elementwise_kernels(m, r, t, ffn, false);
  const auto bwd = model::layer_elementwise_kernels(m, r, t, ffn, true);
  // Forward: two RMSNorms of eight kernels (36 bytes an element: to fp32 2+4, square 4+4, mean 4,
  // scale 4+4, to bf16 4+2, weight 2+2; and plus epsilon and the reciprocal root, 8 bytes a row),
  // rotary on q and on k in five each (20 bytes an element), SiLU and the product (4 + 6), two
  // residual adds (6 each).
  CHECK(fwd.size() == 8 + 8 + 5 + 5 + 2 + 2);
  const double h = 4096, qk = (32 + 8) * 128;
  CHECK(total(fwd) == test::near(t * (2 * 36 * h + 20 * qk + 10.0 * ffn + 2 * 6 * h) + 2 * 2 * 8.0 * t));
  // Backward: two norms of sixteen kernels (92 bytes an element: the weight's gradient 6 + 2, times
  // the weight 4, to fp32 6, times the scale 8, the scale's gradient 12 + 4, the mean's 4, the
  // square's x.pow(1) 8, times 2 8 and times the gradient 12, the two paths summed 12, to bf16 6;
  // three kernels of a value a row), rotary on q and on k in nine each (30 bytes an element: the
  // products' 4 + 4, the negation's 2, each slice's zeros 2 and copy 2, two sums 6 + 6), the
  // product's two gradients and SiLU's (18), the two residual adds, and the normed inputs'
  // gradients summed from the separate q, k, v projections (two adds) and gate and up (one).
  CHECK(bwd.size() == 16 + 16 + 9 + 9 + 3 + 2 + 3);
  CHECK(total(bwd) == test::near(t * (2 * 92 * h + 30 * qk + 18.0 * ffn + 2 * 6 * h + 3 * 6 * h) + 2 * 3 * 8.0 * t));
  // Fused: 2 x 4 + 4 (rotary) + 6 (SwiGLU) + 2 x 6 bytes: eager moves over twice as much.
  CHECK(total(fused_fwd) == test::near(t * (2 * 4 * h + 4 * qk + 6.0 * ffn + 2 * 6 * h)));
  CHECK(total(fwd) > 2 * total(fused_fwd));
  // Unset, ZeRO-3 layouts run eager (FSDP's and DeepSpeed's frameworks train Hugging Face models);
  // a layout says otherwise with "kernels".
  r.layout.eager.reset();
  r.layout.zero = 3;
  CHECK(r.layout.eager_kernels());
  r.layout.eager = false;
  CHECK(model::layer_elementwise_kernels(m, r, t, ffn, false).size() == fused_fwd.size());
  // A step of eager kernels takes longer: the same GEMMs, more memory traffic and launches.
  const auto c = test::preset_cluster("dgx-h100", 1);
  auto fused = request(1, 1, 8, 1, 64), eager = fused;
  eager.layout.eager = true;
  CHECK(model::estimate_train(m, c, eager).iteration_s > model::estimate_train(m, c, fused).iteration_s * 1.03);
}

TEST_CASE("train: eager kernels with per-head norms, sequence parallelism and LayerNorm") {
  auto m = test::preset_model("llama-3.1-8b");
  auto r = request(4, 1, 2, 1, 16);
  r.layout.eager = true;
  const int64_t t = 8192, ffn = 14336 / 4;
  auto bytes = [](const std::vector<model::ElementwiseKernel>& ks, const std::string& prefix) {
    double b = 0;
    for (const auto& k : ks)
      if (std::string(k.name).rfind(prefix, 0) == 0) b += k.bytes;
    return b;
  };
  const auto plain = model::layer_elementwise_kernels(m, r, t, ffn, false);
  // Qwen3-style per-head norms: q's 32 / 4 and k's 8 / 4 heads of 128 on the rank, each an
  // RMSNorm of eight kernels (36 bytes an element, 8 a row of head_dim).
  m.qk_norm = true;
  const auto qk = model::layer_elementwise_kernels(m, r, t, ffn, false);
  CHECK(qk.size() == plain.size() + 16);
  const double heads = (32 + 8) / 4.0;
  CHECK(bytes(qk, "norm") - bytes(plain, "norm") == test::near(36.0 * t * heads * 128 + 2 * 8.0 * t * heads));
  m.qk_norm = false;
  // Sequence parallelism: the two hidden norms on t / tp rows; the projections' input gradients
  // summed on the gathered t tokens.
  r.layout.sequence_parallel = true;
  const auto sp = model::layer_elementwise_kernels(m, r, t, ffn, false);
  CHECK(bytes(sp, "norm") == test::near(bytes(plain, "norm") / 4));
  const auto sp_bwd = model::layer_elementwise_kernels(m, r, t, ffn, true);
  CHECK(bytes(sp_bwd, "attention input gradients summed") == test::near(2 * 3 * 2.0 * t * 4096));
  // nn.LayerNorm is one native kernel each way, as a fused norm.
  m.norm = input::NormKind::layernorm;
  const auto ln = model::layer_elementwise_kernels(m, r, t, ffn, false);
  CHECK(ln.size() == sp.size() - 14);
  CHECK(bytes(ln, "norm") == test::near(2 * 4.0 * t / 4 * 4096));
}
