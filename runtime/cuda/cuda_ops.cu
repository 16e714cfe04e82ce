#include "runtime/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <sched.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef ARLSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include "calib/cuda/kernels.cuh"
#include "runtime/pattern.h"

namespace arlsim::runtime {

namespace {

using namespace cuda_kernels;
using Clock = std::chrono::steady_clock;

// The runtime's synthetic data on the device: the values the host computes (runtime/pattern.h).
__global__ void fill_pattern(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern_value(i, seed);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(e)));
}
#ifdef ARLSIM_HAVE_NCCL
void check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(e));
}
#endif

// Memory that grows to the largest request and is reused: on the device (Buffer) or pinned on
// the host (HostBuffer). `reset` frees it and allocates `n` bytes of undefined contents.
template <cudaError_t (*Alloc)(void**, size_t), cudaError_t (*Free)(void*)>
struct Memory {
  void* data = nullptr;
  size_t bytes = 0;
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() { Free(data); }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  void reset(size_t n) {
    Free(data);
    data = nullptr;
    bytes = 0;
    check(Alloc(&data, n), "allocating a buffer");
    bytes = n;
  }
};
cudaError_t device_alloc(void** p, size_t n) { return cudaMalloc(p, n); }
cudaError_t host_alloc(void** p, size_t n) { return cudaMallocHost(p, n); }
using Buffer = Memory<device_alloc, cudaFree>;
using HostBuffer = Memory<host_alloc, cudaFreeHost>;

// cuBLAS takes int dimensions: a larger one is refused rather than wrapped.
int dim(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw std::runtime_error(std::string(what) + " of " + std::to_string(v) + " is beyond what cuBLAS takes (int)");
  return static_cast<int>(v);
}

class CudaOps final : public DeviceOps {
 public:
  ~CudaOps() override {
    cudaSetDevice(gpu_);
#ifdef ARLSIM_HAVE_NCCL
    for (auto c : comms_)
      if (c) ncclCommDestroy(c);
    if (world_) ncclCommDestroy(world_);
#endif
    for (auto e : events_) cudaEventDestroy(e);
    cudaFree(sink_);
    if (blas_) cublasDestroy(blas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  bool init(Transport& t, std::string& problem) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
      cudaGetLastError();
      problem = "no CUDA device (no GPU, or no driver) is visible";
      return false;
    }
    // One GPU visible (a launcher that sets CUDA_VISIBLE_DEVICES per process): that one.
    if (count > 1 && t.local_rank() >= count) {
      problem = "process " + std::to_string(t.rank()) + " is number " + std::to_string(t.local_rank()) +
                " on its machine, which has " + std::to_string(count) + " GPU(s): run one process per GPU";
      return false;
    }
    gpu_ = count == 1 ? 0 : t.local_rank();
    // The cores this process may run on, shared by the node's processes (mpirun's local size, else
    // one a visible GPU), fill and check copies' buffers.
    cpu_set_t cores;
    CPU_ZERO(&cores);
    const int usable = sched_getaffinity(0, sizeof cores, &cores) == 0 ? CPU_COUNT(&cores)
                                                                      : static_cast<int>(std::thread::hardware_concurrency());
    const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int sharing = local_size && std::atoi(local_size) > 0 ? std::atoi(local_size) : count;
    // Bound to fewer cores than the node's processes (mpirun binds each to one): they are its own.
    host_threads_ = static_cast<unsigned>(std::max(1, usable < sharing ? usable : usable / sharing));
    try {
      check(cudaSetDevice(gpu_), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cublasCreate(&blas_), "cublasCreate");
      check(cublasSetStream(blas_, stream_), "cublasSetStream");
      events_.resize(kEvents);
      for (auto& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
      check(cudaMalloc(&sink_, 65536 * sizeof(float)), "cudaMalloc");
#ifdef ARLSIM_HAVE_NCCL
      // NCCL's bootstrap as nccl-tests does it: rank 0's unique id, broadcast by the transport.
      ncclUniqueId id{};
      if (t.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::string bytes(reinterpret_cast<const char*>(&id), sizeof id);
      t.broadcast(bytes, 0);
      if (bytes.size() != sizeof id) throw std::runtime_error("NCCL's unique id arrived damaged");
      std::memcpy(&id, bytes.data(), sizeof id);
      check(ncclCommInitRank(&world_, t.size(), id, t.rank()), "ncclCommInitRank");
#else
      if (t.size() > 1) throw std::runtime_error("this build has no NCCL, so its GPUs cannot run collectives together");
#endif
    } catch (const std::exception& e) {
      problem = e.what();
      return false;
    }
    return true;
  }

  int32_t join_group(const DeviceGroup& members, int64_t rank) override {
#ifdef ARLSIM_HAVE_NCCL
    ncclComm_t comm = nullptr;
    (void)members;
    check(ncclCommSplit(world_, rank >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, rank >= 0 ? static_cast<int>(rank) : 0, &comm, nullptr),
          "ncclCommSplit");
    comms_.push_back(comm);
    if (comm) {
      // NCCL connects a communicator's peers on its first operation: do it now, untimed.
      check(ncclAllReduce(sink_, sink_, 1, ncclFloat, ncclSum, comm, stream_), "ncclAllReduce (connecting a group)");
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
    return static_cast<int32_t>(comms_.size() - 1);
#else
    if (rank >= 0 && members.size() > 1) throw std::runtime_error("this build has no NCCL");
    return -1;
#endif
  }

  void begin() override {
    result_ = {};
    marks_.clear();
    phases_.clear();
    indices_.clear();
    index_ = 0;
  }

  void enqueue(const Kernel& k, const KernelContext& c) override {
    phase_ = k.phase;
    result_.kernel_seconds.push_back(0);
    struct Next {  // the next kernel's index, however this one ends
      size_t& i;
      ~Next() { ++i; }
    } next{index_};
    switch (k.kind) {
      case Kernel::Kind::gemm: gemm(k); break;
      case Kernel::Kind::attention: attention(k); break;
      case Kernel::Kind::decode_attention: decode_attention(k); break;
      case Kernel::Kind::memory: {
        // Calibration's streaming kernel of the op's kind over its bytes; 0 launches (replayed
        // from a graph) is the whole work in one. A norm takes rows of 4,096 (fewer floats: one row).
        const int64_t launches = std::max<int64_t>(1, k.launches);
        const size_t n = memory_floats_per_launch(k);
        ensure(x_, n * sizeof(float), 1.5f);
        ensure(y_, n * sizeof(float), 0.0f);
        if (k.elementwise == model::ElementwiseKind::add) ensure(z_, n * sizeof(float), 0.25f);
        const size_t cols = std::min<size_t>(n, 4096), rows = n / cols;
        open_segment();
        for (int64_t l = 0; l < launches; ++l) {
          switch (k.elementwise) {
            case model::ElementwiseKind::any:
            case model::ElementwiseKind::copy:
              copy_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x_.as<float>(), y_.as<float>(), n);
              break;
            case model::ElementwiseKind::add:
              triad_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x_.as<float>(), z_.as<float>(), y_.as<float>(), 3.0f, n);
              break;
            case model::ElementwiseKind::norm:
              rmsnorm_kernel<<<static_cast<int>(std::min<size_t>(65535, rows)), kThreads, 0, stream_>>>(x_.as<float>(), y_.as<float>(), rows, cols);
              break;
            case model::ElementwiseKind::activation:
              silu_kernel<<<grid_for(quads(n)), kThreads, 0, stream_>>>(x_.as<float>(), y_.as<float>(), n);
              break;
          }
        }
        check(cudaGetLastError(), "memory-bound kernel");
        mark(k.kind);
        break;
      }
      case Kernel::Kind::collective: collective(k, c); break;
      case Kernel::Kind::copy: copy(k, c); break;
      case Kernel::Kind::wait: {
        flush();
        const auto t = Clock::now();
        hold(k.seconds, k.busy);
        const double took = std::chrono::duration<double>(Clock::now() - t).count();
        // The host's work between an engine's iterations counts as the engine's busy time.
        if (k.busy) add_busy(result_.busy, result_.seconds, result_.seconds + took, k.phase);
        result_.seconds += took;
        result_.kernels.wait += took;
        result_.kernel_seconds[index_] += took;
        break;
      }
    }
  }

  DeviceResult end() override {
    flush();
    return result_;
  }

  void corrupt_next_copy() override { corrupt_ = true; }

 private:
  static constexpr size_t kEvents = 4096;

  // Timing: an event opens a segment of back-to-back kernels, and one more follows each kernel;
  // a kernel's time is the span between its event and the one before. A segment closes (the
  // stream is waited for and its times harvested) before a wait, before a buffer is allocated or
  // filled, and when the events run out, so that only the kernels' own device time counts.
  void open_segment() {
    if (marks_.empty()) record(Kernel::Kind::wait);  // the segment's opening event (its kind unused)
  }
  void mark(Kernel::Kind kind) {
    record(kind);
    if (marks_.size() + 2 > kEvents) flush();
  }
  void record(Kernel::Kind kind) {
    cudaEvent_t e = events_[marks_.size()];
    check(cudaEventRecord(e, stream_), "cudaEventRecord");
    marks_.emplace_back(e, kind);
    phases_.push_back(phase_);
    indices_.push_back(index_);
  }
  void flush() {
    if (!marks_.empty()) {
      check(cudaEventSynchronize(marks_.back().first), "a kernel");
      for (size_t i = 1; i < marks_.size(); ++i) {
        float ms = 0;
        check(cudaEventElapsedTime(&ms, marks_[i - 1].first, marks_[i].first), "cudaEventElapsedTime");
        const double s = static_cast<double>(ms) * 1e-3;
        result_.kernels.add(marks_[i].second, s);
        result_.kernel_seconds[indices_[i]] += s;
        add_busy(result_.busy, result_.seconds, result_.seconds + s, phases_[i]);
        result_.seconds += s;
      }
      marks_.clear();
      phases_.clear();
      indices_.clear();
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    // A check may allocate (and so flush) itself: it finds nothing left to run.
    const auto pending = std::move(checks_);
    checks_.clear();
    for (const auto& f : pending) f();
  }

  // `b` of at least `bytes`; true when it had to grow (outside timing: the stream is waited for
  // first, and the caller fills it).
  template <typename B>
  bool grow(B& b, size_t bytes) {
    if (b.bytes >= bytes) return false;
    flush();
    b.reset(bytes);
    return true;
  }
  // A device buffer of at least `bytes`, every float set to `value` when it grows.
  void ensure(Buffer& b, size_t bytes, float value) {
    if (!grow(b, bytes)) return;
    const size_t n = bytes / sizeof(float);
    fill_float<<<grid_for(n), kThreads, 0, stream_>>>(b.as<float>(), n, value);
    check(cudaGetLastError(), "filling a buffer");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  // `elements` bf16 values of calibration's test data with `seed` when it grows.
  void ensure_bf16(Buffer& b, size_t elements, uint64_t seed) {
    if (!grow(b, elements * 2)) return;
    fill_bf16<<<grid_for(elements), kThreads, 0, stream_>>>(b.as<__nv_bfloat16>(), elements, seed);
    check(cudaGetLastError(), "filling a buffer");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void ensure_host(HostBuffer& b, size_t bytes) { grow(b, bytes); }

  // A kernel's first run at a shape (cuBLAS choosing and loading its kernel, CUDA's lazy module
  // loading) is run once untimed, so that the measurement is of the steady state.
  template <typename F>
  void warm_up(const std::tuple<int, int64_t, int64_t, int64_t, int64_t>& shape, F&& run) {
    if (!warmed_.insert(shape).second) return;
    flush();
    run();
    check(cudaStreamSynchronize(stream_), "a kernel's first run");
  }

  // bf16 inputs and output, fp32 accumulation; `groups` of them (a layer's experts) in one
  // strided-batched call, as a grouped GEMM kernel runs them and the cost model prices them (one
  // kernel), each group on its own operands; a layer's weight is its own buffer. Row-major
  // C (m x n) = A (m x k) W (k x n) as frameworks call cuBLAS (gemm_row_major; a weight gradient's
  // operands token-major): the tokens are never a leading dimension.
  void gemm(const Kernel& k) {
    const auto m = static_cast<size_t>(k.m), n = static_cast<size_t>(k.n), kk = static_cast<size_t>(k.k);
    const auto groups = static_cast<size_t>(std::max<int64_t>(1, k.groups));
    ensure_bf16(a_, m * kk * groups, 1);
    Buffer& w = k.weight >= 0 ? weights_[k.weight] : b_;
    ensure_bf16(w, kk * n * groups, 2 + static_cast<uint64_t>(std::max(0, k.weight)));
    ensure_bf16(c_, m * n * groups, 3);
    const int im = dim(k.m, "a GEMM's m"), in = dim(k.n, "a GEMM's n"), ik = dim(k.k, "a GEMM's k");
    const int batch = dim(static_cast<int64_t>(groups), "a grouped GEMM's groups");
    auto run = [&] {
      const auto* x = a_.as<__nv_bfloat16>();
      const auto* y = w.as<__nv_bfloat16>();
      auto* out = c_.as<__nv_bfloat16>();
      check(gemm_row_major(blas_, im, in, ik, x, y, out, CUDA_R_16BF, batch, k.weight_gradient),
            groups > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx");
    };
    warm_up(std::make_tuple(k.weight_gradient ? 5 : 0, k.m, k.n, k.k, static_cast<int64_t>(groups)), run);
    open_segment();
    run();
    mark(k.kind);
  }

  // One layer's decode attention (calibration's unfused_decode_attention) over the layer's own
  // cache: keys then values (or the latent vectors alone, Kernel::value_dim), grown in steps of
  // 256 tokens so that a growing context is not reallocated at every step; at the context rounded
  // up to 8 tokens (attention_length).
  void decode_attention(const Kernel& k) {
    const int64_t pairs = k.seqs * k.kv_heads, group = std::max<int64_t>(1, k.heads / k.kv_heads);
    const int64_t len = attention_length(k.seq_len), d = k.head_dim, room = (len + 255) / 256 * 256;
    const bool latent = k.value_dim > 0;
    const int64_t vd = latent ? k.value_dim : d;
    dim(pairs * std::max(len, group), "decode attention's batch");
    Buffer& cache = decode_kv_[k.weight];
    ensure_bf16(cache, static_cast<size_t>((latent ? 1 : 2) * pairs * room * d), 30 + static_cast<uint64_t>(std::max(0, k.weight)));
    ensure_bf16(q_, static_cast<size_t>(pairs * group * d), 31);
    ensure_bf16(o_, static_cast<size_t>(pairs * group * vd), 32);
    ensure_bf16(p_, static_cast<size_t>(pairs * group * room), 33);
    DecodeBuffers b;
    b.q = q_.as<__nv_bfloat16>();
    b.o = o_.as<__nv_bfloat16>();
    b.s = p_.as<__nv_bfloat16>();
    b.k = cache.as<__nv_bfloat16>();
    b.v = latent ? b.k : b.k + static_cast<size_t>(pairs * len * d);
    auto run = [&] {
      if (!unfused_decode_attention(blas_, stream_, pairs, group, len, d, b, latent ? vd : 0))
        throw std::runtime_error("decode attention: a cuBLAS call or the softmax kernel failed");
    };
    warm_up(std::make_tuple(latent ? 4 : 3, pairs, group, d, int64_t{0}), run);
    open_segment();
    run();
    mark(k.kind);
  }

  // `heads` heads of causal attention, the forward or the backward alone, in batches of heads
  // whose scores fit in 1 GiB, at the length rounded up to 8 tokens (attention_length).
  void attention(const Kernel& k) {
    const int64_t s = attention_length(k.seq_len), d = k.head_dim;
    const int64_t per_batch = std::clamp<int64_t>((int64_t{1} << 29) / std::max<int64_t>(1, s * s), 1, k.heads);
    const auto tokens = static_cast<size_t>(per_batch * s * d), scores = static_cast<size_t>(per_batch * s * s);
    dim(s * s * per_batch, "attention's scores");
    dim(std::max(s, d), "attention's length");
    AttentionBuffers b;
    // The forward reads q, k, v and writes o and the scores; the backward reads q, k, v, dO and
    // the scores and writes dQ, dK, dV and dP.
    Buffer* inputs[] = {&q_, &k_, &v_, &o_, &do_, &dq_, &dk_, &dv_};
    __nv_bfloat16** slots[] = {&b.q, &b.k, &b.v, &b.o, &b.d_o, &b.dq, &b.dk, &b.dv};
    for (size_t i = 0; i < 8; ++i) {
      if (i == 3 && k.backward) continue;  // o
      if (i >= 4 && !k.backward) continue;
      ensure_bf16(*inputs[i], tokens, 10 + i);
      *slots[i] = inputs[i]->as<__nv_bfloat16>();
    }
    ensure_bf16(p_, scores, 20);
    b.p = p_.as<__nv_bfloat16>();
    if (k.backward) {
      ensure_bf16(dp_, scores, 21);
      b.dp = dp_.as<__nv_bfloat16>();
    }
    warm_up(std::make_tuple(k.backward ? 2 : 1, s, d, per_batch, int64_t{0}), [&] {
      if (!unfused_attention(blas_, stream_, per_batch, s, d, b, !k.backward, k.backward))
        throw std::runtime_error("attention: a cuBLAS call or the softmax kernel failed");
    });
    open_segment();
    for (int64_t done = 0; done < k.heads; done += per_batch) {
      const int64_t h = std::min(per_batch, k.heads - done);
      if (!unfused_attention(blas_, stream_, h, s, d, b, !k.backward, k.backward))
        throw std::runtime_error("attention: a cuBLAS call or the softmax kernel failed");
    }
    mark(k.kind);
  }

  void collective(const Kernel& k, const KernelContext& c) {
#ifdef ARLSIM_HAVE_NCCL
    using model::CollectiveOp;
    const auto [elements, chunk] = collective_size(k.op, k.bytes, c.group_size);
    // In place where NCCL allows it (all-reduce, reduce-scatter, all-gather, broadcast), as
    // frameworks run them; all-to-all and send/recv need a second buffer.
    const bool two_buffers = k.op == CollectiveOp::all_to_all || k.op == CollectiveOp::send_recv;
    if (two_buffers) ensure(in_, elements * sizeof(float), 1.0f);
    ensure(out_, elements * sizeof(float), 1.0f);
    float* in = two_buffers ? in_.as<float>() : out_.as<float>();
    float* out = out_.as<float>();
    const auto r = static_cast<size_t>(c.group_rank);
    const int n = static_cast<int>(c.group_size);
    ncclComm_t comm = comms_.at(static_cast<size_t>(c.comm));
    const bool gather = k.op == CollectiveOp::all_gather;
    auto run = [&] {
      switch (k.op) {
        case CollectiveOp::all_reduce: check(ncclAllReduce(out, out, elements, ncclFloat, ncclSum, comm, stream_), "ncclAllReduce"); break;
        case CollectiveOp::all_gather: check(ncclAllGather(out + r * chunk, out, chunk, ncclFloat, comm, stream_), "ncclAllGather"); break;
        case CollectiveOp::reduce_scatter:
          check(ncclReduceScatter(out, out + r * chunk, chunk, ncclFloat, ncclSum, comm, stream_), "ncclReduceScatter");
          break;
        case CollectiveOp::broadcast: check(ncclBroadcast(out, out, elements, ncclFloat, 0, comm, stream_), "ncclBroadcast"); break;
        case CollectiveOp::all_to_all:
          check(ncclGroupStart(), "ncclGroupStart");
          for (int j = 0; j < n; ++j) {
            check(ncclSend(in + static_cast<size_t>(j) * chunk, chunk, ncclFloat, j, comm, stream_), "ncclSend");
            check(ncclRecv(out + static_cast<size_t>(j) * chunk, chunk, ncclFloat, j, comm, stream_), "ncclRecv");
          }
          check(ncclGroupEnd(), "ncclGroupEnd");
          break;
        case CollectiveOp::send_recv:
          check(ncclGroupStart(), "ncclGroupStart");
          check(ncclSend(in, elements, ncclFloat, (c.group_rank + 1) % n, comm, stream_), "ncclSend");
          check(ncclRecv(out, elements, ncclFloat, (c.group_rank + n - 1) % n, comm, stream_), "ncclRecv");
          check(ncclGroupEnd(), "ncclGroupEnd");
          break;
      }
    };
    // Every member makes the same decisions here (same kernels, same order), so the untimed runs
    // below stay matched across the group: the first run of an operation at a size on a
    // communicator (NCCL connects peers lazily), then a one-element all-reduce as a barrier, so
    // that no member's time includes waiting for another's untimed work (a buffer filled, a
    // checksum) — as the CPU backend's barrier before each collective.
    warm_up(std::make_tuple(10 + static_cast<int>(k.op), static_cast<int64_t>(c.comm), static_cast<int64_t>(elements), int64_t{0}, int64_t{0}), run);
    const bool broadcast = k.op == CollectiveOp::broadcast;
    if (gather || (broadcast && r == 0)) {
      // This member's chunk (all-gather, in place in the output) or the root's tensor (broadcast):
      // its synthetic data.
      flush();
      const size_t count = gather ? chunk : elements;
      fill_pattern<<<grid_for(count), kThreads, 0, stream_>>>(out + (gather ? r * chunk : 0), count, c.seed);
      check(cudaGetLastError(), "filling a collective's data");
    }
    flush();
    check(ncclAllReduce(sink_, sink_, 1, ncclFloat, ncclSum, comm, stream_), "ncclAllReduce (barrier)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    open_segment();
    run();
    mark(k.kind);
    if (broadcast && r > 0) {
      // The root's tensor, checked at this receiver against the checksum of what the root sent.
      const uint64_t root_seed = c.chunk_seeds.front();
      checks_.push_back([this, out, elements = elements, root_seed] {
        ensure_host(landed_, elements * sizeof(float));
        check(cudaMemcpy(landed_.data, out, elements * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
        if (checksum(landed_.data, elements * sizeof(float), host_threads_) != pattern_checksum(elements, root_seed, host_threads_)) ++result_.checksum_failures;
        result_.bytes_verified += static_cast<double>(elements * sizeof(float));
      });
      flush();
    }
    if (gather) {
      // Every other member's chunk, checked at this receiver against the checksum of what that
      // member sent (its seed: runtime/rank.h).
      const std::vector<uint64_t> seeds = c.chunk_seeds;
      checks_.push_back([this, out, r, n, chunk = chunk, seeds] {
        ensure_host(landed_, chunk * sizeof(float));
        for (int m = 0; m < n; ++m) {
          if (static_cast<size_t>(m) == r) continue;
          check(cudaMemcpy(landed_.data, out + static_cast<size_t>(m) * chunk, chunk * sizeof(float), cudaMemcpyDeviceToHost),
                "cudaMemcpy");
          if (checksum(landed_.data, chunk * sizeof(float), host_threads_) != pattern_checksum(chunk, seeds[static_cast<size_t>(m)], host_threads_))
            ++result_.checksum_failures;
          result_.bytes_verified += static_cast<double>(chunk * sizeof(float));
        }
      });
      flush();
    }
#else
    (void)k;
    (void)c;
    throw std::runtime_error("this build has no NCCL, so collectives cannot run");
#endif
  }

  // To host memory (peer -1) or from it to this device, pinned; the receiver's checksum is
  // compared with that of the values the sender filled in.
  void copy(const Kernel& k, const KernelContext& c) {
    const size_t n = buffer_floats(k.bytes), bytes = n * sizeof(float);
    ensure(staging_, bytes, 0.0f);
    ensure_host(host_, bytes);
    flush();
    if (k.peer < 0) {
      fill_pattern<<<grid_for(n), kThreads, 0, stream_>>>(staging_.as<float>(), n, c.seed);
      check(cudaGetLastError(), "filling a copy's source");
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    } else {
      fill_pattern_host(static_cast<float*>(host_.data), n, c.seed, host_threads_);
    }
    open_segment();
    if (k.peer < 0)
      check(cudaMemcpyAsync(host_.data, staging_.data, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    else
      check(cudaMemcpyAsync(staging_.data, host_.data, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    mark(k.kind);
    const bool to_host = k.peer < 0;
    const uint64_t seed = c.seed;
    checks_.push_back([this, to_host, n, bytes, seed] {
      // What landed: in host memory already, or copied back from the device over the source
      // (no longer needed: the expected checksum comes from the seed).
      void* landed = host_.data;
      if (!to_host) check(cudaMemcpy(host_.data, staging_.data, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (corrupt_) {
        static_cast<unsigned char*>(landed)[bytes / 2] ^= 0x5A;
        corrupt_ = false;
      }
      if (checksum(landed, bytes, host_threads_) != pattern_checksum(n, seed, host_threads_)) ++result_.checksum_failures;
      result_.bytes_verified += static_cast<double>(bytes);
    });
    flush();
  }

  int gpu_ = 0;
  unsigned host_threads_ = 1;  // threads that fill and check host buffers (init)
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::vector<std::pair<cudaEvent_t, Kernel::Kind>> marks_;
  std::vector<int8_t> phases_;  // each mark's kernel's phase (Kernel::phase)
  int8_t phase_ = 0;            // the phase of the kernel being enqueued
  std::vector<size_t> indices_;  // each mark's kernel's index in the device's program
  size_t index_ = 0;             // the index of the kernel being enqueued
  std::vector<std::function<void()>> checks_;  // run after the stream is waited for
  DeviceResult result_;
  bool corrupt_ = false;
  float* sink_ = nullptr;
  std::map<int32_t, Buffer> decode_kv_;  // each layer's KV cache, by Kernel::weight
  Buffer a_, b_, c_, x_, y_, z_, in_, out_, staging_, q_, k_, v_, o_, do_, dq_, dk_, dv_, p_, dp_;
  std::map<int32_t, Buffer> weights_;
  std::set<std::tuple<int, int64_t, int64_t, int64_t, int64_t>> warmed_;
  HostBuffer host_, landed_;
#ifdef ARLSIM_HAVE_NCCL
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> comms_;
#endif
};

}  // namespace

}  // namespace arlsim::runtime

// The module's entry points (see cuda_backend.h): its interface version, and this process's GPU
// or null with *problem saying why.
extern "C" __attribute__((visibility("default"))) int arlsim_runtime_cuda_abi() { return arlsim::runtime::kRuntimeCudaAbi; }

extern "C" __attribute__((visibility("default"))) arlsim::runtime::DeviceOps* arlsim_runtime_make_cuda_ops(
    arlsim::runtime::Transport* transport, std::string* problem) {
  auto ops = std::make_unique<arlsim::runtime::CudaOps>();
  if (!ops->init(*transport, *problem)) return nullptr;
  return ops.release();
}
