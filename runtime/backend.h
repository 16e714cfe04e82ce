// What every runtime backend offers `arlsim validate`: run one activity's program on its devices
// and say how long it took and what it moved. runtime/cpu runs thread-devices in this process;
// runtime/rank.h runs one process's devices (a GPU per process under mpirun, runtime/cuda) and
// gathers every process's figures through a Transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/program.h"

namespace arlsim::runtime {

// Seconds measured per kind of kernel, summed over a run's devices.
struct KernelSeconds {
  double gemm = 0, attention = 0, decode_attention = 0, memory = 0, collective = 0, copy = 0, wait = 0;
  void add(Kernel::Kind kind, double s);
  KernelSeconds& operator+=(const KernelSeconds& o);
};

// A stretch of a device's work without a wait in it, in seconds of the device's time from the
// activity's start (the time the activity's duration counts), of one Kernel::phase.
struct BusySpan {
  double start = 0, end = 0;
  int8_t phase = 0;
};
// Appends `[start, end)` to `spans`, joined to the last one when they touch and share the phase.
void add_busy(std::vector<BusySpan>& spans, double start, double end, int8_t phase);

// A Kernel::wait of `seconds`, as close to them as the clock allows. A busy one (an engine's host
// work between its iterations, which keeps its core working) spins on the clock; any other sleeps
// to within a millisecond of its end, then spins: a sleep overshoots by the timer's slack and the
// wake-up (a 20 us sleep took 142 us, a 100 us one 218 us on a 2-vCPU VM), more than the host
// work of a decoding iteration, and an engine waits so once an iteration.
void hold(double seconds, bool busy);

struct RunStats {
  // The activity's measured duration: the slowest device's time (collectives wait for their
  // slowest member, so a device's time includes those waits). Filling buffers with synthetic data
  // and checking checksums happen outside it.
  double seconds = 0;
  std::vector<std::pair<int64_t, double>> device_seconds;
  KernelSeconds kernels;
  double bytes_verified = 0;  // bytes moved by copies and gathers whose checksum was checked
  int64_t checksum_failures = 0;
  std::vector<std::pair<int64_t, std::vector<BusySpan>>> busy;  // (device, its spans of work)
  // (device, each of its program's kernels' measured seconds, in the program's order): a wait its
  // held time, any other kernel its device time.
  std::vector<std::pair<int64_t, std::vector<double>>> kernel_seconds;
};

// The CRC-32 of a buffer (zlib's crc32_z: IEEE 802.3's CRC, as Boost.CRC's crc_32_type, about 14
// times faster than that byte-wise table on a 2-vCPU EPYC): every backend's check of the data it
// moved. checksum_more continues `crc` (0 to start) over more bytes.
uint32_t checksum(const void* data, size_t bytes);
uint32_t checksum_more(uint32_t crc, const void* data, size_t bytes);
// The same over `threads` threads, each a contiguous piece, the pieces' CRCs joined with zlib's
// crc32_combine: for the GPU backend's host, whose cores are idle while it checks what a copy
// moved (the CPU backend's devices are its cores, so it checks on one).
uint32_t checksum(const void* data, size_t bytes, unsigned threads);
// The checksum of `floats` values of runtime/pattern.h's data with `seed` (what a receiver of that
// buffer must hold), and those values written to `out`, each over `threads` threads.
uint32_t pattern_checksum(size_t floats, uint64_t seed, unsigned threads = 1);
void fill_pattern_host(float* out, size_t floats, uint64_t seed, unsigned threads = 1);

// What a backend's buffers in this process's memory come to over programs run one after another.
class BufferSizer {
 public:
  virtual ~BufferSizer() = default;
  virtual void add(const Program& p) = 0;
  virtual double bytes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int64_t devices() const = 0;
  // Every device's kernels of `p`; `activity` names it in a hang report. Every process of a
  // distributed backend calls it with the same program.
  virtual RunStats run(const Program& p, const std::string& activity) = 0;
  // Sizes the host memory the backend's buffers will take over the programs given to it, before
  // any runs; none for a backend whose buffers are not in this process's memory.
  virtual std::unique_ptr<BufferSizer> buffer_sizer() const { return nullptr; }
};

// The processes a distributed backend spans (MPI's world under mpirun; this process alone
// otherwise). Every process calls each collective operation in the same order.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The process-local index among the processes on this machine (which GPU a process takes).
  virtual int local_rank() const = 0;
  // `bytes` as `root` has it, on every process.
  virtual void broadcast(std::string& bytes, int root) = 0;
  // Every process's `mine`, by rank, on every process.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

// This process alone.
class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  void broadcast(std::string&, int) override {}
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
};

}  // namespace arlsim::runtime
