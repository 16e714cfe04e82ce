// Finding and loading arlsim's CUDA modules (the calibration device, the runtime's device): they
// are built as shared objects beside the arlsim program (lib/arlsim when installed) and loaded
// only when asked for, so that arlsim itself starts without cuBLAS and NCCL.
#pragma once

#include <string>

namespace arlsim::calib {

// The module `file`, loaded and checked: its function `abi_symbol` must return `abi` (the layout
// of the interfaces it was built against). Null, with `problem` saying why, when it is not there,
// cannot be loaded, or was built for another interface. The module stays loaded for the life of
// the program (the objects it makes live in its code).
void* load_module(const char* file, const char* abi_symbol, int abi, std::string& problem);

}  // namespace arlsim::calib
