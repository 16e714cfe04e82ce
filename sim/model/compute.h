// Time of one kernel on one GPU: dense GEMMs, attention and memory-bound element-wise work.
//
// A GEMM takes the longer of its compute time and its memory time (roofline, Williams et al.
// 2009), plus the launch overhead:
//   compute = 2MNK / (peak x efficiency(M, N, K))
//   memory  = bytes(A, B, C) / (HBM bandwidth x memory-bound efficiency)
// With a measured grid of shapes in the profile, the efficiency inside the grid is interpolated
// linearly in M, N and K between its points (not in log space, which biases the blend high).
// Outside the grid, or with a single best-shape point, it is analytic:
//   efficiency = e_max x tile_fraction x wave_fraction x K / (K + k_overhead)
// tile_fraction is the useful share of the output tiles the library computes (tile quantisation),
// wave_fraction the share of SM slots the last wave fills (wave quantisation), and the last factor
// the fixed work of each tile (pipeline fill, epilogue) against its main loop over K; e_max is the
// efficiency of a perfectly quantised deep GEMM, recovered from the profile's best point.
// Attention uses the profile's FlashAttention efficiency curve by sequence length; decode
// attention reads the KV cache at the memory-bound rate. Where the profile measured what dense
// work sustains at the power limit, a GEMM or attention kernel runs at the lower of its rate and
// that one. Every efficiency is profile data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/input/hardware.h"

namespace arlsim::model {

using input::ElementwiseKind;

struct OpCost {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;  // HBM traffic
  bool memory_bound = false;

  OpCost& operator+=(const OpCost& o) {
    seconds += o.seconds;
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
};

// What a profile lacks for the cost model, or "" when it has everything.
std::string missing_compute_data(const input::GpuProfile& gpu, input::Dtype dtype);

enum class AttentionPass { forward, forward_backward };

class ComputeModel {
 public:
  ComputeModel(const input::GpuProfile& gpu, input::Dtype dtype);

  // The datasheet peak (MFU's denominator). GEMMs and attention run at the profile's efficiencies
  // of sustained_peak_flops(): the peak scaled from the clock the efficiencies were measured at
  // to the clock tensor-core work sustains (the peak itself where the profile measured the GEMM
  // rate the power limit sustains, which then bounds each GEMM's rate; attention likewise).
  double peak_flops() const { return peak_; }
  double sustained_peak_flops() const { return tensor_rate_; }
  double bytes_per_element() const { return bytes_per_element_; }
  // The useful fraction of the output tiles of `groups` (m, n, k) GEMMs in one kernel, times the
  // filled fraction of its waves of thread blocks over the SMs (after split-K for few tiles).
  double quantisation(int64_t m, int64_t n, int64_t k, int64_t groups = 1) const;
  // Efficiency of the compute part of `groups` (m, n, k) GEMMs in one kernel (achieved / peak).
  double gemm_efficiency(int64_t m, int64_t n, int64_t k, int64_t groups = 1) const;
  // Whether (m, n, k) lies inside the profile's measured grid (false without one).
  bool in_gemm_grid(int64_t m, int64_t n, int64_t k) const;
  OpCost gemm(int64_t m, int64_t n, int64_t k) const;
  // `count` identical GEMMs launched as one grouped kernel (MoE experts).
  OpCost grouped_gemm(int64_t count, int64_t m, int64_t n, int64_t k) const;

  // Achieved efficiency of causal FlashAttention at this (key) sequence length, log-interpolated
  // between the profile's points measured at the head dimension nearest `head_dim`.
  double attention_efficiency(int64_t seq_len, AttentionPass pass, int64_t head_dim = 128) const;
  // Attention over `flops` forward FLOPs at a representative key length, in `calls` launches.
  OpCost attention(double forward_flops, int64_t seq_len, AttentionPass pass, int64_t head_dim = 128,
                   int64_t calls = 1) const;
  // Decode attention of `seqs` sequences reading `kv_bytes` of KV cache in `layers` kernels. With
  // a measured decode table whose batch sizes span `seqs`, each kernel takes the table's fixed
  // time and the bytes their time at its bandwidth, the fixed time and the seconds per byte (the
  // inverse of the bandwidth) interpolated linearly in the batch size between the two nearest
  // points; otherwise (no table, or a batch outside it) the memory-bound rate plus a
  // launch per kernel. Either way the time is affine in kv_bytes, as decode windows need.
  OpCost decode_attention(double kv_bytes, int64_t layers, int64_t seqs) const;
  // Whether a decode batch of `seqs` sequences lies inside the profile's decode table.
  bool in_decode_table(int64_t seqs) const;
  // Streaming `bytes` through HBM (element-wise kernels, KV-cache reads, optimizer steps).
  // `kernels` kernels moving `bytes` in all, each at memory_rate_at() its size; without kernels
  // (work priced as a whole), at the streaming rate. A kernel of a kind the profile measured
  // (GpuProfile::memory_by_kernel) runs at that kind's own rates.
  OpCost memory_bound(double bytes, int kernels = 1, ElementwiseKind kind = ElementwiseKind::any) const;
  // One kernel's rate: with a measured table by size (GpuProfile::memory_by_size, or the kind's own
  // in memory_by_kernel), the faster of the table's rate at its size (linear in log bytes between
  // points, the end points' beyond them) and the streaming rate (the kind's: its table's largest
  // size), so that a size the caches hold runs faster; else streaming.
  double memory_rate_at(double kernel_bytes, ElementwiseKind kind = ElementwiseKind::any) const;

  double launch_overhead_s() const { return launch_s_; }
  // A graph-replayed kernel's GPU-side time (0: not in the profile).
  double graph_kernel_s() const { return gpu_.graph_kernel_overhead.seconds(); }
  double memory_rate() const { return memory_rate_; }  // achieved HBM bytes/s

 private:
  const input::GpuProfile& gpu_;
  double peak_ = 0;
  double tensor_rate_ = 0;
  double attention_rate_ = 0;                     // tensor_rate_ for attention
  double gemm_limit_ = 0, attention_limit_ = 0;  // FLOP/s at the power limit (the rate: none)
  double bytes_per_element_ = 2;
  double e_max_ = 0;
  double k_overhead_ = 0;
  double analytic_efficiency(int64_t m, int64_t n, int64_t k, int64_t groups) const;
  // The measured grid: sorted axes and efficiencies indexed [m][n][k]; empty without one.
  std::vector<int64_t> grid_m_, grid_n_, grid_k_;
  std::vector<double> grid_;
  double grid_best_ = 0;  // the grid's best measured efficiency
  double memory_rate_ = 0;  // achieved bytes/s
  // By ElementwiseKind: the table by size it is priced with (`any`: memory_by_size), the log of its
  // sizes, and its streaming rate.
  const std::vector<input::MemorySizePoint>* memory_table_[input::kElementwiseKinds] = {};
  std::vector<double> memory_log_bytes_[input::kElementwiseKinds];
  double streaming_rate_[input::kElementwiseKinds] = {};
  double launch_s_ = 0;
  double gemm_fixed_s_ = 0;  // a GEMM's time beyond its roofline: the launch or the profile's gemm_kernel_overhead
  struct AttentionGroup {
    int64_t head_dim = 0;
    std::vector<const input::AttentionPoint*> points;  // by seq_len
    std::vector<double> log_len;  // the points' log(seq_len), interpolated along at every call
  };
  const AttentionGroup& attention_group(AttentionPass pass, int64_t head_dim) const;
  std::vector<AttentionGroup> attention_points_[2];  // forward, forward_backward; by head_dim
};

}  // namespace arlsim::model
