#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "calib/cuda/cuda_device.h"

namespace arlsim::calib {

namespace {

constexpr const char* kModule = "libarlsim_calib_cuda.so";
constexpr const char* kEntry = "arlsim_calib_make_cuda_device";
constexpr const char* kAbi = "arlsim_calib_cuda_abi";

// The folder of the running program.
std::filesystem::path program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::unique_ptr<Device> make_cuda_device(std::string& problem) {
  const auto dir = program_dir();
  if (dir.empty() || !dir.is_absolute()) {
    problem = "the folder of the running program is not known (/proc/self/exe), so the CUDA backend cannot be found";
    return nullptr;
  }
  std::string tried;
  for (const auto& candidate : {dir / kModule, dir / ".." / "lib" / "arlsim" / kModule}) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) {
      tried += (tried.empty() ? "" : ", ") + candidate.string();
      continue;
    }
    void* module = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char* e = dlerror();
      problem = "the CUDA backend " + candidate.string() + " cannot be loaded: " + (e ? e : "unknown error");
      return nullptr;
    }
    using Abi = int (*)();
    using Make = Device* (*)(std::string*);
    auto abi = reinterpret_cast<Abi>(dlsym(module, kAbi));
    auto make = reinterpret_cast<Make>(dlsym(module, kEntry));
    if (!abi || !make || abi() != kCudaModuleAbi) {
      problem = candidate.string() + " is not a CUDA backend of this arlsim (" +
                (!abi || !make ? std::string("missing entry points") : "interface " + std::to_string(abi()) + ", expected " +
                                                                          std::to_string(kCudaModuleAbi)) +
                "); rebuild it with this arlsim";
      dlclose(module);
      return nullptr;
    }
    // The module stays loaded for the life of the program: the device's code lives in it.
    return std::unique_ptr<Device>(make(&problem));
  }
  problem = std::string("the CUDA backend is not installed beside this arlsim (looked for ") + tried + ")";
  return nullptr;
}

}  // namespace arlsim::calib
