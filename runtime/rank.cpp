#include "runtime/rank.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "runtime/pattern.h"

namespace arlsim::runtime {

size_t buffer_floats(double bytes) { return static_cast<size_t>(std::max(1.0, std::ceil(bytes / 4.0))); }

CollectiveSize collective_size(model::CollectiveOp op, double bytes, int64_t n) {
  const bool by_rank = op != model::CollectiveOp::send_recv && op != model::CollectiveOp::broadcast;
  const auto ranks = static_cast<size_t>(std::max<int64_t>(1, n));
  CollectiveSize s;
  s.elements = buffer_floats(bytes);
  if (by_rank) s.elements = (s.elements + ranks - 1) / ranks * ranks;
  s.chunk = by_rank ? s.elements / ranks : s.elements;
  return s;
}

uint64_t copy_seed(int64_t device, int64_t index) {
  return pattern_seed(static_cast<uint64_t>(device), static_cast<uint64_t>(index));
}

uint64_t chunk_seed(const DeviceGroup& members, int64_t sequence, int64_t member) {
  // The group is named by all its members (two groups may share a first member and a size).
  uint64_t group = members.size();
  for (int64_t m : members) group = pattern_seed(group, static_cast<uint64_t>(m));
  return pattern_seed(static_cast<uint64_t>(members[static_cast<size_t>(member)]),
                      (group << 32) ^ static_cast<uint64_t>(sequence) ^ 0xA5A5A5A5ull);
}

namespace {

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T take(const std::string& s, size_t& at) {
  if (at + sizeof(T) > s.size()) throw std::runtime_error("a device's result arrived truncated");
  T v;
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

std::string encode(int64_t device, const DeviceResult& r) {
  std::string s;
  put(s, device);
  for (double v : {r.seconds, r.kernels.gemm, r.kernels.attention, r.kernels.decode_attention, r.kernels.memory,
                   r.kernels.collective, r.kernels.copy, r.kernels.wait, r.bytes_verified})
    put(s, v);
  put(s, r.checksum_failures);
  put(s, static_cast<int64_t>(r.busy.size()));
  for (const auto& b : r.busy) {
    put(s, b.start);
    put(s, b.end);
    put(s, b.phase);
  }
  put(s, static_cast<int64_t>(r.kernel_seconds.size()));
  for (double v : r.kernel_seconds) put(s, v);
  return s;
}

std::pair<int64_t, DeviceResult> decode(const std::string& s) {
  size_t at = 0;
  DeviceResult r;
  const auto device = take<int64_t>(s, at);
  for (double* v : {&r.seconds, &r.kernels.gemm, &r.kernels.attention, &r.kernels.decode_attention, &r.kernels.memory,
                    &r.kernels.collective, &r.kernels.copy, &r.kernels.wait, &r.bytes_verified})
    *v = take<double>(s, at);
  r.checksum_failures = take<int64_t>(s, at);
  const auto spans = take<int64_t>(s, at);
  if (spans < 0 || static_cast<size_t>(spans) > (s.size() - at) / (2 * sizeof(double) + 1))
    throw std::runtime_error("a device's result arrived with a malformed span count");
  for (int64_t i = 0; i < spans; ++i) {
    BusySpan b;
    b.start = take<double>(s, at);
    b.end = take<double>(s, at);
    b.phase = take<int8_t>(s, at);
    if (!(std::isfinite(b.start) && std::isfinite(b.end) && b.start >= 0 && b.end >= b.start) || b.phase < 0 || b.phase > 2)
      throw std::runtime_error("a device's result arrived with a malformed span");
    r.busy.push_back(b);
  }
  const auto kernels = take<int64_t>(s, at);
  if (kernels < 0 || static_cast<size_t>(kernels) > (s.size() - at) / sizeof(double))
    throw std::runtime_error("a device's result arrived with a malformed kernel count");
  for (int64_t i = 0; i < kernels; ++i) {
    const auto v = take<double>(s, at);
    if (!(std::isfinite(v) && v >= 0)) throw std::runtime_error("a device's result arrived with a malformed kernel time");
    r.kernel_seconds.push_back(v);
  }
  if (at != s.size()) throw std::runtime_error("a device's result arrived with extra bytes");
  return {device, r};
}

RankBackend::RankBackend(std::unique_ptr<DeviceOps> ops, Transport& transport, double timeout_s)
    : ops_(std::move(ops)), transport_(transport), timeout_s_(timeout_s) {}
RankBackend::~RankBackend() = default;
int64_t RankBackend::devices() const { return transport_.size(); }

RunStats RankBackend::run(const Program& p, const std::string& activity) {
  const int64_t device = transport_.rank();
  // The watchdog covers the whole activity on every process (communicators made, kernels, the
  // figures gathered): a process stuck anywhere in it (a collective whose peer never came) is
  // reported and ends.
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  int64_t current = -1;  // -1: making communicators or gathering figures
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (!finished.wait_for(lock, std::chrono::duration<double>(timeout_s_), [&] { return done; })) {
      std::fprintf(stderr, "arlsim: device %lld did not finish %s within %.0f s: stuck %s%lld; stopping\n",
                   static_cast<long long>(device), activity.c_str(), timeout_s_,
                   current < 0 ? "outside its kernels (communicators or the gathering of figures), at " : "in or after kernel ",
                   static_cast<long long>(current));
      std::fflush(stderr);
      std::_Exit(3);
    }
  });
  struct Stop {  // the watchdog ends with the activity, however it ends
    std::mutex& m;
    std::condition_variable& cv;
    bool& done;
    std::thread& t;
    ~Stop() {
      {
        std::lock_guard<std::mutex> lock(m);
        done = true;
      }
      cv.notify_one();
      t.join();
    }
  } stop{mutex, finished, done, watchdog};

  // Communicators for the groups not seen before, in the program's order on every process.
  for (const auto& g : p.groups) {
    if (comms_.count(g)) continue;
    const auto at = std::find(g.begin(), g.end(), device);
    comms_[g] = ops_->join_group(g, at == g.end() ? -1 : at - g.begin());
  }
  const std::vector<Kernel>* mine = nullptr;
  for (const auto& [d, ks] : p.devices)
    if (d == device) mine = &ks;

  std::string result;  // empty: this device has nothing in the activity
  if (mine && !mine->empty()) {
    ops_->begin();
    int64_t index = 0;
    for (const Kernel& k : *mine) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        current = index;
      }
      KernelContext c;
      c.seed = copy_seed(device, index);
      if (k.kind == Kernel::Kind::collective) {
        if (k.group < 0 || static_cast<size_t>(k.group) >= p.groups.size())
          throw std::runtime_error("device " + std::to_string(device) + " runs a collective of group " +
                                   std::to_string(k.group) + ", which the program does not have");
        const DeviceGroup& g = p.groups[static_cast<size_t>(k.group)];
        c.comm = comms_.at(g);
        c.group_size = static_cast<int64_t>(g.size());
        c.group_rank = std::find(g.begin(), g.end(), device) - g.begin();
        if (c.group_rank >= c.group_size)
          throw std::runtime_error("device " + std::to_string(device) + " runs a collective of a group it is not in");
        const int64_t seq = sequence_[g]++;
        for (int64_t m = 0; m < c.group_size; ++m) c.chunk_seeds.push_back(chunk_seed(g, seq, m));
        c.seed = c.chunk_seeds[static_cast<size_t>(c.group_rank)];
      }
      ops_->enqueue(k, c);
      ++index;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = -1;
    }
    result = encode(device, ops_->end());
  }

  RunStats stats;
  for (const std::string& bytes : transport_.all_gather(result)) {
    if (bytes.empty()) continue;
    const auto [d, r] = decode(bytes);
    stats.device_seconds.emplace_back(d, r.seconds);
    stats.seconds = std::max(stats.seconds, r.seconds);
    stats.kernels += r.kernels;
    stats.bytes_verified += r.bytes_verified;
    stats.checksum_failures += r.checksum_failures;
    stats.busy.emplace_back(d, r.busy);
    stats.kernel_seconds.emplace_back(d, r.kernel_seconds);
  }
  return stats;
}

}  // namespace arlsim::runtime
