// The CPU backend of the runtime: each device is a CPU thread. A device's host thread walks its
// kernels; each kernel with a launch of its own is handed to the device's worker thread and
// waited for (calibration's "launch"), so that launches cost what calibration measured. Kernels
// are calibration's own (calib/cpu/kernels.h): Eigen GEMMs, the blocked causal attention,
// streaming loops, collectives among threads over shared memory with NCCL's ring algorithms;
// copies are memcpy with a CRC-32 of every buffer checked at the receiver.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/program.h"

namespace arlsim::runtime {

// Seconds measured per kind of kernel, summed over a run's devices.
struct KernelSeconds {
  double gemm = 0, attention = 0, decode_attention = 0, memory = 0, collective = 0, copy = 0, wait = 0;
  void add(Kernel::Kind kind, double s);
  KernelSeconds& operator+=(const KernelSeconds& o);
};

struct RunStats {
  // The activity's measured duration: the slowest device's time in its kernels (collectives wait
  // for their slowest member, so a device's time includes those waits). Filling buffers with
  // synthetic data and checking checksums happen outside it.
  double seconds = 0;
  std::vector<std::pair<int64_t, double>> device_seconds;
  KernelSeconds kernels;
  double bytes_verified = 0;  // bytes moved by copies and gathers whose checksum was checked
  int64_t checksum_failures = 0;
};

class CpuBackend {
 public:
  // `devices` thread-devices; a run that outlives `timeout_s` is reported with the device and
  // kernel it hung in, and the process exits (threads cannot be cancelled).
  explicit CpuBackend(int64_t devices, double timeout_s = 600);
  ~CpuBackend();
  int64_t devices() const;
  RunStats run(const Program& p, const std::string& activity);
  // Tests: the next checked copy gets one byte flipped after it lands (before its check).
  void corrupt_next_copy();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The CRC-32 of a buffer (Boost.CRC's crc_32_type).
uint32_t checksum(const void* data, size_t bytes);

}  // namespace arlsim::runtime
