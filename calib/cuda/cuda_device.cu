#include "calib/cuda/cuda_device.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#ifdef ARLSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include "calib/cuda/cuda_peaks.h"
#include "calib/cuda/kernels.cuh"
#ifdef ARLSIM_HAVE_NCCL
#include "calib/cuda/nccl_rank.cuh"
#endif

namespace arlsim::calib {

namespace {

using namespace cuda_kernels;

using Clock = std::chrono::steady_clock;

// How a timed region starts: queued behind a delay kernel on the compute engine (kernels), or on
// an idle stream (copies, which a copy engine runs without waiting behind the delay).
enum class Queue { behind_delay, idle };

class CudaDevice final : public Device {
 public:
  CudaDevice() = default;
  ~CudaDevice() override {
#ifdef ARLSIM_HAVE_NCCL
    release_comms(false);
#endif
    cudaSetDevice(0);
    if (blas_) cublasDestroy(blas_);
    if (lt_) cublasLtDestroy(lt_);
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    cudaFree(lt_workspace_);
    if (stream_) cudaStreamDestroy(stream_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    cudaFree(flush_);
  }

  bool init(std::string& problem) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
      cudaGetLastError();
      problem = "no CUDA device (no GPU, or no driver) is visible";
      return false;
    }
    devices_ = count;
    if (!ok(cudaSetDevice(0), "cudaSetDevice") || !ok(cudaStreamCreate(&stream_), "cudaStreamCreate") ||
        !ok(cudaEventCreate(&start_), "cudaEventCreate") || !ok(cudaEventCreate(&stop_), "cudaEventCreate") ||
        cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas_, stream_) != CUBLAS_STATUS_SUCCESS) {
      problem = problem_.empty() ? "cuBLAS could not start" : problem_;
      return false;
    }
    if (cublasLtCreate(&lt_) != CUBLAS_STATUS_SUCCESS) lt_ = nullptr;  // fp8 GEMMs are then not measured
    if (lt_ && cudaMalloc(&lt_workspace_, kLtWorkspace) != cudaSuccess) {
      cudaGetLastError();
      lt_workspace_ = nullptr;
    }
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    flush_bytes_ = 2 * static_cast<size_t>(std::max(l2, 1 << 20));
    if (!ok(cudaMalloc(&flush_, flush_bytes_), "cudaMalloc")) {
      problem = problem_;
      return false;
    }
    return true;
  }

  DeviceInfo info() const override {
    DeviceInfo i;
    i.backend = "cuda";
    cudaDeviceProp props{};
    cudaGetDeviceProperties(&props, 0);
    i.name = props.name;
    int sms = 0, clock = 0, memory_clock = 0, bus = 0, driver = 0, runtime = 0, blas = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&memory_clock, cudaDevAttrMemoryClockRate, 0);
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cublasGetVersion(blas_, &blas);
    i.driver = "CUDA driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    i.versions = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                 ", cuBLAS " + std::to_string(blas) + ", attention: unfused cuBLAS path (batched GEMMs over the whole "
                 "s x s scores, a masked-softmax kernel)";
#ifdef ARLSIM_HAVE_NCCL
    int nccl = 0;
    ncclGetVersion(&nccl);
    i.versions += ", NCCL " + std::to_string(nccl);
#endif
    i.gemm_dtype = "bf16";
    i.memory_bytes = static_cast<double>(props.totalGlobalMem);
    i.compute_units = sms;
    i.peak_flops = nominal_bf16_peak(props.major, props.minor, sms, clock);
    for (const auto& r : other_gemm_dtypes(props.major, props.minor))
      if (std::string(r.dtype) != "fp8" || lt_) i.other_gemm_dtypes.emplace_back(r.dtype, r.times_bf16 * i.peak_flops);
    i.memory_bandwidth = nominal_memory_bandwidth(memory_clock, bus);
    i.host_link_kind = "host";  // PCIe or NVLink-C2C: not detected; the rate is measured
    i.gemm_tile_m = 128;  // cuBLAS's large bf16 tiles, as the shipped profiles take them
    i.gemm_tile_n = 256;
    i.max_ranks = devices_;
    i.graphs = true;
    i.link_kind = "peer";  // NVLink or PCIe between the GPUs: not detected; the rates are measured
    return i;
  }

  // How many GEMMs of a shape one timing runs back to back, each on weights of its own (a model's
  // layers in a row): enough that a small one's share of the timing's own start and end (the
  // events, the first kernel's ramp) is small, as a stream of layers amortizes them, within
  // kRotationBytes of weights; one for weights that large.
  static constexpr double kRotationBytes = 256.0 * (1 << 20);
  static int64_t gemm_repeats(double weight_bytes) {
    return std::clamp<int64_t>(static_cast<int64_t>(kRotationBytes / std::max(1.0, weight_bytes)), 1, 16);
  }
  // Elements from one copy of `elements` weights of `element` bytes to the next: each copy 256-byte aligned.
  static size_t weight_spacing(size_t elements, size_t element) {
    const size_t per = 256 / element;
    return (elements + per - 1) / per * per;
  }
  // One timing of `repeats` runs, `one(r)` the r-th (false: it failed), over their number.
  template <typename F>
  std::optional<double> timed_runs(int64_t repeats, F&& one, Queue queue = Queue::behind_delay) {
    auto t = timed(
        [&] {
          for (int64_t r = 0; r < repeats; ++r)
            if (!one(r)) return false;
          return true;
        },
        queue);
    if (t) *t /= static_cast<double>(repeats);
    return t;
  }

  // Each timing: an L2 flush, then gemm_repeats GEMMs, each reading its own weights (from HBM, as
  // each layer reads its own) and the same activations (warm, as the previous kernel left them),
  // timed together and divided by the count.
  std::optional<double> gemm(int64_t m, int64_t n, int64_t k) override {
    problem_.clear();
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    const int64_t repeats = gemm_repeats(2.0 * static_cast<double>(k * n));
    const size_t na = static_cast<size_t>(m * k), nb = static_cast<size_t>(k * n), nc = static_cast<size_t>(m * n);
    const size_t spacing = weight_spacing(nb, 2);
    const size_t nbs = spacing * static_cast<size_t>(repeats);
    auto release = [&] {
      cudaFree(a);
      cudaFree(b);
      cudaFree(c);
    };
    if (!ok(cudaMalloc(&a, na * 2), "cudaMalloc") || !ok(cudaMalloc(&b, nbs * 2), "cudaMalloc") ||
        !ok(cudaMalloc(&c, nc * 2), "cudaMalloc")) {
      release();
      return std::nullopt;
    }
    fill_bf16<<<grid_for(na), kThreads, 0, stream_>>>(a, na, 1);
    fill_bf16<<<grid_for(nbs), kThreads, 0, stream_>>>(b, nbs, 2);
    if (!ok(cudaGetLastError(), "filling the GEMM's inputs")) {
      release();
      return std::nullopt;
    }
    // Row-major C (m x n) = A (m x k) B (k x n), as the runtime runs its GEMMs (gemm_row_major).
    auto one = [&](int64_t r) {
      return gemm_row_major(blas_, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, b + r * spacing, c,
                            CUDA_R_16BF) == CUBLAS_STATUS_SUCCESS;
    };
    // The weights are read from HBM, not from the L2 cache the fill left them in: in a model's
    // step every layer reads its own weights once per pass, evicted by the other layers' (GPU
    // benchmarks such as Triton's do_bench flush L2 the same way, writing a buffer larger than it).
    if (flush_ && !ok(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_), "flushing the L2 cache")) {
      release();
      return std::nullopt;
    }
    const auto t = timed_runs(repeats, one);
    // Check C(i, j) for a few (i, j) against the host's sum over the same test values (the last
    // GEMM's weights).
    const uint64_t last = static_cast<uint64_t>(repeats - 1) * spacing;
    bool right = t.has_value();
    for (int s = 0; right && s < 3; ++s) {
      const int64_t i = (s * 7919) % m, j = (s * 104729) % n;
      __nv_bfloat16 got_bf16;
      right = ok(cudaMemcpy(&got_bf16, c + i * n + j, 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      double want = 0;  // A row-major (i k + x), B row-major (x n + j)
      for (int64_t x = 0; x < k; ++x)
        want += static_cast<double>(__bfloat162float(__float2bfloat16(test_value(static_cast<uint64_t>(i * k + x), 1)))) *
                static_cast<double>(__bfloat162float(__float2bfloat16(test_value(last + static_cast<uint64_t>(x * n + j), 2))));
      const double got = __bfloat162float(got_bf16);
      if (right && std::abs(got - want) > 0.02 * std::abs(want) + 0.05 * std::sqrt(static_cast<double>(k))) {
        problem_ = "GEMM result differs from the host reference";
        right = false;
      }
    }
    release();
    return right ? t : std::nullopt;
  }

  // The GEMM back to back on one set of operands for `seconds`: per window of `window_s` (host
  // wall time), the calls launched in it timed together (timed()), over their number. Every 16
  // calls the host waits for the batch marked two rounds before, so 16-32 calls stay queued: the
  // GPU never runs dry within a window.
  std::vector<double> held_gemm(int64_t m, int64_t n, int64_t k, double seconds, double window_s) override {
    problem_.clear();
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    const size_t na = static_cast<size_t>(m * k), nb = static_cast<size_t>(k * n), nc = static_cast<size_t>(m * n);
    cudaEvent_t marks[2] = {nullptr, nullptr};
    auto release = [&] {
      cudaFree(a);
      cudaFree(b);
      cudaFree(c);
      for (auto e : marks)
        if (e) cudaEventDestroy(e);
    };
    std::vector<double> windows;
    if (!ok(cudaMalloc(&a, na * 2), "cudaMalloc") || !ok(cudaMalloc(&b, nb * 2), "cudaMalloc") ||
        !ok(cudaMalloc(&c, nc * 2), "cudaMalloc") || !ok(cudaEventCreate(&marks[0]), "cudaEventCreate") ||
        !ok(cudaEventCreate(&marks[1]), "cudaEventCreate")) {
      release();
      return windows;
    }
    fill_bf16<<<grid_for(na), kThreads, 0, stream_>>>(a, na, 1);
    fill_bf16<<<grid_for(nb), kThreads, 0, stream_>>>(b, nb, 2);
    auto one = [&] {
      return gemm_row_major(blas_, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, b, c, CUDA_R_16BF) ==
             CUBLAS_STATUS_SUCCESS;
    };
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    bool fine = ok(cudaGetLastError(), "filling the GEMM's inputs") && one() && ok(cudaStreamSynchronize(stream_), "a GEMM");
    while (fine && Clock::now() < end) {
      const auto window_end = Clock::now() + std::chrono::duration<double>(window_s);
      int64_t calls = 0;
      const auto t = timed([&] {
        do {
          for (int i = 0; i < 16; ++i, ++calls)
            if (!one()) return false;
          // The batch marked two rounds ago (an event never recorded is complete); mark these.
          cudaEvent_t mark = marks[calls / 16 % 2];
          if (!ok(cudaEventSynchronize(mark), "cudaEventSynchronize") || !ok(cudaEventRecord(mark, stream_), "cudaEventRecord"))
            return false;
        } while (Clock::now() < window_end);
        return true;
      });
      fine = t.has_value();
      if (fine) windows.push_back(*t / static_cast<double>(calls));
    }
    if (!fine) {
      if (problem_.empty()) problem_ = "the held GEMM failed";
      windows.push_back(0);  // the harness reports the run as excluded
    }
    release();
    return windows;
  }

  // fp16: as for bf16 (gemm_row_major), an fp16 output. fp8 (e4m3): cuBLASLt, which takes fp8
  // only with the first operand transposed, so it computes C^T (n x m) = B^T A^T with A held
  // row-major (m x k) and B column-major (k x n): every leading dimension is k or n, multiples of
  // 16 as fp8 requires, whatever m is; bf16 output, fp32 accumulation, unit scales.
  std::optional<double> gemm_in(const std::string& dtype, int64_t m, int64_t n, int64_t k) override {
    problem_.clear();
    const bool fp8 = dtype == "fp8";
    if (dtype != "fp16" && !(fp8 && lt_)) {
      problem_ = "no " + dtype + " GEMM on this device";
      return std::nullopt;
    }
    const size_t na = static_cast<size_t>(m * k), nb = static_cast<size_t>(k * n), nc = static_cast<size_t>(m * n);
    const size_t element = fp8 ? 1 : 2;
    const int64_t repeats = gemm_repeats(static_cast<double>(nb * element));  // as gemm() times them
    const size_t spacing = weight_spacing(nb, element);
    const size_t nbs = spacing * static_cast<size_t>(repeats);
    void *a = nullptr, *b = nullptr, *c = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    auto release = [&] {
      cudaFree(a);
      cudaFree(b);
      cudaFree(c);
      if (desc) cublasLtMatmulDescDestroy(desc);
      for (auto l : {la, lb, lc})
        if (l) cublasLtMatrixLayoutDestroy(l);
    };
    if (!ok(cudaMalloc(&a, na * element), "cudaMalloc") || !ok(cudaMalloc(&b, nbs * element), "cudaMalloc") ||
        !ok(cudaMalloc(&c, nc * 2), "cudaMalloc")) {
      release();
      return std::nullopt;
    }
    if (fp8) {
      fill_fp8<<<grid_for(na), kThreads, 0, stream_>>>(static_cast<__nv_fp8_e4m3*>(a), na, 1);
      fill_fp8<<<grid_for(nbs), kThreads, 0, stream_>>>(static_cast<__nv_fp8_e4m3*>(b), nbs, 2);
    } else {
      fill_f16<<<grid_for(na), kThreads, 0, stream_>>>(static_cast<__half*>(a), na, 1);
      fill_f16<<<grid_for(nbs), kThreads, 0, stream_>>>(static_cast<__half*>(b), nbs, 2);
    }
    if (!ok(cudaGetLastError(), "filling the GEMM's inputs")) {
      release();
      return std::nullopt;
    }
    const float alpha = 1, beta = 0;
    const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
    if (fp8) {
      const cublasOperation_t t = CUBLAS_OP_T, none = CUBLAS_OP_N;
      bool made = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none) == CUBLAS_STATUS_SUCCESS;
      // First operand: B stored k x n column-major, transposed to n x k; second: A^T, i.e. A
      // row-major, k x m column-major; the result n x m column-major (C^T).
      made = made && cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, n, k) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, m, k) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n) == CUBLAS_STATUS_SUCCESS;
      if (!made) {
        problem_ = "cuBLASLt could not describe an fp8 GEMM";
        release();
        return std::nullopt;
      }
    }
    auto one = [&](int64_t r) {
      const void* w = static_cast<const char*>(b) + static_cast<size_t>(r) * spacing * element;
      if (fp8)
        return cublasLtMatmul(lt_, desc, &alpha, w, la, a, lb, &beta, c, lc, c, lc, nullptr, lt_workspace_,
                              lt_workspace_ ? kLtWorkspace : 0, stream_) == CUBLAS_STATUS_SUCCESS;
      return gemm_row_major(blas_, im, in, ik, a, w, c, CUDA_R_16F) == CUBLAS_STATUS_SUCCESS;
    };
    if (flush_ && !ok(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_), "flushing the L2 cache")) {
      release();
      return std::nullopt;
    }
    const auto t = timed_runs(repeats, one);
    if (!t && problem_ == "a library call failed") problem_ = dtype + " GEMM: the library refused the shape";
    const uint64_t last = static_cast<uint64_t>(repeats - 1) * spacing;  // the last GEMM's weights, which C holds
    // Check a few entries of C against the host's sums over the same test values, rounded as the
    // device holds them. A row-major (i k + x); B row-major (x n + j) for fp16, column-major (x + j k) for fp8.
    bool right = t.has_value();
    for (int s = 0; right && s < 3; ++s) {
      const int64_t i = (s * 7919) % m, j = (s * 104729) % n;
      // The output is bf16 for fp8 (cuBLASLt's), fp16 for fp16 (cublasGemmEx takes fp16 inputs to an
      // fp16 or fp32 output only).
      uint16_t raw = 0;
      const size_t at = static_cast<size_t>(j + i * n);
      right = ok(cudaMemcpy(&raw, static_cast<uint16_t*>(c) + at, 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      // The operands as the device holds them (rounded to fp8 or fp16).
      auto held = [&](uint64_t index, uint64_t seed) {
        const float v = test_value(index, seed);
        return static_cast<double>(fp8 ? static_cast<float>(__nv_fp8_e4m3(v)) : __half2float(__float2half(v)));
      };
      double want = 0;
      for (int64_t x = 0; x < k; ++x)
        want += held(static_cast<uint64_t>(i * k + x), 1) * held(last + static_cast<uint64_t>(fp8 ? x + j * k : x * n + j), 2);
      __nv_bfloat16 as_bf16;
      __half as_f16;
      std::memcpy(&as_bf16, &raw, 2);
      std::memcpy(&as_f16, &raw, 2);
      const double got = fp8 ? __bfloat162float(as_bf16) : __half2float(as_f16);
      if (right && std::abs(got - want) > 0.02 * std::abs(want) + 0.05 * std::sqrt(static_cast<double>(k))) {
        problem_ = dtype + " GEMM result differs from the host reference";
        right = false;
      }
    }
    release();
    return right ? t : std::nullopt;
  }

  // Unfused causal attention over `heads` heads, forward (S = Q K^T, causal softmax, O = P V) and
  // backward (dV = P^T dO, dP = dO V^T, softmax backward, dQ = dS K, dK = dS^T Q), per head.
  std::optional<double> attention(int64_t seq, int64_t d, bool backward) override {
    problem_.clear();
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
    bool fine = ok(cudaMalloc(&p, scores * 2), "cudaMalloc") && (!backward || ok(cudaMalloc(&dp, scores * 2), "cudaMalloc"));
    // The forward needs q, k, v, o; the backward also dO, dQ, dK, dV. Buffer b holds seed 10 + b.
    for (size_t b = 0; fine && b < (backward ? buffers.size() : 4); ++b) {
      fine = ok(cudaMalloc(&buffers[b], tokens * 2), "cudaMalloc");
      if (fine) fill_bf16<<<grid_for(tokens), kThreads, 0, stream_>>>(buffers[b], tokens, 10 + b);
    }
    fine = fine && ok(cudaGetLastError(), "filling attention's inputs");
    if (!fine) {
      release();
      return std::nullopt;
    }
    __nv_bfloat16 *q = buffers[0], *k = buffers[1], *v = buffers[2], *o = buffers[3], *d_o = buffers[4], *dq = buffers[5],
                  *dk = buffers[6], *dv = buffers[7];
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    AttentionBuffers ab;
    ab.q = q, ab.k = k, ab.v = v, ab.o = o, ab.d_o = d_o, ab.dq = dq, ab.dk = dk, ab.dv = dv, ab.p = p, ab.dp = dp;
    auto run = [&] { return unfused_attention(blas_, stream_, heads, seq, d, ab, true, backward); };
    auto t = timed(run);
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
      fine = ok(cudaMemcpy(got.data(), o + (seq - 1) * d, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      std::vector<double> want(static_cast<size_t>(d), 0.0);
      for (int64_t c = 0; c < d; ++c)
        for (int64_t j = 0; j < seq; ++j) want[static_cast<size_t>(c)] += logits[static_cast<size_t>(j)] / sum * in(12, j, c);
      fine = fine && row_close(got, want);
      if (fine && backward) {
        const double last = logits[static_cast<size_t>(seq - 1)] / sum;
        fine = ok(cudaMemcpy(got.data(), dv + (seq - 1) * d, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
        for (int64_t c = 0; c < d; ++c) want[static_cast<size_t>(c)] = last * in(14, seq - 1, c);
        fine = fine && row_close(got, want);
      }
      if (!fine) {
        if (problem_.empty()) problem_ = "attention result differs from the host's reference row";
        t.reset();
      }
    }
    release();
    if (t) *t /= static_cast<double>(heads);  // per head, as the convention counts
    return t;
  }

  // Unfused decode attention (unfused_decode_attention, the runtime's path): per (sequence, KV
  // head) the group's scores, their softmax and the weighted values, with batched GEMMs.
  std::optional<double> decode_attention(int64_t batch, int64_t len, int64_t heads, int64_t kv_heads, int64_t d) override {
    problem_.clear();
    if (batch < 1 || len < 1 || kv_heads < 1 || d < 1 || heads < kv_heads || heads % kv_heads != 0) {
      problem_ = "decode attention needs a positive shape whose query heads are a multiple of its KV heads";
      return std::nullopt;
    }
    const int64_t pairs = batch * kv_heads, group = heads / kv_heads;
    const size_t queries = static_cast<size_t>(pairs * group * d), cache = static_cast<size_t>(pairs * len * d),
                 scores = static_cast<size_t>(pairs * group * len);
    DecodeBuffers b;
    auto release = [&] {
      for (auto* p : {b.q, b.k, b.v, b.o, b.s}) cudaFree(p);
    };
    bool fine = ok(cudaMalloc(&b.q, queries * 2), "cudaMalloc") && ok(cudaMalloc(&b.o, queries * 2), "cudaMalloc") &&
                ok(cudaMalloc(&b.k, cache * 2), "cudaMalloc") && ok(cudaMalloc(&b.v, cache * 2), "cudaMalloc") &&
                ok(cudaMalloc(&b.s, scores * 2), "cudaMalloc");
    if (fine) {
      fill_bf16<<<grid_for(queries), kThreads, 0, stream_>>>(b.q, queries, 20);
      fill_bf16<<<grid_for(cache), kThreads, 0, stream_>>>(b.k, cache, 21);
      fill_bf16<<<grid_for(cache), kThreads, 0, stream_>>>(b.v, cache, 22);
      fine = ok(cudaGetLastError(), "filling decode attention's inputs");
    }
    if (!fine) {
      release();
      return std::nullopt;
    }
    // Read from HBM, not from the L2 cache the fill left the inputs in (as for GEMMs): in a model
    // every layer reads its own cache.
    if (!ok(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_), "flushing the L2 cache")) {
      release();
      return std::nullopt;
    }
    auto t = timed([&] { return unfused_decode_attention(blas_, stream_, pairs, group, len, d, b); });
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
      fine = ok(cudaMemcpy(got.data(), b.o, static_cast<size_t>(d) * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      std::vector<double> want(static_cast<size_t>(d), 0.0);
      for (int64_t c = 0; c < d; ++c)
        for (int64_t j = 0; j < len; ++j) want[static_cast<size_t>(c)] += logits[static_cast<size_t>(j)] / sum * in(22, j * d + c);
      fine = fine && row_close(got, want);
      if (!fine) {
        if (problem_.empty()) problem_ = "decode attention result differs from the host's reference row";
        t.reset();
      }
    }
    release();
    return t;
  }

  std::optional<double> memory(MemoryKernel kernel, double bytes) override {
    problem_.clear();
    const int arrays = kernel == MemoryKernel::triad ? 3 : 2;
    const auto n = static_cast<size_t>(std::max(1.0, bytes / (4.0 * arrays)));
    float *x = nullptr, *y = nullptr, *z = nullptr;
    auto release = [&] {
      cudaFree(x);
      cudaFree(y);
      cudaFree(z);
    };
    if (!ok(cudaMalloc(&x, n * 4), "cudaMalloc") || !ok(cudaMalloc(&y, n * 4), "cudaMalloc") ||
        (arrays == 3 && !ok(cudaMalloc(&z, n * 4), "cudaMalloc"))) {
      release();
      return std::nullopt;
    }
    fill_float<<<grid_for(n), kThreads, 0, stream_>>>(x, n, 1.5f);
    if (z) fill_float<<<grid_for(n), kThreads, 0, stream_>>>(z, n, 0.25f);
    if (!ok(cudaGetLastError(), "filling the kernel's input")) {
      release();
      return std::nullopt;
    }
    const size_t cols = 4096, rows = (n + cols - 1) / cols;
    auto run = [&] {
      switch (kernel) {
        case MemoryKernel::copy: copy_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x, y, n); break;
        case MemoryKernel::triad: triad_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x, z, y, 3.0f, n); break;
        case MemoryKernel::norm: rmsnorm_kernel<<<static_cast<int>(std::min<size_t>(65535, rows)), kThreads, 0, stream_>>>(x, y, n / cols, cols); break;
        case MemoryKernel::activation: silu_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x, y, n); break;
      }
      return cudaGetLastError() == cudaSuccess;
    };
    auto t = timed(run);
    float first = 0;
    const float want = kernel == MemoryKernel::copy ? 1.5f : kernel == MemoryKernel::triad ? 2.25f
                       : kernel == MemoryKernel::norm ? 1.0f : 1.5f / (1.0f + std::exp(-1.5f));
    const bool checked = n >= cols || kernel != MemoryKernel::norm;  // a norm needs one whole row
    if (t && (!ok(cudaMemcpy(&first, y, 4, cudaMemcpyDeviceToHost), "cudaMemcpy") ||
              (checked && std::abs(first - want) > 1e-2f))) {
      static const char* const names[] = {"copy", "triad", "norm", "activation"};
      problem_ = std::string(names[static_cast<int>(kernel)]) + " result differs from its formula";
      t.reset();
    }
    release();
    return t;
  }

  // A kernel's share of a stream of eager launches: kLaunchBurst empty kernels launched back to
  // back and waited for once, from the first launch to the end, divided by their number. This is
  // what each kernel of an eager stream adds (the host's enqueue or the GPU's per-kernel time,
  // whichever is longer), not one launch's round trip, which a stream pays once (the round trip
  // is about 8 us on an H200 in a VM: calib/SOURCES.md sec. 3).
  static constexpr int kLaunchBurst = 32;
  std::optional<double> launch() override {
    problem_.clear();
    if (!ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")) return std::nullopt;
    const auto t = Clock::now();
    for (int i = 0; i < kLaunchBurst; ++i) empty_kernel<<<1, 1, 0, stream_>>>();
    if (!ok(cudaGetLastError(), "the empty kernel") || !ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"))
      return std::nullopt;
    return std::chrono::duration<double>(Clock::now() - t).count() / kLaunchBurst;
  }

  // A graph of `kernels` empty kernels, captured from the stream once per size and replayed: its
  // replay timed with events (after an untimed one), divided by the kernels.
  std::optional<double> graph_kernel(int64_t kernels) override {
    problem_.clear();
    if (kernels != graph_kernels_) {
      if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
      graph_exec_ = nullptr;
      graph_kernels_ = 0;
      cudaGraph_t graph = nullptr;
      if (!ok(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) return std::nullopt;
      for (int64_t i = 0; i < kernels; ++i) empty_kernel<<<1, 1, 0, stream_>>>();
      const bool captured = ok(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
      const bool made = captured && ok(cudaGraphInstantiate(&graph_exec_, graph, 0), "cudaGraphInstantiate");
      if (graph) cudaGraphDestroy(graph);
      if (!made) {
        graph_exec_ = nullptr;
        return std::nullopt;
      }
      graph_kernels_ = kernels;
      if (!ok(cudaGraphLaunch(graph_exec_, stream_), "cudaGraphLaunch")) return std::nullopt;  // the untimed first replay
    }
    const auto t = timed([&] { return cudaGraphLaunch(graph_exec_, stream_) == cudaSuccess; });
    if (!t) return std::nullopt;
    return *t / static_cast<double>(kernels);
  }

  std::optional<double> host_copy(double bytes) override {
    problem_.clear();
    const auto n = static_cast<size_t>(std::max(4.0, bytes));
    void *host = nullptr, *dev = nullptr;
    auto release = [&] {
      cudaFreeHost(host);
      cudaFree(dev);
    };
    if (!ok(cudaMallocHost(&host, n), "cudaMallocHost") || !ok(cudaMalloc(&dev, n), "cudaMalloc")) {
      release();
      return std::nullopt;
    }
    static_cast<unsigned char*>(host)[0] = 42;
    // One untimed copy first, as every other measurement warms up: the first transfer through
    // freshly allocated buffers is not the steady state (timed first, 1 MiB took 0.7 ms on an H200
    // in a VM, 35 times its time at the link's rate, and its repeats differed by 63%).
    if (!ok(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync") ||
        !ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")) {
      release();
      return std::nullopt;
    }
    // Not behind the delay kernel: copies timed so (the delay runs on the compute engine, a copy
    // on a copy engine) came out 0.5-0.8 ms slower at 1 and 16 MiB, about the delay's length, and
    // no slower at 256 MiB (the host tables of calib/profiles/measured/*-2026-11-28*.json; the
    // H200's of 11-27, timed without the delay, lie on a line of 54.9 GB/s and 5.4 us). The copies
    // are timed back to back on an idle stream instead, enough of them that the first one's
    // enqueue is a small share. The smallest copies may come as fast as the host issues them, as
    // they do for a loop that issues copies one after another.
    const int64_t copies = std::clamp<int64_t>(static_cast<int64_t>(64.0 * (1 << 20) / static_cast<double>(n)), 4, 256);
    auto t = timed_runs(
        copies, [&](int64_t) { return ok(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync"); },
        Queue::idle);
    unsigned char back = 0;
    if (t && (!ok(cudaMemcpy(&back, dev, 1, cudaMemcpyDeviceToHost), "cudaMemcpy") || back != 42)) {
      problem_ = "host copy differs from its source";
      t.reset();
    }
    release();
    return t;
  }

  std::optional<double> collective(model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                   bool in_place) override;
#ifdef ARLSIM_HAVE_NCCL
  // Destroys (or, after an error, aborts) the communicators and their streams.
  void release_comms(bool abort) {
    for (auto c : comms_)
      if (c) abort ? ncclCommAbort(c) : ncclCommDestroy(c);
    for (size_t r = 0; r < streams_.size(); ++r)
      if (streams_[r]) {
        cudaSetDevice(static_cast<int>(r));
        cudaStreamDestroy(streams_[r]);
      }
    comms_.clear();
    streams_.clear();
    cudaSetDevice(0);
  }
#endif

  std::string problem() const override { return problem_; }

 private:
  bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    problem_ = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  }
  // A row of bf16 results against its double-precision reference: within 5% of the row's largest
  // value (bf16 scores, probabilities and outputs each round to 0.4%), so that a row of zeros or
  // of another row's values fails however small the values are (a long context's outputs are
  // averages over many keys: a few thousandths).
  static bool row_close(const std::vector<__nv_bfloat16>& got, const std::vector<double>& want) {
    double largest = 0;
    for (double w : want) largest = std::max(largest, std::abs(w));
    for (size_t c = 0; c < want.size(); ++c)
      if (!(std::abs(static_cast<double>(__bfloat162float(got[c])) - want[c]) <= 0.05 * largest + 1e-6)) return false;
    return true;
  }

  // One run of `fn` on the stream between two events; nothing when it fails. Behind the delay,
  // the events and `fn`'s launches are queued behind a delay kernel (kernels.cuh), so the time is
  // the GPU's from the first of fn's kernels to the end of its last, without the host's work of
  // launching them; on an idle stream (copies: see host_copy) the first one's enqueue is in it.
  static constexpr uint64_t kQueueDelayNs = 500'000;  // longer than queuing any fn here takes
  template <typename F>
  std::optional<double> timed(F&& fn, Queue queue = Queue::behind_delay) {
    if (!ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")) return std::nullopt;
    if (queue == Queue::behind_delay) {
      delay_kernel<<<1, 1, 0, stream_>>>(kQueueDelayNs);
      if (!ok(cudaGetLastError(), "the delay kernel")) return std::nullopt;
    }
    if (!ok(cudaEventRecord(start_, stream_), "cudaEventRecord")) return std::nullopt;
    if (!fn()) {
      if (problem_.empty()) problem_ = "a library call failed";
      return std::nullopt;
    }
    float ms = 0;
    if (!ok(cudaEventRecord(stop_, stream_), "cudaEventRecord") || !ok(cudaEventSynchronize(stop_), "cudaEventSynchronize") ||
        !ok(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime"))
      return std::nullopt;
    return static_cast<double>(ms) * 1e-3;
  }

  int devices_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;  // fp8 GEMMs
  cudaGraphExec_t graph_exec_ = nullptr;  // graph_kernel's graph of graph_kernels_ empty kernels
  int64_t graph_kernels_ = 0;
  static constexpr size_t kLtWorkspace = 32u << 20;  // cuBLAS's guidance for Hopper
  void* lt_workspace_ = nullptr;
  void* flush_ = nullptr;  // written before each GEMM to empty the L2 cache
  size_t flush_bytes_ = 0;
  std::string problem_;
#ifdef ARLSIM_HAVE_NCCL
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
#endif
};

#ifdef ARLSIM_HAVE_NCCL
// One process drives the node's first `ranks` GPUs (ncclCommInitAll). Buffers hold fp32 values:
// rank r's input is r + 1 (all-to-all: r n + j + 1 in the chunk meant for rank j); after the
// timed runs the inputs are written again, one more operation runs (in place the timed runs
// changed them) and one element of each rank's output is checked. In place the input is the
// output buffer as NCCL defines it: an all-gather's input at the rank's slice of its output, a
// reduce-scatter's output at the rank's slice of its input.
std::optional<double> CudaDevice::collective(model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                             bool in_place) {
  using model::CollectiveOp;
  problem_.clear();
  if (ranks < 1) {
    problem_ = "a collective needs at least one rank";
    return std::nullopt;
  }
  if (in_place && !in_place_capable(op)) {
    problem_ = "all-to-all and send/recv do not run in place";
    return std::nullopt;
  }
  const int n = static_cast<int>(ranks);
  struct BackToFirst {  // whatever happens, the first GPU is current again afterwards
    ~BackToFirst() { cudaSetDevice(0); }
  } back;
  if (n > devices_) {
    problem_ = "only " + std::to_string(devices_) + " GPUs are visible";
    return std::nullopt;
  }
  if (static_cast<int>(comms_.size()) != n) {
    release_comms(false);
    comms_.assign(static_cast<size_t>(n), nullptr);
    streams_.assign(static_cast<size_t>(n), nullptr);
    std::vector<int> devs(static_cast<size_t>(n));
    bool made = true;
    for (int r = 0; r < n && made; ++r) {
      devs[static_cast<size_t>(r)] = r;
      made = ok(cudaSetDevice(r), "cudaSetDevice") && ok(cudaStreamCreate(&streams_[static_cast<size_t>(r)]), "cudaStreamCreate");
    }
    const ncclResult_t init = made ? ncclCommInitAll(comms_.data(), n, devs.data()) : ncclSuccess;
    if (!made || init != ncclSuccess) {
      if (made) problem_ = std::string("ncclCommInitAll: ") + ncclGetErrorString(init);
      comms_.assign(comms_.size(), nullptr);
      release_comms(false);
      return std::nullopt;
    }
  }
  const NcclShape sh = nccl_shape(op, bytes, n);
  const size_t elements = sh.elements;
  if (used) *used = 4.0 * static_cast<double>(elements);
  std::vector<float*> in(static_cast<size_t>(n), nullptr), out(static_cast<size_t>(n), nullptr);
  bool fine = true;
  for (int r = 0; r < n && fine; ++r) {
    cudaSetDevice(r);
    fine = (in_place || ok(cudaMalloc(&in[static_cast<size_t>(r)], elements * 4), "cudaMalloc")) &&
           ok(cudaMalloc(&out[static_cast<size_t>(r)], elements * 4), "cudaMalloc");
  }
  // The inputs, where the operation reads them.
  auto fill_inputs = [&] {
    for (int r = 0; r < n && fine; ++r) {
      cudaSetDevice(r);
      const auto ri = static_cast<size_t>(r);
      fine = ok(fill_rank_inputs(op, sh, r, n, in_place, in[ri], out[ri], streams_[ri]), "filling the collective's inputs");
    }
    for (int r = 0; r < n && fine; ++r) {
      cudaSetDevice(r);
      fine = ok(cudaStreamSynchronize(streams_[static_cast<size_t>(r)]), "cudaStreamSynchronize");
    }
    fine = fine && ok(cudaGetLastError(), "filling the collective's inputs");
  };
  // One operation on every rank, in one NCCL group.
  auto launch = [&]() -> ncclResult_t {
    ncclResult_t res = ncclGroupStart();
    for (int r = 0; r < n && res == ncclSuccess; ++r) {
      const auto ri = static_cast<size_t>(r);
      res = launch_rank(op, sh, r, n, in_place, in[ri], out[ri], comms_[ri], streams_[ri]);
    }
    const ncclResult_t ended = ncclGroupEnd();
    return res == ncclSuccess ? ended : res;
  };
  auto synchronize = [&] {
    for (int r = 0; r < n && fine; ++r) {
      cudaSetDevice(r);
      fine = ok(cudaStreamSynchronize(streams_[static_cast<size_t>(r)]), "cudaStreamSynchronize");
    }
  };
  if (fine) fill_inputs();
  std::optional<double> t;
  if (fine) {
    // As nccl-tests does: many operations back to back, timed together, the mean taken (one
    // operation timed from the host would add its enqueueing and the stream waits to every size).
    const int iterations = bytes <= (1 << 20) ? 20 : 5;
    const auto start = Clock::now();
    ncclResult_t res = ncclSuccess;
    for (int it = 0; it < iterations && res == ncclSuccess; ++it) res = launch();
    synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
    // The checked run, on fresh inputs.
    if (res == ncclSuccess && fine) {
      fill_inputs();
      if (fine) res = launch();
      synchronize();
    }
    if (res != ncclSuccess) {
      problem_ = std::string("NCCL: ") + ncclGetErrorString(res);
      release_comms(true);  // a communicator after an error is not reused
    } else if (fine) {
      t = seconds;
    }
  }
  // Check each rank's result.
  for (int r = 0; r < n && t; ++r) {
    cudaSetDevice(r);
    if (std::string wrong = check_rank_result(op, sh, r, n, in_place, out[static_cast<size_t>(r)]); !wrong.empty()) {
      problem_ = std::move(wrong);
      t.reset();
    }
  }
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    if (in[static_cast<size_t>(r)]) cudaFree(in[static_cast<size_t>(r)]);
    if (out[static_cast<size_t>(r)]) cudaFree(out[static_cast<size_t>(r)]);
  }
  cudaSetDevice(0);
  return t;
}
#else
std::optional<double> CudaDevice::collective(model::CollectiveOp, double, int64_t, double*, bool) {
  problem_ = "this build has no NCCL";
  return std::nullopt;
}
#endif

}  // namespace

Device* new_cuda_device(std::string* problem) {
  auto d = std::make_unique<CudaDevice>();
  if (!d->init(*problem)) return nullptr;
  return d.release();
}

}  // namespace arlsim::calib

// The module's entry points (see cuda_device.h): its interface version, and a new device or null
// with *problem saying why.
extern "C" __attribute__((visibility("default"))) int arlsim_calib_cuda_abi() { return arlsim::calib::kCudaModuleAbi; }

extern "C" __attribute__((visibility("default"))) arlsim::calib::Device* arlsim_calib_make_cuda_device(std::string* problem) {
  return arlsim::calib::new_cuda_device(problem);
}
