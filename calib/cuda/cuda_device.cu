// The CUDA calibration device (cuda_device.h): the first GPU's GEMMs (cuBLAS, cuBLASLt for fp8),
// streaming kernels, launches, graph replays and pinned host copies here; its attention and its
// collectives in cuda_attention.cu and cuda_collectives.cu, over the state they share
// (cuda_context.cuh).
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
#include <functional>
#include <string>
#include <utility>
#include <vector>

#ifdef ARLSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include "calib/cuda/cuda_context.cuh"
#include "calib/cuda/cuda_peaks.h"
#include "calib/cuda/kernels.cuh"

namespace arlsim::calib {

namespace cuda_device_detail {

bool CudaContext::ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  problem = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

std::optional<double> CudaContext::timed(const std::function<bool()>& fn, Queue queue) {
  if (!ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) return std::nullopt;
  if (queue == Queue::behind_delay) {
    // Longer than queuing any measurement's work takes.
    constexpr uint64_t kQueueDelayNs = 500'000;
    cuda_kernels::delay_kernel<<<1, 1, 0, stream>>>(kQueueDelayNs);
    if (!ok(cudaGetLastError(), "the delay kernel")) return std::nullopt;
  }
  if (!ok(cudaEventRecord(start, stream), "cudaEventRecord")) return std::nullopt;
  if (!fn()) {
    if (problem.empty()) problem = "a library call failed";
    return std::nullopt;
  }
  float ms = 0;
  if (!ok(cudaEventRecord(stop, stream), "cudaEventRecord") || !ok(cudaEventSynchronize(stop), "cudaEventSynchronize") ||
      !ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime"))
    return std::nullopt;
  return static_cast<double>(ms) * 1e-3;
}

bool row_close(const std::vector<__nv_bfloat16>& got, const std::vector<double>& want) {
  double largest = 0;
  for (double w : want) largest = std::max(largest, std::abs(w));
  for (size_t c = 0; c < want.size(); ++c)
    if (!(std::abs(static_cast<double>(__bfloat162float(got[c])) - want[c]) <= 0.05 * largest + 1e-6)) return false;
  return true;
}

}  // namespace cuda_device_detail

namespace {

using namespace cuda_kernels;
using namespace cuda_device_detail;

using Clock = std::chrono::steady_clock;

class CudaDevice final : public Device {
 public:
  CudaDevice() = default;
  ~CudaDevice() override {
    comms_.close();  // the communicators first, as they were made last
    cudaSetDevice(0);
    if (ctx_.blas) cublasDestroy(ctx_.blas);
    if (ctx_.lt) cublasLtDestroy(ctx_.lt);
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    cudaFree(lt_workspace_);
    if (ctx_.stream) cudaStreamDestroy(ctx_.stream);
    if (ctx_.start) cudaEventDestroy(ctx_.start);
    if (ctx_.stop) cudaEventDestroy(ctx_.stop);
    cudaFree(ctx_.flush);
  }

  bool init(std::string& problem) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
      cudaGetLastError();
      problem = "no CUDA device (no GPU, or no driver) is visible";
      return false;
    }
    ctx_.devices = count;
    if (!ok(cudaSetDevice(0), "cudaSetDevice") || !ok(cudaStreamCreate(&ctx_.stream), "cudaStreamCreate") ||
        !ok(cudaEventCreate(&ctx_.start), "cudaEventCreate") || !ok(cudaEventCreate(&ctx_.stop), "cudaEventCreate") ||
        cublasCreate(&ctx_.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(ctx_.blas, ctx_.stream) != CUBLAS_STATUS_SUCCESS) {
      problem = ctx_.problem.empty() ? "cuBLAS could not start" : ctx_.problem;
      return false;
    }
    if (cublasLtCreate(&ctx_.lt) != CUBLAS_STATUS_SUCCESS) ctx_.lt = nullptr;  // fp8 GEMMs are then not measured
    if (ctx_.lt && cudaMalloc(&lt_workspace_, kLtWorkspace) != cudaSuccess) {
      cudaGetLastError();
      lt_workspace_ = nullptr;
    }
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    ctx_.flush_bytes = 2 * static_cast<size_t>(std::max(l2, 1 << 20));
    if (!ok(cudaMalloc(&ctx_.flush, ctx_.flush_bytes), "cudaMalloc")) {
      problem = ctx_.problem;
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
    cublasGetVersion(ctx_.blas, &blas);
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
      if (std::string(r.dtype) != "fp8" || ctx_.lt) i.other_gemm_dtypes.emplace_back(r.dtype, r.times_bf16 * i.peak_flops);
    i.memory_bandwidth = nominal_memory_bandwidth(memory_clock, bus);
    i.host_link_kind = "host";  // PCIe or NVLink-C2C: not detected; the rate is measured
    i.gemm_tile_m = 128;  // cuBLAS's large bf16 tiles, as the shipped profiles take them
    i.gemm_tile_n = 256;
    i.max_ranks = ctx_.devices;
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
    ctx_.problem.clear();
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
    fill_bf16<<<grid_for(na), kThreads, 0, ctx_.stream>>>(a, na, 1);
    fill_bf16<<<grid_for(nbs), kThreads, 0, ctx_.stream>>>(b, nbs, 2);
    if (!ok(cudaGetLastError(), "filling the GEMM's inputs")) {
      release();
      return std::nullopt;
    }
    // Row-major C (m x n) = A (m x k) B (k x n), as the runtime runs its GEMMs (gemm_row_major).
    auto one = [&](int64_t r) {
      return gemm_row_major(ctx_.blas, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, b + r * spacing, c,
                            CUDA_R_16BF) == CUBLAS_STATUS_SUCCESS;
    };
    // The weights are read from HBM, not from the L2 cache the fill left them in: in a model's
    // step every layer reads its own weights once per pass, evicted by the other layers' (GPU
    // benchmarks such as Triton's do_bench flush L2 the same way, writing a buffer larger than it).
    if (ctx_.flush && !ok(cudaMemsetAsync(ctx_.flush, 0, ctx_.flush_bytes, ctx_.stream), "flushing the L2 cache")) {
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
        ctx_.problem = "GEMM result differs from the host reference";
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
    ctx_.problem.clear();
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
    fill_bf16<<<grid_for(na), kThreads, 0, ctx_.stream>>>(a, na, 1);
    fill_bf16<<<grid_for(nb), kThreads, 0, ctx_.stream>>>(b, nb, 2);
    auto one = [&] {
      return gemm_row_major(ctx_.blas, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, b, c, CUDA_R_16BF) ==
             CUBLAS_STATUS_SUCCESS;
    };
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    bool fine = ok(cudaGetLastError(), "filling the GEMM's inputs") && one() && ok(cudaStreamSynchronize(ctx_.stream), "a GEMM");
    while (fine && Clock::now() < end) {
      const auto window_end = Clock::now() + std::chrono::duration<double>(window_s);
      int64_t calls = 0;
      const auto t = timed([&] {
        do {
          for (int i = 0; i < 16; ++i, ++calls)
            if (!one()) return false;
          // The batch marked two rounds ago (an event never recorded is complete); mark these.
          cudaEvent_t mark = marks[calls / 16 % 2];
          if (!ok(cudaEventSynchronize(mark), "cudaEventSynchronize") || !ok(cudaEventRecord(mark, ctx_.stream), "cudaEventRecord"))
            return false;
        } while (Clock::now() < window_end);
        return true;
      });
      fine = t.has_value();
      if (fine) windows.push_back(*t / static_cast<double>(calls));
    }
    if (!fine) {
      if (ctx_.problem.empty()) ctx_.problem = "the held GEMM failed";
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
    ctx_.problem.clear();
    const bool fp8 = dtype == "fp8";
    if (dtype != "fp16" && !(fp8 && ctx_.lt)) {
      ctx_.problem = "no " + dtype + " GEMM on this device";
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
      fill_fp8<<<grid_for(na), kThreads, 0, ctx_.stream>>>(static_cast<__nv_fp8_e4m3*>(a), na, 1);
      fill_fp8<<<grid_for(nbs), kThreads, 0, ctx_.stream>>>(static_cast<__nv_fp8_e4m3*>(b), nbs, 2);
    } else {
      fill_f16<<<grid_for(na), kThreads, 0, ctx_.stream>>>(static_cast<__half*>(a), na, 1);
      fill_f16<<<grid_for(nbs), kThreads, 0, ctx_.stream>>>(static_cast<__half*>(b), nbs, 2);
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
        ctx_.problem = "cuBLASLt could not describe an fp8 GEMM";
        release();
        return std::nullopt;
      }
    }
    auto one = [&](int64_t r) {
      const void* w = static_cast<const char*>(b) + static_cast<size_t>(r) * spacing * element;
      if (fp8)
        return cublasLtMatmul(ctx_.lt, desc, &alpha, w, la, a, lb, &beta, c, lc, c, lc, nullptr, lt_workspace_,
                              lt_workspace_ ? kLtWorkspace : 0, ctx_.stream) == CUBLAS_STATUS_SUCCESS;
      return gemm_row_major(ctx_.blas, im, in, ik, a, w, c, CUDA_R_16F) == CUBLAS_STATUS_SUCCESS;
    };
    if (ctx_.flush && !ok(cudaMemsetAsync(ctx_.flush, 0, ctx_.flush_bytes, ctx_.stream), "flushing the L2 cache")) {
      release();
      return std::nullopt;
    }
    const auto t = timed_runs(repeats, one);
    if (!t && ctx_.problem == "a library call failed") ctx_.problem = dtype + " GEMM: the library refused the shape";
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
        ctx_.problem = dtype + " GEMM result differs from the host reference";
        right = false;
      }
    }
    release();
    return right ? t : std::nullopt;
  }

  std::optional<double> attention(int64_t seq, int64_t d, bool backward) override {
    return measure_attention(ctx_, seq, d, backward);
  }

  std::optional<double> decode_attention(int64_t batch, int64_t len, int64_t heads, int64_t kv_heads, int64_t d) override {
    return measure_decode_attention(ctx_, batch, len, heads, kv_heads, d);
  }

  std::optional<double> memory(MemoryKernel kernel, double bytes) override {
    ctx_.problem.clear();
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
    fill_float<<<grid_for(n), kThreads, 0, ctx_.stream>>>(x, n, 1.5f);
    if (z) fill_float<<<grid_for(n), kThreads, 0, ctx_.stream>>>(z, n, 0.25f);
    if (!ok(cudaGetLastError(), "filling the kernel's input")) {
      release();
      return std::nullopt;
    }
    const size_t cols = 4096, rows = (n + cols - 1) / cols;
    auto run = [&] {
      switch (kernel) {
        case MemoryKernel::copy: copy_kernel<<<grid_for(quads(n)), kThreads, 0, ctx_.stream>>>(x, y, n); break;
        case MemoryKernel::triad: triad_kernel<<<grid_for(quads(n)), kThreads, 0, ctx_.stream>>>(x, z, y, 3.0f, n); break;
        case MemoryKernel::norm: rmsnorm_kernel<<<static_cast<int>(std::min<size_t>(65535, rows)), kThreads, 0, ctx_.stream>>>(x, y, n / cols, cols); break;
        case MemoryKernel::activation: silu_kernel<<<grid_for(quads(n)), kThreads, 0, ctx_.stream>>>(x, y, n); break;
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
      ctx_.problem = std::string(names[static_cast<int>(kernel)]) + " result differs from its formula";
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
    ctx_.problem.clear();
    if (!ok(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize")) return std::nullopt;
    const auto t = Clock::now();
    for (int i = 0; i < kLaunchBurst; ++i) empty_kernel<<<1, 1, 0, ctx_.stream>>>();
    if (!ok(cudaGetLastError(), "the empty kernel") || !ok(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize"))
      return std::nullopt;
    return std::chrono::duration<double>(Clock::now() - t).count() / kLaunchBurst;
  }

  // A graph of `kernels` empty kernels, captured from the stream once per size and replayed: its
  // replay timed with events (after an untimed one), divided by the kernels.
  std::optional<double> graph_kernel(int64_t kernels) override {
    ctx_.problem.clear();
    if (kernels != graph_kernels_) {
      if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
      graph_exec_ = nullptr;
      graph_kernels_ = 0;
      cudaGraph_t graph = nullptr;
      if (!ok(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) return std::nullopt;
      for (int64_t i = 0; i < kernels; ++i) empty_kernel<<<1, 1, 0, ctx_.stream>>>();
      const bool captured = ok(cudaStreamEndCapture(ctx_.stream, &graph), "cudaStreamEndCapture");
      const bool made = captured && ok(cudaGraphInstantiate(&graph_exec_, graph, 0), "cudaGraphInstantiate");
      if (graph) cudaGraphDestroy(graph);
      if (!made) {
        graph_exec_ = nullptr;
        return std::nullopt;
      }
      graph_kernels_ = kernels;
      if (!ok(cudaGraphLaunch(graph_exec_, ctx_.stream), "cudaGraphLaunch")) return std::nullopt;  // the untimed first replay
    }
    const auto t = timed([&] { return cudaGraphLaunch(graph_exec_, ctx_.stream) == cudaSuccess; });
    if (!t) return std::nullopt;
    return *t / static_cast<double>(kernels);
  }

  std::optional<double> host_copy(double bytes) override {
    ctx_.problem.clear();
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
    if (!ok(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, ctx_.stream), "cudaMemcpyAsync") ||
        !ok(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize")) {
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
        copies, [&](int64_t) { return ok(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, ctx_.stream), "cudaMemcpyAsync"); },
        Queue::idle);
    unsigned char back = 0;
    if (t && (!ok(cudaMemcpy(&back, dev, 1, cudaMemcpyDeviceToHost), "cudaMemcpy") || back != 42)) {
      ctx_.problem = "host copy differs from its source";
      t.reset();
    }
    release();
    return t;
  }

  std::optional<double> collective(model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                   bool in_place) override {
    return comms_.collective(ctx_, op, bytes, ranks, used, in_place);
  }

  std::string problem() const override { return ctx_.problem; }

 private:
  bool ok(cudaError_t e, const char* what) { return ctx_.ok(e, what); }
  template <typename F>
  std::optional<double> timed(F&& fn, Queue queue = Queue::behind_delay) {
    return ctx_.timed(std::function<bool()>(std::forward<F>(fn)), queue);
  }

  CudaContext ctx_;
  NcclComms comms_;
  cudaGraphExec_t graph_exec_ = nullptr;  // graph_kernel's graph of graph_kernels_ empty kernels
  int64_t graph_kernels_ = 0;
  static constexpr size_t kLtWorkspace = 32u << 20;  // cuBLAS's guidance for Hopper
  void* lt_workspace_ = nullptr;
};

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
