// The CUDA device of the runtime (built when the CUDA toolkit is found, as the module
// libarlsim_runtime_cuda.so beside the arlsim program, loaded only by `validate --backend cuda`).
// Each process drives one GPU (its local rank among the machine's processes picks which), as
// nccl-tests runs under mpirun: NCCL's world communicator is bootstrapped over the Transport
// (rank 0 makes the unique id, the transport broadcasts it, each rank calls ncclCommInitRank)
// and split into the program's groups. Kernels are calibration's (calib/cuda/kernels.cuh):
// cuBLAS bf16 GEMMs, the unfused causal attention, streaming kernels; copies to and from pinned
// host memory. Every kernel is timed with CUDA events around it on the device's stream.
#pragma once

#include <memory>
#include <string>

#include "runtime/rank.h"

namespace arlsim::runtime {

// The module's interface version: raise it when DeviceOps, Transport or Kernel change.
constexpr int kRuntimeCudaAbi = 2;  // 2: Kernel::busy

// This process's GPU as a runtime device, or nothing and `problem` says why (no module, no
// driver, no GPU, NCCL could not start). Every process of `transport` calls it together.
std::unique_ptr<DeviceOps> make_cuda_ops(Transport& transport, std::string& problem);

}  // namespace arlsim::runtime
