#include "calib/cuda/cuda_peaks.h"

namespace arlsim::calib {

double bf16_flops_per_sm_clock(int major, int minor) {
  if (major == 8 && minor == 0) return 2048;  // A100
  if (major == 8 && (minor == 6 || minor == 7 || minor == 9)) return 1024;  // GA10x, Orin, Ada (L40S)
  if (major == 9) return 4096;   // Hopper
  if (major == 10) return 8192;  // Blackwell datacenter
  return 0;
}

std::vector<DtypeRate> other_gemm_dtypes(int major, int minor) {
  std::vector<DtypeRate> out;
  if (major >= 8) out.push_back({"fp16", 1.0});
  if ((major == 8 && minor == 9) || major == 9 || major == 10) out.push_back({"fp8", 2.0});
  return out;
}

double nominal_bf16_peak(int major, int minor, int64_t sms, int64_t clock_khz) {
  return bf16_flops_per_sm_clock(major, minor) * static_cast<double>(sms) * static_cast<double>(clock_khz) * 1e3;
}

double nominal_memory_bandwidth(int64_t memory_clock_khz, int64_t bus_width_bits) {
  return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * static_cast<double>(bus_width_bits) / 8.0;
}

}  // namespace arlsim::calib
