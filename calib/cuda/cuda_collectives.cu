// The CUDA device's collectives (cuda_context.cuh): NCCL among the node's GPUs, one process
// driving them all (ncclCommInitAll), timed as nccl-tests times them and checked rank by rank.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "calib/cuda/cuda_context.cuh"
#ifdef ARLSIM_HAVE_NCCL
#include "calib/cuda/kernels.cuh"
#include "calib/cuda/nccl_rank.cuh"
#endif

namespace arlsim::calib::cuda_device_detail {

NcclComms::~NcclComms() { close(); }

void NcclComms::close() {
#ifdef ARLSIM_HAVE_NCCL
  release(false);
#endif
}

#ifdef ARLSIM_HAVE_NCCL
void NcclComms::release(bool abort) {
  for (auto comm : comms_)
    if (comm) abort ? ncclCommAbort(comm) : ncclCommDestroy(comm);
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

#ifdef ARLSIM_HAVE_NCCL
// One process drives the node's first `ranks` GPUs (ncclCommInitAll). Buffers hold fp32 values:
// rank r's input is r + 1 (all-to-all: r n + j + 1 in the chunk meant for rank j); after the
// timed runs the inputs are written again, one more operation runs (in place the timed runs
// changed them) and one element of each rank's output is checked. In place the input is the
// output buffer as NCCL defines it: an all-gather's input at the rank's slice of its output, a
// reduce-scatter's output at the rank's slice of its input.
std::optional<double> NcclComms::collective(CudaContext& ctx, model::CollectiveOp op, double bytes, int64_t ranks,
                                            double* used, bool in_place) {
  using model::CollectiveOp;
  ctx.problem.clear();
  if (ranks < 1) {
    ctx.problem = "a collective needs at least one rank";
    return std::nullopt;
  }
  if (in_place && !in_place_capable(op)) {
    ctx.problem = "all-to-all and send/recv do not run in place";
    return std::nullopt;
  }
  const int n = static_cast<int>(ranks);
  struct BackToFirst {  // whatever happens, the first GPU is current again afterwards
    ~BackToFirst() { cudaSetDevice(0); }
  } back;
  if (n > ctx.devices) {
    ctx.problem = "only " + std::to_string(ctx.devices) + " GPUs are visible";
    return std::nullopt;
  }
  if (static_cast<int>(comms_.size()) != n) {
    release(false);
    comms_.assign(static_cast<size_t>(n), nullptr);
    streams_.assign(static_cast<size_t>(n), nullptr);
    std::vector<int> devs(static_cast<size_t>(n));
    bool made = true;
    for (int r = 0; r < n && made; ++r) {
      devs[static_cast<size_t>(r)] = r;
      made = ctx.ok(cudaSetDevice(r), "cudaSetDevice") && ctx.ok(cudaStreamCreate(&streams_[static_cast<size_t>(r)]), "cudaStreamCreate");
    }
    const ncclResult_t init = made ? ncclCommInitAll(comms_.data(), n, devs.data()) : ncclSuccess;
    if (!made || init != ncclSuccess) {
      if (made) ctx.problem = std::string("ncclCommInitAll: ") + ncclGetErrorString(init);
      comms_.assign(comms_.size(), nullptr);
      release(false);
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
    fine = (in_place || ctx.ok(cudaMalloc(&in[static_cast<size_t>(r)], elements * 4), "cudaMalloc")) &&
           ctx.ok(cudaMalloc(&out[static_cast<size_t>(r)], elements * 4), "cudaMalloc");
  }
  // The inputs, where the operation reads them.
  auto fill_inputs = [&] {
    for (int r = 0; r < n && fine; ++r) {
      cudaSetDevice(r);
      const auto ri = static_cast<size_t>(r);
      fine = ctx.ok(fill_rank_inputs(op, sh, r, n, in_place, in[ri], out[ri], streams_[ri]), "filling the collective's inputs");
    }
    for (int r = 0; r < n && fine; ++r) {
      cudaSetDevice(r);
      fine = ctx.ok(cudaStreamSynchronize(streams_[static_cast<size_t>(r)]), "cudaStreamSynchronize");
    }
    fine = fine && ctx.ok(cudaGetLastError(), "filling the collective's inputs");
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
      fine = ctx.ok(cudaStreamSynchronize(streams_[static_cast<size_t>(r)]), "cudaStreamSynchronize");
    }
  };
  if (fine) fill_inputs();
  std::optional<double> t;
  if (fine) {
    // As nccl-tests does: many operations back to back, timed together, the mean taken (one
    // operation timed from the host would add its enqueueing and the stream waits to every size).
    const int iterations = bytes <= (1 << 20) ? 20 : 5;
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t res = ncclSuccess;
    for (int it = 0; it < iterations && res == ncclSuccess; ++it) res = launch();
    synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
    // The checked run, on fresh inputs.
    if (res == ncclSuccess && fine) {
      fill_inputs();
      if (fine) res = launch();
      synchronize();
    }
    if (res != ncclSuccess) {
      ctx.problem = std::string("NCCL: ") + ncclGetErrorString(res);
      release(true);  // a communicator after an error is not reused
    } else if (fine) {
      t = seconds;
    }
  }
  // Check each rank's result.
  for (int r = 0; r < n && t; ++r) {
    cudaSetDevice(r);
    if (std::string wrong = check_rank_result(op, sh, r, n, in_place, out[static_cast<size_t>(r)]); !wrong.empty()) {
      ctx.problem = std::move(wrong);
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
std::optional<double> NcclComms::collective(CudaContext& ctx, model::CollectiveOp, double, int64_t, double*, bool) {
  ctx.problem = "this build has no NCCL";
  return std::nullopt;
}
#endif

}  // namespace arlsim::calib::cuda_device_detail
