// A device and helpers the calibration tests share: a fake device whose times follow known curves,
// a small plan for it, and a profile written and read back.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include "calib/harness/harness.h"
#include "sim/input/check.h"

namespace arlsim::test {


// A device whose times follow known curves: GEMMs at k / (k + 300) of a 1 TFLOP/s peak, streaming
// kernels at 80% of 100 GB/s, launches of 7 us. The warm-up runs 5x slower and the three repeats
// swing by +20% and -10% around the curve: the median must recover it exactly.
class FakeDevice final : public calib::Device {
 public:
  double peak = 1e12, bandwidth = 100e9;
  bool nominal = true;
  std::set<std::tuple<int64_t, int64_t, int64_t>> broken;  // points whose check fails
  std::set<std::tuple<int64_t, int64_t, int64_t>> broken_fp8;
  bool fp8 = false;  // also runs fp8 GEMMs: a 2 TFLOP/s peak, at k / (k + 600) of it
  static double fp8_efficiency(int64_t k) { return static_cast<double>(k) / static_cast<double>(k + 600); }

  static double efficiency(int64_t k) { return static_cast<double>(k) / static_cast<double>(k + 300); }

  calib::DeviceInfo info() const override {
    calib::DeviceInfo i;
    i.backend = "fake";
    i.name = "fake device";
    i.machine = "test";
    i.gemm_dtype = "bf16";
    i.memory_bytes = 16.0 * (1 << 30);
    i.compute_units = 100;
    i.max_ranks = 8;
    i.cores = 64;
    i.gemm_tile_m = i.gemm_tile_n = 128;
    if (fp8) i.other_gemm_dtypes = {{"fp8", nominal ? 2 * peak : 0.0}};
    i.graphs = graphs;
    if (nominal) {
      i.peak_flops = peak;
      i.memory_bandwidth = bandwidth;
      i.host_link_bandwidth = 25e9;
    }
    return i;
  }
  std::optional<double> gemm(int64_t m, int64_t n, int64_t k) override {
    peers_at_gemm.insert(peers_);
    if (broken.count({m, n, k})) return std::nullopt;
    return swing(2.0 * static_cast<double>(m * n) * static_cast<double>(k) / (peak * efficiency(k)), gemm_calls_++);
  }
  std::optional<double> gemm_in(const std::string& dtype, int64_t m, int64_t n, int64_t k) override {
    if (dtype != "fp8" || !fp8 || broken_fp8.count({m, n, k})) return std::nullopt;
    return swing(2.0 * static_cast<double>(m * n) * static_cast<double>(k) / (2 * peak * fp8_efficiency(k)), gemm_calls_++);
  }
  // Attention at 40% of the peak forward, 30% forward and backward.
  std::optional<double> attention(int64_t seq, int64_t head_dim, bool backward) override {
    return swing(calib::attention_flops(seq, head_dim, backward) / (peak * (backward ? 0.3 : 0.4)), attention_calls_++);
  }
  // Up to cache_bytes the kernels run from a cache, three times as fast; the norm at norm_speed.
  double cache_bytes = 0, norm_speed = 1;
  std::optional<double> memory(calib::MemoryKernel kernel, double bytes) override {
    const double speed = kernel == calib::MemoryKernel::norm ? norm_speed : 1.0;
    return swing(bytes / ((bytes <= cache_bytes ? 3 : 1) * 0.8 * speed * bandwidth), memory_calls_++);
  }
  // Decode attention: a fixed 4 us + 10 ns per sequence, and the cache (bf16) at 90% of the
  // bandwidth times b / (b + 1) for b sequences.
  static double decode_fixed(int64_t b) { return 4e-6 + 1e-8 * static_cast<double>(b); }
  double decode_bandwidth(int64_t b) const { return 0.9 * bandwidth * static_cast<double>(b) / static_cast<double>(b + 1); }
  std::optional<double> decode_attention(int64_t batch, int64_t len, int64_t heads, int64_t kv_heads, int64_t dim) override {
    CHECK(heads % kv_heads == 0);
    const double bytes = calib::decode_kv_bytes(batch, len, kv_heads, dim, 2);
    return swing(decode_fixed(batch) + bytes / decode_bandwidth(batch), decode_calls_++);
  }
  std::optional<double> launch() override { return 7e-6; }
  bool graphs = false;  // replays graphs whose kernels take 1.5 us each
  std::optional<double> graph_kernel(int64_t) override { return graphs ? std::optional<double>(1.5e-6) : std::nullopt; }
  double copy_overhead_s = 0;  // a host copy's fixed time
  std::optional<double> host_copy(double bytes) override { return bytes / 20e9 + copy_overhead_s; }  // 20 GB/s
  // Held back to back, the GEMM runs at efficiency(k) of the peak in its first window, then at
  // 0.8 of that (the power limit); `held` false: not measured; `held_fails`: its last window fails.
  bool held = true, held_fails = false;
  std::vector<double> held_gemm(int64_t m, int64_t n, int64_t k, double seconds, double window_s) override {
    if (!held) return {};
    std::vector<double> windows;
    const double t = 2.0 * static_cast<double>(m * n) * static_cast<double>(k) / (peak * efficiency(k));
    for (double at = 0; at < seconds; at += window_s) windows.push_back(at == 0 ? t : t / 0.8);
    if (held_fails) windows.back() = 0;
    return windows;
  }
  // Collectives: 3 us, 5 us per ring step (2(n - 1) for an all-reduce, n - 1 otherwise), and the
  // bytes each rank moves (bytes x the bus factor) at 10 GB/s.
  static double collective_seconds(model::CollectiveOp op, double bytes, int64_t n) {
    const double steps = op == model::CollectiveOp::all_reduce ? 2.0 * static_cast<double>(n - 1) : static_cast<double>(n - 1);
    return 3e-6 + steps * 5e-6 + bytes * model::bus_factor(op, n) / 10e9;
  }
  // In place a collective takes 1 us less (no separate input to read on its first step).
  std::optional<double> collective(model::CollectiveOp op, double bytes, int64_t n, double* used, bool in_place) override {
    *used = bytes;
    peers_at_collective.insert(peers_);
    if (in_place) ++in_place_calls;
    if (in_place && fail_in_place) return std::nullopt;
    return collective_seconds(op, bytes, n) - (in_place ? 1e-6 : 0.0);
  }
  int64_t in_place_calls = 0;
  bool fail_in_place = false;  // every in-place collective fails its check
  // Busy peers: what busy_peers() was told, and how many were busy at each kind of measurement.
  void busy_peers(int64_t peers) override { peers_ = peers; }
  int64_t peers_ = 0;
  std::set<int64_t> peers_at_gemm, peers_at_collective;
  std::string problem() const override { return "the fake's check failed"; }

 private:
  // Call i of a point: warm-up (i % 4 == 0) 5x, then 1.2x, 1x, 0.9x.
  static double swing(double t, int64_t call) {
    static const double factor[] = {5.0, 1.2, 1.0, 0.9};
    return t * factor[call % 4];
  }
  int64_t gemm_calls_ = 0, memory_calls_ = 0, attention_calls_ = 0, decode_calls_ = 0;
};

inline calib::Plan small_plan(const calib::Device& d) {
  calib::Plan p = calib::make_plan(
      d.info(), {calib::Op::gemm, calib::Op::attention, calib::Op::memory, calib::Op::launch, calib::Op::host}, true);
  p.attention_seq = {512, 2048};
  p.gemm_m = {256, 1024};
  p.gemm_n = {512, 2048};
  p.gemm_k = {256, 1024, 4096};
  p.memory_bytes = {1 << 20, 64 << 20};
  p.decode_batch = {1, 8, 64};
  p.decode_kv_len = {1024, 4096, 16384};
  p.decode_max_bytes = 0;
  p.launches_per_sample = 10;
  return p;
}

// This process's folder for written profiles, removed when the process ends.
inline std::filesystem::path temp_dir() {
  struct Folder {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("arlsim-calib-test-" + std::to_string(::getpid()));
    Folder() { std::filesystem::create_directories(path); }
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder folder;
  std::filesystem::create_directories(folder.path);  // again after a test that removed it
  return folder.path;
}

inline input::GpuProfile load(const std::string& path) {
  input::Diagnostics diag;
  auto doc = input::check_document(path, input::SpecKind::gpu, {}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::GpuProfile>(doc->spec);
}

inline input::GpuProfile round_trip(const calib::Results& r, const std::string& file) {
  const auto path = (temp_dir() / file).string();
  REQUIRE(calib::write_atomically(path, calib::profile_json(r, {"fake", "test", "2026-01-01"})).empty());
  return load(path);
}

}  // namespace arlsim::test
