#include "calib/harness/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace arlsim::calib {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

std::string fixed(double v, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

// Quantities as the profile parser reads them.
std::string flops_text(double v) { return fixed(v / 1e9, 5) + " GFLOP/s"; }
std::string bandwidth_text(double v) { return fixed(v / 1e9, 5) + " GB/s"; }
std::string bytes_text(double v) { return fixed(v / (1024.0 * 1024 * 1024), 5) + " GiB"; }
std::string micros_text(double v) { return fixed(v * 1e6, 4) + " us"; }

double gemm_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * d(m) * d(n) * d(k); }

std::string pass_name(bool backward) { return backward ? "fwd_bwd" : "fwd"; }

std::vector<int64_t> geometric(int64_t from, int64_t to, int64_t factor) {
  std::vector<int64_t> v;
  for (int64_t x = from; x <= to; x *= factor) v.push_back(x);
  return v;
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops{
      {Op::gemm, "gemm", "matrix multiplications over an (m, n, k) grid"},
      {Op::attention, "attention",
       "causal attention of one head by sequence length, forward and forward + backward; decode attention by batch "
       "and KV length"},
      {Op::memory, "memory", "streaming kernels (copy, triad, a norm-like and an activation-like one) by size"},
      {Op::launch, "launch", "an empty kernel (a task handed to a worker thread on a CPU), launch to completion"},
      {Op::collective, "collective", "all-reduce, all-gather, reduce-scatter, all-to-all and broadcast by size and group"},
      {Op::p2p, "p2p", "send/recv between neighbouring ranks by size"},
      {Op::host, "host", "copies from pinned host memory to the device by size"},
  };
  return ops;
}

std::optional<Op> find_op(std::string_view name) {
  for (const auto& o : all_ops())
    if (o.name == name) return o.op;
  return std::nullopt;
}

std::string op_list() {
  std::string s;
  for (const auto& o : all_ops()) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

double attention_flops(int64_t seq_len, int64_t head_dim, bool backward) {
  const double forward = 2.0 * d(seq_len) * d(seq_len) * d(head_dim);
  return backward ? 3.5 * forward : forward;
}

double decode_kv_bytes(int64_t batch, int64_t kv_len, int64_t kv_heads, int64_t head_dim, double element_bytes) {
  return 2.0 * d(batch) * d(kv_len) * d(kv_heads) * d(head_dim) * element_bytes;
}

double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "tf32") return 4;
  if (dtype == "fp8") return 1;
  return 2;
}

std::vector<std::pair<int64_t, int64_t>> decode_points(const Plan& p, double element_bytes) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t b : p.decode_batch) {
    std::vector<std::pair<int64_t, int64_t>> mine;
    for (int64_t len : p.decode_kv_len)
      if (p.decode_max_bytes <= 0 ||
          decode_kv_bytes(b, len, p.decode_kv_heads, p.decode_head_dim, element_bytes) <= p.decode_max_bytes)
        mine.emplace_back(b, len);
    if (mine.size() >= 2) out.insert(out.end(), mine.begin(), mine.end());
  }
  return out;
}

namespace {

// The least-squares line y = slope x + intercept through the points, as (slope, intercept);
// nothing with fewer than two points or when their x are all alike.
std::optional<std::pair<double, double>> least_squares(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 2) return std::nullopt;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = d(static_cast<int64_t>(xy.size())), denominator = n * sxx - sx * sx;
  if (!(denominator > 1e-12 * n * sxx)) return std::nullopt;
  const double slope = (n * sxy - sx * sy) / denominator;
  return std::make_pair(slope, (sy - slope * sx) / n);
}

}  // namespace

std::optional<DecodeFit> fit_decode(int64_t batch, const std::vector<DecodeResult>& all) {
  std::vector<std::pair<double, double>> xy;  // (bytes, seconds)
  for (const auto& r : all)
    if (r.batch == batch && r.kv_bytes > 0 && r.seconds.median > 0) xy.emplace_back(r.kv_bytes, r.seconds.median);
  if (xy.size() < 2) return std::nullopt;
  double slope = 0, intercept = 0;
  if (const auto line = least_squares(xy)) std::tie(slope, intercept) = *line;
  if (!(slope > 0)) return std::nullopt;  // the time does not rise with the bytes
  if (intercept < 0) {  // through the origin: all of the time per byte
    double sxx = 0, sxy = 0;
    for (const auto& [x, y] : xy) sxx += x * x, sxy += x * y;
    intercept = 0;
    slope = sxy / sxx;
  }
  // A bandwidth beyond what a profile may state (1 PB/s) is a flat line, not a measurement.
  if (!(slope > 0) || !std::isfinite(slope) || 1.0 / slope > 1e15) return std::nullopt;
  DecodeFit f;
  f.batch = batch;
  f.fixed_s = intercept;
  f.bandwidth = 1.0 / slope;
  for (const auto& [x, y] : xy) f.worst_residual = std::max(f.worst_residual, std::abs(y - (intercept + slope * x)) / y);
  return f;
}

std::string_view kernel_name(MemoryKernel k) {
  switch (k) {
    case MemoryKernel::copy: return "copy";
    case MemoryKernel::triad: return "triad";
    case MemoryKernel::norm: return "norm";
    case MemoryKernel::activation: return "activation";
  }
  return "?";
}

Plan make_plan(const DeviceInfo& dev, const std::vector<Op>& ops, bool quick, int64_t ranks) {
  Plan p;
  p.ops = ops;
  p.quick = quick;
  const bool cpu = dev.gemm_dtype == "fp32";
  if (cpu) {
    // One core's fp32 GEMMs: from cache-resident tiles to sizes past the last-level cache. Rows
    // from one decoding sequence (a rollout's tail decodes a few; below the grid the model
    // would fall back to the analytic efficiency) to a prefill chunk. A CPU GEMM's time is a
    // staircase in the rows (Eigen's register blocks take 8 rows at a time with AVX: 12 rows can
    // take 1.5x as long as 16), so decode batch sizes are swept densely, not only at powers of two.
    if (quick) {
      p.gemm_m = {1, 2, 3, 4, 6, 8, 12, 14, 16, 32, 128, 512, 1024};
    } else {
      for (int64_t m = 1; m <= 16; ++m) p.gemm_m.push_back(m);
      for (int64_t m = 24; m <= 2048; m = m % 3 == 0 ? m / 3 * 4 : m / 2 * 3) p.gemm_m.push_back(m);
    }
    // Columns to a small vocabulary's LM head.
    p.gemm_n = quick ? std::vector<int64_t>{128, 512, 2048, 8192} : geometric(64, 8192, 2);
    p.gemm_k = quick ? std::vector<int64_t>{128, 512, 2048} : geometric(64, 2048, 2);
    // From inside the caches to well past them: STREAM asks for arrays 4x the last-level cache.
    const double largest = std::min(std::max((quick ? 64.0 : 256.0) * (1 << 20), 4 * dev.last_level_cache_bytes),
                                    std::max(64.0 * (1 << 20), dev.memory_bytes / 8));
    for (double b = 1 << 20; b < largest; b *= quick ? 8 : 4) p.memory_bytes.push_back(b);
    p.memory_bytes.push_back(largest);
    p.attention_seq = quick ? std::vector<int64_t>{256, 1024} : geometric(128, 4096, 2);
    // The CPU loop's model has heads of 64; 128 is the common size of larger models.
    p.attention_head_dims = {64, 128};
    // Decode attention with the heads of the CPU loop's model (8 query heads on 4 KV heads of 64):
    // a rollout's decode batches, contexts to its longest.
    p.decode_batch = quick ? std::vector<int64_t>{1, 4, 16} : geometric(1, 32, 2);
    p.decode_kv_len = quick ? std::vector<int64_t>{256, 1024, 4096} : geometric(128, 4096, 2);
    p.decode_heads = 8, p.decode_kv_heads = 4, p.decode_head_dim = 64;
    p.decode_max_bytes = (quick ? 64.0 : 256.0) * (1 << 20);
  } else {
    // A transformer layer's GEMMs at the TP degrees of interest: tokens (m) from one decoding
    // sequence (a rollout's tail) through decode batches to a long prefill chunk, widths (n, k)
    // from a TP-8 slice of a 4K model to an MLP of 16K and more.
    p.gemm_m = quick ? std::vector<int64_t>{1, 16, 128, 1024, 16384} : geometric(1, 16384, 2);
    p.gemm_n = quick ? std::vector<int64_t>{1024, 4096, 16384} : geometric(512, 32768, 2);
    p.gemm_k = quick ? std::vector<int64_t>{1024, 4096, 16384} : geometric(512, 32768, 2);
    for (double b = 1 << 20; b <= 4.0 * (1 << 30); b *= quick ? 16 : 4) p.memory_bytes.push_back(b);
    p.attention_seq = quick ? std::vector<int64_t>{1024, 4096, 16384} : geometric(512, 32768, 2);
    // Heads of 128 (most models); a full sweep also 64 (small models) and 256 (Gemma-class).
    p.attention_head_dims = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{64, 128, 256};
    // Decode attention with one layer of an 8B-class grouped-query model at TP 1 (32 query heads
    // on 8 KV heads of 128): from one sequence (a rollout's tail) to a full decode batch, contexts
    // to 32K, caches to a quarter of the memory or 8 GiB.
    p.decode_batch = quick ? std::vector<int64_t>{1, 16, 256} : geometric(1, 1024, 4);
    p.decode_kv_len = quick ? std::vector<int64_t>{1024, 4096, 16384} : geometric(512, 32768, 2);
    p.decode_heads = 32, p.decode_kv_heads = 8, p.decode_head_dim = 128;
    p.decode_max_bytes = std::min(8.0 * (1 << 30), dev.memory_bytes > 0 ? dev.memory_bytes / 4 : 8.0 * (1 << 30));
  }
  for (const auto& [dtype, peak] : dev.other_gemm_dtypes) p.gemm_dtypes.push_back(dtype);
  p.launches_per_sample = quick ? 200 : 1000;
  if (dev.graphs) p.graph_kernels = 1000;
  p.host_bytes = quick ? std::vector<double>{64.0 * (1 << 20)} : std::vector<double>{1 << 20, 16 << 20, 256.0 * (1 << 20)};
  // Collectives: groups of 2, 4, ... up to the largest asked for; sizes in powers of two from 8 B
  // (every fourth in a quick sweep) to 32 MiB on a CPU, 8 GiB on a GPU.
  const int64_t most = ranks > 0 ? ranks : cpu ? 2 : std::max<int64_t>(2, dev.max_ranks);
  for (int64_t n = 2; n < most; n *= 2) p.collective_ranks.push_back(n);
  p.collective_ranks.push_back(most);
  // A CPU's devices are threads that share the machine: its kernels are measured with the other
  // devices of a run of `most` busy (a GPU's devices are independent).
  p.busy_peers = cpu ? most - 1 : 0;
  const double top = cpu ? 32.0 * (1 << 20) : 8.0 * (1 << 30);
  for (double b = 8; b <= top; b *= quick ? 16 : 2) p.collective_bytes.push_back(b);
  if (p.collective_bytes.back() < top) p.collective_bytes.push_back(top);
  // What was not asked for has no points (and leaves no trace in the profile's notes).
  auto has = [&](Op o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  if (!has(Op::gemm)) p.gemm_m.clear(), p.gemm_n.clear(), p.gemm_k.clear(), p.gemm_dtypes.clear();
  if (!has(Op::attention))
    p.attention_seq.clear(), p.attention_head_dims.clear(), p.decode_batch.clear(), p.decode_kv_len.clear();
  if (!has(Op::memory)) p.memory_bytes.clear();
  if (!has(Op::launch)) p.graph_kernels = 0;
  if (!has(Op::host)) p.host_bytes.clear();
  if (!has(Op::collective) && !has(Op::p2p)) p.collective_ranks.clear(), p.collective_bytes.clear();
  return p;
}

double estimated_seconds(const Plan& p, double flops_per_s, double bytes_per_s, double launch_s) {
  auto has = [&](Op o) { return std::find(p.ops.begin(), p.ops.end(), o) != p.ops.end(); };
  const double runs = p.repeats + p.warmups;
  double s = 0;
  if (has(Op::gemm))
    for (int64_t m : p.gemm_m)
      for (int64_t n : p.gemm_n)
        for (int64_t k : p.gemm_k) s += runs * d(1 + static_cast<int64_t>(p.gemm_dtypes.size())) * gemm_flops(m, n, k) / flops_per_s;
  if (has(Op::attention))
    for (int64_t dim : p.attention_head_dims)
      for (int64_t seq : p.attention_seq)
        for (bool bwd : {false, true}) s += runs * attention_flops(seq, dim, bwd) / flops_per_s;
  if (has(Op::attention))
    for (const auto& [b, len] : decode_points(p, 2))
      s += runs * (decode_kv_bytes(b, len, p.decode_kv_heads, p.decode_head_dim, 2) / bytes_per_s + 3 * launch_s);
  if (has(Op::memory))
    for (double b : p.memory_bytes) s += runs * std::size(kMemoryKernels) * b / bytes_per_s;
  if (has(Op::launch)) s += runs * d(p.launches_per_sample + p.graph_kernels) * launch_s;
  if (has(Op::host))
    for (double b : p.host_bytes) s += runs * b / bytes_per_s;
  // Five collectives, four of them in place as well when the plan says so; send/recv.
  const double ops = (has(Op::collective) ? (p.collective_in_place ? 9.0 : 5.0) : 0.0) + (has(Op::p2p) ? 1.0 : 0.0);
  for (int64_t n : p.collective_ranks)
    for (double b : p.collective_bytes) s += runs * ops * (2 * b / bytes_per_s + 2 * d(n) * launch_s);
  return s;
}

Stat stat_of(std::vector<double> samples) {
  Stat s;
  s.samples = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.jitter = s.median > 0 ? (samples.back() - samples.front()) / s.median : 0.0;
  return s;
}

Results measure(Device& dev, const Plan& p, const Progress& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Results r;
  r.info = dev.info();
  r.plan = p;
  auto has = [&](Op o) { return std::find(p.ops.begin(), p.ops.end(), o) != p.ops.end(); };
  // Progress by estimated cost at nominal-ish rates: only the proportions matter.
  const double flops_rate = r.info.peak_flops > 0 ? r.info.peak_flops : 50e9;
  const double byte_rate = r.info.memory_bandwidth > 0 ? r.info.memory_bandwidth : 10e9;
  const double launch_guess = 10e-6;
  const double total = std::max(1e-12, estimated_seconds(p, flops_rate, byte_rate, launch_guess));
  double done = 0;
  auto advance = [&](double cost) {
    done += cost;
    if (progress) progress(std::min(1.0, done / total), std::chrono::duration<double>(Clock::now() - start).count());
  };
  // Warm-ups, then the repeats; nothing when any run fails its check.
  auto sample = [&](const std::function<std::optional<double>()>& run, const std::string& what,
                    double cost) -> std::optional<Stat> {
    std::vector<double> times;
    for (int i = 0; i < p.warmups + p.repeats; ++i) {
      const auto t = run();
      advance(cost);
      if (!t || !std::isfinite(*t) || *t <= 0) {
        const std::string why = dev.problem();
        r.excluded.push_back(what + ": " + (why.empty() ? "no valid time" : why));
        advance(cost * (p.warmups + p.repeats - i - 1));
        return std::nullopt;
      }
      if (i >= p.warmups) times.push_back(*t);
    }
    return stat_of(std::move(times));
  };
  {
    // The compute and streaming kernels with the run's other devices busy too (a CPU's threads),
    // idle again after them however they end.
    struct Idle {
      Device& dev;
      ~Idle() { dev.busy_peers(0); }
    } idle{dev};
    if (p.busy_peers > 0) dev.busy_peers(p.busy_peers);
    if (has(Op::gemm))
      for (int64_t m : p.gemm_m)
        for (int64_t n : p.gemm_n)
          for (int64_t k : p.gemm_k) {
            const std::string what = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
            if (auto s = sample([&] { return dev.gemm(m, n, k); }, what, gemm_flops(m, n, k) / flops_rate))
              r.gemm.push_back({m, n, k, *s});
          }
    if (has(Op::gemm))
      for (const auto& dtype : p.gemm_dtypes)
        for (int64_t m : p.gemm_m)
          for (int64_t n : p.gemm_n)
            for (int64_t k : p.gemm_k) {
              const std::string what =
                  "gemm " + dtype + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
              if (auto s = sample([&] { return dev.gemm_in(dtype, m, n, k); }, what, gemm_flops(m, n, k) / flops_rate))
                r.gemm_by_dtype[dtype].push_back({m, n, k, *s});
            }
    if (has(Op::attention))
      for (int64_t dim : p.attention_head_dims)
        for (int64_t seq : p.attention_seq)
          for (bool bwd : {false, true}) {
            const std::string what = "attention " + pass_name(bwd) + " " + std::to_string(seq) + " d" + std::to_string(dim);
            const double cost = attention_flops(seq, dim, bwd) / flops_rate;
            if (auto s = sample([&] { return dev.attention(seq, dim, bwd); }, what, cost))
              r.attention.push_back({seq, dim, bwd, *s});
          }
    if (has(Op::attention)) {
      const double element = dtype_bytes(r.info.gemm_dtype);
      for (const auto& [b, len] : decode_points(p, element)) {
        const double bytes = decode_kv_bytes(b, len, p.decode_kv_heads, p.decode_head_dim, element);
        const std::string what = "decode attention batch " + std::to_string(b) + " kv " + std::to_string(len);
        if (auto s = sample([&] { return dev.decode_attention(b, len, p.decode_heads, p.decode_kv_heads, p.decode_head_dim); },
                            what, bytes / byte_rate + 3 * launch_guess))
          r.decode.push_back({b, len, bytes, *s});
      }
    }
    if (has(Op::memory))
      for (double b : p.memory_bytes)
        for (MemoryKernel kernel : kMemoryKernels) {
          const std::string what = std::string(kernel_name(kernel)) + " " + std::to_string(static_cast<int64_t>(b)) + " B";
          if (auto s = sample([&] { return dev.memory(kernel, b); }, what, b / byte_rate)) r.memory.push_back({kernel, b, *s});
        }
  }
  if (has(Op::launch)) {
    auto many = [&]() -> std::optional<double> {
      double sum = 0;
      for (int64_t i = 0; i < p.launches_per_sample; ++i) {
        const auto t = dev.launch();
        if (!t) return std::nullopt;
        sum += *t;
      }
      return sum / d(p.launches_per_sample);
    };
    if (auto s = sample(many, "launch", d(p.launches_per_sample) * launch_guess)) r.launch = *s;
    if (p.graph_kernels > 0)
      if (auto s = sample([&] { return dev.graph_kernel(p.graph_kernels); }, "graph kernel",
                          d(p.graph_kernels) * launch_guess))
        r.graph_kernel = *s;
  }
  if (has(Op::host))
    for (double b : p.host_bytes)
      if (auto s = sample([&] { return dev.host_copy(b); }, "host copy " + std::to_string(static_cast<int64_t>(b)) + " B",
                          b / byte_rate))
        r.host.emplace_back(b, *s);
  std::vector<model::CollectiveOp> collective_ops;
  if (has(Op::collective))
    collective_ops = {model::CollectiveOp::all_reduce, model::CollectiveOp::all_gather, model::CollectiveOp::reduce_scatter,
                      model::CollectiveOp::all_to_all, model::CollectiveOp::broadcast};
  if (has(Op::p2p)) collective_ops.push_back(model::CollectiveOp::send_recv);
  for (int64_t n : p.collective_ranks)
    for (auto op : collective_ops)
      for (const bool in_place : {false, true}) {
        if (in_place && !(p.collective_in_place && in_place_capable(op))) continue;
        for (double b : p.collective_bytes) {
          const std::string what = std::string(model::collective_name(op)) + " x" + std::to_string(n) + " " +
                                   std::to_string(static_cast<int64_t>(b)) + " B" + (in_place ? " in place" : "");
          double used = b;
          if (auto s = sample([&] { return dev.collective(op, b, n, &used, in_place); }, what,
                              2 * b / byte_rate + 2 * d(n) * launch_guess))
            r.collectives.push_back({op, n, used, in_place, *s});
        }
      }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (progress) progress(1.0, r.seconds);
  return r;
}

void measure_fabric(Fabric& f, const Plan& p, Results& r) {
  auto has = [&](Op o) { return std::find(p.ops.begin(), p.ops.end(), o) != p.ops.end(); };
  std::vector<model::CollectiveOp> ops;
  if (has(Op::collective))
    ops = {model::CollectiveOp::all_reduce, model::CollectiveOp::all_gather, model::CollectiveOp::reduce_scatter,
           model::CollectiveOp::all_to_all, model::CollectiveOp::broadcast};
  if (has(Op::p2p)) ops.push_back(model::CollectiveOp::send_recv);
  r.fabric = f.link();
  const std::string group = " x" + std::to_string(f.ranks()) + " over " + std::to_string(f.nodes()) + " nodes ";
  for (auto op : ops)
    for (const bool in_place : {false, true}) {
      if (in_place && !(p.collective_in_place && in_place_capable(op))) continue;
      for (double b : p.collective_bytes) {
        std::vector<double> times;
        double used = b;
        bool ok = true;
        for (int i = 0; i < p.warmups + p.repeats && ok; ++i) {
          const auto t = f.collective(op, b, &used, in_place);
          if (!t || !std::isfinite(*t) || *t <= 0) {
            const std::string why = f.problem();
            r.excluded.push_back(std::string(model::collective_name(op)) + group + std::to_string(static_cast<int64_t>(b)) +
                                 " B" + (in_place ? " in place" : "") + ": " + (why.empty() ? "no valid time" : why));
            ok = false;
          } else if (i >= p.warmups) {
            times.push_back(*t);
          }
        }
        if (ok) r.inter_node.push_back({op, f.ranks(), used, in_place, stat_of(std::move(times)), f.nodes()});
      }
    }
}

namespace {

using Json = nlohmann::ordered_json;

Json table_summary(const std::vector<Stat>& stats, int repeats) {
  double worst = 0;
  std::vector<double> jitters;
  for (const auto& s : stats) {
    jitters.push_back(s.jitter);
    worst = std::max(worst, s.jitter);
  }
  const Stat j = stat_of(jitters);
  return Json{{"points", stats.size()}, {"repeats", repeats}, {"median_jitter", std::round(j.median * 1e4) / 1e4},
              {"max_jitter", std::round(worst * 1e4) / 1e4}};
}

double round4(double v) { return std::stod(fixed(v, 4)); }

// A GEMM table for one dtype: every k of a failed point leaves it, so that the rest stays a
// complete grid; the peak is the nominal one, else the best measured rate (and a note says so).
struct GemmGrid {
  double peak = 0;
  Json points = Json::array();
};
GemmGrid gemm_grid(const Plan& plan, const std::vector<GemmResult>& results, const std::string& dtype,
                   double nominal_peak, std::vector<std::string>& notes) {
  std::set<int64_t> ks(plan.gemm_k.begin(), plan.gemm_k.end());
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> rate;
  for (const auto& g : results) rate[{g.m, g.n, g.k}] = gemm_flops(g.m, g.n, g.k) / g.seconds.median;
  if (rate.empty()) {
    if (!plan.gemm_m.empty()) notes.push_back("no " + dtype + " GEMM has a valid measurement: the profile has no " + dtype + " grid");
    return {};
  }
  const std::string which = dtype + " ";
  for (int64_t m : plan.gemm_m)
    for (int64_t n : plan.gemm_n)
      for (int64_t k : plan.gemm_k)
        if (!rate.count({m, n, k}) && ks.erase(k))
          notes.push_back("k = " + std::to_string(k) + " left the " + which + "GEMM grid: " + std::to_string(m) + "x" +
                          std::to_string(n) + "x" + std::to_string(k) + " has no valid measurement");
  double best = 0;
  for (const auto& [key, v] : rate) best = std::max(best, v);
  GemmGrid g;
  g.peak = nominal_peak > 0 ? nominal_peak : best;
  if (nominal_peak <= 0 && best > 0) notes.push_back("peak " + dtype + ": the best measured GEMM rate (no nominal peak known)");
  for (int64_t m : plan.gemm_m)
    for (int64_t n : plan.gemm_n)
      for (int64_t k : ks)
        g.points.push_back({{"m", m}, {"n", n}, {"k", k}, {"efficiency", std::min(1.0, round4(rate.at({m, n, k}) / g.peak))}});
  return g;
}

}  // namespace

std::string profile_json(const Results& r, const ProfileHeader& h) {
  const DeviceInfo& info = r.info;
  std::vector<std::string> notes;
  const GemmGrid main_grid = gemm_grid(r.plan, r.gemm, info.gemm_dtype, info.peak_flops, notes);
  const double peak = main_grid.peak;
  std::map<std::string, GemmGrid> other_grids;
  for (const auto& dtype : r.plan.gemm_dtypes) {
    const auto found = r.gemm_by_dtype.find(dtype);
    const std::vector<GemmResult> none;
    const auto& results = found != r.gemm_by_dtype.end() ? found->second : none;
    double nominal = 0;
    for (const auto& [name, value] : info.other_gemm_dtypes)
      if (name == dtype) nominal = value;
    const GemmGrid g = gemm_grid(r.plan, results, dtype, nominal, notes);
    if (g.peak > 0 && !g.points.empty()) other_grids.emplace(dtype, g);
  }

  // Memory: the largest size measured stands for streaming (smaller ones fit in caches).
  double largest = 0;
  for (const auto& m : r.memory) largest = std::max(largest, m.bytes);
  std::vector<double> streaming;
  for (const auto& m : r.memory)
    if (m.bytes == largest) streaming.push_back(m.bytes / m.seconds.median);
  const double best_stream = streaming.empty() ? 0.0 : *std::max_element(streaming.begin(), streaming.end());
  const double bandwidth = info.memory_bandwidth > 0 ? info.memory_bandwidth : best_stream;
  if (info.memory_bandwidth <= 0 && best_stream > 0)
    notes.push_back("memory bandwidth: the best streaming kernel at " + std::to_string(static_cast<int64_t>(largest)) +
                    " bytes (no nominal bandwidth known)");
  // The host link: the largest copy measured, else the nominal rate, else (a CPU, whose device
  // memory is the host's) the streaming rate.
  double host = info.host_link_bandwidth > 0 ? info.host_link_bandwidth : best_stream;
  if (!r.host.empty()) {
    const auto& top = *std::max_element(r.host.begin(), r.host.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    host = top.first / top.second.median;
  }
  int64_t widest = 0;
  for (const auto& c : r.collectives) widest = std::max(widest, c.ranks);
  if (info.cores > 0 && widest > info.cores)
    notes.push_back("collectives over " + std::to_string(widest) + " ranks on " + std::to_string(info.cores) +
                    " hardware threads: ranks beyond them share cores, so those figures include the scheduler's time slicing");

  // Inter-node collectives (measure_fabric): each op's largest size, in place where measured so;
  // the NIC's efficiency from the largest all-reduce when the NIC's rate was stated.
  std::set<model::CollectiveOp> inter_in_place;
  for (const auto& c : r.inter_node)
    if (c.in_place) inter_in_place.insert(c.op);
  const auto inter_fitted = [&](const CollectiveResult& c) { return c.in_place == (inter_in_place.count(c.op) > 0); };
  std::map<model::CollectiveOp, const CollectiveResult*> inter_largest;
  for (const auto& c : r.inter_node) {
    if (!inter_fitted(c)) continue;
    auto& top = inter_largest[c.op];
    if (!top || c.bytes > top->bytes) top = &c;
  }
  double nic_efficiency = 0;
  if (!r.inter_node.empty()) {
    const CollectiveResult& any = r.inter_node.front();
    const int64_t per_node = std::max<int64_t>(1, any.ranks / std::max<int64_t>(1, any.nodes));
    notes.push_back("inter-node collectives: " + std::to_string(any.ranks) + " processes on " + std::to_string(any.nodes) +
                    " machines through " + r.fabric);
    const auto ar = inter_largest.find(model::CollectiveOp::all_reduce);
    if (r.nic.bandwidth <= 0) {
      notes.push_back("no NIC rate stated (calibrate --nic): no NIC efficiency derived; a cluster's other multi-node groups "
                      "need efficiency/nic");
    } else if (ar != inter_largest.end()) {
      // The cost model's inter-node rate: the NICs the node's ranks use x their rate x the efficiency.
      const int64_t nics = r.nic.per_node > 0 ? std::min(r.nic.per_node, per_node) : per_node;
      const double e = ar->second->busbw() / (static_cast<double>(nics) * r.nic.bandwidth);
      nic_efficiency = std::min(1.0, round4(e));
      if (e > 1)
        notes.push_back("the inter-node all-reduce's bus bandwidth exceeds the stated NIC rate (x" + std::to_string(nics) +
                        "): NIC efficiency capped at 1");
    }
  }

  Json j;
  j["format"] = "arlsim-gpu/1";
  j["name"] = h.name;
  j["description"] = "measured by arlsim calibrate (backend " + info.backend + "): " + info.name;
  std::string note_text = "device: " + info.name + "; versions: " + info.versions + "; command: " + h.command;
  for (const auto& n : notes) note_text += "; " + n;
  for (const auto& e : r.excluded) note_text += "; excluded (failed its check): " + e;
  j["provenance"] = {{"kind", "measured"},
                     {"source", "arlsim calibrate --backend " + info.backend},
                     {"machine", info.machine},
                     {"driver", info.driver},
                     {"date", h.date},
                     {"notes", note_text}};
  j["peak"] = Json::object();
  if (peak > 0) j["peak"][info.gemm_dtype] = flops_text(peak);
  for (const auto& [dtype, g] : other_grids) j["peak"][dtype] = flops_text(g.peak);
  if (info.compute_units > 0) j["sm_count"] = info.compute_units;  // cores, on a CPU
  j["memory"] = Json::object();
  j["memory"]["capacity"] = bytes_text(info.memory_bytes);
  if (bandwidth > 0) j["memory"]["bandwidth"] = bandwidth_text(bandwidth);
  if (host > 0)
    j["host_link"] = {{"kind", info.host_link_kind.empty() ? "host-memory" : info.host_link_kind},
                      {"bandwidth", bandwidth_text(host)}};
  if (!r.collectives.empty())
    j["gpu_link"] = {{"kind", info.link_kind.empty() ? "shared-memory" : info.link_kind},
                     {"bandwidth", bandwidth_text(info.link_bandwidth > 0 ? info.link_bandwidth : bandwidth)}};
  if (r.launch) j["kernel_launch_overhead"] = micros_text(r.launch->median);
  if (r.graph_kernel) j["graph_kernel_overhead"] = micros_text(r.graph_kernel->median);
  Json eff = Json::object();
  if (peak > 0 && !main_grid.points.empty()) eff["gemm"] = main_grid.points;
  for (const auto& [dtype, g] : other_grids) eff["gemm_by_dtype"][dtype] = g.points;
  if (info.gemm_tile_m > 0 && info.gemm_tile_n > 0) eff["gemm_tile"] = {{"m", info.gemm_tile_m}, {"n", info.gemm_tile_n}};
  if (peak > 0 && !r.attention.empty()) {
    Json points = Json::array();
    for (const auto& a : r.attention) {
      const double e = attention_flops(a.seq_len, a.head_dim, a.backward) / a.seconds.median / peak;
      points.push_back({{"seq_len", a.seq_len}, {"head_dim", a.head_dim}, {"causal", true}, {"pass", pass_name(a.backward)},
                        {"efficiency", std::min(1.0, round4(e))}});
    }
    eff["attention"] = points;
  }
  if (!r.decode.empty()) {
    Json rows = Json::array();
    for (int64_t b : r.plan.decode_batch) {
      const auto f = fit_decode(b, r.decode);
      if (!f) {
        if (std::any_of(r.decode.begin(), r.decode.end(), [&](const DecodeResult& x) { return x.batch == b; }))
          notes.push_back("decode attention at batch " + std::to_string(b) +
                          " left the table: its measurements do not give a positive bandwidth");
        continue;
      }
      rows.push_back({{"batch", b}, {"fixed", micros_text(f->fixed_s)}, {"bandwidth", bandwidth_text(f->bandwidth)}});
    }
    if (!rows.empty()) eff["decode_attention"] = rows;
  }
  if (bandwidth > 0 && !streaming.empty()) {
    std::vector<double> shares;
    for (double s : streaming) shares.push_back(s / bandwidth);
    eff["memory_bound"] = std::min(1.0, round4(stat_of(shares).median));
  }
  if (nic_efficiency > 0) {
    eff["nic"] = nic_efficiency;
    j["nic"] = bandwidth_text(r.nic.bandwidth);
  }
  if (!eff.empty()) j["efficiency"] = eff;

  double fitted_base = 0, fitted_hop = 0;  // the ring's latency within a node, when measured
  if (!r.collectives.empty()) {
    // Each collective's bus bandwidth at the largest size measured, per group size: what the
    // cost model takes as the algorithm's rate within a node.
    std::map<std::pair<model::CollectiveOp, int64_t>, const CollectiveResult*> largest_of;
    // Per op and group size, the in-place runs when any passed their check (frameworks reduce
    // gradients and gather parameters in their own buffers, as the CPU runtime does), else the
    // out-of-place ones (all-to-all and send/recv always).
    std::set<std::pair<model::CollectiveOp, int64_t>> in_place_measured;
    for (const auto& c : r.collectives)
      if (c.in_place) in_place_measured.insert({c.op, c.ranks});
    const auto fitted = [&](const CollectiveResult& c) { return c.in_place == (in_place_measured.count({c.op, c.ranks}) > 0); };
    for (const auto& c : r.collectives) {
      if (!fitted(c)) continue;
      auto& top = largest_of[{c.op, c.ranks}];
      if (!top || c.bytes > top->bytes) top = &c;
    }
    Json points = Json::array();
    for (const auto& [key, c] : largest_of) {
      const bool direct = c->op == model::CollectiveOp::all_to_all || c->op == model::CollectiveOp::send_recv;
      points.push_back({{"op", model::collective_name(c->op)},
                        {"scope", "intra_node"},
                        {"algorithm", direct ? "direct" : "ring"},
                        {"ranks", c->ranks},
                        {"bus_bandwidth", bandwidth_text(c->busbw())}});
    }
    j["collectives"] = points;
    // Latency: the smallest all-reduce of each group size against its 2(n - 1) ring steps,
    // t = base + 2(n - 1) x hop, by least squares (one group size: no base, all of it in the hops).
    std::map<int64_t, const CollectiveResult*> smallest;
    for (const auto& c : r.collectives)
      if (c.op == model::CollectiveOp::all_reduce && fitted(c)) {
        auto& s0 = smallest[c.ranks];
        if (!s0 || c.bytes < s0->bytes) s0 = &c;
      }
    if (smallest.empty())  // no all-reduce: the smallest of anything, as one ring pass
      for (const auto& c : r.collectives) {
        if (!fitted(c)) continue;
        auto& s0 = smallest[c.ranks];
        if (!s0 || c.bytes < s0->bytes) s0 = &c;
      }
    // Each op's own ring steps, as the cost model counts them: 2(n - 1) for an all-reduce, one hop
    // for a send/recv, n - 1 otherwise.
    auto steps = [](const CollectiveResult& c) {
      if (c.op == model::CollectiveOp::all_reduce) return 2.0 * d(c.ranks - 1);
      if (c.op == model::CollectiveOp::send_recv) return 1.0;
      return d(c.ranks - 1);
    };
    std::vector<std::pair<double, double>> xy;  // (steps, seconds)
    for (const auto& [n, c] : smallest) xy.emplace_back(steps(*c), c->seconds.median);
    double& base = fitted_base;
    double& hop = fitted_hop;
    if (const auto line = least_squares(xy)) std::tie(hop, base) = *line;  // the group sizes give different step counts
    if (xy.size() < 2 || hop <= 0 || base < 0) {
      base = 0;
      double sum = 0;
      for (const auto& [x, y] : xy) sum += y / x;
      hop = sum / d(static_cast<int64_t>(xy.size()));
    }
    j["collective_protocols"] = Json::array({Json{{"algorithm", "ring"},
                                                  {"protocol", "Simple"},
                                                  {"base", micros_text(base)},
                                                  {"hop_intra_node", micros_text(hop)},
                                                  {"hop_inter_node", micros_text(hop)}}});
  }
  if (!inter_largest.empty()) {
    if (!j.contains("collectives")) j["collectives"] = Json::array();
    for (const auto& [op, c] : inter_largest) {
      const bool direct = op == model::CollectiveOp::all_to_all || op == model::CollectiveOp::send_recv;
      j["collectives"].push_back({{"op", model::collective_name(op)},
                                  {"scope", "inter_node"},
                                  {"algorithm", direct ? "direct" : "ring"},
                                  {"ranks", c->ranks},
                                  {"nodes", c->nodes},
                                  {"bus_bandwidth", bandwidth_text(c->busbw())}});
    }
    // The hop between nodes: the smallest all-reduce (else the smallest of anything) against the
    // cost model's ring over nodes, 2(n - 1) steps of which 2 x nodes cross between them (n - 1
    // and nodes - 1 for the other ops, one for a send/recv), the steps within a node at the hop
    // measured there. Without a measurement within a node, every step takes the same hop.
    const CollectiveResult* small = nullptr;
    for (const bool all_reduce_only : {true, false}) {
      for (const auto& c : r.inter_node)
        if (inter_fitted(c) && (!all_reduce_only || c.op == model::CollectiveOp::all_reduce) && (!small || c.bytes < small->bytes))
          small = &c;
      if (small) break;
    }
    const double n = d(small->ranks), nodes = d(small->nodes);
    const bool all_reduce = small->op == model::CollectiveOp::all_reduce, send_recv = small->op == model::CollectiveOp::send_recv;
    const double steps = all_reduce ? 2 * (n - 1) : send_recv ? 1.0 : n - 1;
    const double inter_steps = std::min(steps, all_reduce ? 2 * nodes : send_recv ? 1.0 : nodes - 1);
    const bool measured_within = j.contains("collective_protocols");
    double inter = (small->seconds.median - fitted_base - (steps - inter_steps) * fitted_hop) / inter_steps;
    if (!measured_within || inter <= 0) inter = small->seconds.median / steps;
    if (measured_within) {
      j["collective_protocols"][0]["hop_inter_node"] = micros_text(inter);
    } else {
      j["collective_protocols"] = Json::array({Json{{"algorithm", "ring"},
                                                    {"protocol", "Simple"},
                                                    {"base", micros_text(0)},
                                                    {"hop_intra_node", micros_text(inter)},
                                                    {"hop_inter_node", micros_text(inter)}}});
    }
  }

  // What the sweep was and how steady: per table its points, repeats and jitter, and the raw
  // medians of the tables the efficiencies condense (memory by kernel and size, launch).
  Json cal;
  cal["backend"] = info.backend;
  cal["device"] = info.name;
  cal["versions"] = info.versions;
  cal["command"] = h.command;
  cal["quick"] = r.plan.quick;
  cal["warmups"] = r.plan.warmups;
  cal["seconds"] = std::round(r.seconds * 100) / 100;
  Json tables = Json::object();
  if (!r.gemm.empty()) {
    std::vector<Stat> s;
    for (const auto& g : r.gemm) s.push_back(g.seconds);
    tables["gemm"] = table_summary(s, r.plan.repeats);
    tables["gemm"]["dtype"] = info.gemm_dtype;
  }
  for (const auto& [dtype, results] : r.gemm_by_dtype) {
    std::vector<Stat> s;
    for (const auto& g : results) s.push_back(g.seconds);
    tables["gemm_" + dtype] = table_summary(s, r.plan.repeats);
    tables["gemm_" + dtype]["dtype"] = dtype;
  }
  if (!r.attention.empty()) {
    std::vector<Stat> s;
    for (const auto& a : r.attention) s.push_back(a.seconds);
    tables["attention"] = table_summary(s, r.plan.repeats);
  }
  if (!r.decode.empty()) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& x : r.decode) {
      st.push_back(x.seconds);
      rows.push_back({{"batch", x.batch},
                      {"kv_len", x.kv_len},
                      {"bytes", x.kv_bytes},
                      {"time_us", round4(x.seconds.median * 1e6)},
                      {"bandwidth", bandwidth_text(x.kv_bytes / x.seconds.median)},
                      {"jitter", std::round(x.seconds.jitter * 1e4) / 1e4}});
    }
    Json fits = Json::array();
    for (int64_t b : r.plan.decode_batch)
      if (const auto f = fit_decode(b, r.decode))
        fits.push_back({{"batch", b}, {"worst_residual", round4(f->worst_residual)}});
    tables["decode_attention"] = table_summary(st, r.plan.repeats);
    tables["decode_attention"]["shape"] = {{"heads", r.plan.decode_heads},
                                           {"kv_heads", r.plan.decode_kv_heads},
                                           {"head_dim", r.plan.decode_head_dim},
                                           {"dtype", info.gemm_dtype}};
    tables["decode_attention"]["fits"] = fits;
    tables["decode_attention"]["rows"] = rows;
  }
  if (!r.memory.empty()) {
    std::vector<Stat> s;
    Json rows = Json::array();
    for (const auto& m : r.memory) {
      s.push_back(m.seconds);
      rows.push_back({{"kernel", kernel_name(m.kernel)},
                      {"bytes", m.bytes},
                      {"bandwidth", bandwidth_text(m.bytes / m.seconds.median)},
                      {"jitter", std::round(m.seconds.jitter * 1e4) / 1e4}});
    }
    tables["memory"] = table_summary(s, r.plan.repeats);
    tables["memory"]["rows"] = rows;
  }
  if (r.launch) {
    tables["launch"] = table_summary({*r.launch}, r.plan.repeats);
    tables["launch"]["per_sample"] = r.plan.launches_per_sample;
  }
  if (r.graph_kernel) {
    tables["graph"] = table_summary({*r.graph_kernel}, r.plan.repeats);
    tables["graph"]["kernels"] = r.plan.graph_kernels;
  }
  if (!r.host.empty()) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& [bytes, stat] : r.host) {
      st.push_back(stat);
      rows.push_back({{"bytes", bytes}, {"bandwidth", bandwidth_text(bytes / stat.median)}});
    }
    tables["host"] = table_summary(st, r.plan.repeats);
    tables["host"]["rows"] = rows;
  }
  // Each collective run: within a node, and across nodes (with the group's nodes and the fabric).
  const auto collective_table = [&](const std::vector<CollectiveResult>& runs, bool across) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& c : runs) {
      st.push_back(c.seconds);
      Json row = {{"op", model::collective_name(c.op)}, {"ranks", c.ranks}};
      if (across) row["nodes"] = c.nodes;
      row.update({{"bytes", c.bytes},
                  {"in_place", c.in_place},
                  {"time_us", round4(c.seconds.median * 1e6)},
                  {"algbw_gbps", round4(c.algbw() / 1e9)},
                  {"busbw_gbps", round4(c.busbw() / 1e9)},
                  {"jitter", std::round(c.seconds.jitter * 1e4) / 1e4}});
      rows.push_back(row);
    }
    Json table = table_summary(st, r.plan.repeats);
    if (across) table["fabric"] = r.fabric;
    table["rows"] = rows;
    return table;
  };
  if (!r.collectives.empty()) tables["collective"] = collective_table(r.collectives, false);
  if (!r.inter_node.empty()) tables["collective_inter_node"] = collective_table(r.inter_node, true);
  cal["tables"] = tables;
  cal["excluded"] = r.excluded;
  j["calibration"] = cal;
  return j.dump(2) + "\n";
}

std::string write_atomically(const std::string& path, const std::string& text,
                             const std::function<std::string(const std::string& written)>& check) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  fs::path tmp = target;
  tmp += ".partial." + std::to_string(::getpid());  // concurrent runs do not share it
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot write " + tmp.string();
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return "cannot write " + tmp.string();
    }
  }
  std::error_code ec;
  if (check)
    if (const std::string problem = check(tmp.string()); !problem.empty()) {
      fs::remove(tmp, ec);
      return problem;
    }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot move the profile into place at " + path;
  }
  return {};
}

}  // namespace arlsim::calib
