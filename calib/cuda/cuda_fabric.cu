// The CUDA module's fabric (cuda_device.h, make_cuda_fabric): one process of an mpirun, one GPU
// (its local rank's), in one NCCL communicator with every other process, as nccl-tests measures
// across nodes. Inputs, calls and checks are the node device's (nccl_rank.cuh), for this
// process's rank; the time is the mean of back-to-back operations, the slowest process's.
#include "calib/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef ARLSIM_HAVE_NCCL
#include <nccl.h>

#include "calib/cuda/kernels.cuh"
#include "calib/cuda/nccl_rank.cuh"
#endif

namespace arlsim::calib {

#ifdef ARLSIM_HAVE_NCCL
namespace {

class CudaFabric final : public Fabric {
 public:
  CudaFabric(Exchange& x, int64_t nodes) : x_(x), nodes_(nodes) {}
  ~CudaFabric() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Every process returns the same: the local checks are agreed on before NCCL's bootstrap (a
  // process that left alone would leave the others in it), and a failure inside ncclCommInitRank,
  // which the others cannot learn of, ends every process.
  bool init(std::string& problem) {
    int devices = 0;
    std::string mine;
    if (!ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) mine = problem_;
    else if (devices <= x_.local_rank())
      mine = "no GPU of its own (local rank " + std::to_string(x_.local_rank()) + ", " + std::to_string(devices) + " GPUs)";
    else if (device_ = x_.local_rank(); !ok(cudaSetDevice(device_), "cudaSetDevice") || !ok(cudaStreamCreate(&stream_), "cudaStreamCreate"))
      mine = problem_;
    // NCCL's bootstrap as nccl-tests does it: rank 0's unique id, broadcast to every process.
    ncclUniqueId id{};
    if (x_.rank() == 0 && mine.empty() && ncclGetUniqueId(&id) != ncclSuccess) mine = "ncclGetUniqueId failed";
    if (problem = first_failure(x_, mine); !problem.empty()) return false;
    std::string bytes(reinterpret_cast<const char*>(&id), sizeof id);
    x_.broadcast(bytes, 0);
    std::memcpy(&id, bytes.data(), std::min(bytes.size(), sizeof id));
    const ncclResult_t r = ncclCommInitRank(&comm_, x_.size(), id, x_.rank());
    if (r != ncclSuccess)
      x_.abort("arlsim calibrate: process " + std::to_string(x_.rank()) + ": ncclCommInitRank: " + ncclGetErrorString(r));
    return true;
  }
  int64_t ranks() const override { return x_.size(); }
  int64_t nodes() const override { return nodes_; }
  std::string link() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  std::string problem() const override { return problem_; }

  std::optional<double> collective(model::CollectiveOp op, double bytes, double* used, bool in_place) override {
    problem_.clear();
    cudaSetDevice(device_);
    const int n = x_.size(), r = x_.rank();
    const NcclShape sh = nccl_shape(op, bytes, n);
    if (used) *used = 4.0 * static_cast<double>(sh.elements);
    in_place = in_place && in_place_capable(op);
    float *in = nullptr, *out = nullptr;
    bool fine =
        (in_place || ok(cudaMalloc(&in, sh.elements * 4), "cudaMalloc")) && ok(cudaMalloc(&out, sh.elements * 4), "cudaMalloc");
    const auto fill = [&] {
      fine = fine && ok(fill_rank_inputs(op, sh, r, n, in_place, in, out, stream_), "filling the inputs") &&
             ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    };
    const auto free_buffers = [&] {
      if (in) cudaFree(in);
      if (out) cudaFree(out);
    };
    fill();
    // Whether every process has its buffers and inputs: all run the operation, or none does (one
    // that skipped it would leave the others waiting in NCCL).
    if (std::string failed = first_failure(x_, fine ? std::string() : problem_); !failed.empty()) {
      free_buffers();
      problem_ = std::move(failed);
      return std::nullopt;
    }
    // From here every process is in the same NCCL operations: a failure ends them all.
    const auto run = [&] {
      if (const ncclResult_t res = launch_rank(op, sh, r, n, in_place, in, out, comm_, stream_); res != ncclSuccess)
        x_.abort("arlsim calibrate: process " + std::to_string(r) + ": NCCL: " + ncclGetErrorString(res));
    };
    const auto synchronize = [&] {
      if (!ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"))
        x_.abort("arlsim calibrate: process " + std::to_string(r) + ": " + problem_);
    };
    // As nccl-tests: one operation to line the processes up, then many back to back, timed
    // together after a barrier, the mean taken; then one on fresh inputs, checked.
    run();
    synchronize();
    x_.all_gather(std::string());
    const int iterations = bytes <= (1 << 20) ? 20 : 5;
    const auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it) run();
    synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
    fill();
    if (!fine) x_.abort("arlsim calibrate: process " + std::to_string(r) + ": " + problem_);
    run();
    synchronize();
    const std::string wrong = check_rank_result(op, sh, r, n, in_place, out);
    free_buffers();
    // Every process's time and check: the slowest time, or the first failure, on all of them.
    char text[32] = {};
    std::snprintf(text, sizeof text, "%.17g", seconds);
    const auto all = x_.all_gather(wrong.empty() ? std::string(text) : "!" + wrong);
    double slowest = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!all[i].empty() && all[i][0] == '!') {
        problem_ = "process " + std::to_string(i) + ": " + all[i].substr(1);
        return std::nullopt;
      }
      slowest = std::max(slowest, std::strtod(all[i].c_str(), nullptr));
    }
    return slowest;
  }

 private:
  bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    problem_ = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  }
  Exchange& x_;
  int64_t nodes_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::string problem_;
};

}  // namespace
#endif

Fabric* new_cuda_fabric(Exchange* exchange, int64_t nodes, std::string* problem) {
#ifdef ARLSIM_HAVE_NCCL
  auto f = std::make_unique<CudaFabric>(*exchange, nodes);
  if (!f->init(*problem)) return nullptr;
  return f.release();
#else
  (void)exchange, (void)nodes;
  *problem = "this build has no NCCL";
  return nullptr;
#endif
}

}  // namespace arlsim::calib

// The module's entry point for the fabric (see cuda_device.h): a new fabric or null with
// *problem saying why.
extern "C" __attribute__((visibility("default"))) arlsim::calib::Fabric* arlsim_calib_make_cuda_fabric(
    arlsim::calib::Exchange* exchange, int64_t nodes, std::string* problem) {
  return arlsim::calib::new_cuda_fabric(exchange, nodes, problem);
}
