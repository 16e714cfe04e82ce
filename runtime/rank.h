// A backend of processes, each driving one device (runtime/cuda: one process per GPU under
// mpirun, as nccl-tests runs). Every process builds the same programs; each runs its own
// device's kernels through a DeviceOps, and the figures are gathered over a Transport so that
// every process ends with the whole activity's RunStats. The device-independent part (which
// kernels a process runs, communicator groups, the seeds of the data it moves and checks, the
// gathering) is here and is tested with a fake device; a DeviceOps only launches and times.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace arlsim::runtime {

// Buffer sizes of a collective on `bytes` over `n` ranks, in floats: the whole buffer (rounded
// up to a multiple of n when it is split by rank) and each rank's chunk.
struct CollectiveSize {
  size_t elements = 0, chunk = 0;
};
CollectiveSize collective_size(model::CollectiveOp op, double bytes, int64_t n);
// Floats of a buffer of `bytes` (at least one).
size_t buffer_floats(double bytes);

// The seed of the data a device's kernel `index` moves (copies), and of the chunk member
// `member` of a group contributes to the group's `sequence`-th collective (all-gathers).
uint64_t copy_seed(int64_t device, int64_t index);
uint64_t chunk_seed(const DeviceGroup& members, int64_t sequence, int64_t member);

// One kernel's surroundings, as a device needs them.
struct KernelContext {
  int32_t comm = -1;           // collectives: the communicator join_group returned
  int64_t group_rank = -1, group_size = 0;
  uint64_t seed = 0;                // the data this device sends
  std::vector<uint64_t> chunk_seeds;  // all-gathers: every member's chunk, by group rank
};

// What one device measured in one activity.
struct DeviceResult {
  double seconds = 0;  // from its first kernel's start to its last's end, less nothing: waits included
  KernelSeconds kernels;
  double bytes_verified = 0;
  int64_t checksum_failures = 0;
  std::vector<BusySpan> busy;  // its work, waits excluded (add_busy)
  std::vector<double> kernel_seconds;  // each kernel's, by its index in the device's program (RunStats)
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // A new group of devices that run collectives together: every process calls it, in the same
  // order, members or not (`rank` -1), so that communicators can be made collectively. Returns
  // the communicator's handle for KernelContext::comm (members; anything otherwise).
  virtual int32_t join_group(const DeviceGroup& members, int64_t rank) = 0;
  virtual void begin() = 0;
  // Runs (or enqueues) one kernel. Failures throw std::runtime_error naming what failed.
  virtual void enqueue(const Kernel& k, const KernelContext& c) = 0;
  // Waits for the device to finish what was enqueued since begin().
  virtual DeviceResult end() = 0;
  // Test hook: the next checked copy is corrupted after it lands (before its check).
  virtual void corrupt_next_copy() = 0;
};

class RankBackend final : public Backend {
 public:
  // This process runs device `transport.rank()`; a run that outlives `timeout_s` is reported
  // with the kernel it hung in, and the process exits with status 3.
  RankBackend(std::unique_ptr<DeviceOps> ops, Transport& transport, double timeout_s = 600);
  ~RankBackend() override;
  int64_t devices() const override;
  RunStats run(const Program& p, const std::string& activity) override;
  DeviceOps& ops() { return *ops_; }

 private:
  std::unique_ptr<DeviceOps> ops_;
  Transport& transport_;
  double timeout_s_;
  std::map<DeviceGroup, int32_t> comms_;
  std::map<DeviceGroup, int64_t> sequence_;  // collectives run per group, for chunk seeds
};

// A device's result as bytes (for the transport) and back; decode throws on a malformed one.
std::string encode(int64_t device, const DeviceResult& r);
std::pair<int64_t, DeviceResult> decode(const std::string& bytes);

}  // namespace arlsim::runtime
