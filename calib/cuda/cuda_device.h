// The CUDA backend of `arlsim calibrate` (built when the CUDA toolkit is found, as the module
// libarlsim_calib_cuda.so beside the arlsim program, loaded only when asked for: linking cuBLAS
// and NCCL into arlsim itself would cost every run 0.1 s and 200 MB to load them). One GPU as the
// device for GEMMs (cuBLAS, bf16 with fp32 accumulation), attention (the unfused cuBLAS path:
// batched GEMMs around a masked-softmax kernel, forward and backward), streaming kernels, launches
// and pinned host copies; NCCL among the node's GPUs, one process driving them all, for the
// collectives. Its host-side arithmetic (nominal peaks and bandwidth) is in cuda_peaks.h, which is
// built and tested everywhere.
#pragma once

#include <memory>
#include <string>

#include "calib/harness/harness.h"

namespace arlsim::calib {

// The module's interface version: the loader refuses a module built against another layout of
// `Device` (raise it when harness.h's Device changes).
constexpr int kCudaModuleAbi = 3;

// The first GPU as a calibration device, or nothing and `problem` says why (no module, no driver,
// no GPU). The module is looked for beside the running program, then in ../lib/arlsim.
std::unique_ptr<Device> make_cuda_device(std::string& problem);

// The processes of an mpirun as a fabric of GPUs, one each (its machine's GPU of its local rank),
// in one NCCL communicator bootstrapped over `exchange` as nccl-tests does (rank 0's unique id,
// broadcast; ncclCommInitRank on every process); `nodes`: the machines they run on. Nothing, and
// `problem` says why, without the module, a GPU or NCCL. `exchange` must outlive the fabric.
std::unique_ptr<Fabric> make_cuda_fabric(Exchange& exchange, int64_t nodes, std::string& problem);

}  // namespace arlsim::calib
