#include "calib/cpu/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arlsim::calib::cpu {

void Attention::prepare(int64_t seq_len, int64_t head_dim) {
  const auto s = static_cast<Eigen::Index>(seq_len), dh = static_cast<Eigen::Index>(head_dim);
  scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  q = RowMat::Random(s, dh);
  k = RowMat::Random(s, dh);
  v = RowMat::Random(s, dh);
  o.resize(s, dh);
  d_o = RowMat::Random(s, dh);
  dq = RowMat::Zero(s, dh);
  dk = RowMat::Zero(s, dh);
  dv = RowMat::Zero(s, dh);
}

void Attention::probabilities(Eigen::Index r0, Eigen::Index rows) {
  const Eigen::Index keys = r0 + rows;
  p_.noalias() = (q.middleRows(r0, rows) * k.topRows(keys).transpose()) * scale;
  for (Eigen::Index i = 0; i < rows; ++i) {
    auto row = p_.row(i);
    const Eigen::Index visible = r0 + i + 1;  // causal: keys 0 .. r0 + i
    row.tail(keys - visible).setConstant(-std::numeric_limits<float>::infinity());
    const float top = row.head(visible).maxCoeff();
    row = (row.array() - top).exp();
    row /= row.sum();
  }
}

void Attention::run(bool backward, bool backward_only) {
  constexpr Eigen::Index kBlock = 128;
  const Eigen::Index s = q.rows();
  for (Eigen::Index r0 = 0; r0 < s && !backward_only; r0 += kBlock) {
    const Eigen::Index rows = std::min<Eigen::Index>(kBlock, s - r0), keys = r0 + rows;
    probabilities(r0, rows);
    o.middleRows(r0, rows).noalias() = p_ * v.topRows(keys);
  }
  if (!backward && !backward_only) return;
  for (Eigen::Index r0 = 0; r0 < s; r0 += kBlock) {
    const Eigen::Index rows = std::min<Eigen::Index>(kBlock, s - r0), keys = r0 + rows;
    probabilities(r0, rows);
    dv.topRows(keys).noalias() += p_.transpose() * d_o.middleRows(r0, rows);
    dp_.noalias() = d_o.middleRows(r0, rows) * v.topRows(keys).transpose();
    const Eigen::VectorXf delta = (d_o.middleRows(r0, rows).array() * o.middleRows(r0, rows).array()).rowwise().sum();
    dp_ = (p_.array() * (dp_.colwise() - delta).array()).matrix();  // dS
    dq.middleRows(r0, rows).noalias() = (dp_ * k.topRows(keys)) * scale;
    dk.topRows(keys).noalias() += (dp_.transpose() * q.middleRows(r0, rows)) * scale;
  }
}

void DecodeAttention::prepare(int64_t b, int64_t len, int64_t h, int64_t kvh, int64_t dh, int64_t vd) {
  const bool same = b == batch && h == heads && kvh == kv_heads && dh == head_dim && vd == value_dim;
  kv_len = len;
  if (same && len <= capacity) return;
  batch = b, heads = h, kv_heads = kvh, head_dim = dh, value_dim = vd;
  capacity = same ? std::max(len, capacity + capacity / 4) : len;
  scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const auto group = static_cast<Eigen::Index>(std::max<int64_t>(1, h / kvh)), rows = static_cast<Eigen::Index>(capacity),
             cols = static_cast<Eigen::Index>(dh);
  const auto n = static_cast<size_t>(b * kvh);
  q.assign(n, RowMat());
  k.assign(n, RowMat());
  v.assign(n, RowMat());
  o.assign(n, RowMat());
  for (size_t i = 0; i < n; ++i) {
    q[i] = RowMat::Random(group, cols);
    k[i] = RowMat::Random(rows, cols);
    if (vd == 0) v[i] = RowMat::Random(rows, cols);
    o[i].resize(group, vd > 0 ? static_cast<Eigen::Index>(vd) : cols);
  }
}

void DecodeAttention::run() {
  const auto len = static_cast<Eigen::Index>(kv_len);
  for (size_t i = 0; i < q.size(); ++i) {
    s_.noalias() = (q[i] * k[i].topRows(len).transpose()) * scale;
    for (Eigen::Index r = 0; r < s_.rows(); ++r) {
      auto row = s_.row(r);
      row = (row.array() - row.maxCoeff()).exp();
      row /= row.sum();
    }
    if (value_dim > 0) o[i].noalias() = s_ * k[i].topLeftCorner(len, static_cast<Eigen::Index>(value_dim));
    else o[i].noalias() = s_ * v[i].topRows(len);
  }
}

double DecodeAttention::kv_bytes() const {
  return (value_dim > 0 ? 1.0 : 2.0) * static_cast<double>(batch) * static_cast<double>(kv_heads) *
         static_cast<double>(kv_len) * static_cast<double>(head_dim) * sizeof(float);
}

void stream(MemoryKernel kernel, const float* x, float* y, const float* z, size_t n) {
  const float s = 3.0f;
  switch (kernel) {
    case MemoryKernel::copy:
      for (size_t i = 0; i < n; ++i) y[i] = x[i];
      break;
    case MemoryKernel::triad:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] + s * z[i];
      break;
    case MemoryKernel::norm: {
      // Rows of 4,096: each row's mean square, then the row scaled (an RMS norm).
      constexpr size_t kRow = 4096;
      for (size_t r0 = 0; r0 < n; r0 += kRow) {
        const size_t r1 = std::min(n, r0 + kRow);
        float sum = 0;
        for (size_t i = r0; i < r1; ++i) sum += x[i] * x[i];
        const float scale = 1.0f / std::sqrt(sum / static_cast<float>(r1 - r0) + 1e-6f);
        for (size_t i = r0; i < r1; ++i) y[i] = x[i] * scale;
      }
      break;
    }
    case MemoryKernel::activation:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));  // SiLU
      break;
  }
}

void ring_collective(model::CollectiveOp op, int64_t r, int64_t n, std::vector<Floats>& in,
                     std::vector<Floats>& out, size_t elements, const std::function<void()>& step,
                     bool in_place) {
  using model::CollectiveOp;
  const bool by_rank = op != CollectiveOp::send_recv && op != CollectiveOp::broadcast;
  const size_t e = elements, chunk = by_rank ? e / static_cast<size_t>(n) : e;
  auto left = [&](int64_t x) { return static_cast<size_t>((x + n - 1) % n); };
  auto span = [&](Floats& v, int64_t c) { return v.data() + static_cast<size_t>((c % n + n) % n) * chunk; };
  auto& mine = out[static_cast<size_t>(r)];
  auto& from = out[left(r)];
  // Out of place a rank's own data and the left neighbour's first contribution are its input.
  auto& own = in_place ? mine : in[static_cast<size_t>(r)];
  auto& first = in_place ? from : in[left(r)];
  switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::reduce_scatter:
      for (int64_t s = 0; s + 1 < n; ++s) {  // chunk r - s - 1 gets the left's partial sum plus its own
        float* dst = span(mine, r - s - 1);
        const float* add = span(own, r - s - 1);
        const float* src = span(s == 0 ? first : from, r - s - 1);
        for (size_t i = 0; i < chunk; ++i) dst[i] = add[i] + src[i];
        step();
      }
      if (n == 1 && !in_place) std::copy(own.begin(), own.begin() + static_cast<std::ptrdiff_t>(e), mine.begin());
      if (op == CollectiveOp::reduce_scatter) break;
      for (int64_t s = 0; s + 1 < n; ++s) {  // the reduced chunks travel round
        std::copy(span(from, r - s), span(from, r - s) + chunk, span(mine, r - s));
        step();
      }
      break;
    case CollectiveOp::all_gather:
      // Out of place the rank's own chunk is copied into its output as the first step reads
      // the left neighbour's input.
      if (!in_place) std::copy(span(own, r), span(own, r) + chunk, span(mine, r));
      for (int64_t s = 0; s + 1 < n; ++s) {
        const float* src = span(s == 0 ? first : from, r - s - 1);
        std::copy(src, src + chunk, span(mine, r - s - 1));
        step();
      }
      break;
    case CollectiveOp::all_to_all:
      for (int64_t j = 0; j < n; ++j)
        std::copy(span(in[static_cast<size_t>(j)], r), span(in[static_cast<size_t>(j)], r) + chunk, span(mine, j));
      break;
    case CollectiveOp::broadcast: {
      const size_t pieces = std::min<size_t>(64, e), piece = (e + pieces - 1) / pieces;
      // The root's data is its input: rank 1 reads it there, and out of place the root copies it
      // into its own output.
      auto& upstream = r == 1 ? first : from;
      if (r == 0 && !in_place) std::copy(own.begin(), own.begin() + static_cast<std::ptrdiff_t>(e), mine.begin());
      for (int64_t t = 0; t < static_cast<int64_t>(pieces) + n - 2; ++t) {
        const int64_t p = t - (r - 1);
        if (r > 0 && p >= 0 && p < static_cast<int64_t>(pieces)) {
          const size_t a = std::min(e, static_cast<size_t>(p) * piece), b = std::min(e, a + piece);
          std::copy(upstream.begin() + static_cast<std::ptrdiff_t>(a), upstream.begin() + static_cast<std::ptrdiff_t>(b),
                    mine.begin() + static_cast<std::ptrdiff_t>(a));
        }
        step();
      }
      break;
    }
    case CollectiveOp::send_recv: {
      const auto& sent = in[left(r)];
      std::copy(sent.begin(), sent.begin() + static_cast<std::ptrdiff_t>(e), mine.begin());
      break;
    }
  }
}

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Worker::run(const std::function<void()>& task) {
  int64_t mine = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    mine = ++posted_;
  }
  cv_.notify_one();
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_ >= mine || stop_; });
  return done_ >= mine;
}

void Worker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || done_ < posted_; });
    if (stop_) return;
    const std::function<void()>* task = task_;
    lock.unlock();
    (*task)();
    lock.lock();
    ++done_;
    done_cv_.notify_one();
  }
}

}  // namespace arlsim::calib::cpu
