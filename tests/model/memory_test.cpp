#include <doctest/doctest.h>

#include "sim/model/memory.h"
#include "sim/model/transformer.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

// A GPT-style model as in Korthikanti et al. 2022: multi-head attention, a 4h GELU MLP.
input::ModelSpec gpt(int64_t h, int64_t heads, int64_t layers) {
  input::ModelSpec m;
  m.hidden_size = h;
  m.num_layers = layers;
  m.num_heads = m.num_kv_heads = heads;
  m.head_dim = h / heads;
  m.ffn_hidden_size = 4 * h;
  m.vocab_size = 51200;
  m.mlp = input::MlpKind::plain;
  m.norm = input::NormKind::layernorm;
  m.max_context = 2048;
  return m;
}

}  // namespace

TEST_CASE("memory: activations per layer follow Korthikanti et al. without dropout, with FlashAttention") {
  // Their Table 2: sbh(34 + 5as/h) with no parallelism. FlashAttention stores no s x s scores
  // (drops 5as/h) and RL fine-tuning uses no dropout (drops the two sbh masks): 32 sbh, plus
  // FlashAttention's fp32 log-sum-exp per head (4 sba).
  const auto m = gpt(4096, 32, 2);
  const int64_t s = 2048, b = 2, t = s * b;
  input::TrainLayout l;
  CHECK(model::layer_activation_bytes(m, l, t, false) == 32.0 * t * 4096 + 4.0 * t * 32);
  // Tensor parallelism with sequence parallelism divides everything by t (their sbh(34/t + ...)).
  l.tp = 8;
  l.sequence_parallel = true;
  CHECK(model::layer_activation_bytes(m, l, t, false) == test::near((32.0 * t * 4096 + 4.0 * t * 32) / 8));
  // Without sequence parallelism the 8 sbh outside the TP regions stay whole: sbh(8 + 24/t).
  l.sequence_parallel = false;
  CHECK(model::layer_activation_bytes(m, l, t, false) == test::near(8.0 * t * 4096 + (24.0 * t * 4096 + 4.0 * t * 32) / 8));
  // Full recompute keeps the layer input only: 2 sbh.
  l.recompute = input::Recompute::full;
  CHECK(model::layer_activation_bytes(m, l, t, false) == 2.0 * t * 4096);
}

TEST_CASE("memory: hidden dropout keeps its two masks: Korthikanti et al.'s 34 sbh") {
  auto m = gpt(4096, 32, 2);
  m.hidden_dropout = 0.1;
  const int64_t t = 2048 * 2;
  input::TrainLayout l;
  CHECK(model::layer_activation_bytes(m, l, t, false) == 34.0 * t * 4096 + 4.0 * t * 32);
}

TEST_CASE("memory: ZeRO stages shard 12, then 4, then 2 of the 18 bytes per parameter") {
  const auto m = test::preset_model("llama-3.1-8b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  input::TrainLayout l;
  l.dp = 8;
  model::TrainShape shape;
  shape.seq_len = 1024;
  const double params = model::params_per_rank(m, l, true, true).total();
  CHECK(params == test::near(model::count_params(m).total - 4096));  // all but the final norm
  const double expected[4][3] = {{2, 4, 12}, {2, 4, 12.0 / 8}, {2, 4.0 / 8, 12.0 / 8}, {2.0 / 8, 4.0 / 8, 12.0 / 8}};
  for (int zero = 0; zero <= 3; ++zero) {
    l.zero = zero;
    const auto mem = model::train_memory(m, c.gpu, l, shape);
    CHECK(mem.get("weights") == test::near(expected[zero][0] * params));
    CHECK(mem.get("gradients") == test::near(expected[zero][1] * params));
    CHECK(mem.get("optimizer") == test::near(expected[zero][2] * params));
  }
}

TEST_CASE("memory: the training state is the one formula behind memory, and follows dtype and ZeRO") {
  const auto m = test::preset_model("llama-3.1-8b");
  input::TrainLayout l;
  l.dp = 8;
  l.zero = 2;
  const double params = model::params_per_rank(m, l, true, true).total();
  // bf16: 2 + 4 + 12 bytes per parameter, gradients and optimizer sharded over dp = 8.
  const auto bf16 = model::training_state(m, l, input::Dtype::bf16);
  CHECK(bf16.weights == test::near(2 * params));
  CHECK(bf16.gradients == test::near(4 * params / 8));
  CHECK(bf16.optimizer == test::near(12 * params / 8));
  // fp32 training keeps no separate master copy: 4 + 4 + 8.
  const auto fp32 = model::training_state(m, l, input::Dtype::fp32);
  CHECK(fp32.weights == test::near(4 * params));
  CHECK(fp32.optimizer == test::near(8 * params / 8));
  // train_memory reports exactly these (offload moves them off the GPU, not out of the state).
  model::TrainShape shape;
  shape.seq_len = 1024;
  const auto mem = model::train_memory(m, test::preset_cluster("dgx-h100", 1).gpu, l, shape);
  CHECK(mem.get("weights") == bf16.weights);
  CHECK(mem.get("gradients") == bf16.gradients);
  CHECK(mem.get("optimizer") == bf16.optimizer);
  l.offload_optimizer = true;
  CHECK(model::train_memory(m, test::preset_cluster("dgx-h100", 1).gpu, l, shape).get("optimizer") == 0);
  CHECK(model::training_state(m, l, input::Dtype::bf16).optimizer == bf16.optimizer);
  // With pipeline stages, the larger of the first and the last stage's state.
  l.offload_optimizer = false;
  l.pp = 4;
  l.dp = 2;
  const auto first = model::training_state(m, l, input::Dtype::bf16, true, false);
  const auto last = model::training_state(m, l, input::Dtype::bf16, false, true);
  CHECK(model::training_state(m, l, input::Dtype::bf16).total() == std::max(first.total(), last.total()));
}

TEST_CASE("memory: KV cache per GPU splits key-value heads over tp, replicating them past it") {
  const auto m = test::preset_model("qwen2.5-7b");  // 28 layers, 4 kv heads of 128
  CHECK(model::kv_bytes_per_token_per_gpu(m, 1, 1) == 28 * 2 * 4 * 128 * 2);
  CHECK(model::kv_bytes_per_token_per_gpu(m, 4, 1) == 28 * 2 * 1 * 128 * 2);
  CHECK(model::kv_bytes_per_token_per_gpu(m, 8, 1) == 28 * 2 * 1 * 128 * 2);  // replicated
  CHECK(model::kv_bytes_per_token_per_gpu(m, 1, 2) == 14 * 2 * 4 * 128 * 2);
}

TEST_CASE("memory: an engine splits each expert over tp / ep when tp is the larger, as its compute does") {
  const auto m = test::preset_model("qwen3-30b-a3b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto weights = [&](int64_t tp, int64_t ep) {
    for (const auto& [name, bytes] : model::inference_memory(m, c.gpu, {tp, 1, ep, 0.9, 8192, 256}).breakdown.items)
      if (name == "weights") return bytes;
    return 0.0;
  };
  // tp 4 with ep 2 or without ep: the experts a quarter a GPU either way (training's rule would
  // hold them whole under ep: half of them a GPU).
  CHECK(weights(4, 2) == test::near(weights(4, 1)));
  CHECK(weights(4, 4) == test::near(weights(4, 1)));
}

TEST_CASE("memory: a 72B model does not fit one 80 GiB GPU for inference, and fits four") {
  const auto m = test::preset_model("qwen2.5-72b");
  const auto c = test::preset_cluster("dgx-h100", 1);
  CHECK(model::inference_memory(m, c.gpu, {1, 1, 1, 0.9, 8192, 256}).kv_capacity_tokens == 0);
  const auto four = model::inference_memory(m, c.gpu, {4, 1, 1, 0.9, 8192, 256});
  CHECK(four.kv_capacity_tokens > 100000);
}
