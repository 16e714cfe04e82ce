// What the CUDA device's measurements share, across the module's files (cuda_device.cu: GEMMs,
// streaming kernels, launches and host copies; cuda_attention.cu; cuda_collectives.cu): the first
// GPU's stream, events and BLAS handles, the buffer that empties the L2 cache, the last problem,
// and how a region of work is timed. Private to the module.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#ifdef ARLSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include "calib/harness/harness.h"

namespace arlsim::calib::cuda_device_detail {

// How a timed region starts: queued behind a delay kernel on the compute engine (kernels), or on
// an idle stream (copies, which a copy engine runs without waiting behind the delay).
enum class Queue { behind_delay, idle };

struct CudaContext {
  int devices = 0;  // visible GPUs; the measurements run on the first
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;  // fp8 GEMMs
  void* flush = nullptr;          // written before a measurement to empty the L2 cache
  size_t flush_bytes = 0;
  std::string problem;  // what went wrong in the last measurement

  // True when `e` is success; else the problem says what failed.
  bool ok(cudaError_t e, const char* what);
  // One run of `fn` on the stream between two events; nothing when it fails. Behind the delay,
  // the events and `fn`'s launches are queued behind a delay kernel (kernels.cuh), so the time is
  // the GPU's from the first of fn's kernels to the end of its last, without the host's work of
  // launching them; on an idle stream (copies: see host_copy) the first one's enqueue is in it.
  std::optional<double> timed(const std::function<bool()>& fn, Queue queue = Queue::behind_delay);
};

// A row of bf16 results against its double-precision reference: within 5% of the row's largest
// value (bf16 scores, probabilities and outputs each round to 0.4%), so that a row of zeros or
// of another row's values fails however small the values are (a long context's outputs are
// averages over many keys: a few thousandths).
bool row_close(const std::vector<__nv_bfloat16>& got, const std::vector<double>& want);

// Unfused causal attention over as many heads as keep the scores within 2 GiB, forward (S = Q K^T,
// causal softmax, O = P V) and backward (dV = P^T dO, dP = dO V^T, softmax backward, dQ = dS K,
// dK = dS^T Q); seconds per head (cuda_attention.cu).
std::optional<double> measure_attention(CudaContext& ctx, int64_t seq, int64_t d, bool backward);
// Unfused decode attention (the runtime's path): per (sequence, KV head) the group's scores, their
// softmax and the weighted values, with batched GEMMs (cuda_attention.cu).
std::optional<double> measure_decode_attention(CudaContext& ctx, int64_t batch, int64_t len, int64_t heads, int64_t kv_heads,
                                               int64_t d);

// The node's GPUs in one NCCL communicator each, made for a rank count when first asked for it
// and kept for the next sizes (cuda_collectives.cu).
class NcclComms {
 public:
  NcclComms() = default;
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;
  ~NcclComms();
  // Destroys the communicators and their streams now (made again when next asked for).
  void close();
  // The operation over the first `ranks` GPUs: its mean time, or nothing and ctx.problem says why.
  std::optional<double> collective(CudaContext& ctx, model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                   bool in_place);

 private:
#ifdef ARLSIM_HAVE_NCCL
  // Destroys (or, after an error, aborts) the communicators and their streams.
  void release(bool abort);
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
#endif
};

}  // namespace arlsim::calib::cuda_device_detail
