// A fake runtime device for tests: its "measurements" follow known curves, its copies move and
// check real bytes, and it logs the communicators it joins and the seeds of the chunks it
// gathers, so that a test can check what the process-per-device backend asked of it.
#pragma once

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/pattern.h"
#include "runtime/rank.h"

namespace arlsim::testing {

using runtime::Kernel;

// The known curves: 1 TFLOP/s, 100 GB/s streaming, 10 GB/s links and collectives, 5 us a launch.
inline double gemm_s(const Kernel& k) { return 2.0 * k.m * k.n * k.k * k.groups / 1e12; }
inline double link_s(double bytes) { return bytes / 1e10; }

struct Log {
  std::mutex mutex;
  std::vector<std::string> joins;  // "device: members -> rank"
  // (device, group sequence seed list) of each all-gather, as each member saw it
  std::vector<std::pair<int64_t, std::vector<uint64_t>>> gathers;
  std::vector<std::pair<int64_t, uint64_t>> sent;  // (device, seed of its own chunk)
};

class FakeOps final : public runtime::DeviceOps {
 public:
  FakeOps(int64_t device, Log& log) : device_(device), log_(log) {}
  int32_t join_group(const runtime::DeviceGroup& members, int64_t rank) override {
    std::string m;
    for (auto d : members) m += std::to_string(d) + ",";
    std::lock_guard<std::mutex> lock(log_.mutex);
    log_.joins.push_back(std::to_string(device_) + ": " + m + " -> " + std::to_string(rank));
    return joined_++;
  }
  void begin() override { r_ = {}; }
  void enqueue(const Kernel& k, const runtime::KernelContext& c) override {
    double s = 0;
    switch (k.kind) {
      case Kernel::Kind::gemm: s = gemm_s(k); break;
      case Kernel::Kind::copy: {
        const size_t n = runtime::buffer_floats(k.bytes);
        std::vector<float> source(n), landed(n);
        for (size_t i = 0; i < n; ++i) source[i] = runtime::pattern_value(i, c.seed);
        const uint32_t sent = runtime::checksum(source.data(), n * 4);
        std::memcpy(landed.data(), source.data(), n * 4);
        if (corrupt_) {
          reinterpret_cast<unsigned char*>(landed.data())[n] ^= 0x5A;
          corrupt_ = false;
        }
        if (runtime::checksum(landed.data(), n * 4) != sent) ++r_.checksum_failures;
        r_.bytes_verified += static_cast<double>(n * 4);
        s = link_s(k.bytes);
        break;
      }
      case Kernel::Kind::collective: {
        if (c.group_rank < 0 || c.comm < 0) throw std::runtime_error("collective without its communicator");
        std::lock_guard<std::mutex> lock(log_.mutex);
        log_.gathers.emplace_back(device_, c.chunk_seeds);
        log_.sent.emplace_back(device_, c.seed);
        s = link_s(k.bytes);
        break;
      }
      case Kernel::Kind::wait: s = k.seconds; break;
      default: s = k.bytes / 1e11 + 5e-6; break;
    }
    r_.seconds += s;
    r_.kernels.add(k.kind, s);
    r_.kernel_seconds.push_back(s);
  }
  runtime::DeviceResult end() override { return r_; }
  void corrupt_next_copy() override { corrupt_ = true; }

 private:
  int64_t device_;
  Log& log_;
  int32_t joined_ = 0;
  bool corrupt_ = false;
  runtime::DeviceResult r_;
};

}  // namespace arlsim::testing
