// The CUDA device's attention measurements (cuda_context.cuh): the unfused cuBLAS path the
// runtime runs, forward and backward over whole sequences and decode over a KV cache, each checked
// against a row computed on the host.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "calib/cuda/cuda_context.cuh"
#include "calib/cuda/kernels.cuh"

namespace arlsim::calib::cuda_device_detail {

using namespace cuda_kernels;

std::optional<double> measure_attention(CudaContext& ctx, int64_t seq, int64_t d, bool backward) {
  ctx.problem.clear();
  // As many heads as keep the scores within 2 GiB (bf16), at least one.
  const int64_t heads = std::max<int64_t>(1, (int64_t{1} << 30) / (seq * seq));
  const size_t tokens = static_cast<size_t>(heads * seq * d), scores = static_cast<size_t>(heads * seq * seq);
  std::vector<__nv_bfloat16*> buffers(8, nullptr);  // q k v o dO dq dk dv
  __nv_bfloat16 *p = nullptr, *dp = nullptr;
  auto release = [&] {
    for (auto* b : buffers) cudaFree(b);
    cudaFree(p);
    cudaFree(dp);
  };
  bool fine = ctx.ok(cudaMalloc(&p, scores * 2), "cudaMalloc") && (!backward || ctx.ok(cudaMalloc(&dp, scores * 2), "cudaMalloc"));
  // The forward needs q, k, v, o; the backward also dO, dQ, dK, dV. Buffer b holds seed 10 + b.
  for (size_t b = 0; fine && b < (backward ? buffers.size() : 4); ++b) {
    fine = ctx.ok(cudaMalloc(&buffers[b], tokens * 2), "cudaMalloc");
    if (fine) fill_bf16<<<grid_for(tokens), kThreads, 0, ctx.stream>>>(buffers[b], tokens, 10 + b);
  }
  fine = fine && ctx.ok(cudaGetLastError(), "filling attention's inputs");
  if (!fine) {
    release();
    return std::nullopt;
  }
  __nv_bfloat16 *q = buffers[0], *k = buffers[1], *v = buffers[2], *o = buffers[3], *d_o = buffers[4], *dq = buffers[5],
                *dk = buffers[6], *dv = buffers[7];
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  AttentionBuffers ab;
  ab.q = q, ab.k = k, ab.v = v, ab.o = o, ab.d_o = d_o, ab.dq = dq, ab.dk = dk, ab.dv = dv, ab.p = p, ab.dp = dp;
  auto run = [&] { return unfused_attention(ctx.blas, ctx.stream, heads, seq, d, ab, true, backward); };
  auto t = ctx.timed(run);
  // Check head 0's last query against the host: its probabilities over every key, its output
  // row, and (backward) dV's last row, which only the last query reaches: P[s-1][s-1] dO[s-1].
  if (t) {
    auto in = [&](int seed, int64_t row, int64_t c) {  // an input as the device holds it (bf16)
      return __bfloat162float(__float2bfloat16(test_value(static_cast<uint64_t>(row * d + c), static_cast<uint64_t>(seed))));
    };
    std::vector<double> logits(static_cast<size_t>(seq));
    double top = -1e300, sum = 0;
    for (int64_t j = 0; j < seq; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(in(10, seq - 1, c)) * in(11, j, c);
      logits[static_cast<size_t>(j)] = dot * scale;
      top = std::max(top, logits[static_cast<size_t>(j)]);
    }
    for (auto& l : logits) sum += (l = std::exp(l - top));
    std::vector<__nv_bfloat16> got(static_cast<size_t>(d));
    fine = ctx.ok(cudaMemcpy(got.data(), o + (seq - 1) * d, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::vector<double> want(static_cast<size_t>(d), 0.0);
    for (int64_t c = 0; c < d; ++c)
      for (int64_t j = 0; j < seq; ++j) want[static_cast<size_t>(c)] += logits[static_cast<size_t>(j)] / sum * in(12, j, c);
    fine = fine && row_close(got, want);
    if (fine && backward) {
      const double last = logits[static_cast<size_t>(seq - 1)] / sum;
      fine = ctx.ok(cudaMemcpy(got.data(), dv + (seq - 1) * d, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (int64_t c = 0; c < d; ++c) want[static_cast<size_t>(c)] = last * in(14, seq - 1, c);
      fine = fine && row_close(got, want);
    }
    if (!fine) {
      if (ctx.problem.empty()) ctx.problem = "attention result differs from the host's reference row";
      t.reset();
    }
  }
  release();
  if (t) *t /= static_cast<double>(heads);  // per head, as the convention counts
  return t;
}

std::optional<double> measure_decode_attention(CudaContext& ctx, int64_t batch, int64_t len, int64_t heads, int64_t kv_heads,
                                               int64_t d) {
  ctx.problem.clear();
  if (batch < 1 || len < 1 || kv_heads < 1 || d < 1 || heads < kv_heads || heads % kv_heads != 0) {
    ctx.problem = "decode attention needs a positive shape whose query heads are a multiple of its KV heads";
    return std::nullopt;
  }
  const int64_t pairs = batch * kv_heads, group = heads / kv_heads;
  const size_t queries = static_cast<size_t>(pairs * group * d), cache = static_cast<size_t>(pairs * len * d),
               scores = static_cast<size_t>(pairs * group * len);
  DecodeBuffers b;
  auto release = [&] {
    for (auto* p : {b.q, b.k, b.v, b.o, b.s}) cudaFree(p);
  };
  bool fine = ctx.ok(cudaMalloc(&b.q, queries * 2), "cudaMalloc") && ctx.ok(cudaMalloc(&b.o, queries * 2), "cudaMalloc") &&
              ctx.ok(cudaMalloc(&b.k, cache * 2), "cudaMalloc") && ctx.ok(cudaMalloc(&b.v, cache * 2), "cudaMalloc") &&
              ctx.ok(cudaMalloc(&b.s, scores * 2), "cudaMalloc");
  if (fine) {
    fill_bf16<<<grid_for(queries), kThreads, 0, ctx.stream>>>(b.q, queries, 20);
    fill_bf16<<<grid_for(cache), kThreads, 0, ctx.stream>>>(b.k, cache, 21);
    fill_bf16<<<grid_for(cache), kThreads, 0, ctx.stream>>>(b.v, cache, 22);
    fine = ctx.ok(cudaGetLastError(), "filling decode attention's inputs");
  }
  if (!fine) {
    release();
    return std::nullopt;
  }
  // Read from HBM, not from the L2 cache the fill left the inputs in (as for GEMMs): in a model
  // every layer reads its own cache.
  if (!ctx.ok(cudaMemsetAsync(ctx.flush, 0, ctx.flush_bytes, ctx.stream), "flushing the L2 cache")) {
    release();
    return std::nullopt;
  }
  auto t = ctx.timed([&] { return unfused_decode_attention(ctx.blas, ctx.stream, pairs, group, len, d, b); });
  // Check pair 0's first query against the host.
  if (t) {
    auto in = [&](int seed, int64_t i) { return __bfloat162float(__float2bfloat16(test_value(static_cast<uint64_t>(i), static_cast<uint64_t>(seed)))); };
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    std::vector<double> logits(static_cast<size_t>(len));
    double top = -1e300, sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(in(20, c)) * in(21, j * d + c);
      logits[static_cast<size_t>(j)] = dot * scale;
      top = std::max(top, logits[static_cast<size_t>(j)]);
    }
    for (auto& l : logits) sum += (l = std::exp(l - top));
    std::vector<__nv_bfloat16> got(static_cast<size_t>(d));
    fine = ctx.ok(cudaMemcpy(got.data(), b.o, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::vector<double> want(static_cast<size_t>(d), 0.0);
    for (int64_t c = 0; c < d; ++c)
      for (int64_t j = 0; j < len; ++j) want[static_cast<size_t>(c)] += logits[static_cast<size_t>(j)] / sum * in(22, j * d + c);
    fine = fine && row_close(got, want);
    if (!fine) {
      if (ctx.problem.empty()) ctx.problem = "decode attention result differs from the host's reference row";
      t.reset();
    }
  }
  release();
  return t;
}

}  // namespace arlsim::calib::cuda_device_detail
