#include "calib/harness/harness.h"
#include "calib/harness/numbers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace arlsim::calib {


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
  // Host copies from 4 KiB, where the copy's fixed time is all of it, to 256 MiB, where the link's
  // rate is.
  p.host_bytes = quick ? std::vector<double>{4096, 64.0 * (1 << 20)}
                       : std::vector<double>{4096, 64 << 10, 1 << 20, 16 << 20, 256.0 * (1 << 20)};
  // Collectives: groups of 2, 4, ... up to the largest asked for; sizes in powers of two from 8 B
  // (every fourth in a quick sweep) to 32 MiB on a CPU, 8 GiB on a GPU. A machine of one GPU has
  // no group within it: none is planned.
  const int64_t most = ranks > 0 ? ranks : cpu ? 2 : dev.max_ranks;
  for (int64_t n = 2; n < most; n *= 2) p.collective_ranks.push_back(n);
  if (most >= 2) p.collective_ranks.push_back(most);
  // A CPU's devices are threads that share the machine: its kernels are measured with the other
  // devices of a run of `most` busy (a GPU's devices are independent).
  p.busy_peers = cpu ? most - 1 : 0;
  const double top = cpu ? 32.0 * (1 << 20) : 8.0 * (1 << 30);
  for (double b = 8; b <= top; b *= quick ? 16 : 2) p.collective_bytes.push_back(b);
  if (p.collective_bytes.back() < top) p.collective_bytes.push_back(top);
  // What was not asked for has no points (and leaves no trace in the profile's notes).
  auto has = [&](Op o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  // A GPU's GEMM held for tens of seconds: the power limit lowers its clock within a second or two
  // and holds it there (calib/SOURCES.md sec. 2d). A CPU's cores are not measured so.
  if (!cpu) p.held_seconds = quick ? 10 : 30;
  if (!has(Op::gemm)) p.gemm_m.clear(), p.gemm_n.clear(), p.gemm_k.clear(), p.gemm_dtypes.clear(), p.held_seconds = 0;
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
  s += p.held_seconds;
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

std::vector<std::pair<model::CollectiveOp, bool>> collective_runs(const Plan& p) {
  const auto has = [&](Op o) { return std::find(p.ops.begin(), p.ops.end(), o) != p.ops.end(); };
  std::vector<model::CollectiveOp> ops;
  if (has(Op::collective))
    ops = {model::CollectiveOp::all_reduce, model::CollectiveOp::all_gather, model::CollectiveOp::reduce_scatter,
           model::CollectiveOp::all_to_all, model::CollectiveOp::broadcast};
  if (has(Op::p2p)) ops.push_back(model::CollectiveOp::send_recv);
  std::vector<std::pair<model::CollectiveOp, bool>> runs;
  for (auto op : ops)
    for (const bool in_place : {false, true})
      if (!in_place || (p.collective_in_place && in_place_capable(op))) runs.emplace_back(op, in_place);
  return runs;
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
    // Host copies too: a run's devices move their states out and back together (weight sync,
    // an engine's sleep), and on a CPU those copies share one memory bus.
    if (has(Op::host))
      for (double b : p.host_bytes)
        if (auto s = sample([&] { return dev.host_copy(b); }, "host copy " + std::to_string(static_cast<int64_t>(b)) + " B",
                            b / byte_rate))
          r.host.emplace_back(b, *s);
    // Last of them, since it leaves the GPU hot: the GEMM held back to back.
    if (p.held_seconds > 0) {
      const int64_t x = p.held_mnk;
      const auto windows = dev.held_gemm(x, x, x, p.held_seconds, p.held_window_s);
      advance(p.held_seconds);
      HeldResult h{x, p.held_window_s, {}, 0};
      for (double t : windows)
        if (std::isfinite(t) && t > 0) h.window_flops.push_back(gemm_flops(x, x, x) / t);
      if (h.window_flops.size() == windows.size() && windows.size() >= 2) {
        const std::vector<double> later(h.window_flops.begin() + static_cast<std::ptrdiff_t>(windows.size() / 2),
                                        h.window_flops.end());
        h.held_flops = stat_of(later).median;
        r.held = std::move(h);
      } else if (!windows.empty()) {
        const std::string why = dev.problem();
        r.excluded.push_back("held gemm " + std::to_string(x) + "^3: " + (why.empty() ? "no valid time" : why));
      }
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
  for (int64_t n : p.collective_ranks)
    for (const auto& [op, in_place] : collective_runs(p))
      for (double b : p.collective_bytes) {
        const std::string what = std::string(model::collective_name(op)) + " x" + std::to_string(n) + " " +
                                 std::to_string(static_cast<int64_t>(b)) + " B" + (in_place ? " in place" : "");
        double used = b;
        if (auto s = sample([&] { return dev.collective(op, b, n, &used, in_place); }, what,
                            2 * b / byte_rate + 2 * d(n) * launch_guess))
          r.collectives.push_back({op, n, used, in_place, *s});
      }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (progress) progress(1.0, r.seconds);
  return r;
}

void measure_fabric(Fabric& f, const Plan& p, Results& r) {
  r.fabric = f.link();
  const std::string group = " x" + std::to_string(f.ranks()) + " over " + std::to_string(f.nodes()) + " nodes ";
  for (const auto& [op, in_place] : collective_runs(p))
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

}  // namespace arlsim::calib
