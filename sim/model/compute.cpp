#include "sim/model/compute.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/core/assert.h"

namespace arlsim::model {

using input::Dtype;

namespace {

// Where x lies along a table's ascending log positions, x above the first: the point i at or above
// it and the fraction of the way from point i - 1 (linear in the log); i = 0 beyond the last point.
std::pair<size_t, double> log_segment(const std::vector<double>& logs, double x) {
  for (size_t i = 1; i < logs.size(); ++i)
    if (x <= logs[i]) return {i, (x - logs[i - 1]) / (logs[i] - logs[i - 1])};
  return {0, 0.0};
}

double element_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4;
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    case Dtype::fp8:
    case Dtype::int8: return 1;
  }
  return 2;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string missing_compute_data(const input::GpuProfile& gpu, Dtype dtype) {
  if (gpu.peak(dtype) <= 0) return std::string("a peak rate for ") + input::dtype_name(dtype);
  if (gpu.gemm_points(dtype).empty()) return "GEMM efficiency points (efficiency/gemm)";
  if (gpu.gemm_tile_m <= 0) return "the GEMM tile size (efficiency/gemm_tile)";
  if (gpu.sm_count <= 0) return "the SM count (sm_count)";
  if (gpu.memory_bound_efficiency <= 0) return "the memory-bound efficiency (efficiency/memory_bound)";
  if (gpu.attention_efficiency.empty()) return "attention efficiency points (efficiency/attention)";
  return {};
}

ComputeModel::ComputeModel(const input::GpuProfile& gpu, Dtype dtype) : gpu_(gpu) {
  ARLSIM_ASSERT(missing_compute_data(gpu, dtype).empty());
  peak_ = gpu.peak(dtype);
  // A measured power-limited rate replaces the rated clock's derating, kind by kind (a profile may
  // measure one and not the other): below it a kernel keeps its short-run rate, above it the power
  // limit holds it to it.
  const input::GpuProfile::PowerLimitedRate limit = gpu.power_limited_rate(dtype);
  const double derated = peak_ * gpu.sustained_tensor_fraction();
  tensor_rate_ = limit.gemm_flops_per_s > 0 ? peak_ : derated;
  attention_rate_ = limit.attention_flops_per_s > 0 ? peak_ : derated;
  gemm_limit_ = limit.gemm_flops_per_s > 0 ? limit.gemm_flops_per_s : tensor_rate_;
  attention_limit_ = limit.attention_flops_per_s > 0 ? limit.attention_flops_per_s : attention_rate_;
  bytes_per_element_ = element_bytes(dtype);
  memory_rate_ = gpu.memory_bandwidth_bytes_per_s * gpu.memory_bound_efficiency;
  for (int k = 0; k < input::kElementwiseKinds; ++k) {
    // A kind's own table, when it reaches the largest size measured at all: its last point then
    // streams past the caches as memory_bound's does, and stands for the kind's streaming rate.
    const auto& own = gpu.memory_by_kernel[k];
    const bool streams = !own.empty() && (gpu.memory_by_size.empty() || own.back().bytes >= gpu.memory_by_size.back().bytes);
    memory_table_[k] = streams ? &own : &gpu.memory_by_size;
    streaming_rate_[k] = streams ? own.back().bandwidth_bytes_per_s : memory_rate_;
    for (const auto& p : *memory_table_[k]) memory_log_bytes_[k].push_back(std::log(static_cast<double>(p.bytes)));
  }
  launch_s_ = gpu.kernel_launch_overhead.seconds();
  gemm_fixed_s_ = std::max(launch_s_, gpu.gemm_kernel_overhead.seconds());
  k_overhead_ = gpu.gemm_k_overhead;
  // e_max: the best measured point with its own quantisation and depth losses taken out.
  double e_max = 0;
  const auto& points = gpu.gemm_points(dtype);  // the dtype's own grid, when measured
  for (const auto& p : points) e_max = std::max(e_max, p.efficiency / analytic_efficiency(p.m, p.n, p.k, 1));
  e_max_ = std::min(e_max, 1.0);
  if (points.size() > 1) {
    input::GemmAxes axes = input::gemm_axes(points);
    grid_m_ = std::move(axes.m);
    grid_n_ = std::move(axes.n);
    grid_k_ = std::move(axes.k);
    grid_.assign(grid_m_.size() * grid_n_.size() * grid_k_.size(), 0.0);
    auto index = [](const std::vector<int64_t>& axis, int64_t v) {
      return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) - axis.begin());
    };
    for (const auto& p : points)
      grid_[(index(grid_m_, p.m) * grid_n_.size() + index(grid_n_, p.n)) * grid_k_.size() + index(grid_k_, p.k)] =
          p.efficiency;
    grid_best_ = *std::max_element(grid_.begin(), grid_.end());
  }
  // Attention points by pass and head dimension, in order of length, chosen once: an engine prices
  // attention at every prefill iteration. The attention modelled is causal, so causal points are
  // taken when the profile has any; the other pass's points stand in when a profile lacks a pass's.
  bool any_causal = false;
  for (const auto& p : gpu.attention_efficiency) any_causal = any_causal || p.causal;
  const char* passes[] = {"fwd", "fwd_bwd"};
  for (int i = 0; i < 2; ++i) {
    std::vector<const input::AttentionPoint*> pts;
    for (const auto& p : gpu.attention_efficiency)
      if (p.pass == passes[i] && (p.causal || !any_causal)) pts.push_back(&p);
    if (pts.empty())
      for (const auto& p : gpu.attention_efficiency)
        if (p.causal || !any_causal) pts.push_back(&p);
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->seq_len < b->seq_len; });
    auto& groups = attention_points_[i];
    for (const auto* p : pts) {
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.head_dim == p->head_dim; });
      if (it == groups.end()) it = groups.insert(groups.end(), {p->head_dim, {}, {}});
      it->points.push_back(p);
      it->log_len.push_back(std::log(static_cast<double>(p->seq_len)));
    }
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.head_dim < b.head_dim; });
  }
}

const ComputeModel::AttentionGroup& ComputeModel::attention_group(AttentionPass pass, int64_t head_dim) const {
  // The points of the nearest measured head dimension (the smaller on a tie).
  const auto& groups = attention_points_[pass == AttentionPass::forward ? 0 : 1];
  const AttentionGroup* best = &groups.front();
  for (const auto& g : groups)
    if (std::abs(g.head_dim - head_dim) < std::abs(best->head_dim - head_dim)) best = &g;
  return *best;
}

double ComputeModel::quantisation(int64_t m, int64_t n, int64_t k, int64_t groups) const {
  const int64_t tm = gpu_.gemm_tile_m, tn = gpu_.gemm_tile_n;
  const int64_t tiles_m = ceil_div(m, tm), tiles_n = ceil_div(n, tn);
  const double tile_fraction = static_cast<double>(m * n) / static_cast<double>(tiles_m * tm * tiles_n * tn);
  int64_t work = groups * tiles_m * tiles_n;
  // With fewer tiles than SMs, libraries split K across thread blocks (split-K, stream-K) to use
  // the idle SMs; a split keeps at least kMinSplitK of K so the partial sums stay cheap.
  constexpr int64_t kMinSplitK = 256;
  if (work < gpu_.sm_count) work *= std::max<int64_t>(1, std::min(gpu_.sm_count / work, k / kMinSplitK));
  const int64_t waves = ceil_div(work, gpu_.sm_count);
  const double wave_fraction = static_cast<double>(work) / static_cast<double>(waves * gpu_.sm_count);
  return tile_fraction * wave_fraction;
}

double ComputeModel::analytic_efficiency(int64_t m, int64_t n, int64_t k, int64_t groups) const {
  // Before e_max is known (while it is being recovered) this is the loss factor alone.
  const double depth = static_cast<double>(k) / (static_cast<double>(k) + k_overhead_);
  return (e_max_ > 0 ? e_max_ : 1.0) * quantisation(m, n, k, groups) * depth;
}

bool ComputeModel::in_gemm_grid(int64_t m, int64_t n, int64_t k) const {
  return !grid_.empty() && m >= grid_m_.front() && m <= grid_m_.back() && n >= grid_n_.front() &&
         n <= grid_n_.back() && k >= grid_k_.front() && k <= grid_k_.back();
}

double ComputeModel::gemm_efficiency(int64_t m, int64_t n, int64_t k, int64_t groups) const {
  if (!in_gemm_grid(m, n, k)) return analytic_efficiency(m, n, k, groups);
  if (groups != 1) {
    // A grouped GEMM (a layer's experts) runs as the faster of two ways. As lone kernels one
    // after another (a CPU's loop): each group's shape at its measured efficiency, with what
    // sharing the waves changes for the groups' tiles, never above the grid's best. As one
    // kernel (a GPU's grouped or batched GEMM): the analytic model over the groups' tiles, since
    // a lone small GEMM's measured efficiency is mostly its kernel's fixed time (ramp, tail, DRAM
    // latency), which one kernel pays once: 124 experts of 4 x 1,536 x 2,048 ran in 262 us on an
    // H100, the lone kernels' efficiency priced them at 367.
    const double lone = std::min(grid_best_, gemm_efficiency(m, n, k, 1) * quantisation(m, n, k, groups) /
                                                 quantisation(m, n, k, 1));
    return std::max(lone, analytic_efficiency(m, n, k, groups));
  }
  // Trilinear interpolation, linear in each of m, n and k between the neighbouring grid values.
  struct Axis {
    size_t lo, hi;
    double t;
  };
  auto locate = [](const std::vector<int64_t>& axis, int64_t v) {
    const size_t hi = static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) - axis.begin());
    if (axis[hi] == v || hi == 0) return Axis{hi, hi, 0.0};
    const size_t lo = hi - 1;
    return Axis{lo, hi, static_cast<double>(v - axis[lo]) / static_cast<double>(axis[hi] - axis[lo])};
  };
  const Axis am = locate(grid_m_, m), an = locate(grid_n_, n), ak = locate(grid_k_, k);
  auto at = [&](size_t i, size_t j, size_t l) { return grid_[(i * grid_n_.size() + j) * grid_k_.size() + l]; };
  double e = 0;
  for (int bi = 0; bi < 2; ++bi)
    for (int bj = 0; bj < 2; ++bj)
      for (int bl = 0; bl < 2; ++bl) {
        const double w = (bi ? am.t : 1 - am.t) * (bj ? an.t : 1 - an.t) * (bl ? ak.t : 1 - ak.t);
        if (w > 0) e += w * at(bi ? am.hi : am.lo, bj ? an.hi : an.lo, bl ? ak.hi : ak.lo);
      }
  return e;
}

OpCost ComputeModel::gemm(int64_t m, int64_t n, int64_t k) const { return grouped_gemm(1, m, n, k); }

OpCost ComputeModel::grouped_gemm(int64_t count, int64_t m, int64_t n, int64_t k) const {
  OpCost c;
  if (count <= 0 || m <= 0 || n <= 0 || k <= 0) return c;
  // One kernel: the groups' tiles share the waves; each group's operands are read once.
  const double groups = static_cast<double>(count);
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  c.flops = groups * 2.0 * md * nd * kd;
  c.bytes = groups * bytes_per_element_ * (md * kd + kd * nd + md * nd);
  const double compute_s = c.flops / std::min(tensor_rate_ * gemm_efficiency(m, n, k, count), gemm_limit_);
  const double memory_s = c.bytes / memory_rate_;
  c.memory_bound = memory_s > compute_s;
  c.seconds = std::max(compute_s, memory_s) + gemm_fixed_s_;
  return c;
}

double ComputeModel::attention_efficiency(int64_t seq_len, AttentionPass pass, int64_t head_dim) const {
  const AttentionGroup& g = attention_group(pass, head_dim);
  const auto& pts = g.points;
  const double x = std::log(static_cast<double>(std::max<int64_t>(seq_len, 1)));
  if (x <= g.log_len.front()) {
    // Below the shortest measured length the kernel is launch- and occupancy-bound: efficiency
    // falls in proportion to the work.
    return pts.front()->efficiency * static_cast<double>(std::max<int64_t>(seq_len, 1)) /
           static_cast<double>(pts.front()->seq_len);
  }
  const auto [i, t] = log_segment(g.log_len, x);
  return i == 0 ? pts.back()->efficiency : pts[i - 1]->efficiency + t * (pts[i]->efficiency - pts[i - 1]->efficiency);
}

OpCost ComputeModel::attention(double forward_flops, int64_t seq_len, AttentionPass pass, int64_t head_dim,
                               int64_t calls) const {
  OpCost c;
  if (forward_flops <= 0) return c;
  // FlashAttention counts the backward pass as 2.5x the forward FLOPs (its benchmark's convention),
  // so forward + backward is 3.5x.
  c.flops = pass == AttentionPass::forward ? forward_flops : 3.5 * forward_flops;
  c.seconds = c.flops / std::min(attention_rate_ * attention_efficiency(seq_len, pass, head_dim), attention_limit_) +
              launch_s_ * static_cast<double>(std::max<int64_t>(calls, 1) * (pass == AttentionPass::forward ? 1 : 2));
  return c;
}

bool ComputeModel::in_decode_table(int64_t seqs) const {
  const auto& t = gpu_.decode_attention;
  return !t.empty() && seqs >= t.front().batch && seqs <= t.back().batch;
}

OpCost ComputeModel::decode_attention(double kv_bytes, int64_t layers, int64_t seqs) const {
  OpCost c;
  c.bytes = kv_bytes;
  c.memory_bound = true;
  const auto& t = gpu_.decode_attention;
  if (!in_decode_table(seqs)) {
    c.seconds = kv_bytes / memory_rate_ + launch_s_ * static_cast<double>(layers);
    return c;
  }
  // The first point at or above seqs, and the one before it.
  const auto hi = std::lower_bound(t.begin(), t.end(), seqs, [](const auto& p, int64_t b) { return p.batch < b; });
  const auto lo = hi->batch == seqs ? hi : hi - 1;
  const double w = hi == lo ? 0.0
                            : static_cast<double>(seqs - lo->batch) / static_cast<double>(hi->batch - lo->batch);
  const double fixed = (1 - w) * lo->fixed.seconds() + w * hi->fixed.seconds();
  const double per_byte = (1 - w) / lo->bandwidth_bytes_per_s + w / hi->bandwidth_bytes_per_s;
  c.seconds = fixed * static_cast<double>(layers) + kv_bytes * per_byte;
  return c;
}

double ComputeModel::memory_rate_at(double kernel_bytes, ElementwiseKind kind) const {
  const int k = static_cast<int>(kind);
  const auto& t = *memory_table_[k];
  const auto& logs = memory_log_bytes_[k];
  const double streaming = streaming_rate_[k];
  if (t.empty() || !(kernel_bytes > 0)) return streaming;
  const double x = std::log(kernel_bytes);
  double table = t.back().bandwidth_bytes_per_s;
  if (x <= logs.front()) {
    table = t.front().bandwidth_bytes_per_s;
  } else if (const auto [i, w] = log_segment(logs, x); i > 0) {
    table = (1 - w) * t[i - 1].bandwidth_bytes_per_s + w * t[i].bandwidth_bytes_per_s;
  }
  // Below the streaming rate a small kernel's measured time is mostly its fixed part, which the
  // launch term charges.
  return std::max(streaming, table);
}

OpCost ComputeModel::memory_bound(double bytes, int kernels, ElementwiseKind kind) const {
  OpCost c;
  if (bytes <= 0) return c;
  c.bytes = bytes;
  c.memory_bound = true;
  const double rate = kernels > 0 ? memory_rate_at(bytes / kernels, kind) : streaming_rate_[static_cast<int>(kind)];
  c.seconds = bytes / rate + launch_s_ * kernels;
  return c;
}

}  // namespace arlsim::model
