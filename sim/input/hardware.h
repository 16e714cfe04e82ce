// GpuProfile: what one accelerator can do, read from a hardware profile (calib/profiles/*.json).
// Shipped profiles hold datasheet peaks (REFERENCE: vendor datasheets) and the microbenchmark
// facts they were derived from; calibration writes measured ones. Every constant the cost model
// uses lives here, with its provenance, never in code.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {


enum class Dtype { fp32, tf32, bf16, fp16, fp8, int8 };
const char* dtype_name(Dtype d);

struct Provenance {
  std::string kind;    // "datasheet" or "measured"
  std::string source;  // where the figures come from
  std::string machine;
  std::string driver;
  std::string date;
  std::string notes;
};

struct Link {
  std::string kind;                // nvlink4, pcie5, ...
  double bandwidth_bytes_per_s = 0;  // one direction, peak
  double efficiency = 0;           // achieved / peak for large transfers; 0 = not given
  double achieved() const { return bandwidth_bytes_per_s * (efficiency > 0 ? efficiency : 1.0); }
};

// One measured (or derived) point of an efficiency curve: achieved / peak for a shape.
struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 0;
};
// The distinct m, n and k values of a set of GEMM points, each sorted: the axes of a grid.
struct GemmAxes {
  std::vector<int64_t> m, n, k;
  size_t cells() const { return m.size() * n.size() * k.size(); }
};
GemmAxes gemm_axes(const std::vector<GemmPoint>& points);

struct AttentionPoint {
  int64_t seq_len = 0;
  int64_t head_dim = 0;
  bool causal = true;
  std::string pass;  // "fwd" or "fwd_bwd"
  double efficiency = 0;
};
// Decode attention at one batch size (sequences), as measured by `arlsim calibrate`: a layer's
// kernel takes `fixed` plus the KV cache's bytes over `bandwidth`.
struct DecodeAttentionPoint {
  int64_t batch = 0;
  SimTime fixed;
  double bandwidth_bytes_per_s = 0;
};
// What an element-wise kernel does with the bytes it streams, in the four kinds `arlsim calibrate`
// times (its copy, triad, norm and activation kernels): moves them (permutes, gathers, lookups), adds
// streams (residual adds, the optimizer's update: the triad), reduces rows and scales them (norms,
// softmaxes), or applies a function to each element (activations, rotary embeddings). `any`: work
// of no one kind, priced with memory_by_size and the memory-bound rate (the four kinds' medians).
enum class ElementwiseKind : uint8_t { any, copy, add, norm, activation };
inline constexpr int kElementwiseKinds = static_cast<int>(ElementwiseKind::activation) + 1;
// The kinds calibration measures, by the name of the kernel that runs each (a profile's keys in
// efficiency/memory_by_kernel).
struct MeasuredKind {
  const char* kernel;
  ElementwiseKind kind;
};
inline constexpr MeasuredKind kMeasuredKinds[] = {{"copy", ElementwiseKind::copy},
                                                  {"triad", ElementwiseKind::add},
                                                  {"norm", ElementwiseKind::norm},
                                                  {"activation", ElementwiseKind::activation}};

// What memory-bound kernels of one size achieved, as measured by `arlsim calibrate` (the median of
// its streaming, norm-like and activation-like kernels): above the streaming rate where the data
// stays in a cache.
struct MemorySizePoint {
  int64_t bytes = 0;
  double bandwidth_bytes_per_s = 0;
};
// A collective's achieved bus bandwidth (nccl-tests definition) for a scope and algorithm.
struct CollectivePoint {
  std::string op;         // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv
  std::string scope;      // intra_node, or inter_node: `ranks` over `nodes` machines, as many on each
  std::string algorithm;  // ring, tree, nvls, direct
  int64_t ranks = 0;
  double bus_bandwidth_bytes_per_s = 0;
  int64_t nodes = 1;
};

// One (algorithm, protocol) pair of NCCL's tuning model (src/graph/tuning.cc): a collective of
// n steps costs base + steps x hop latency (the hop of the slowest link crossed), and moves data at
// bandwidth_share of the algorithm's bus bandwidth, capped per node count. NCCL picks, per call,
// the pair that finishes first.
enum class Protocol { ll, ll128, simple };
const char* protocol_name(Protocol p);

struct CollectiveProtocol {
  std::string algorithm;  // ring, tree, nvls
  Protocol protocol = Protocol::simple;
  SimTime base, hop_intra_node, hop_inter_node;
  double bandwidth_share = 1;  // of the algorithm's bus bandwidth with the Simple protocol
  // Caps on the bus bandwidth within one node, across two and across more; 0: none.
  double max_bus_bandwidth[3] = {0, 0, 0};
  // Multi-node ring all-reduce latency factor (NCCL's "plateau effect"); 1: none.
  double multi_node_latency_factor = 1;
  // Tree all-reduce bandwidth factors per power of two of the size, from 64 B up (NCCL's
  // treeCorrectionFactor); empty: none, and 1 beyond the last.
  std::vector<double> size_correction;
};

// The most a GPU-hour may be priced at, in a profile, a cluster or on the command line (USD).
inline constexpr double kMaxPriceUsdPerGpuHour = 1e4;

struct GpuProfile {
  std::string name;
  std::string description;
  Provenance provenance;
  // The cluster preset (or file, beside the profile) of the machines the GPU comes in when their
  // NVLink domain spans several hosts (GB200: "gb200-nvl72"): where `capacity` takes a node's
  // shape from. Empty: the scenario's node.
  std::string system;

  std::map<Dtype, double> peak_flops_per_s;  // dense, no sparsity
  int64_t sm_count = 0;
  double memory_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  Link gpu_link;   // to the other GPUs of the node (per GPU, one way)
  Link host_link;  // to host memory
  double nic_bandwidth_bytes_per_s = 0;  // default NIC rate per GPU (a cluster may override)
  SimTime kernel_launch_overhead;
  // A GEMM kernel's GPU-side time beyond its roofline time, at least a launch (its ramp, DRAM
  // latency, split-K reduction and tail; the intercept of decode-batch GEMM times against their
  // bytes, calib/SOURCES.md sec. 2b); 0: the launch overhead alone. A measured GEMM grid holds it
  // in its rates already.
  SimTime gemm_kernel_overhead;
  // A kernel's GPU-side time when replayed from a CUDA graph (engines' iterations), however
  // little it does; 0: not measured (graph-replayed kernels then cost their bytes alone).
  SimTime graph_kernel_overhead;
  // A copy between host and device memory takes this beyond its bytes at the host link's rate
  // (the copy engine's start and the DMA's first round trip; `arlsim calibrate` measures it as the
  // smallest copy's excess); 0: not measured (copies cost their bytes alone).
  SimTime host_copy_overhead;
  // Copies to and from pageable host memory as PyTorch's `tensor.to("cpu")` makes them (see
  // model::HostMemory): out of the device into newly allocated pages, and back in from them.
  // Properties of the host (its kernel's page faults and memory copies) more than of the GPU;
  // 0: not given (a scenario whose training state moves this way is refused).
  double host_pageable_out_bytes_per_s = 0, host_pageable_in_bytes_per_s = 0;
  // The CPU of the hosts the GPU comes in, and the time a framework's host code (Python, PyTorch's
  // dispatch of an operation) takes on it over the time it takes on an x86 server CPU (the
  // reference: a DGX H100's Xeon Platinum 8480C). A GB200's Grace takes 2.75 times as long
  // (calib/SOURCES.md sec. 8k). It scales an eager engine's dispatch per kernel where the
  // scenario leaves it at its default (an x86 figure). "" and 1: an x86 server host.
  std::string host_cpu;
  double host_cpu_relative_time = 1.0;
  // The SM clock the tensor-core efficiencies below were measured at (short benchmarks run at
  // the boost clock) and the clock dense tensor-core work sustains at the power limit; the cost
  // model runs GEMMs and attention at sustained / benchmarks of the measured rates, in the element
  // types that have no power_limited rate. 0: not given (the efficiencies stand as measured).
  double benchmark_clock_mhz = 0, sustained_clock_mhz = 0;
  double sustained_tensor_fraction() const {
    return benchmark_clock_mhz > 0 && sustained_clock_mhz > 0 ? sustained_clock_mhz / benchmark_clock_mhz : 1.0;
  }
  // What dense tensor-core work sustains once the power limit holds the clock down, per element
  // type: a GEMM's and a fused attention's FLOP/s, measured with random operands over tens of
  // seconds back to back (calib/SOURCES.md sec. 2d). A kernel runs at the lower of its short-run
  // rate (the efficiencies) and this; a kernel below it draws less than the limit and keeps its
  // short-run rate. An element type with one takes no tensor-clock derating. 0: not measured.
  struct PowerLimitedRate {
    double gemm_flops_per_s = 0, attention_flops_per_s = 0;
  };
  std::map<Dtype, PowerLimitedRate> power_limited;
  PowerLimitedRate power_limited_rate(Dtype d) const {
    const auto it = power_limited.find(d);
    return it == power_limited.end() ? PowerLimitedRate{} : it->second;
  }
  double reserved_memory_bytes = 0;  // CUDA context, workspaces and communication buffers
  double price_usd_per_gpu_hour = 0;  // 0: unknown

  std::vector<GemmPoint> gemm_efficiency;
  // Grids measured in other element types (fp16, fp8 beside a bf16 `gemm`), each against its
  // dtype's peak; a dtype without one takes gemm_efficiency.
  std::map<Dtype, std::vector<GemmPoint>> gemm_by_dtype;
  const std::vector<GemmPoint>& gemm_points(Dtype d) const {
    const auto it = gemm_by_dtype.find(d);
    return it != gemm_by_dtype.end() ? it->second : gemm_efficiency;
  }
  int64_t gemm_tile_m = 0, gemm_tile_n = 0;  // output tile of the library's large-GEMM kernels
  // The fixed work of each output tile (pipeline fill, epilogue) as an equivalent depth of K: a
  // GEMM of depth K runs at K / (K + gemm_k_overhead) of the deep-K rate. 0: not modelled.
  double gemm_k_overhead = 0;
  std::vector<AttentionPoint> attention_efficiency;
  std::vector<DecodeAttentionPoint> decode_attention;  // by batch, ascending; empty: memory-bound rate
  double memory_bound_efficiency = 0;  // achieved / peak HBM bandwidth for streaming kernels; 0: unknown
  std::vector<MemorySizePoint> memory_by_size;  // by bytes, ascending; empty: the streaming rate at every size
  // Each kind's kernel by size (efficiency/memory_by_kernel, calibrate's kernels: the triad is an
  // add's), by ElementwiseKind; empty where not measured. A kind without a table, or whose table
  // stops short of memory_by_size's largest size (its last point not past the caches), is priced
  // as work of no one kind: memory_by_size and memory_bound. Index `any` stays empty.
  std::vector<MemorySizePoint> memory_by_kernel[kElementwiseKinds];
  std::vector<CollectivePoint> collectives;
  std::vector<CollectiveProtocol> collective_protocols;
  double nic_efficiency = 0;       // achieved / peak for large transfers over the NIC; 0 = not given

  double peak(Dtype d) const;
};

bool parse_gpu_profile(const Value& v, const std::string& pointer, Diagnostics& diag, GpuProfile& out);

}  // namespace arlsim::input
