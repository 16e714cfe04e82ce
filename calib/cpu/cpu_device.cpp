#include "calib/cpu/cpu_device.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace arlsim::calib {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

// A worker thread that runs one empty task per launch: the cost of handing work to another
// thread and learning that it is done, the CPU's counterpart of a kernel launch.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // One task, launch to completion; false when the task did not run.
  bool run_one() {
    const int64_t before = ran_.load();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++posted_;
    }
    cv_.notify_one();
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ == posted_; });
    return ran_.load() == before + 1;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || done_ < posted_; });
      if (stop_) return;
      ran_.fetch_add(1);  // the empty task
      ++done_;
      done_cv_.notify_one();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  int64_t posted_ = 0, done_ = 0;
  std::atomic<int64_t> ran_{0};
  bool stop_ = false;
  std::thread thread_;
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
    i.last_level_cache_bytes = last_level_cache();
    // Eigen's GEMM micro-kernel: mr x nr outputs per register block, one core.
    i.gemm_tile_m = Eigen::internal::gebp_traits<float, float>::mr;
    i.gemm_tile_n = Eigen::internal::gebp_traits<float, float>::nr;
    i.compute_units = 1;
    return i;
  }

  std::optional<double> gemm(int64_t m, int64_t n, int64_t k) override {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k), b = Eigen::MatrixXf::Random(k, n), c(m, n);
    const auto t = Clock::now();
    c.noalias() = a * b;
    const double s = since(t);
    // Check a few entries against plain dot products.
    std::mt19937_64 rng(static_cast<uint64_t>(m * 1315423911 + n * 2654435761 + k));
    for (int i = 0; i < 4; ++i) {
      const auto r = static_cast<Eigen::Index>(rng() % static_cast<uint64_t>(m));
      const auto col = static_cast<Eigen::Index>(rng() % static_cast<uint64_t>(n));
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
  std::optional<double> attention(int64_t seq_len, int64_t head_dim, bool backward) override {
    using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    constexpr int64_t kBlock = 128;
    const auto s = static_cast<Eigen::Index>(seq_len), dh = static_cast<Eigen::Index>(head_dim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    Mat q = Mat::Random(s, dh), k = Mat::Random(s, dh), v = Mat::Random(s, dh), o(s, dh);
    Mat d_o = Mat::Random(s, dh), dq = Mat::Zero(s, dh), dk = Mat::Zero(s, dh), dv = Mat::Zero(s, dh);
    auto probabilities = [&](Eigen::Index r0, Eigen::Index rows, Mat& p) {
      const Eigen::Index keys = r0 + rows;
      p.noalias() = (q.middleRows(r0, rows) * k.topRows(keys).transpose()) * scale;
      for (Eigen::Index i = 0; i < rows; ++i) {
        auto row = p.row(i);
        const Eigen::Index visible = r0 + i + 1;  // causal: keys 0 .. r0 + i
        row.tail(keys - visible).setConstant(-std::numeric_limits<float>::infinity());
        const float top = row.head(visible).maxCoeff();
        row = (row.array() - top).exp();
        row /= row.sum();
      }
    };
    Mat p, dp;
    const auto t = Clock::now();
    for (Eigen::Index r0 = 0; r0 < s; r0 += kBlock) {
      const Eigen::Index rows = std::min<Eigen::Index>(kBlock, s - r0), keys = r0 + rows;
      probabilities(r0, rows, p);
      o.middleRows(r0, rows).noalias() = p * v.topRows(keys);
    }
    if (backward) {
      for (Eigen::Index r0 = 0; r0 < s; r0 += kBlock) {
        const Eigen::Index rows = std::min<Eigen::Index>(kBlock, s - r0), keys = r0 + rows;
        probabilities(r0, rows, p);
        dv.topRows(keys).noalias() += p.transpose() * d_o.middleRows(r0, rows);
        dp.noalias() = d_o.middleRows(r0, rows) * v.topRows(keys).transpose();
        const Eigen::VectorXf delta = (d_o.middleRows(r0, rows).array() * o.middleRows(r0, rows).array()).rowwise().sum();
        dp = (p.array() * (dp.colwise() - delta).array()).matrix();  // dS
        dq.middleRows(r0, rows).noalias() = (dp * k.topRows(keys)) * scale;
        dk.topRows(keys).noalias() += (dp.transpose() * q.middleRows(r0, rows)) * scale;
      }
    }
    const double secs = since(t);
    // The first query sees only the first key: its output is that key's value, and (backward) its
    // gradient is zero; the last key is seen by the last query alone: dV there is that query's dO.
    bool ok = (o.row(0) - v.row(0)).cwiseAbs().maxCoeff() < 1e-4f;
    if (backward)
      ok = ok && dq.row(0).cwiseAbs().maxCoeff() < 1e-4f &&
           (dv.row(s - 1) - d_o.row(s - 1) * p(p.rows() - 1, p.cols() - 1)).cwiseAbs().maxCoeff() < 1e-3f;
    if (!ok || !o.allFinite()) {
      problem_ = "attention result differs from its reference rows";
      return std::nullopt;
    }
    return secs;
  }

  std::optional<double> memory(MemoryKernel kernel, double bytes) override {
    const int arrays = kernel == MemoryKernel::triad ? 3 : 2;
    const auto n = static_cast<size_t>(std::max(1.0, bytes / (4.0 * arrays)));
    x_.assign(n, 1.5f);  // written before timing: pages are mapped, and caches start cold-ish
    y_.assign(n, 0.0f);
    if (arrays == 3) z_.assign(n, 0.25f);
    const float s = 3.0f;
    const auto t = Clock::now();
    switch (kernel) {
      case MemoryKernel::copy:
        for (size_t i = 0; i < n; ++i) y_[i] = x_[i];
        break;
      case MemoryKernel::triad:
        for (size_t i = 0; i < n; ++i) y_[i] = x_[i] + s * z_[i];
        break;
      case MemoryKernel::norm: {
        // Rows of 4,096: each row's mean square, then the row scaled (an RMS norm).
        constexpr size_t kRow = 4096;
        for (size_t r0 = 0; r0 < n; r0 += kRow) {
          const size_t r1 = std::min(n, r0 + kRow);
          float sum = 0;
          for (size_t i = r0; i < r1; ++i) sum += x_[i] * x_[i];
          const float scale = 1.0f / std::sqrt(sum / static_cast<float>(r1 - r0) + 1e-6f);
          for (size_t i = r0; i < r1; ++i) y_[i] = x_[i] * scale;
        }
        break;
      }
      case MemoryKernel::activation:
        for (size_t i = 0; i < n; ++i) y_[i] = x_[i] / (1.0f + std::exp(-x_[i]));  // SiLU
        break;
    }
    const double secs = since(t);
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

  std::optional<double> launch() override {
    const auto t = Clock::now();
    const bool ok = worker_.run_one();
    const double s = since(t);
    if (!ok) {
      problem_ = "the worker thread did not run its task";
      return std::nullopt;
    }
    return s;
  }

  std::string problem() const override { return problem_; }

 private:
  std::vector<float> x_, y_, z_;
  Worker worker_;
  std::string problem_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace arlsim::calib
