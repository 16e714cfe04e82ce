#include <doctest/doctest.h>

#include <random>

#include "sim/model/inference.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

TEST_CASE("inference: the closed-form sum over decode iterations equals the explicit loop") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  std::mt19937_64 rng(7);
  for (const char* name : {"qwen3-8b", "qwen2.5-72b", "qwen3-30b-a3b", "deepseek-v3"}) {
    const auto m = test::preset_model(name);
    const int64_t tp = std::string(name) == "qwen3-8b" ? 1 : 8;
    const model::InferenceModel im(m, c, {tp, 1, 1});
    for (int trial = 0; trial < 5; ++trial) {
      const int64_t seqs = 1 + static_cast<int64_t>(rng() % 256);
      const int64_t kv = seqs * static_cast<int64_t>(rng() % 8192);
      const int64_t k = 1 + static_cast<int64_t>(rng() % 500);
      const auto window = im.decode_window(seqs);
      double loop = 0;
      for (int64_t i = 0; i < k; ++i) {
        model::IterationBatch b;
        b.decode_seqs = seqs;
        b.decode_kv_tokens = kv + i * seqs;
        loop += im.iteration(b).seconds;
      }
      INFO(name, " seqs ", seqs, " kv ", kv, " k ", k);
      CHECK(std::abs(window.sum(k, kv) - loop) / loop < 1e-9);
      // The iterations that fit in the loop's time are exactly k (up to rounding at the edge).
      const int64_t fit = window.iterations_within(loop * (1 + 1e-12), kv);
      CHECK(fit == k);
    }
  }
}

TEST_CASE("inference: decode is memory-bound and grows with context, prefill is compute-bound") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto m = test::preset_model("llama-3.1-8b");
  const model::InferenceModel im(m, c, {1, 1, 1});
  model::IterationBatch short_ctx, long_ctx;
  short_ctx.decode_seqs = long_ctx.decode_seqs = 64;
  short_ctx.decode_kv_tokens = 64 * 1024;
  long_ctx.decode_kv_tokens = 64 * 32768;
  const auto a = im.iteration(short_ctx), b = im.iteration(long_ctx);
  // The extra 31K tokens x 64 sequences of KV (128 KiB each) stream at the profile's achieved HBM
  // rate.
  CHECK(b.seconds - a.seconds ==
        test::near(64.0 * 31744 * 131072 / (c.gpu.memory_bandwidth_bytes_per_s * c.gpu.memory_bound_efficiency)));
  model::IterationBatch prefill;
  prefill.prefill.push_back({8192, 0, true});
  const auto p = im.iteration(prefill);
  CHECK(p.gemm_s > p.attention_prefill_s);
  CHECK(8192 / p.seconds > 20000);  // tens of thousands of prefill tokens per second
}

TEST_CASE("inference: speculative decoding prices a token as a verification step over the accepted length") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto m = test::preset_model("qwen3-8b");
  const model::InferenceModel plain(m, c, {1, 1, 1});
  const model::InferenceModel spec(m, c, {1, 1, 1}, {2.5, 4, 1e-4});
  model::IterationBatch verify;
  verify.decode_seqs = 32;
  verify.decode_rows_per_seq = 5;  // 4 drafts + 1
  const auto w = spec.decode_window(32);
  CHECK(w.a == test::near((plain.iteration(verify).seconds + 1e-4) / 2.5));
  CHECK(w.b == test::near(plain.decode_window(32).b / 2.5));
  // Small batches are memory-bound: verifying 5 rows costs about as much as decoding one, so
  // tokens come ~2.5x faster.
  CHECK(w.sum(100, 32 * 2048) < plain.decode_window(32).sum(100, 32 * 2048) / 2);
}

TEST_CASE("inference: eager mode waits for the host's dispatch of every kernel but the GEMMs") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto m = test::preset_model("qwen3-8b");  // 36 layers
  model::InferenceModel graphs(m, c, {2, 1, 1}), eager(m, c, {2, 1, 1});
  eager.set_execution({true, 8.7e-6});
  model::IterationBatch decode;
  decode.decode_seqs = 16;
  decode.decode_kv_tokens = 16 * 1000;
  // Per layer: 6 element-wise kernels, the KV write, the decode attention, 2 all-reduces (tp 2);
  // then 3 for sampling.
  const auto e = eager.iteration(decode);
  CHECK(e.short_kernels == 36 * (6 + 1 + 1 + 2) + 3);
  // Graph mode's kernels take the profile's graph-kernel time instead.
  const double graph_s = c.gpu.graph_kernel_overhead.seconds();
  CHECK(e.seconds - graphs.iteration(decode).seconds == test::near((36 * 10 + 3) * (8.7e-6 - graph_s)));
  // A prefill chunk beside the decodes adds its attention kernel per layer.
  decode.prefill.push_back({512, 0, true});
  CHECK(eager.iteration(decode).short_kernels == 36 * (6 + 1 + 2 + 2) + 3);
  // The decode window stays exact: the wait is part of its constant term.
  const auto w = eager.decode_window(16);
  model::IterationBatch one;
  one.decode_seqs = 16;
  one.decode_kv_tokens = 16 * 1000;
  CHECK(w.sum(1, 16 * 1000) == test::near(eager.iteration(one).seconds));
}

TEST_CASE("inference: replayed from a graph, each short kernel takes the profile's graph-kernel time") {
  auto c = test::preset_cluster("dgx-h100", 1);
  const auto m = test::preset_model("qwen3-8b");  // 36 layers
  model::IterationBatch decode;
  decode.decode_seqs = 16;
  decode.decode_kv_tokens = 16 * 1000;
  CHECK(c.gpu.graph_kernel_overhead.seconds() == test::near(1.2e-6));  // the shipped profile's
  c.gpu.graph_kernel_overhead = SimTime();
  const model::InferenceModel before(m, c, {2, 1, 1});
  const double without = before.iteration(decode).seconds;
  const auto window_without = before.decode_window(16);
  c.gpu.graph_kernel_overhead = SimTime::from_seconds(1.5e-6);
  model::InferenceModel graphs(m, c, {2, 1, 1}), eager(m, c, {2, 1, 1});
  eager.set_execution({true, 8.7e-6});
  const auto g = graphs.iteration(decode);
  CHECK(g.short_kernels == 36 * 10 + 3);
  CHECK(g.seconds - without == test::near((36 * 10 + 3) * 1.5e-6));
  // Eager mode waits for the host's dispatch instead: the graph's time does not apply.
  CHECK(eager.iteration(decode).seconds - without == test::near((36 * 10 + 3) * 8.7e-6));
  // A decode window carries it in its constant term; the per-token term is unchanged.
  const auto w = graphs.decode_window(16);
  CHECK(w.a - window_without.a == test::near((36 * 10 + 3) * 1.5e-6));
  CHECK(w.b == test::near(window_without.b));
}

TEST_CASE("inference: the host's work per iteration is a fixed part and a part per sequence") {
  const auto c = test::preset_cluster("dgx-h100", 1);
  const auto m = test::preset_model("qwen3-8b");
  model::InferenceModel plain(m, c, {1, 1, 1}), hosted(m, c, {1, 1, 1});
  hosted.set_execution({false, 0, 6e-3, 40e-6});
  model::IterationBatch b;
  b.decode_seqs = 100;
  b.decode_kv_tokens = 100 * 500;
  b.prefill.push_back({256, 0, true});  // 101 sequences in the batch
  const auto h = hosted.iteration(b);
  CHECK(h.overhead_s == test::near(6e-3 + 101 * 40e-6));
  CHECK(h.seconds - plain.iteration(b).seconds == test::near(6e-3 + 101 * 40e-6));
}

TEST_CASE("inference: an engine spanning two nodes all-reduces across the network") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const auto m = test::preset_model("qwen2.5-72b");  // 80 layers, h 8192
  const model::InferenceModel across(m, c, {16, 1, 1});
  model::IterationBatch b;
  b.decode_seqs = 64;
  b.decode_kv_tokens = 64 * 1000;
  // Two all-reduces of the batch's hidden states per layer over 16 ranks, 8 on each node.
  const model::CollectiveModel coll(c);
  const double one = coll.cost(model::CollectiveOp::all_reduce, 64.0 * 8192 * 2, {16, 8}).seconds;
  CHECK(across.iteration(b).comm_s == test::near(2 * 80 * one));
  CHECK(one > coll.cost(model::CollectiveOp::all_reduce, 64.0 * 8192 * 2, {8, 8}).seconds);
}

TEST_CASE("inference: a pipeline-parallel engine keeps its stages busy with pp decode micro-batches") {
  const auto c = test::preset_cluster("dgx-h100", 4);
  const auto m = test::preset_model("qwen2.5-72b");
  const model::InferenceModel piped(m, c, {8, 4, 1}), flat(m, c, {8, 1, 1});
  model::IterationBatch all, quarter;
  all.decode_seqs = 256;
  all.decode_kv_tokens = 256 * 2000;
  quarter.decode_seqs = 64;
  quarter.decode_kv_tokens = 64 * 2000;
  // A round costs what the whole model costs for a quarter of the sequences and their KV (the
  // weights read once per micro-batch), besides the transfers between stages.
  const auto p = piped.iteration(all), f = flat.iteration(quarter);
  CHECK(p.gemm_s == test::near(f.gemm_s));
  CHECK(p.attention_decode_s == test::near(f.attention_decode_s));
  CHECK(p.seconds < flat.iteration(all).seconds);
  // Event skipping stays exact.
  const auto w = piped.decode_window(256);
  double loop = 0;
  for (int i = 0; i < 7; ++i) {
    model::IterationBatch b = all;
    b.decode_kv_tokens += i * 256;
    loop += piped.iteration(b).seconds;
  }
  CHECK(w.sum(7, all.decode_kv_tokens) == test::near(loop));
}
