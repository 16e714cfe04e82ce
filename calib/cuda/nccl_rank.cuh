// One rank's part of a calibration collective through NCCL, shared by the node's device (one
// process driving its GPUs, cuda_device.cu) and the fabric across nodes (a process a GPU,
// cuda_fabric.cu): the buffer sizes, the inputs, the call and the result to check. Rank r's input
// is r + 1 (all-to-all: r n + j + 1 in the chunk meant for rank j). In place the input is the
// output buffer as NCCL defines it: an all-gather's input at the rank's slice of its output, a
// reduce-scatter's output at the rank's slice of its input. Included after kernels.cuh.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "sim/model/collective.h"

namespace arlsim::calib {
namespace {

// Floats of every rank's buffer (the whole buffer as nccl-tests counts it, split evenly where it
// is split by rank) and of each rank's chunk.
struct NcclShape {
  size_t elements = 0, chunk = 0;
};
inline NcclShape nccl_shape(model::CollectiveOp op, double bytes, int n) {
  const bool by_rank = op != model::CollectiveOp::send_recv && op != model::CollectiveOp::broadcast;
  const auto ranks = static_cast<size_t>(n);
  size_t elements = static_cast<size_t>(std::max(1.0, bytes / 4));
  if (by_rank) elements = (elements + ranks - 1) / ranks * ranks;
  return {elements, by_rank ? elements / ranks : elements};
}

// Rank r's inputs, where the operation reads them, enqueued on `s`; out of place the output
// starts cleared, so that a run that wrote nothing cannot pass the check on what an earlier one
// left in reused memory.
inline cudaError_t fill_rank_inputs(model::CollectiveOp op, const NcclShape& sh, int r, int n, bool in_place, float* in,
                                    float* out, cudaStream_t s) {
  using cuda_kernels::fill_float;
  using cuda_kernels::grid_for;
  using cuda_kernels::kThreads;
  float* dst = in_place ? out : in;
  if (!in_place)
    if (const cudaError_t e = cudaMemsetAsync(out, 0, sh.elements * 4, s); e != cudaSuccess) return e;
  if (op == model::CollectiveOp::all_to_all)
    for (int j = 0; j < n; ++j)
      fill_float<<<grid_for(sh.chunk), kThreads, 0, s>>>(dst + static_cast<size_t>(j) * sh.chunk, sh.chunk,
                                                         static_cast<float>(r * n + j + 1));
  else
    fill_float<<<grid_for(sh.elements), kThreads, 0, s>>>(dst, sh.elements, static_cast<float>(r + 1));
  return cudaGetLastError();
}

// Rank r's NCCL call(s) of one operation (all-to-all and send/recv as grouped sends and receives;
// NCCL's groups nest, so the node's device wraps its ranks in one more).
inline ncclResult_t launch_rank(model::CollectiveOp op, const NcclShape& sh, int r, int n, bool in_place, float* in,
                                float* out, ncclComm_t comm, cudaStream_t s) {
  using model::CollectiveOp;
  const auto ri = static_cast<size_t>(r);
  float* src = in_place ? out : in;
  switch (op) {
    case CollectiveOp::all_reduce: return ncclAllReduce(src, out, sh.elements, ncclFloat, ncclSum, comm, s);
    case CollectiveOp::all_gather: return ncclAllGather(src + ri * sh.chunk, out, sh.chunk, ncclFloat, comm, s);
    case CollectiveOp::reduce_scatter:
      return ncclReduceScatter(src, out + (in_place ? ri * sh.chunk : 0), sh.chunk, ncclFloat, ncclSum, comm, s);
    case CollectiveOp::broadcast: return ncclBroadcast(src, out, sh.elements, ncclFloat, 0, comm, s);
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv: {
      ncclResult_t res = ncclGroupStart();
      if (op == CollectiveOp::all_to_all) {
        for (int j = 0; j < n && res == ncclSuccess; ++j) {
          res = ncclSend(in + static_cast<size_t>(j) * sh.chunk, sh.chunk, ncclFloat, j, comm, s);
          if (res == ncclSuccess) res = ncclRecv(out + static_cast<size_t>(j) * sh.chunk, sh.chunk, ncclFloat, j, comm, s);
        }
      } else {
        if (res == ncclSuccess) res = ncclSend(in, sh.elements, ncclFloat, (r + 1) % n, comm, s);
        if (res == ncclSuccess) res = ncclRecv(out, sh.elements, ncclFloat, (r + n - 1) % n, comm, s);
      }
      const ncclResult_t ended = ncclGroupEnd();
      return res == ncclSuccess ? ended : res;
    }
  }
  return ncclInvalidArgument;
}

// Where rank r's result lies in its output and the value every element of it must hold; the
// first and the last are checked (a short transfer leaves the last one wrong). Empty when both
// are right, else what differs.
inline std::string check_rank_result(model::CollectiveOp op, const NcclShape& sh, int r, int n, bool in_place,
                                     const float* out) {
  using model::CollectiveOp;
  float want = static_cast<float>(n * (n + 1) / 2);
  size_t at = 0, length = sh.elements;
  const auto next = static_cast<size_t>((r + 1) % n);
  switch (op) {
    case CollectiveOp::all_reduce: break;
    case CollectiveOp::reduce_scatter: at = in_place ? static_cast<size_t>(r) * sh.chunk : 0, length = sh.chunk; break;
    case CollectiveOp::all_gather: at = next * sh.chunk, length = sh.chunk, want = static_cast<float>(next + 1); break;
    case CollectiveOp::broadcast: want = 1; break;
    case CollectiveOp::all_to_all:
      at = next * sh.chunk, length = sh.chunk, want = static_cast<float>(static_cast<int>(next) * n + r + 1);
      break;
    case CollectiveOp::send_recv: want = static_cast<float>((r + n - 1) % n + 1); break;
  }
  for (const size_t i : {at, at + length - 1}) {
    float got = 0;
    if (const cudaError_t e = cudaMemcpy(&got, out + i, 4, cudaMemcpyDeviceToHost); e != cudaSuccess)
      return std::string("cudaMemcpy: ") + cudaGetErrorString(e);
    if (std::abs(got - want) > 1e-3f * want)
      return "collective result differs from the reference on rank " + std::to_string(r) + (in_place ? " (in place)" : "");
  }
  return {};
}

}  // namespace
}  // namespace arlsim::calib
