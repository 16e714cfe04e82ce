#include "app/build_info.h"

namespace arlsim::app {

std::string version_text() {
  std::string out = "arlsim " ARLSIM_VERSION "\n";
  out += "build: " ARLSIM_BUILD_TYPE ", " ARLSIM_COMPILER "\n";
  out += "Qt (for the timeline viewer): " ARLSIM_QT_STATUS "\n";
  out += "CUDA toolkit (for calibration and the GPU runtime): " ARLSIM_CUDA_STATUS "\n";
  out += "NCCL: " ARLSIM_NCCL_STATUS "\n";
  out += "MPI (for distributed sweeps): " ARLSIM_MPI_STATUS "\n";
  return out;
}

}  // namespace arlsim::app
