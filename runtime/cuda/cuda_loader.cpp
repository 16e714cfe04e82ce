#include <dlfcn.h>

#include "runtime/cuda/cuda_backend.h"

#ifdef ARLSIM_HAVE_CUDA_BACKEND
#include "calib/cuda/module.h"
#endif

namespace arlsim::runtime {

std::unique_ptr<DeviceOps> make_cuda_ops(Transport& transport, std::string& problem) {
#ifdef ARLSIM_HAVE_CUDA_BACKEND
  void* module = calib::load_module("libarlsim_runtime_cuda.so", "arlsim_runtime_cuda_abi", kRuntimeCudaAbi, problem);
  if (!module) {
    problem = "the CUDA runtime: " + problem;
    return nullptr;
  }
  using Make = DeviceOps* (*)(Transport*, std::string*);
  auto make = reinterpret_cast<Make>(dlsym(module, "arlsim_runtime_make_cuda_ops"));
  if (!make) {
    problem = "the CUDA runtime module has no arlsim_runtime_make_cuda_ops; rebuild it with this arlsim";
    return nullptr;
  }
  return std::unique_ptr<DeviceOps>(make(&transport, &problem));
#else
  (void)transport;
  problem = "this arlsim was built without the CUDA toolkit, so it has no CUDA runtime";
  return nullptr;
#endif
}

}  // namespace arlsim::runtime
