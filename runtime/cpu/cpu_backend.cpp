#include "runtime/cpu/cpu_backend.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "calib/cpu/kernels.h"
#include "runtime/pattern.h"
#include "runtime/rank.h"

namespace arlsim::runtime {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Deterministic synthetic data (runtime/pattern.h): a buffer's contents depend on its seed only.
void fill(calib::cpu::Floats& v, size_t n, uint64_t seed) {
  if (v.size() < n) v.resize(n);
  fill_pattern_host(v.data(), n, seed);  // on this device's thread: the others are devices too
}

// Calibration's streaming kernel that runs an element-wise kind (an add is its triad).
calib::MemoryKernel stream_kernel(model::ElementwiseKind kind) {
  switch (kind) {
    case model::ElementwiseKind::any:
    case model::ElementwiseKind::copy: return calib::MemoryKernel::copy;
    case model::ElementwiseKind::add: return calib::MemoryKernel::triad;
    case model::ElementwiseKind::norm: return calib::MemoryKernel::norm;
    case model::ElementwiseKind::activation: return calib::MemoryKernel::activation;
  }
  return calib::MemoryKernel::copy;
}

}  // namespace

// A device: its worker (the "GPU") and its buffers, grown to the largest request and reused.
struct Device {
  calib::cpu::Worker worker;
  calib::cpu::Floats a, b, c, x, y, z, host, source;
  std::map<int32_t, calib::cpu::Floats> weights;  // by Kernel::weight
  calib::cpu::Attention attention;
  int64_t attention_seq = -1, attention_dim = -1;
  std::map<int32_t, calib::cpu::DecodeAttention> decode;  // each layer's KV cache, by Kernel::weight
  std::atomic<int64_t> kernel{-1};  // the kernel it runs (for a hang report)
};

// A collective group of one run: its barrier and each member's buffer.
struct Group {
  explicit Group(size_t n) : step(static_cast<std::ptrdiff_t>(n)), in(n), out(n), sums(n) {}
  std::barrier<> step;
  std::vector<calib::cpu::Floats> in, out;
  std::vector<uint32_t> sums;  // all-gather: each member's chunk checksum, as sent
};

// What run() allocates, as it allocates it (floats).
class CpuBufferSizer final : public BufferSizer {
 public:
  void add(const Program& p) override {
    const auto f = [](int64_t a, int64_t b) { return static_cast<double>(a) * static_cast<double>(b); };
    double groups = 0;  // this program's collective buffers: every member's, for the whole run
    std::map<std::pair<int32_t, size_t>, std::pair<double, double>> members;  // (group, rank) -> (out, in)
    for (const auto& [id, kernels] : p.devices) {
      Sizes& d = devices_[id];
      for (const Kernel& k : kernels) {
        switch (k.kind) {
          case Kernel::Kind::gemm: {
            // A grouped GEMM (a layer's experts) gives each group its own operands.
            grow(d.a, f(k.m * k.groups, k.k));
            grow(k.weight >= 0 ? d.weights[k.weight] : d.b, f(k.k * k.groups, k.n));
            grow(d.c, f(k.m * k.groups, k.n));
            break;
          }
          case Kernel::Kind::attention:
            // q, k, v, o and the backward's four, and blocks of 128 rows' probabilities and their
            // gradients.
            grow(d.attention, 8 * f(k.seq_len, k.head_dim) + 2 * f(128, k.seq_len));
            break;
          case Kernel::Kind::decode_attention: {
            // calib::cpu::DecodeAttention::prepare, replayed: a cache of the same shape grows by a
            // quarter at a time when a longer context needs it, one of another shape is made anew;
            // each sequence and KV head has its keys and values and its group of queries and outputs.
            Decode& c = d.decode[k.weight];
            const bool same = k.seqs == c.seqs && k.heads == c.heads && k.kv_heads == c.kv_heads &&
                              k.head_dim == c.head_dim && k.value_dim == c.value_dim;
            if (same && k.seq_len <= c.capacity) break;
            c.capacity = same ? std::max(k.seq_len, c.capacity + c.capacity / 4) : k.seq_len;
            c.seqs = k.seqs, c.heads = k.heads, c.kv_heads = k.kv_heads, c.head_dim = k.head_dim, c.value_dim = k.value_dim;
            const int64_t group = std::max<int64_t>(1, k.heads / std::max<int64_t>(1, k.kv_heads));
            // Keys and values (or one latent cache) and the group's queries and outputs.
            const double cache = f(c.capacity, k.head_dim) * (k.value_dim > 0 ? 1 : 2);
            const double rows = f(group, k.head_dim) + f(group, k.value_dim > 0 ? k.value_dim : k.head_dim);
            grow(c.largest, f(k.seqs, k.kv_heads) * (cache + rows));
            break;
          }
          case Kernel::Kind::memory: {
            const auto n = static_cast<double>(memory_floats_per_launch(k));
            grow(d.x, n);
            grow(d.y, n);
            if (k.elementwise == model::ElementwiseKind::add) grow(d.z, n);
            break;
          }
          case Kernel::Kind::collective: {
            const auto& g = p.groups[static_cast<size_t>(k.group)];
            const auto n = static_cast<int64_t>(g.size());
            size_t r = 0;
            while (r < g.size() && g[r] != id) ++r;
            const double e = static_cast<double>(collective_size(k.op, k.bytes, n).elements);
            auto& m = members[{k.group, r}];
            m.first = std::max(m.first, e);
            if (k.op == model::CollectiveOp::all_to_all || k.op == model::CollectiveOp::send_recv) m.second = std::max(m.second, e);
            break;
          }
          case Kernel::Kind::copy: {
            const auto n = static_cast<double>(buffer_floats(k.bytes));
            grow(d.source, n);
            grow(k.peer < 0 ? d.host : d.y, n);
            break;
          }
          case Kernel::Kind::wait: break;
        }
      }
    }
    for (const auto& [key, m] : members) groups += m.first + m.second;
    transient_ = std::max(transient_, groups);
  }
  double bytes() const override {
    double floats = transient_;
    for (const auto& [id, d] : devices_) {
      floats += d.a + d.b + d.c + d.x + d.y + d.z + d.host + d.source + d.attention;
      for (const auto& [w, n] : d.weights) floats += n;
      for (const auto& [w, cache] : d.decode) floats += cache.largest;
    }
    return floats * sizeof(float);
  }

 private:
  struct Decode {  // a layer's cache as DecodeAttention::prepare keeps it
    int64_t seqs = 0, heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0, capacity = 0;
    double largest = 0;  // floats of its largest allocation
  };
  struct Sizes {
    double a = 0, b = 0, c = 0, x = 0, y = 0, z = 0, host = 0, source = 0, attention = 0;
    std::map<int32_t, double> weights;
    std::map<int32_t, Decode> decode;  // by layer
  };
  static void grow(double& size, double floats) { size = std::max(size, floats); }
  std::map<int64_t, Sizes> devices_;
  double transient_ = 0;
};

std::unique_ptr<BufferSizer> CpuBackend::buffer_sizer() const { return std::make_unique<CpuBufferSizer>(); }

struct CpuBackend::Impl {
  std::vector<std::unique_ptr<Device>> devices;
  double timeout_s = 600;
  std::atomic<bool> corrupt{false};
};

CpuBackend::CpuBackend(int64_t devices, double timeout_s) : impl_(std::make_unique<Impl>()) {
  for (int64_t i = 0; i < devices; ++i) impl_->devices.push_back(std::make_unique<Device>());
  impl_->timeout_s = timeout_s;
}
CpuBackend::~CpuBackend() = default;
int64_t CpuBackend::devices() const { return static_cast<int64_t>(impl_->devices.size()); }
void CpuBackend::corrupt_next_copy() { impl_->corrupt = true; }

RunStats CpuBackend::run(const Program& p, const std::string& activity) {
  RunStats stats;
  std::vector<std::unique_ptr<Group>> groups;
  for (const auto& g : p.groups) groups.push_back(std::make_unique<Group>(g.size()));
  std::mutex mutex;
  std::condition_variable finished;
  size_t done = 0;
  std::vector<std::thread> threads;
  std::vector<double> clocks(p.devices.size(), 0);
  std::vector<KernelSeconds> kernels(p.devices.size());
  std::vector<std::vector<BusySpan>> busy(p.devices.size());
  std::vector<std::vector<double>> each(p.devices.size());
  std::atomic<int64_t> failures{0};
  std::atomic<double> verified{0};
  for (size_t slot = 0; slot < p.devices.size(); ++slot) {
    threads.emplace_back([&, slot] {
      const int64_t id = p.devices[slot].first;
      Device& dev = *impl_->devices[static_cast<size_t>(id)];
      double clock = 0;
      int64_t index = 0;
      for (const Kernel& k : p.devices[slot].second) {
        dev.kernel = index++;
        double took = 0;
        switch (k.kind) {
          case Kernel::Kind::gemm: {
            const auto need = [](calib::cpu::Floats& v, int64_t r, int64_t c) {
              if (v.size() < static_cast<size_t>(r * c)) v.assign(static_cast<size_t>(r * c), 0.5f);
            };
            // Each group (a layer's expert) its own operands: its weights are read from memory as
            // the experts' distinct weights are, not from a cache one group warmed.
            calib::cpu::Floats& bv = k.weight >= 0 ? dev.weights[k.weight] : dev.b;
            need(dev.a, k.m * k.groups, k.k);
            need(bv, k.k * k.groups, k.n);
            need(dev.c, k.m * k.groups, k.n);
            const std::function<void()> task = [&] {
              for (int64_t g = 0; g < k.groups; ++g) {
                Eigen::Map<Eigen::MatrixXf> a(dev.a.data() + g * k.m * k.k, k.m, k.k), b(bv.data() + g * k.k * k.n, k.k, k.n),
                    c(dev.c.data() + g * k.m * k.n, k.m, k.n);
                c.noalias() = a * b;
              }
            };
            const auto t = Clock::now();
            dev.worker.run(task);
            took = since(t);
            break;
          }
          case Kernel::Kind::attention: {
            if (dev.attention_seq != k.seq_len || dev.attention_dim != k.head_dim) {
              dev.attention.prepare(k.seq_len, k.head_dim);
              dev.attention_seq = k.seq_len;
              dev.attention_dim = k.head_dim;
              if (k.backward) dev.attention.run(false);  // the forward a backward follows
            }
            const std::function<void()> task = [&] {
              for (int64_t h = 0; h < k.heads; ++h) dev.attention.run(false, k.backward);
            };
            const auto t = Clock::now();
            dev.worker.run(task);
            took = since(t);
            break;
          }
          case Kernel::Kind::decode_attention: {
            // One layer's decode attention (calibration's kernel) over its own cache, which
            // grows with the context and is filled once.
            auto& a = dev.decode[k.weight];
            a.prepare(k.seqs, k.seq_len, k.heads, k.kv_heads, k.head_dim, k.value_dim);
            const std::function<void()> task = [&] { a.run(); };
            const auto t = Clock::now();
            dev.worker.run(task);
            took = since(t);
            break;
          }
          case Kernel::Kind::memory: {
            // Calibration's streaming kernel of the op's kind, over its bytes.
            const int64_t launches = std::max<int64_t>(1, k.launches);
            const size_t n = memory_floats_per_launch(k);
            const bool add = k.elementwise == model::ElementwiseKind::add;
            if (dev.x.size() < n) dev.x.assign(n, 1.5f);
            if (dev.y.size() < n) dev.y.assign(n, 0.0f);
            if (add && dev.z.size() < n) dev.z.assign(n, 0.25f);
            const calib::MemoryKernel kernel = stream_kernel(k.elementwise);
            const std::function<void()> task = [&] {
              calib::cpu::stream(kernel, dev.x.data(), dev.y.data(), add ? dev.z.data() : nullptr, n);
            };
            const auto t = Clock::now();
            if (k.launches == 0) {
              task();  // replayed from a graph: no launch of its own
            } else {
              for (int64_t l = 0; l < launches; ++l) dev.worker.run(task);
            }
            took = since(t);
            break;
          }
          case Kernel::Kind::collective: {
            const auto& members = p.groups[static_cast<size_t>(k.group)];
            Group& g = *groups[static_cast<size_t>(k.group)];
            const auto n = static_cast<int64_t>(members.size());
            int64_t r = 0;
            while (members[static_cast<size_t>(r)] != id) ++r;
            const auto [e, chunk] = collective_size(k.op, k.bytes, n);
            auto& mine = g.out[static_cast<size_t>(r)];
            const bool gather = k.op == model::CollectiveOp::all_gather;
            // A broadcast moves the root's tensor to every member: checked at each receiver.
            const bool broadcast = k.op == model::CollectiveOp::broadcast;
            if (gather) {
              fill(mine, e, copy_seed(id, index));
              std::memmove(mine.data() + static_cast<size_t>(r) * chunk, mine.data(), chunk * sizeof(float));
              g.sums[static_cast<size_t>(r)] = checksum(mine.data() + static_cast<size_t>(r) * chunk, chunk * sizeof(float));
            } else if (broadcast && r == 0) {
              fill(mine, e, copy_seed(id, index));
              g.sums[0] = checksum(mine.data(), e * sizeof(float));
            } else if (mine.size() < e) {
              mine.assign(e, 1.0f);
            }
            if (k.op == model::CollectiveOp::all_to_all || k.op == model::CollectiveOp::send_recv)
              g.in[static_cast<size_t>(r)].assign(e, 1.0f);
            g.step.arrive_and_wait();  // every member's buffer is ready
            const auto t = Clock::now();
            calib::cpu::ring_collective(k.op, r, n, g.in, g.out, e, [&] { g.step.arrive_and_wait(); });
            g.step.arrive_and_wait();
            took = since(t);
            if (broadcast && r > 0) {
              if (checksum(mine.data(), e * sizeof(float)) != g.sums[0]) ++failures;
              verified.fetch_add(static_cast<double>(e * sizeof(float)));
            }
            if (gather) {
              for (int64_t c = 0; c < n; ++c) {
                if (c == r) continue;
                if (checksum(mine.data() + static_cast<size_t>(c) * chunk, chunk * sizeof(float)) != g.sums[static_cast<size_t>(c)])
                  ++failures;
                verified.fetch_add(static_cast<double>(chunk * sizeof(float)));
              }
            }
            g.step.arrive_and_wait();  // nobody refills before all have checked
            break;
          }
          case Kernel::Kind::copy: {
            const size_t n = buffer_floats(k.bytes);
            fill(dev.source, n, copy_seed(id, index));
            const uint32_t sent = checksum(dev.source.data(), n * sizeof(float));
            calib::cpu::Floats& dst = k.peer < 0 ? dev.host : dev.y;
            if (dst.size() < n) dst.resize(n);
            const auto t = Clock::now();
            std::memcpy(dst.data(), dev.source.data(), n * sizeof(float));
            took = since(t);
            if (impl_->corrupt.exchange(false)) reinterpret_cast<unsigned char*>(dst.data())[n * sizeof(float) / 2] ^= 0x5A;
            if (checksum(dst.data(), n * sizeof(float)) != sent) ++failures;
            verified.fetch_add(static_cast<double>(n * sizeof(float)));
            break;
          }
          case Kernel::Kind::wait: {
            const auto t = Clock::now();
            hold(k.seconds, k.busy);
            took = since(t);
            break;
          }
        }
        if (k.kind != Kernel::Kind::wait || k.busy) add_busy(busy[slot], clock, clock + took, k.phase);
        clock += took;
        kernels[slot].add(k.kind, took);
        each[slot].push_back(took);
      }
      dev.kernel = -1;
      clocks[slot] = clock;
      std::lock_guard<std::mutex> lock(mutex);
      ++done;
      finished.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!finished.wait_for(lock, std::chrono::duration<double>(impl_->timeout_s), [&] { return done == threads.size(); })) {
      for (const auto& [id, ks] : p.devices) {
        const int64_t k = impl_->devices[static_cast<size_t>(id)]->kernel.load();
        if (k >= 0)
          std::fprintf(stderr, "arlsim: device %lld did not finish %s within %.0f s: stuck in kernel %lld (%s); stopping\n",
                       static_cast<long long>(id), activity.c_str(), impl_->timeout_s, static_cast<long long>(k),
                       kernel_kind_name(ks[static_cast<size_t>(k)].kind));
      }
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
  for (auto& t : threads) t.join();
  for (size_t slot = 0; slot < p.devices.size(); ++slot) {
    stats.device_seconds.emplace_back(p.devices[slot].first, clocks[slot]);
    stats.seconds = std::max(stats.seconds, clocks[slot]);
    stats.kernels += kernels[slot];
    stats.busy.emplace_back(p.devices[slot].first, std::move(busy[slot]));
    stats.kernel_seconds.emplace_back(p.devices[slot].first, std::move(each[slot]));
  }
  stats.bytes_verified = verified.load();
  stats.checksum_failures = failures.load();
  return stats;
}

}  // namespace arlsim::runtime
