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

#include "runtime/backend.h"

namespace arlsim::runtime {

class CpuBackend final : public Backend {
 public:
  // `devices` thread-devices; a run that outlives `timeout_s` is reported with the device and
  // kernel it hung in, and the process exits (threads cannot be cancelled).
  explicit CpuBackend(int64_t devices, double timeout_s = 600);
  ~CpuBackend() override;
  int64_t devices() const override;
  RunStats run(const Program& p, const std::string& activity) override;
  // The buffers run() allocates: each device's operands, weights, attention state, KV caches and
  // streaming and copy buffers, kept at their largest from one program to the next, and the
  // largest program's collective buffers.
  std::unique_ptr<BufferSizer> buffer_sizer() const override;
  // Tests: the next checked copy gets one byte flipped after it lands (before its check).
  void corrupt_next_copy();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arlsim::runtime
