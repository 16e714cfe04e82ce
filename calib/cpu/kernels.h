// The CPU kernels that `arlsim calibrate --backend cpu` times and the CPU runtime
// (runtime/cpu) executes: one set, so that what calibration measured is what the runtime runs.
// fp32 throughout. Included by those two only (it brings Eigen).
#pragma once

#include <Eigen/Core>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "calib/harness/harness.h"
#include "sim/model/collective.h"

namespace arlsim::calib::cpu {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The files that include this header are built for this machine's vector units (-march=native).
// A standard container of a plain type they instantiate (std::vector<float>'s assign, say) can
// become the one copy the linker keeps for the whole program, and then code that must run on any
// x86-64 runs this machine's instructions. Their float buffers take this allocator instead: the
// container's members are then of a type no other code names, and stay with the code built for
// it. Other containers there, and helpers keyed on a plain pointer, can still leak:
// tests/cli/portable_binary_test.sh finds them.
template <class T>
struct NativeAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = NativeAllocator<U>;
  };
  NativeAllocator() = default;
  template <class U>
  NativeAllocator(const NativeAllocator<U>&) noexcept {}
};
template <class T, class U>
bool operator==(const NativeAllocator<T>&, const NativeAllocator<U>&) noexcept {
  return true;
}
using Floats = std::vector<float, NativeAllocator<float>>;

// Causal attention of one head, blocked by rows of queries as FlashAttention blocks it: each
// block of 128 queries scores the keys up to its last one, takes the softmax (the diagonal block
// masked) and weighs the values; the backward recomputes the block's probabilities and
// accumulates dQ, dK and dV. Eigen's products for the five GEMMs.
struct Attention {
  RowMat q, k, v, o, d_o, dq, dk, dv;
  float scale = 1;
  // Random inputs of `seq_len` x `head_dim` (zero gradients).
  void prepare(int64_t seq_len, int64_t head_dim);
  // The forward, then with `backward` the backward; backward_only: the backward alone (after a
  // forward over the same inputs left `o`).
  void run(bool backward, bool backward_only = false);

 private:
  RowMat p_, dp_;
  void probabilities(Eigen::Index r0, Eigen::Index rows);
};

// Decode attention, one layer: each of `batch` sequences has one query token of `heads` heads and
// a KV cache of `kv_len` tokens of `kv_heads` heads (grouped-query attention: heads / kv_heads
// queries share a KV head). Per sequence and KV head, the group's scores S = Q K^T, their softmax
// and O = S V, with Eigen's products: the keys and values are read once, so the kernel streams
// the cache as decode attention does. With value_dim the cache holds one vector a token (MLA's
// latent, absorbed: DeepSeek-V2 sec. 2.1.2) whose head_dim serve as the key and whose first
// value_dim as the value, read once for both.
struct DecodeAttention {
  int64_t batch = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  int64_t capacity = 0;  // tokens the caches hold; the first kv_len are read
  // By (sequence, KV head): q group x head_dim, k (and v without value_dim) capacity x head_dim,
  // o group x the values' width.
  std::vector<RowMat> q, k, v, o;
  float scale = 1;
  // Random inputs. The buffers stay while the batch and heads do and hold kv_len tokens, so that a
  // growing context (a decode step after another) costs no refill.
  void prepare(int64_t batch, int64_t kv_len, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t value_dim = 0);
  void run();
  // The cache's bytes (keys and values, or the latent vectors) that one run reads.
  double kv_bytes() const;

 private:
  RowMat s_;
};

// One streaming kernel over n floats (x read, y written, z read by the triad).
void stream(MemoryKernel kernel, const float* x, float* y, const float* z, size_t n);

// One rank's part of a collective among n threads over shared memory, as NCCL's ring algorithms
// move data: each rank reads its left neighbour's buffer chunk by chunk, `step()` (a barrier of
// the n ranks) between steps. all-reduce is a reduce-scatter then an all-gather (2(n - 1) steps),
// all-gather and reduce-scatter take n - 1, broadcast (from rank 0) is pipelined down the ring in
// 64 pieces, all-to-all and send/recv (from the left neighbour) are direct reads. Buffers are
// `elements` floats, chunk c of elements / n at c x chunk. In place, `out[r]` holds rank r's
// data before and its result after; out of place, and always for all-to-all and send/recv, the
// data is read from `in` (the ring's first step reads the inputs, later steps the partial results
// in `out`, as NCCL's out-of-place rings do) and `out` gets the result. Every rank must call it,
// with the same arguments but r.
void ring_collective(model::CollectiveOp op, int64_t r, int64_t n, std::vector<Floats>& in,
                     std::vector<Floats>& out, size_t elements, const std::function<void()>& step,
                     bool in_place = true);

// A worker thread that runs the tasks handed to it one at a time, the caller waiting for each:
// the CPU's counterpart of launching a kernel and waiting for it (an empty task measures the
// launch itself).
class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // Runs `task` on the worker and returns when it is done; false when it did not run.
  bool run(const std::function<void()>& task);

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  const std::function<void()>* task_ = nullptr;
  int64_t posted_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace arlsim::calib::cpu
