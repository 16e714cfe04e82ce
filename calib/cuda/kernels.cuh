// CUDA kernels and the unfused attention shared by calibration's device (calib/cuda) and the
// runtime's (runtime/cuda), so that the runtime executes what calibration measured. Included by
// one .cu file of each module.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace arlsim::cuda_kernels {
namespace {

// Threads per block of every kernel here; the reductions' shared arrays have one slot per thread
// and halve it, so it must be a power of two.
constexpr int kThreads = 256;

// Deterministic test values, uniform in [-1, 1) with 24 random bits, by index: the same on the
// device and the host, so that results can be checked against a host reference without copying
// the inputs back. Full mantissas, as trained weights and activations have: operands with few
// distinct values (zeros above all) toggle fewer bits, draw less power and run faster than real
// data (calib/SOURCES.md sec. 8e).
__host__ __device__ inline float test_value(uint64_t i, uint64_t seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) / static_cast<float>(int64_t{1} << 23);
}

__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(test_value(i, seed));
}

__global__ void fill_f16(__half* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2half(test_value(i, seed));
}

// fp8 e4m3 holds the test values rounded to its 3 mantissa bits (checks round them the same way).
__global__ void fill_fp8(__nv_fp8_e4m3* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = __nv_fp8_e4m3(test_value(i, seed));
}

__global__ void fill_float(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

// The streaming kernels move 16 bytes a thread (float4; cudaMalloc's buffers are aligned to
// 256 bytes), as memory-bound kernels must to approach the memory's rate, the last n % 4 values
// one at a time.
__global__ void copy_kernel(const float* x, float* y, size_t n) {
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t quads = n / 4;
  const auto* x4 = reinterpret_cast<const float4*>(x);
  auto* y4 = reinterpret_cast<float4*>(y);
  for (size_t i = first; i < quads; i += stride) y4[i] = x4[i];
  for (size_t i = 4 * quads + first; i < n; i += stride) y[i] = x[i];
}

__global__ void triad_kernel(const float* x, const float* z, float* y, float s, size_t n) {
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t quads = n / 4;
  const auto* x4 = reinterpret_cast<const float4*>(x);
  const auto* z4 = reinterpret_cast<const float4*>(z);
  auto* y4 = reinterpret_cast<float4*>(y);
  for (size_t i = first; i < quads; i += stride) {
    const float4 a = x4[i], b = z4[i];
    y4[i] = make_float4(a.x + s * b.x, a.y + s * b.y, a.z + s * b.z, a.w + s * b.w);
  }
  for (size_t i = 4 * quads + first; i < n; i += stride) y[i] = x[i] + s * z[i];
}

__device__ inline float silu(float v) { return v / (1.0f + __expf(-v)); }

__global__ void silu_kernel(const float* x, float* y, size_t n) {
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x, stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t quads = n / 4;
  const auto* x4 = reinterpret_cast<const float4*>(x);
  auto* y4 = reinterpret_cast<float4*>(y);
  for (size_t i = first; i < quads; i += stride) {
    const float4 a = x4[i];
    y4[i] = make_float4(silu(a.x), silu(a.y), silu(a.z), silu(a.w));
  }
  for (size_t i = 4 * quads + first; i < n; i += stride) y[i] = silu(x[i]);
}

// Holds the stream for `ns` nanoseconds of the GPU's global timer: put before a timed region, it
// lets the host queue the whole region before the GPU reaches its first event, so that the time
// measured is the GPU's alone, not the host's work of launching (GPU benchmark harnesses do the
// same with a blocking kernel).
__global__ void delay_kernel(uint64_t ns) {
  uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// RMS norm of rows of `cols`: one block per row, a shared-memory reduction of the squares.
__global__ void rmsnorm_kernel(const float* x, float* y, size_t rows, size_t cols) {
  __shared__ float part[kThreads];
  for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float sum = 0;
    for (size_t i = threadIdx.x; i < cols; i += blockDim.x) sum += in[i] * in[i];
    part[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
      __syncthreads();
    }
    const float scale = rsqrtf(part[0] / static_cast<float>(cols) + 1e-6f);
    for (size_t i = threadIdx.x; i < cols; i += blockDim.x) y[row * cols + i] = in[i] * scale;
    __syncthreads();
  }
}

__global__ void empty_kernel() {}

// Softmax backward, in place on dP: dS = P (dP - sum_j P dP), per row.
__global__ void softmax_backward(const __nv_bfloat16* p, __nv_bfloat16* dp, int64_t s, int64_t rows) {
  __shared__ float part[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const __nv_bfloat16* pr = p + r * s;
    __nv_bfloat16* dr = dp + r * s;
    float sum = 0;
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) sum += __bfloat162float(pr[j]) * __bfloat162float(dr[j]);
    part[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
      __syncthreads();
    }
    const float delta = part[0];
    __syncthreads();
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x)
      dr[j] = __float2bfloat16(__bfloat162float(pr[j]) * (__bfloat162float(dr[j]) - delta));
    __syncthreads();
  }
}

// Softmax of each row of `len` scores (rows one after another), in place. Causal: row r of each
// head's `len x len` block keeps columns 0..r % len, the others become 0 (attention's mask);
// otherwise every column is visible (decode attention's query sees the whole cache). One block
// per row.
__global__ void softmax_rows(__nv_bfloat16* scores, int64_t len, int64_t rows, float scale, bool causal) {
  __shared__ float part[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __nv_bfloat16* row = scores + r * len;
    const int64_t visible = causal ? r % len + 1 : len;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) top = fmaxf(top, __bfloat162float(row[j]) * scale);
    part[threadIdx.x] = top;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + k]);
      __syncthreads();
    }
    top = part[0];
    __syncthreads();
    float sum = 0;
    for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) sum += __expf(__bfloat162float(row[j]) * scale - top);
    part[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
      __syncthreads();
    }
    sum = part[0];
    __syncthreads();
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      row[j] = __float2bfloat16(j < visible ? __expf(__bfloat162float(row[j]) * scale - top) / sum : 0.0f);
    __syncthreads();
  }
}

// Row-major C (m x n) = A (m x k) B (k x n), fp32 accumulation, as PyTorch and the engines call
// cuBLAS: column-major C^T (n x m) = B^T A^T, so every leading dimension is k or n (a model's
// widths) and the tokens m only a count, aligned whatever m is. (Column-major with m as A's
// leading dimension falls off the tensor-core path at odd m: a GEMM of 2013 tokens ran 4-6x
// slower than its neighbours of even length on an H200.) `type` is A's, B's and C's.
// `a_token_major`: C = A^T B with A held k x m, row-major, as B is: a weight gradient X^T dY as
// frameworks run it, the tokens k the reduction and again no leading dimension (column-major
// C^T = B^T A, leading dimensions n and m). With `batch` > 1, that many GEMMs of the shape in one
// strided-batched call (a layer's experts, as a grouped GEMM kernel runs them), each group's
// operands following the previous group's.
inline cublasStatus_t gemm_row_major(cublasHandle_t blas, int m, int n, int k, const void* a, const void* b, void* c,
                                     cudaDataType_t type, int batch = 1, bool a_token_major = false) {
  const float alpha = 1, beta = 0;
  const cublasOperation_t op_a = a_token_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = a_token_major ? m : k;
  if (batch > 1)
    return cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, op_a, n, m, k, &alpha, b, type, n, static_cast<long long>(k) * n,
                                      a, type, lda, static_cast<long long>(m) * k, &beta, c, type, n,
                                      static_cast<long long>(m) * n, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return cublasGemmEx(blas, CUBLAS_OP_N, op_a, n, m, k, &alpha, b, type, n, a, type, lda, &beta, c, type, n,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// A sequence length as the unfused attention paths run it: rounded up to 8 tokens. Their batched
// GEMMs take the length as a leading dimension and as a reduction length, and cuBLAS's tensor-core
// kernels need both 16-byte aligned: at an odd length they fall back to kernels 2-4x slower (seen
// on an H200 at decode and prefill lengths alike), a cliff no engine's attention has (FlashAttention
// and paged attention work on tiles and blocks of 16 to 128 tokens). At most 7 tokens more.
inline int64_t attention_length(int64_t len) { return (len + 7) / 8 * 8; }

int grid_for(size_t n) { return static_cast<int>(std::min<size_t>(65535, (n + kThreads - 1) / kThreads)); }
// The threads of a 16-byte streaming kernel over n floats (copy_kernel, triad_kernel, silu_kernel).
size_t quads(size_t n) { return (n + 3) / 4; }

// The buffers of the unfused causal attention: q, k, v, o and (backward) dO, dQ, dK, dV, each
// heads x seq x d, and the scores p (and dP) of heads x seq x seq, all bf16.
struct AttentionBuffers {
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *d_o = nullptr, *dq = nullptr, *dk = nullptr,
                *dv = nullptr, *p = nullptr, *dp = nullptr;
};

// Enqueues unfused causal attention over `heads` heads on the stream of `blas`: the forward
// (S = Q K^T, causal softmax, O = P V) and/or the backward (dV = P^T dO, dP = dO V^T, softmax
// backward, dQ = dS K, dK = dS^T Q), per head with batched GEMMs. The backward alone reads the
// P the forward left. False when a library call failed.
inline bool unfused_attention(cublasHandle_t blas, cudaStream_t stream, int64_t heads, int64_t seq, int64_t d,
                              const AttentionBuffers& b, bool forward, bool backward) {
  const float one = 1, zero = 0, scale = 1.0f / sqrtf(static_cast<float>(d));
  const int is = static_cast<int>(seq), id = static_cast<int>(d), ih = static_cast<int>(heads);
  const long long sd = seq * d, ss = seq * seq;
  // Row-major (s x d) per head is column-major (d x s): S' = K'^T Q', O' = V' P', dV' = dO' P'^T,
  // dP' = V'^T dO', dQ' = scale K' dS', dK' = scale Q' dS'^T, where X' is X read column-major.
  auto gemm = [&](cublasOperation_t ta, cublasOperation_t tb, int m, int n, int kk, const void* a, int lda, long long sa,
                  const void* bb, int ldb, long long sb, float alpha, void* c, int ldc, long long sc) {
    return cublasGemmStridedBatchedEx(blas, ta, tb, m, n, kk, &alpha, a, CUDA_R_16BF, lda, sa, bb, CUDA_R_16BF, ldb, sb,
                                      &zero, c, CUDA_R_16BF, ldc, sc, ih, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
           CUBLAS_STATUS_SUCCESS;
  };
  const int blocks = static_cast<int>(std::min<int64_t>(65535, heads * seq));
  bool good = true;
  if (forward) {
    good = gemm(CUBLAS_OP_T, CUBLAS_OP_N, is, is, id, b.k, id, sd, b.q, id, sd, one, b.p, is, ss);  // S
    softmax_rows<<<blocks, kThreads, 0, stream>>>(b.p, seq, heads * seq, scale, true);
    good = good && cudaGetLastError() == cudaSuccess;
    good = good && gemm(CUBLAS_OP_N, CUBLAS_OP_N, id, is, is, b.v, id, sd, b.p, is, ss, one, b.o, id, sd);  // O
  }
  if (backward) {
    good = good && gemm(CUBLAS_OP_N, CUBLAS_OP_T, id, is, is, b.d_o, id, sd, b.p, is, ss, one, b.dv, id, sd);  // dV
    good = good && gemm(CUBLAS_OP_T, CUBLAS_OP_N, is, is, id, b.v, id, sd, b.d_o, id, sd, one, b.dp, is, ss);  // dP
    softmax_backward<<<blocks, kThreads, 0, stream>>>(b.p, b.dp, seq, heads * seq);
    good = good && cudaGetLastError() == cudaSuccess;
    good = good && gemm(CUBLAS_OP_N, CUBLAS_OP_N, id, is, is, b.k, id, sd, b.dp, is, ss, scale, b.dq, id, sd);  // dQ
    good = good && gemm(CUBLAS_OP_N, CUBLAS_OP_T, id, is, is, b.q, id, sd, b.dp, is, ss, scale, b.dk, id, sd);  // dK
  }
  return good;
}

// The buffers of unfused decode attention over `pairs` (sequence, KV head) pairs, each with a
// group of queries sharing the KV head: q and o pairs x group x d, k and v pairs x len x d, the
// scores s pairs x group x len, all bf16.
struct DecodeBuffers {
  __nv_bfloat16 *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *s = nullptr;
};

// Enqueues decode attention on the stream of `blas`: per pair S = Q K^T (group x len), the
// softmax of its rows, O = S V, with batched GEMMs over the pairs. The keys and values are read
// once each; the scores (group x len per pair) are small beside them. With latent_values the
// values are the first latent_values of each key (MLA's latent cache: b.v is b.k) and o is
// pairs x group x latent_values. False when a library call failed.
inline bool unfused_decode_attention(cublasHandle_t blas, cudaStream_t stream, int64_t pairs, int64_t group, int64_t len,
                                     int64_t d, const DecodeBuffers& b, int64_t latent_values = 0) {
  const float one = 1, zero = 0, scale = 1.0f / sqrtf(static_cast<float>(d));
  const int64_t vd = latent_values > 0 ? latent_values : d;
  const int il = static_cast<int>(len), ig = static_cast<int>(group), id = static_cast<int>(d), ip = static_cast<int>(pairs),
            iv = static_cast<int>(vd);
  const long long kv = len * d, qs = group * d, ss = group * len, os = group * vd;
  // Row-major X (r x c) is column-major X' (c x r): S' (len x group) = K'^T Q', O' (vd x group) =
  // V' S', V' read with the keys' leading dimension d (the same rows for a latent cache).
  bool good = cublasGemmStridedBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, il, ig, id, &one, b.k, CUDA_R_16BF, id, kv, b.q,
                                         CUDA_R_16BF, id, qs, &zero, b.s, CUDA_R_16BF, il, ss, ip, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  const int blocks = static_cast<int>(std::min<int64_t>(65535, pairs * group));
  softmax_rows<<<blocks, kThreads, 0, stream>>>(b.s, len, pairs * group, scale, false);
  good = good && cudaGetLastError() == cudaSuccess;
  good = good && cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, iv, ig, il, &one, b.v, CUDA_R_16BF, id, kv, b.s,
                                            CUDA_R_16BF, il, ss, &zero, b.o, CUDA_R_16BF, iv, os, ip, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  return good;
}

}  // namespace
}  // namespace arlsim::cuda_kernels
