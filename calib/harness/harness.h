// The calibration harness: what to measure (a sweep plan), how (warm-ups, repeats, medians and
// jitter), and what the measurements become (the tables of a device profile that `arlsim check`
// accepts and the cost model reads). It is the same for every backend; a backend (calib/cpu,
// calib/cuda) only launches and times. Tests drive it with a fake device whose "measurements"
// follow a known curve.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/collective.h"

namespace arlsim::calib {

// The measurements `--ops` selects.
enum class Op { gemm, attention, memory, launch, collective, p2p, host };
struct OpInfo {
  Op op;
  std::string_view name;
  std::string_view what;
};
const std::vector<OpInfo>& all_ops();
std::optional<Op> find_op(std::string_view name);
// "gemm, memory, launch": for messages.
std::string op_list();

// Streaming kernels of the memory-bound table. Bytes are what a call reads and writes together.
enum class MemoryKernel { copy, triad, norm, activation };
std::string_view kernel_name(MemoryKernel k);
inline constexpr MemoryKernel kMemoryKernels[] = {MemoryKernel::copy, MemoryKernel::triad, MemoryKernel::norm,
                                                  MemoryKernel::activation};

struct DeviceInfo {
  std::string backend;     // "cpu", "cuda", or a test's
  std::string name;        // the device as its driver names it
  std::string machine;     // the host
  std::string driver;      // driver or kernel version
  std::string versions;    // libraries the measurements went through
  std::string gemm_dtype;  // the GEMMs' element type: "fp32" on a CPU, "bf16" on a GPU
  // Other element types the device runs GEMMs in (fp16, fp8), each with its nominal peak (0:
  // unknown, the best measured rate stands in).
  std::vector<std::pair<std::string, double>> other_gemm_dtypes;
  double memory_bytes = 0;
  // Nominal rates, when the backend knows them; 0: unknown, the best measured rate stands in
  // (its point then has efficiency 1).
  double peak_flops = 0;
  double memory_bandwidth = 0;
  double host_link_bandwidth = 0;
  std::string host_link_kind;
  int64_t compute_units = 0;  // SMs, or cores
  int64_t gemm_tile_m = 0, gemm_tile_n = 0;  // the GEMM kernel's output tile (quantisation outside the grid)
  int64_t max_ranks = 0;       // the most ranks a collective can have (GPUs of the node; a CPU's threads: any)
  int64_t cores = 0;           // a CPU's hardware threads (ranks beyond them share them)
  std::string link_kind;       // what the ranks' collectives go over ("shared-memory", "nvlink4")
  double link_bandwidth = 0;   // its nominal rate per rank, one way (0: unknown)
  double last_level_cache_bytes = 0;  // streaming sizes go past 4x it (STREAM's rule); 0: unknown
  bool graphs = false;  // replays CUDA graphs (graph_kernel() measures their kernels)
};

// A backend's device: one timed run of each kind of work, in seconds. A run whose result fails
// the backend's correctness check returns nothing (and says why in problem()).
class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;
  // C (m x n) = A (m x k) B (k x n) in info().gemm_dtype.
  virtual std::optional<double> gemm(int64_t m, int64_t n, int64_t k) = 0;
  // The same GEMM in one of info().other_gemm_dtypes (inputs in it, a 16-bit output, fp32
  // accumulation). Nothing for a dtype the device does not run.
  virtual std::optional<double> gemm_in(const std::string& dtype, int64_t m, int64_t n, int64_t k) {
    (void)dtype, (void)m, (void)n, (void)k;
    return std::nullopt;
  }
  // Causal attention of one head over `seq_len` tokens at `head_dim`: the forward, or the forward
  // and the backward.
  virtual std::optional<double> attention(int64_t seq_len, int64_t head_dim, bool backward) = 0;
  // Decode attention of one layer: `batch` sequences, each one query token of `heads` heads over
  // a KV cache of `kv_len` tokens of `kv_heads` heads (grouped-query attention), in
  // info().gemm_dtype. The cache's keys and values are decode_kv_bytes() of them.
  virtual std::optional<double> decode_attention(int64_t batch, int64_t kv_len, int64_t heads, int64_t kv_heads,
                                                 int64_t head_dim) = 0;
  // A streaming kernel moving `bytes` (reads and writes).
  virtual std::optional<double> memory(MemoryKernel kernel, double bytes) = 0;
  // What one kernel launch adds to a stream of them: on a GPU, empty kernels launched back to back
  // and waited for once, per kernel; on a CPU, a task handed to a worker thread and waited for
  // (the runtime's CPU devices wait for each kernel).
  virtual std::optional<double> launch() = 0;
  // One empty kernel of a CUDA graph of `kernels` of them replayed back to back, launch to
  // completion of the whole graph divided by `kernels`: the GPU-side time a kernel of an engine's
  // graph-replayed iteration takes however little it does. Nothing without graphs.
  virtual std::optional<double> graph_kernel(int64_t kernels) {
    (void)kernels;
    return std::nullopt;
  }
  // A copy of `bytes` from host memory to the device (pinned), as weights are loaded and offloaded.
  virtual std::optional<double> host_copy(double bytes) = 0;
  // A collective over `ranks` ranks on `bytes` as nccl-tests counts them (the whole buffer: an
  // all-gather's output, a reduce-scatter's input; a send/recv's message), with its result
  // checked. Out of place, or, with `in_place` (all-reduce, all-gather, reduce-scatter and
  // broadcast: in_place_capable()), in the one buffer as NCCL defines it: an all-gather's input
  // is the rank's slice of its output, a reduce-scatter's output the rank's slice of its input.
  // `bytes` is rounded up to what splits evenly; `*used` gets the bytes run.
  virtual std::optional<double> collective(model::CollectiveOp op, double bytes, int64_t ranks, double* used,
                                           bool in_place) = 0;
  // The GEMM run back to back for `seconds`, long enough for the power limit to lower the clock:
  // its seconds per call over each `window_s` of it, in order (empty: the device does not run it).
  virtual std::vector<double> held_gemm(int64_t m, int64_t n, int64_t k, double seconds, double window_s) {
    (void)m, (void)n, (void)k, (void)seconds, (void)window_s;
    return {};
  }
  virtual std::string problem() const { return {}; }
  // Keeps `peers` other workers busy with dense compute (0: none) while the compute kernels are
  // measured, as the other devices of a run are: devices that share hardware (a CPU's threads on
  // one physical core, or its memory) each run slower when all work. A GPU runs alone.
  virtual void busy_peers(int64_t peers) { (void)peers; }
};

struct Plan {
  std::vector<Op> ops;
  // GEMMs: every (m, n, k) of the three axes, a complete grid, as profiles require.
  std::vector<int64_t> gemm_m, gemm_n, gemm_k;
  std::vector<std::string> gemm_dtypes;  // other dtypes measured over the same grid
  std::vector<int64_t> attention_seq;        // causal, both passes, at each head dimension
  std::vector<int64_t> attention_head_dims = {128};
  // Decode attention: every batch size at every KV length whose cache fits decode_max_bytes (a
  // batch keeps at least two lengths, for its fit), with one layer of a grouped-query model.
  std::vector<int64_t> decode_batch, decode_kv_len;
  int64_t decode_heads = 32, decode_kv_heads = 8, decode_head_dim = 128;
  double decode_max_bytes = 0;
  std::vector<double> memory_bytes;  // each kernel at each size
  std::vector<double> host_bytes;         // host-to-device copies of these sizes
  std::vector<int64_t> collective_ranks;  // each collective over each of these group sizes
  std::vector<double> collective_bytes;   // at each of these sizes (powers of two from 8 B)
  // Each in_place_capable() collective out of place, then in place, as nccl-tests reports both
  // (the profile's bandwidths and latencies come from the in-place runs of those four: frameworks
  // run their gradient and parameter collectives on their own buffers).
  bool collective_in_place = true;
  // Other workers kept busy while GEMMs, attention and streaming kernels are measured (a CPU's
  // thread-devices: one fewer than the largest group, as many as a run's devices).
  int64_t busy_peers = 0;
  // A GEMM of held_mnk cubed held back to back this long (0: not measured), in windows of
  // held_window_s: what dense work sustains at the power limit (a GPU's; not a CPU's).
  double held_seconds = 0, held_window_s = 1;
  int64_t held_mnk = 8192;
  int64_t launches_per_sample = 100;  // a launch sample is the mean over this many
  int64_t graph_kernels = 0;  // kernels of the replayed graph (0: not measured)
  int repeats = 3;   // at least 3: one sample of a large GEMM can swing 15-25% with the clocks
  int warmups = 1;
  bool quick = false;
};
// The default sweep for a device: geometric grids around the shapes transformer layers make (a
// CPU's smaller), every op of `ops`. Quick: fewer points, the same repeats.
// `ranks`: the largest collective group (0: the device's default, two threads on a CPU).
Plan make_plan(const DeviceInfo& d, const std::vector<Op>& ops, bool quick, int64_t ranks = 0);
// Estimated seconds of the whole plan on a device that runs at the given rates (the progress
// bar's first guess, refined as measurements come in).
double estimated_seconds(const Plan& p, double flops_per_s, double bytes_per_s, double launch_s);

struct Stat {
  double median = 0;
  double jitter = 0;  // (max - min) / median over the repeats
  int samples = 0;
};
Stat stat_of(std::vector<double> samples);

struct GemmResult {
  int64_t m = 0, n = 0, k = 0;
  Stat seconds;
};
struct AttentionResult {
  int64_t seq_len = 0, head_dim = 0;
  bool backward = false;
  Stat seconds;
};
// FlashAttention's benchmark convention, which the cost model's attention table follows: a
// causal forward is 2 s^2 d FLOPs per head, forward and backward 3.5x that.
double attention_flops(int64_t seq_len, int64_t head_dim, bool backward);
// The KV cache's bytes that decode attention reads: keys and values of every token of every KV
// head of every sequence, `element_bytes` each.
double decode_kv_bytes(int64_t batch, int64_t kv_len, int64_t kv_heads, int64_t head_dim, double element_bytes);
// Bytes of one element of a GEMM dtype name ("fp32": 4, "bf16"/"fp16": 2, "fp8": 1).
double dtype_bytes(const std::string& dtype);
// The (batch, KV length) points of a plan that it measures: those whose cache fits.
std::vector<std::pair<int64_t, int64_t>> decode_points(const Plan& p, double element_bytes);
struct DecodeResult {
  int64_t batch = 0, kv_len = 0;
  double kv_bytes = 0;
  Stat seconds;
};
// Decode attention of one batch size as the cost model takes it: seconds = fixed + kv bytes /
// bandwidth, fitted by least squares over the KV lengths measured (through the origin when the
// intercept comes out negative). Nothing when the points do not give a positive bandwidth a
// profile may state (at most 1 PB/s).
struct DecodeFit {
  int64_t batch = 0;
  double fixed_s = 0;
  double bandwidth = 0;  // bytes/s
  double worst_residual = 0;  // the largest |measured - fitted| / measured over its points
};
std::optional<DecodeFit> fit_decode(int64_t batch, const std::vector<DecodeResult>& points);
struct MemoryResult {
  MemoryKernel kernel = MemoryKernel::copy;
  double bytes = 0;
  Stat seconds;
};
// The collectives NCCL runs in place (send/recv and all-to-all need two buffers).
inline bool in_place_capable(model::CollectiveOp op) {
  return op == model::CollectiveOp::all_reduce || op == model::CollectiveOp::all_gather ||
         op == model::CollectiveOp::reduce_scatter || op == model::CollectiveOp::broadcast;
}

struct CollectiveResult {
  model::CollectiveOp op = model::CollectiveOp::all_reduce;
  int64_t ranks = 0;
  double bytes = 0;
  bool in_place = false;
  Stat seconds;
  int64_t nodes = 1;  // machines the group spans (1: one node's devices)
  double algbw() const { return bytes / seconds.median; }
  // nccl-tests' bus bandwidth: algbw x 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
  // reduce-scatter and all-to-all, 1 for broadcast and send/recv (model::bus_factor).
  double busbw() const { return algbw() * model::bus_factor(op, ranks); }
};
// The processes of an mpirun, one device each, on the machines they run on: collectives among all
// of them are what a profile's inter-node points measure (as nccl-tests runs across nodes, one
// process per GPU). Every process calls the same sequence of methods.
class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual int64_t ranks() const = 0;  // processes, a device each
  virtual int64_t nodes() const = 0;  // machines they run on, as many processes on each
  virtual std::string link() const = 0;  // what the collectives go through ("MPI", "NCCL 2.28")
  // `op` over every process on `bytes` as Device::collective takes them, the result checked at
  // every process: the slowest process's seconds, on every process; nothing when a check failed
  // anywhere (problem() says where).
  virtual std::optional<double> collective(model::CollectiveOp op, double bytes, double* used, bool in_place) = 0;
  virtual std::string problem() const { return {}; }
};

// What a fabric's processes bootstrap and agree over (the processes of an mpirun, MPI carrying
// the bytes): NCCL's unique id from rank 0, each process's time and check. Every process calls
// each operation in the same order.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // among the processes of its machine: which GPU it takes
  virtual void broadcast(std::string& bytes, int root) = 0;
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  // Ends every process with `message` (status 2): what a process does when it fails where the
  // others cannot learn of it (inside a collective they wait in), so that none is left waiting.
  [[noreturn]] virtual void abort(const std::string& message) = 0;
};

// What every process says went wrong ("" for nothing), gathered: the first process's, as
// "process I: WHY", or "" when all went well. Every process gets the same answer, so all go on
// or stop together. (Inline: the CUDA module calls it without linking the harness.)
inline std::string first_failure(Exchange& x, const std::string& mine) {
  const auto all = x.all_gather(mine);
  for (size_t i = 0; i < all.size(); ++i)
    if (!all[i].empty()) return "process " + std::to_string(i) + ": " + all[i];
  return {};
}

// The NICs an inter-node measurement went through, as the person who ran it states them (a
// machine does not report its fabric's rate): the profile's NIC efficiency is the measured bus
// bandwidth over what they carry.
struct NicInfo {
  double bandwidth = 0;   // bytes/s per NIC, one way (0: not stated)
  int64_t per_node = 0;   // NICs of a node the processes of a node use
};

// The held GEMM: its rate in each window, and the rate it held (the median of the later half of
// the windows, after the clock has settled).
struct HeldResult {
  int64_t mnk = 0;
  double window_s = 0;
  std::vector<double> window_flops;
  double held_flops = 0;
};

struct Results {
  DeviceInfo info;
  Plan plan;
  std::vector<GemmResult> gemm;
  std::map<std::string, std::vector<GemmResult>> gemm_by_dtype;  // the plan's other dtypes
  std::vector<AttentionResult> attention;
  std::vector<DecodeResult> decode;
  std::vector<MemoryResult> memory;
  std::optional<Stat> launch;
  std::optional<Stat> graph_kernel;
  std::optional<HeldResult> held;
  std::vector<CollectiveResult> collectives;
  std::vector<std::pair<double, Stat>> host;  // bytes, seconds
  std::vector<CollectiveResult> inter_node;   // measure_fabric's: every process, over every node
  std::string fabric;                          // what those went through
  NicInfo nic;
  std::vector<std::string> excluded;  // measurements whose check failed: reported, never written
  double seconds = 0;                 // wall time of the sweep
};

// Called as work completes: the fraction done (by estimated cost) and the seconds so far.
using Progress = std::function<void(double fraction, double elapsed_s)>;
Results measure(Device& d, const Plan& p, const Progress& progress = {});

// The collectives a plan runs at each size and group: each op of its --ops (collective: five;
// p2p: send/recv) out of place, then in place where NCCL runs it so and the plan asks for it.
std::vector<std::pair<model::CollectiveOp, bool>> collective_runs(const Plan& p);

// The plan's collectives (and send/recv) at its sizes, in place as well where it says so, among
// all of the fabric's processes; appended to r.inter_node (checks that fail to r.excluded). Every
// process calls it; the times are the same on every process.
void measure_fabric(Fabric& f, const Plan& p, Results& r);

// The profile's header: what `arlsim check` shows of where it came from.
struct ProfileHeader {
  std::string name;     // the profile's name
  std::string command;  // the exact command that made it
  std::string date;     // ISO date
};
// The measured profile (format arlsim-gpu/1): peaks, memory, host link, launch overhead and the
// efficiency tables, with the sweep's repeats and jitter per table. Its GEMM grid is complete, as
// the cost model interpolates in a grid (outside it the analytic model applies): a point whose
// check failed takes its k out of the grid, and the notes say so.
std::string profile_json(const Results& r, const ProfileHeader& h);

// Why no file can be written at `path` as given ("" when nothing says so yet): a folder, or a
// folder that does not exist, named by the path the user gave.
std::string output_path_problem(const std::string& path);

// Writes `text` to `path` through a temporary file in the same folder and a rename, so that an
// interrupted run leaves the old file or none, never half of one; `check`, when given, reads the
// temporary file first and its problem ("" for none) stops the rename. "" or the problem.
std::string write_atomically(const std::string& path, const std::string& text,
                             const std::function<std::string(const std::string& written)>& check = {});

}  // namespace arlsim::calib
