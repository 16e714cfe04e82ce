// Nominal rates of an NVIDIA GPU from what the CUDA runtime reports of it: the host-side part of
// the CUDA backend, built and tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace arlsim::calib {

// Dense bf16 tensor-core FLOPs per SM per clock by compute capability; 0 when not known (the best
// measured GEMM then stands in for the peak). Derived from datasheet peaks / (SMs x boost clock):
// A100 312 TFLOP/s, 108 SMs, 1.41 GHz -> 2048; L40S 362, 142, 2.52 -> 1024; H100 SXM 989, 132,
// 1.83 -> 4096; B200 2250, 148, 1.965 -> 7737, i.e. 8192 at its tensor clock (calib/SOURCES.md).
double bf16_flops_per_sm_clock(int major, int minor);
// The GEMM dtypes a GPU runs besides bf16, each with its dense peak as a multiple of the bf16 one:
// fp16 at the bf16 rate from Ampere on; fp8 (e4m3) at twice it on Ada, Hopper and Blackwell (the
// datasheets' dense fp8 figures: L40S 733, H100 SXM 1,979, B200 4,500 TFLOP/s; calib/SOURCES.md).
struct DtypeRate {
  const char* dtype;
  double times_bf16;
};
std::vector<DtypeRate> other_gemm_dtypes(int major, int minor);
// Peak bf16 FLOP/s: SMs x clock (kHz, as cudaDevAttrClockRate gives it) x the per-clock rate.
double nominal_bf16_peak(int major, int minor, int64_t sms, int64_t clock_khz);
// DRAM bandwidth: 2 transfers per memory clock (kHz, cudaDevAttrMemoryClockRate) x the bus width
// (bits, cudaDevAttrGlobalMemoryBusWidth) / 8.
double nominal_memory_bandwidth(int64_t memory_clock_khz, int64_t bus_width_bits);

}  // namespace arlsim::calib
