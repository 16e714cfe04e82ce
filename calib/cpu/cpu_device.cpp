#include "calib/cpu/cpu_device.h"

#include "calib/cpu/kernels.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <functional>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace arlsim::calib {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// This file is built for this machine's vector units (-march=native). A standard-library template
// instantiated here, such as std::mt19937's generator, can be the copy the linker keeps for the
// whole program, whose other users would then need those units too; so the random numbers here
// come from a generator of this file's own (SplitMix64).
struct LocalRandom {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(static_cast<double>(next() >> 40) / static_cast<double>(1ull << 23) - 1.0); }
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  return "unknown CPU";
}

// The largest cache of cpu0, from sysfs ("32768K"); 0 when it cannot be read.
double last_level_cache() {
  double largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    double scale = 1;
    if (text.back() == 'K') scale = 1024;
    if (text.back() == 'M') scale = 1024.0 * 1024;
    try {
      largest = std::max(largest, std::stod(text) * scale);
    } catch (...) {
    }
  }
  return largest;
}

// n threads that run one function together, each with its rank, and a barrier for the steps of
// an algorithm: the ranks of the collectives among threads.
class ThreadTeam {
 public:
  explicit ThreadTeam(int64_t n) : n_(n), step_(static_cast<std::ptrdiff_t>(n)) {
    for (int64_t r = 0; r < n; ++r) threads_.emplace_back([this, r] { loop(r); });
  }
  ~ThreadTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int64_t size() const { return n_; }
  void step() { step_.arrive_and_wait(); }
  // Runs fn(rank) on every thread and returns when all are done.
  void run(const std::function<void(int64_t)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      done_ = 0;
      ++round_;
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ == n_; });
  }

 private:
  void loop(int64_t rank) {
    int64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t)>* fn = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || round_ != seen; });
        if (stop_) return;
        seen = round_;
        fn = fn_;
      }
      (*fn)(rank);
      std::lock_guard<std::mutex> lock(mutex_);
      if (++done_ == n_) done_cv_.notify_one();
    }
  }
  int64_t n_;
  std::barrier<> step_;
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t round_ = 0, done_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Threads that keep their cores busy with dense fp32 products (Eigen's kernels on cache-resident
// 256 x 256 operands: the vector units at full load, as another device's GEMMs keep them) until
// stopped.
// The run's other devices while a kernel is measured: a CPU's threads share its caches, its
// memory bus and its clocks, and the devices of a data- or tensor-parallel run execute the same
// kernels at the same time. Each peer runs the measured kernel on its own data, in a loop, for as
// long as the measurement lasts (a peer's kernel that reads memory competes for the bus as the
// run's will; one that stays in its core's caches does not).
class Peers {
 public:
  ~Peers() { stop(); }
  void set(int64_t n) {
    stop();
    n_ = n;
  }
  // Starts every peer on its own copy of the kernel `make` builds (in the peer's thread, so that
  // its buffers are that thread's own) and returns once all have built theirs.
  void start(const std::function<std::function<void()>()>& make) {
    stop();
    ready_ = 0;
    for (int64_t i = 0; i < n_; ++i)
      threads_.emplace_back([this, make] {
        const std::function<void()> run = make();
        ready_.fetch_add(1);
        while (!stop_.load(std::memory_order_relaxed)) run();
      });
    while (ready_.load() < n_) std::this_thread::yield();
  }
  // Stops them, each after the kernel it is running.
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
  }

 private:
  int64_t n_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ready_{0};
  std::vector<std::thread> threads_;
};

class CpuDevice final : public Device {
 public:
  DeviceInfo info() const override {
    DeviceInfo i;
    i.backend = "cpu";
    i.name = cpu_model() + " (one core)";
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) i.machine = host;
    utsname u{};
    if (uname(&u) == 0) i.driver = std::string(u.sysname) + " " + u.release;
    i.versions = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + "), " +
#if defined(__VERSION__)
                 "compiler " __VERSION__;
#else
                 "compiler unknown";
#endif
    i.gemm_dtype = "fp32";
    i.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    i.host_link_kind = "host-memory";  // device and host share the memory: the copy rate stands in
    i.last_level_cache_bytes = last_level_cache_;
    // Eigen's GEMM micro-kernel: mr x nr outputs per register block, one core.
    i.gemm_tile_m = Eigen::internal::gebp_traits<float, float>::mr;
    i.gemm_tile_n = Eigen::internal::gebp_traits<float, float>::nr;
    i.compute_units = 1;
    i.cores = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
    i.max_ranks = 32;  // each rank holds up to 2 x 32 MiB of buffers
    i.link_kind = "shared-memory";
    return i;
  }

  std::optional<double> gemm(int64_t m, int64_t n, int64_t k) override {
    // The weight operand (B) is read from memory, not from a cache: in a model's step every layer
    // reads its own weights once per pass, so a layer's weights are evicted by the others' before
    // they are read again (as GPU benchmarks flush the L2 cache between runs). The products run
    // over copies of B that together exceed twice the last-level cache; the activations (A) stay
    // hot, as the previous kernel wrote them. The output is written once before timing: a kernel
    // in a running program writes memory that is already mapped (first touches, page faults,
    // would be timed otherwise). A product shorter than a
    // millisecond is repeated to fill one and the mean taken, after a first run not counted.
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), c = Eigen::MatrixXf::Zero(m, n);
    const auto b_floats = static_cast<size_t>(k * n);
    const double cache = last_level_cache_ > 0 ? last_level_cache_ : 32.0 * (1 << 20);
    const auto copies = static_cast<size_t>(std::clamp(std::ceil(2 * cache / (4.0 * static_cast<double>(b_floats))), 1.0, 1e6));
    // The copies are consecutive slices of one pool of random values, filled once and reused.
    if (weights_.size() < copies * b_floats) {
      const auto old = weights_.size();
      weights_.resize(copies * b_floats);
      LocalRandom rng{12345 + old};
      for (size_t i = old; i < weights_.size(); ++i) weights_[i] = rng.uniform();  // in [-1, 1)
    }
    std::vector<Eigen::Map<const Eigen::MatrixXf>> bs;
    for (size_t i = 0; i < copies; ++i) bs.emplace_back(weights_.data() + i * b_floats, k, n);
    const auto& b = bs.front();
    // The peers: the same product over weight copies of their own.
    peers_.start([m, n, k, copies, b_floats] {
      struct Own {
        Eigen::MatrixXf a, c;
        cpu::Floats w;
        size_t next = 0;
      };
      auto own = std::make_shared<Own>();
      own->a = Eigen::MatrixXf::Constant(m, k, 0.5f);
      own->c = Eigen::MatrixXf::Zero(m, n);
      own->w.assign(copies * b_floats, 0.25f);
      return std::function<void()>([own, k, n, copies, b_floats] {
        own->c.noalias() = own->a * Eigen::Map<const Eigen::MatrixXf>(own->w.data() + own->next * b_floats, k, n);
        own->next = (own->next + 1) % copies;
      });
    });
    c.noalias() = a * bs.back();  // first run, not counted (bs.front() is now the coldest copy)
    auto t = Clock::now();
    c.noalias() = a * b;
    double s = since(t);
    if (s < 1e-3) {
      const int runs = static_cast<int>(std::min(1000.0, std::ceil(1e-3 / std::max(s, 1e-7))));
      t = Clock::now();
      for (int r = 0; r < runs; ++r) c.noalias() = a * bs[static_cast<size_t>(r + 1) % copies];
      s = since(t) / runs;
      c.noalias() = a * b;  // the result checked below
    }
    peers_.stop();
    // Check a few entries against plain dot products.
    LocalRandom rng{static_cast<uint64_t>(m * 1315423911 + n * 2654435761 + k)};
    for (int i = 0; i < 4; ++i) {
      const auto r = static_cast<Eigen::Index>(rng.next() % static_cast<uint64_t>(m));
      const auto col = static_cast<Eigen::Index>(rng.next() % static_cast<uint64_t>(n));
      double want = 0;
      for (Eigen::Index x = 0; x < k; ++x) want += static_cast<double>(a(r, x)) * static_cast<double>(b(x, col));
      if (std::abs(static_cast<double>(c(r, col)) - want) > 1e-3 * std::sqrt(static_cast<double>(k)) + 1e-4 * std::abs(want)) {
        problem_ = "GEMM result differs from the reference";
        return std::nullopt;
      }
    }
    return s;
  }

  // Causal attention of one head, blocked by rows of queries as FlashAttention blocks it: each
  // block of kBlock queries scores the keys up to its last one, takes the softmax (the diagonal
  // block masked) and weighs the values; the backward recomputes the block's probabilities and
  // accumulates dQ, dK and dV. fp32 throughout, Eigen's products for the five GEMMs.
  // Causal attention of one head (cpu::Attention, the runtime's kernel), checked against a
  // double-precision reference.
  std::optional<double> attention(int64_t seq_len, int64_t head_dim, bool backward) override {
    const auto s = static_cast<Eigen::Index>(seq_len), dh = static_cast<Eigen::Index>(head_dim);
    attention_.prepare(seq_len, head_dim);
    const float scale = attention_.scale;
    const auto &q = attention_.q, &k = attention_.k, &v = attention_.v, &o = attention_.o, &d_o = attention_.d_o;
    const auto &dq = attention_.dq, &dk = attention_.dk, &dv = attention_.dv;
    peers_.start([seq_len, head_dim, backward] {
      auto own = std::make_shared<cpu::Attention>();
      own->prepare(seq_len, head_dim);
      return std::function<void()>([own, backward] { own->run(backward); });
    });
    const auto t = Clock::now();
    attention_.run(backward);
    const double secs = since(t);
    peers_.stop();
    // Check against a plain double-precision reference at a middle and the last query: the output
    // row, and (backward) the rows of dV and dK that only the last query reaches, dV[s-1] =
    // P dO[s-1] and dK[s-1] = scale dS q[s-1] with P = P[s-1][s-1], dS = P (dO[s-1] v[s-1] - dO[s-1] O[s-1]).
    auto reference = [&](Eigen::Index i, std::vector<double>& prob) {
      prob.assign(static_cast<size_t>(i + 1), 0.0);
      double top = -1e300, sum = 0;
      for (Eigen::Index j = 0; j <= i; ++j) {
        double dot = 0;
        for (Eigen::Index c = 0; c < dh; ++c) dot += static_cast<double>(q(i, c)) * k(j, c);
        prob[static_cast<size_t>(j)] = dot * scale;
        top = std::max(top, prob[static_cast<size_t>(j)]);
      }
      for (auto& x : prob) sum += (x = std::exp(x - top));
      for (auto& x : prob) x /= sum;
    };
    auto close = [](double got, double want) { return std::abs(got - want) <= 1e-3 * std::max(1.0, std::abs(want)); };
    bool ok = o.allFinite();
    std::vector<double> prob;
    for (Eigen::Index i : {s / 2, s - 1}) {
      reference(i, prob);
      for (Eigen::Index c = 0; ok && c < dh; ++c) {
        double want = 0;
        for (Eigen::Index j = 0; j <= i; ++j) want += prob[static_cast<size_t>(j)] * v(j, c);
        ok = close(o(i, c), want);
      }
    }
    if (ok && backward) {
      ok = dq.allFinite() && dk.allFinite() && dv.allFinite();
      const Eigen::Index last = s - 1;
      const double pl = prob[static_cast<size_t>(last)];  // the last query's own probability
      double dpl = 0, delta = 0;
      for (Eigen::Index c = 0; c < dh; ++c) {
        dpl += static_cast<double>(d_o(last, c)) * v(last, c);
        delta += static_cast<double>(d_o(last, c)) * o(last, c);
      }
      const double ds = pl * (dpl - delta);
      for (Eigen::Index c = 0; ok && c < dh; ++c)
        ok = close(dv(last, c), pl * d_o(last, c)) && close(dk(last, c), scale * ds * q(last, c));
    }
    if (!ok) {
      problem_ = "attention result differs from its double-precision reference rows";
      return std::nullopt;
    }
    return secs;
  }

  // Decode attention of one layer (cpu::DecodeAttention, the runtime's kernel), handed to the
  // worker thread as the runtime hands it each layer's. Like the runtime's layers, each run reads
  // a cache that the others have pushed out of the last-level cache: copies of the inputs that
  // together pass twice its size (at most 512 MiB), used in turn. Checked against a
  // double-precision reference for the first query of the first sequence.
  std::optional<double> decode_attention(int64_t batch, int64_t kv_len, int64_t heads, int64_t kv_heads,
                                         int64_t head_dim) override {
    if (batch < 1 || kv_len < 1 || kv_heads < 1 || head_dim < 1 || heads < kv_heads || heads % kv_heads != 0) {
      problem_ = "decode attention needs a positive shape whose query heads are a multiple of its KV heads";
      return std::nullopt;
    }
    const double bytes = decode_kv_bytes(batch, kv_len, kv_heads, head_dim, sizeof(float));
    const double cache = last_level_cache_ > 0 ? last_level_cache_ : 32.0 * (1 << 20);
    const auto copies = static_cast<size_t>(
        std::clamp(std::ceil(2 * cache / bytes), 1.0, std::max(1.0, std::floor(512.0 * (1 << 20) / bytes))));
    auto& first = decode_.empty() ? decode_.emplace_back() : decode_.front();
    if (decode_.size() != copies || first.batch != batch || first.kv_len != kv_len || first.heads != heads ||
        first.kv_heads != kv_heads || first.head_dim != head_dim) {
      decode_.resize(copies);
      for (auto& c : decode_) c = cpu::DecodeAttention{}, c.prepare(batch, kv_len, heads, kv_heads, head_dim);
      next_decode_ = 0;
    }
    auto& a = decode_[next_decode_];
    next_decode_ = (next_decode_ + 1) % decode_.size();
    const std::function<void()> task = [&] { a.run(); };
    peers_.start([batch, kv_len, heads, kv_heads, head_dim, copies] {
      auto own = std::make_shared<std::vector<cpu::DecodeAttention>>(copies);
      for (auto& c : *own) c.prepare(batch, kv_len, heads, kv_heads, head_dim);
      auto next = std::make_shared<size_t>(0);
      return std::function<void()>([own, next] {
        (*own)[*next].run();
        *next = (*next + 1) % own->size();
      });
    });
    const auto t = Clock::now();
    const bool ran = worker_.run(task);
    const double secs = since(t);
    peers_.stop();
    if (!ran) {
      problem_ = "the worker thread did not run its task";
      return std::nullopt;
    }
    const auto& q = a.q[0];
    const auto& k = a.k[0];
    const auto& v = a.v[0];
    std::vector<double> prob(static_cast<size_t>(kv_len));
    double top = -1e300, sum = 0;
    for (int64_t j = 0; j < kv_len; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < head_dim; ++c) dot += static_cast<double>(q(0, c)) * k(j, c);
      prob[static_cast<size_t>(j)] = dot * a.scale;
      top = std::max(top, prob[static_cast<size_t>(j)]);
    }
    for (auto& x : prob) sum += (x = std::exp(x - top));
    bool ok = a.o[0].allFinite();
    for (int64_t c = 0; ok && c < head_dim; ++c) {
      double want = 0;
      for (int64_t j = 0; j < kv_len; ++j) want += prob[static_cast<size_t>(j)] / sum * v(j, c);
      ok = std::abs(a.o[0](0, c) - want) <= 1e-3 * std::max(1.0, std::abs(want));
    }
    if (!ok) {
      problem_ = "decode attention result differs from its double-precision reference row";
      return std::nullopt;
    }
    return secs;
  }

  // Collectives among threads over shared memory, each rank reading its neighbour's buffer as a
  // ring moves data (NCCL's ring algorithms, one chunk per rank and step, a barrier between steps):
  // all-reduce as reduce-scatter then all-gather (2(n - 1) steps), all-gather and reduce-scatter
  // (n - 1), broadcast pipelined down the ring in 64 pieces, all-to-all and send/recv as direct
  // reads. fp32 elements; every rank's result is checked. Out of place the inputs are in their
  // own buffers, which the ring's first step reads (in place, and for all-to-all and send/recv
  // always, as NCCL defines them).
  std::optional<double> collective(model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                   bool in_place) override {
    using model::CollectiveOp;
    const int64_t n = ranks;
    const bool by_rank = op != CollectiveOp::send_recv && op != CollectiveOp::broadcast;
    int64_t elements = std::max<int64_t>(1, static_cast<int64_t>(bytes / 4));
    if (by_rank) elements = (elements + n - 1) / n * n;  // whole chunks, one per rank
    if (used) *used = 4.0 * static_cast<double>(elements);
    if (!team_ || team_->size() != n) team_ = std::make_unique<ThreadTeam>(n);
    const auto e = static_cast<size_t>(elements), chunk = by_rank ? e / static_cast<size_t>(n) : e;
    const bool sends = op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv;
    const bool separate = sends || !in_place;  // inputs in in_, else in out_
    in_.resize(separate ? static_cast<size_t>(n) : 0);
    out_.resize(static_cast<size_t>(n));
    for (auto& v : in_) v.assign(e, 0.0f);
    for (auto& v : out_) v.assign(e, 0.0f);
    auto left = [&](int64_t r) { return static_cast<size_t>((r + n - 1) % n); };
    auto span = [&](cpu::Floats& v, int64_t c) { return v.data() + static_cast<size_t>((c % n + n) % n) * chunk; };
    Clock::time_point start, end;
    std::atomic<bool> ok{true};
    const float total = static_cast<float>(n * (n + 1) / 2);
    team_->run([&](int64_t r) {
      const auto ri = static_cast<size_t>(r);
      auto& mine = out_[ri];
      auto& input = separate ? in_[ri] : mine;
      // Inputs: rank r holds r + 1 (all-to-all: r n + j + 1 in the chunk meant for rank j).
      switch (op) {
        case CollectiveOp::all_reduce:
        case CollectiveOp::reduce_scatter: std::fill(input.begin(), input.end(), static_cast<float>(r + 1)); break;
        case CollectiveOp::all_gather: std::fill(span(input, r), span(input, r) + chunk, static_cast<float>(r + 1)); break;
        case CollectiveOp::all_to_all:
          for (int64_t j = 0; j < n; ++j) std::fill(span(in_[ri], j), span(in_[ri], j) + chunk, static_cast<float>(r * n + j + 1));
          break;
        case CollectiveOp::broadcast:
          if (r == 0) std::fill(input.begin(), input.end(), 1.0f);
          break;
        case CollectiveOp::send_recv: std::fill(in_[ri].begin(), in_[ri].end(), static_cast<float>(r + 1)); break;
      }
      team_->step();
      if (r == 0) start = Clock::now();
      team_->step();
      cpu::ring_collective(op, r, n, in_, out_, e, [&] { team_->step(); }, !separate);
      team_->step();
      if (r == 0) end = Clock::now();
      // Check: the first and last element of every chunk this rank should hold.
      auto expect = [&](const float* v, size_t count, float want) {
        if (count > 0 && (std::abs(v[0] - want) > 1e-3f * want || std::abs(v[count - 1] - want) > 1e-3f * want)) ok = false;
      };
      switch (op) {
        case CollectiveOp::all_reduce:
          for (int64_t c = 0; c < n; ++c) expect(span(mine, c), chunk, total);
          break;
        case CollectiveOp::reduce_scatter: expect(span(mine, r + 1), chunk, total); break;
        case CollectiveOp::all_gather:
          for (int64_t c = 0; c < n; ++c) expect(span(mine, c), chunk, static_cast<float>(c + 1));
          break;
        case CollectiveOp::all_to_all:
          for (int64_t j = 0; j < n; ++j) expect(span(mine, j), chunk, static_cast<float>(j * n + r + 1));
          break;
        case CollectiveOp::broadcast: {
          const size_t pieces = std::min<size_t>(64, e), piece = (e + pieces - 1) / pieces;
          for (size_t a = 0; a < e; a += piece) expect(mine.data() + a, std::min(piece, e - a), 1.0f);
          break;
        }
        case CollectiveOp::send_recv: expect(mine.data(), e, static_cast<float>(static_cast<int64_t>(left(r)) + 1)); break;
      }
    });
    if (!ok) {
      problem_ = std::string(model::collective_name(op)) + " result differs from the reference on some rank";
      return std::nullopt;
    }
    return std::chrono::duration<double>(end - start).count();
  }

  void busy_peers(int64_t peers) override { peers_.set(peers); }

  std::optional<double> memory(MemoryKernel kernel, double bytes) override {
    const int arrays = kernel == MemoryKernel::triad ? 3 : 2;
    const auto n = static_cast<size_t>(std::max(1.0, bytes / (4.0 * arrays)));
    x_.assign(n, 1.5f);  // written before timing: pages are mapped, and caches start cold-ish
    y_.assign(n, 0.0f);
    if (arrays == 3) z_.assign(n, 0.25f);
    const float s = 3.0f;
    peers_.start([kernel, n, arrays] {
      auto own = std::make_shared<std::array<cpu::Floats, 3>>();
      (*own)[0].assign(n, 1.5f);
      (*own)[1].assign(n, 0.0f);
      if (arrays == 3) (*own)[2].assign(n, 0.25f);
      return std::function<void()>([own, kernel, n, arrays] {
        cpu::stream(kernel, (*own)[0].data(), (*own)[1].data(), arrays == 3 ? (*own)[2].data() : nullptr, n);
      });
    });
    const auto t = Clock::now();
    cpu::stream(kernel, x_.data(), y_.data(), arrays == 3 ? z_.data() : nullptr, n);
    const double secs = since(t);
    peers_.stop();
    // Check the first and last elements against the kernel's formula.
    float want = 0;
    switch (kernel) {
      case MemoryKernel::copy: want = 1.5f; break;
      case MemoryKernel::triad: want = 1.5f + s * 0.25f; break;
      case MemoryKernel::norm: want = 1.0f; break;  // a constant row normalises to 1
      case MemoryKernel::activation: want = 1.5f / (1.0f + std::exp(-1.5f)); break;
    }
    for (size_t i : {size_t{0}, n - 1})
      if (std::abs(y_[i] - want) > 1e-3f * std::max(1.0f, std::abs(want))) {
        problem_ = std::string(kernel_name(kernel)) + " result differs from its formula";
        return std::nullopt;
      }
    return secs;
  }

  // Host and device share the memory: a copy between two host buffers.
  std::optional<double> host_copy(double bytes) override {
    const auto n = static_cast<size_t>(std::max(1.0, bytes / 4));
    x_.assign(n, 2.5f);
    y_.assign(n, 0.0f);
    peers_.start([n] {
      auto own = std::make_shared<std::array<cpu::Floats, 2>>();
      (*own)[0].assign(n, 2.5f);
      (*own)[1].assign(n, 0.0f);
      return std::function<void()>([own, n] { std::memcpy((*own)[1].data(), (*own)[0].data(), n * sizeof(float)); });
    });
    const auto t = Clock::now();
    std::memcpy(y_.data(), x_.data(), n * sizeof(float));
    const double secs = since(t);
    peers_.stop();
    if (y_.front() != 2.5f || y_.back() != 2.5f) {
      problem_ = "host copy differs from its source";
      return std::nullopt;
    }
    return secs;
  }

  std::optional<double> launch() override {
    const auto t = Clock::now();
    static const std::function<void()> empty = [] {};
    const bool ok = worker_.run(empty);
    const double s = since(t);
    if (!ok) {
      problem_ = "the worker thread did not run its task";
      return std::nullopt;
    }
    return s;
  }

  std::string problem() const override { return problem_; }

 private:
  cpu::Floats x_, y_, z_;
  std::vector<cpu::Floats> in_, out_;
  double last_level_cache_ = last_level_cache();
  cpu::Floats weights_;  // GEMM weight copies (gemm)
  std::unique_ptr<ThreadTeam> team_;
  cpu::Worker worker_;
  Peers peers_;
  cpu::Attention attention_;
  std::vector<cpu::DecodeAttention> decode_;  // copies of one shape's inputs, used in turn
  size_t next_decode_ = 0;
  std::string problem_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace arlsim::calib
