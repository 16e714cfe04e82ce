#include "calib/cuda/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "calib/cuda/cuda_device.h"

namespace arlsim::calib {

namespace {

// The folder of the running program.
std::filesystem::path program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

void* load_module(const char* file, const char* abi_symbol, int abi_version, std::string& problem) {
  const auto dir = program_dir();
  if (dir.empty() || !dir.is_absolute()) {
    problem = std::string("the folder of the running program is not known (/proc/self/exe), so ") + file +
              " cannot be found";
    return nullptr;
  }
  std::string tried;
  for (const auto& candidate : {dir / file, dir / ".." / "lib" / "arlsim" / file}) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) {
      tried += (tried.empty() ? "" : ", ") + candidate.string();
      continue;
    }
    void* module = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char* e = dlerror();
      problem = candidate.string() + " cannot be loaded: " + (e ? e : "unknown error");
      return nullptr;
    }
    using Abi = int (*)();
    auto abi = reinterpret_cast<Abi>(dlsym(module, abi_symbol));
    if (!abi || abi() != abi_version) {
      problem = candidate.string() + " is not a module of this arlsim (" +
                (!abi ? std::string("missing entry points")
                      : "interface " + std::to_string(abi()) + ", expected " + std::to_string(abi_version)) +
                "); rebuild it with this arlsim";
      dlclose(module);
      return nullptr;
    }
    return module;
  }
  problem = std::string(file) + " is not installed beside this arlsim (looked for " + tried + ")";
  return nullptr;
}

std::unique_ptr<Device> make_cuda_device(std::string& problem) {
  void* module = load_module("libarlsim_calib_cuda.so", "arlsim_calib_cuda_abi", kCudaModuleAbi, problem);
  if (!module) {
    problem = "the CUDA backend: " + problem;
    return nullptr;
  }
  using Make = Device* (*)(std::string*);
  auto make = reinterpret_cast<Make>(dlsym(module, "arlsim_calib_make_cuda_device"));
  if (!make) {
    problem = "the CUDA backend has no arlsim_calib_make_cuda_device; rebuild it with this arlsim";
    return nullptr;
  }
  return std::unique_ptr<Device>(make(&problem));
}

std::unique_ptr<Fabric> make_cuda_fabric(Exchange& exchange, int64_t nodes, std::string& problem) {
  void* module = load_module("libarlsim_calib_cuda.so", "arlsim_calib_cuda_abi", kCudaModuleAbi, problem);
  if (!module) {
    problem = "the CUDA backend: " + problem;
    return nullptr;
  }
  using Make = Fabric* (*)(Exchange*, int64_t, std::string*);
  auto make = reinterpret_cast<Make>(dlsym(module, "arlsim_calib_make_cuda_fabric"));
  if (!make) {
    problem = "the CUDA backend has no arlsim_calib_make_cuda_fabric; rebuild it with this arlsim";
    return nullptr;
  }
  return std::unique_ptr<Fabric>(make(&exchange, nodes, &problem));
}

}  // namespace arlsim::calib
