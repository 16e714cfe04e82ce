#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "calib/cuda/cuda_device.h"

namespace arlsim::calib {

namespace {

constexpr const char* kModule = "libarlsim_calib_cuda.so";
constexpr const char* kEntry = "arlsim_calib_make_cuda_device";

// The folder of the running program.
std::filesystem::path program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::unique_ptr<Device> make_cuda_device(std::string& problem) {
  const auto dir = program_dir();
  std::string tried, error;
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
    // The module stays loaded for the life of the program: the device's code lives in it.
    using Make = Device* (*)(std::string*);
    auto make = reinterpret_cast<Make>(dlsym(module, kEntry));
    if (!make) {
      problem = candidate.string() + " has no " + kEntry;
      return nullptr;
    }
    Device* d = make(&problem);
    return std::unique_ptr<Device>(d);
  }
  problem = std::string("the CUDA backend is not installed beside this arlsim (looked for ") + tried + ")";
  return nullptr;
}

}  // namespace arlsim::calib
