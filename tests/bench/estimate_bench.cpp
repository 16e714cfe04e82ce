// Analytic stage evaluations per second: the planner calls these millions of times.
// Run: build/tests/estimate_bench (target: over 100,000 training-iteration estimates per second
// per core).
#include <benchmark/benchmark.h>

#include "sim/model/inference.h"
#include "sim/model/train.h"
#include "sim/input/check.h"

namespace {

using namespace arlsim;

input::ModelSpec model_named(const char* name) {
  input::Diagnostics diag;
  return std::get<input::ModelSpec>(input::check_document(name, input::SpecKind::model, {}, diag)->spec);
}

input::ClusterSpec cluster_of(int64_t nodes) {
  input::Diagnostics diag;
  return std::get<input::ClusterSpec>(
      input::check_document("dgx-h100", input::SpecKind::cluster, {"/nodes=" + std::to_string(nodes)}, diag)->spec);
}

void train_estimate(benchmark::State& state, const char* model_name, int64_t tp, int64_t pp, int64_t dp) {
  const auto m = model_named(model_name);
  const auto c = cluster_of(tp * pp * dp / 8);
  model::TrainRequest r;
  r.layout.tp = tp;
  r.layout.pp = pp;
  r.layout.dp = dp;
  r.layout.zero = 1;
  r.layout.sequence_parallel = tp > 1;
  r.seq_len = 8192;
  r.global_batch = 256;
  for (auto _ : state) benchmark::DoNotOptimize(model::estimate_train(m, c, r).iteration_s);
  state.SetItemsProcessed(state.iterations());
}

void decode_iteration(benchmark::State& state) {
  const auto m = model_named("qwen2.5-72b");
  const auto c = cluster_of(1);
  const model::InferenceModel im(m, c, {4, 1, 1});
  model::IterationBatch b;
  b.decode_seqs = 64;
  b.decode_kv_tokens = 64 * 8192;
  for (auto _ : state) benchmark::DoNotOptimize(im.iteration(b).seconds);
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(train_estimate, llama_70b_tp8_pp4_dp4, "llama-3.1-70b", 8, 4, 4);
BENCHMARK_CAPTURE(train_estimate, qwen3_8b_tp2_dp8, "qwen3-8b", 2, 1, 8);
BENCHMARK_CAPTURE(train_estimate, qwen3_30b_a3b_tp2_dp16, "qwen3-30b-a3b", 2, 1, 16);
BENCHMARK(decode_iteration);

}  // namespace

BENCHMARK_MAIN();
