#include "calib/harness/harness.h"
#include "calib/cuda/cuda_peaks.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "sim/input/check.h"
#include "sim/model/compute.h"
#include "sim/model/cost_model.h"
#include "calib/cpu/cpu_device.h"

using namespace arlsim;

namespace {

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

calib::Plan small_plan(const calib::Device& d) {
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
std::filesystem::path temp_dir() {
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

input::GpuProfile load(const std::string& path) {
  input::Diagnostics diag;
  auto doc = input::check_document(path, input::SpecKind::gpu, {}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::GpuProfile>(doc->spec);
}

input::GpuProfile round_trip(const calib::Results& r, const std::string& file) {
  const auto path = (temp_dir() / file).string();
  REQUIRE(calib::write_atomically(path, calib::profile_json(r, {"fake", "test", "2026-01-01"})).empty());
  return load(path);
}

}  // namespace

TEST_CASE("calibrate: medians and jitter") {
  const auto s = calib::stat_of({3, 1, 2});
  CHECK(s.median == 2);
  CHECK(s.jitter == doctest::Approx(1.0));  // (3 - 1) / 2
  CHECK(s.samples == 3);
  CHECK(calib::stat_of({4, 1, 2, 3}).median == doctest::Approx(2.5));
  CHECK(calib::stat_of({}).samples == 0);
}

TEST_CASE("calibrate: the ops --ops takes, and a plan of complete grids with at least three repeats") {
  CHECK(calib::find_op("gemm") == calib::Op::gemm);
  CHECK(calib::find_op("memory") == calib::Op::memory);
  CHECK(!calib::find_op("attention-v2"));
  CHECK(calib::op_list() == "gemm, attention, memory, launch, collective, p2p, host");
  // FlashAttention's convention: causal forward 2 s^2 d per head, with the backward 3.5x.
  CHECK(calib::attention_flops(1024, 128, false) == 2.0 * 1024 * 1024 * 128);
  CHECK(calib::attention_flops(1024, 128, true) == 3.5 * 2.0 * 1024 * 1024 * 128);
  FakeDevice d;
  for (bool quick : {true, false}) {
    const auto p = calib::make_plan(d.info(), {calib::Op::gemm}, quick);
    CHECK(p.repeats >= 3);
    CHECK(p.gemm_m.size() >= 3);
    CHECK(p.gemm_k.size() >= 3);
    CHECK(std::is_sorted(p.memory_bytes.begin(), p.memory_bytes.end()));
  }
  // Estimated time: every run of every point at the given rates.
  calib::Plan p;
  p.ops = {calib::Op::gemm, calib::Op::launch};
  p.gemm_m = p.gemm_n = p.gemm_k = {1000};
  p.launches_per_sample = 10;
  CHECK(calib::estimated_seconds(p, 2e9, 1e9, 1e-3) == doctest::Approx(4 * (2.0 * 1e9 / 2e9) + 4 * 10 * 1e-3));
}

TEST_CASE("calibrate: a fake device's known curves come back exactly, and the profile checks") {
  FakeDevice d;
  const auto plan = small_plan(d);
  std::vector<double> fractions;
  const auto r = calib::measure(d, plan, [&](double f, double) { fractions.push_back(f); });
  CHECK(r.excluded.empty());
  REQUIRE(r.gemm.size() == 2 * 2 * 3);
  CHECK(std::is_sorted(fractions.begin(), fractions.end()));
  // The estimated costs add up: the last measurement already brings the bar to the end.
  REQUIRE(fractions.size() >= 2);
  CHECK(fractions[fractions.size() - 2] == doctest::Approx(1.0));
  for (const auto& g : r.gemm) {
    const double t = 2.0 * static_cast<double>(g.m * g.n) * static_cast<double>(g.k) / (d.peak * FakeDevice::efficiency(g.k));
    CHECK(g.seconds.median == doctest::Approx(t));
    CHECK(g.seconds.jitter == doctest::Approx(0.3));  // (1.2 - 0.9) / 1
  }
  REQUIRE(r.launch);
  CHECK(r.launch->median == doctest::Approx(7e-6));
  const auto g = round_trip(r, "fake.json");
  CHECK(g.provenance.kind == "measured");
  CHECK(g.peak(input::Dtype::bf16) == doctest::Approx(1e12).epsilon(1e-4));
  REQUIRE(g.gemm_efficiency.size() == 12);
  for (const auto& p : g.gemm_efficiency) CHECK(p.efficiency == doctest::Approx(FakeDevice::efficiency(p.k)).epsilon(1e-3));
  CHECK(g.memory_bound_efficiency == doctest::Approx(0.8));
  CHECK(g.memory_bandwidth_bytes_per_s == doctest::Approx(100e9).epsilon(1e-4));
  CHECK(g.host_link.achieved() == doctest::Approx(20e9).epsilon(1e-4));  // measured, over the nominal 25
  CHECK(g.kernel_launch_overhead.seconds() == doctest::Approx(7e-6));
  REQUIRE(g.attention_efficiency.size() == 4);
  for (const auto& a : g.attention_efficiency) {
    CHECK(a.causal);
    CHECK(a.head_dim == 128);
    CHECK(a.efficiency == doctest::Approx(a.pass == "fwd" ? 0.4 : 0.3));
  }
  // The cost model reads the grid: at a grid point its efficiency, between two k linearly.
  const model::ComputeModel c(g, input::Dtype::bf16);
  CHECK(c.in_gemm_grid(256, 512, 640));
  CHECK(!c.in_gemm_grid(256, 512, 8192));
  const double e1 = c.gemm_efficiency(1024, 2048, 256), e2 = c.gemm_efficiency(1024, 2048, 1024);
  CHECK(e1 == doctest::Approx(FakeDevice::efficiency(256)).epsilon(1e-3));
  CHECK(c.gemm_efficiency(1024, 2048, 640) == doctest::Approx((e1 + e2) / 2).epsilon(1e-6));
}

TEST_CASE("calibrate: memory-bound kernels by size come back exactly, and the cost model takes a cache's rate where it beats streaming") {
  FakeDevice d;
  d.cache_bytes = 2 << 20;  // the 1 MiB kernels stay in the cache, the 64 MiB ones stream
  const auto plan = small_plan(d);
  REQUIRE(plan.memory_bytes == std::vector<double>{1 << 20, 64 << 20});
  const auto g = round_trip(calib::measure(d, plan), "fake-memory.json");
  REQUIRE(g.memory_by_size.size() == 2);
  CHECK(g.memory_by_size[0].bytes == 1 << 20);
  CHECK(g.memory_by_size[0].bandwidth_bytes_per_s == doctest::Approx(2.4 * d.bandwidth).epsilon(1e-4));
  CHECK(g.memory_by_size[1].bandwidth_bytes_per_s == doctest::Approx(0.8 * d.bandwidth).epsilon(1e-4));
  CHECK(g.memory_bound_efficiency == doctest::Approx(0.8));  // streaming: the largest size
  const model::ComputeModel c(g, input::Dtype::bf16);
  const double launch = c.launch_overhead_s(), streaming = 0.8 * d.bandwidth;
  // At a measured size its rate; between two, linear in log bytes (8 MiB is half way from 1 to 64).
  CHECK(c.memory_bound(1 << 20, 1).seconds == doctest::Approx((1 << 20) / (2.4 * d.bandwidth) + launch).epsilon(1e-4));
  CHECK(c.memory_rate_at(8 << 20) == doctest::Approx(1.6 * d.bandwidth).epsilon(1e-4));
  // Smaller than the table: its smallest size's rate; larger: streaming.
  CHECK(c.memory_rate_at(64 << 10) == doctest::Approx(2.4 * d.bandwidth).epsilon(1e-4));
  CHECK(c.memory_rate_at(1 << 30) == doctest::Approx(streaming).epsilon(1e-4));
  // The size is a kernel's: four kernels of 1 MiB each run at the cache's rate.
  CHECK(c.memory_bound(4 << 20, 4).seconds == doctest::Approx((4 << 20) / (2.4 * d.bandwidth) + 4 * launch).epsilon(1e-4));
  // Work priced as a whole (no kernels) streams.
  CHECK(c.memory_bound(1 << 20, 0).seconds == doctest::Approx((1 << 20) / streaming).epsilon(1e-4));
  // A table below the streaming rate (a GPU's small kernels, mostly fixed time) changes nothing.
  input::GpuProfile slow = g;
  for (auto& p : slow.memory_by_size) p.bandwidth_bytes_per_s = 0.1 * d.bandwidth;
  const model::ComputeModel cs(slow, input::Dtype::bf16);
  CHECK(cs.memory_rate_at(1 << 20) == doctest::Approx(streaming).epsilon(1e-4));
}

TEST_CASE("calibrate: each memory-bound kernel's rates by size come back, and the cost model prices a kind by its own") {
  FakeDevice d;
  d.cache_bytes = 2 << 20;
  d.norm_speed = 0.5;  // the norm kernel streams at half the others' rate
  const auto g = round_trip(calib::measure(d, small_plan(d)), "fake-kinds.json");
  const auto& norm = g.memory_by_kernel[static_cast<int>(input::ElementwiseKind::norm)];
  const auto& add = g.memory_by_kernel[static_cast<int>(input::ElementwiseKind::add)];  // the triad's
  REQUIRE(norm.size() == 2);
  REQUIRE(add.size() == 2);
  CHECK(g.memory_by_kernel[static_cast<int>(input::ElementwiseKind::any)].empty());
  CHECK(norm[0].bandwidth_bytes_per_s == doctest::Approx(1.2 * d.bandwidth).epsilon(1e-4));
  CHECK(norm[1].bandwidth_bytes_per_s == doctest::Approx(0.4 * d.bandwidth).epsilon(1e-4));
  CHECK(add[1].bandwidth_bytes_per_s == doctest::Approx(0.8 * d.bandwidth).epsilon(1e-4));
  CHECK(g.memory_bound_efficiency == doctest::Approx(0.8));  // the four kinds' median
  const model::ComputeModel c(g, input::Dtype::bf16);
  const double launch = c.launch_overhead_s();
  using input::ElementwiseKind;
  // A norm at its own rates, streaming and from the cache; an add at the triad's; work of no one
  // kind at the medians.
  CHECK(c.memory_bound(1 << 30, 1, ElementwiseKind::norm).seconds ==
        doctest::Approx((1 << 30) / (0.4 * d.bandwidth) + launch).epsilon(1e-4));
  CHECK(c.memory_rate_at(1 << 20, ElementwiseKind::norm) == doctest::Approx(1.2 * d.bandwidth).epsilon(1e-4));
  CHECK(c.memory_rate_at(1 << 30, ElementwiseKind::add) == doctest::Approx(0.8 * d.bandwidth).epsilon(1e-4));
  CHECK(c.memory_rate_at(1 << 30) == doctest::Approx(0.8 * d.bandwidth).epsilon(1e-4));
  CHECK(c.memory_bound(1 << 20, 0, ElementwiseKind::norm).seconds == doctest::Approx((1 << 20) / (0.4 * d.bandwidth)).epsilon(1e-4));
  // A table that stops short of the largest size measured (its streaming point failed) is not used.
  input::GpuProfile short_norm = g;
  short_norm.memory_by_kernel[static_cast<int>(ElementwiseKind::norm)].pop_back();
  const model::ComputeModel cshort(short_norm, input::Dtype::bf16);
  CHECK(cshort.memory_rate_at(1 << 30, ElementwiseKind::norm) == doctest::Approx(c.memory_rate_at(1 << 30)));
  CHECK(cshort.memory_rate_at(1 << 20, ElementwiseKind::norm) == doctest::Approx(c.memory_rate_at(1 << 20)));
  // A profile without the table prices every kind as before.
  input::GpuProfile plain = g;
  for (auto& t : plain.memory_by_kernel) t.clear();
  const model::ComputeModel p(plain, input::Dtype::bf16);
  CHECK(p.memory_rate_at(1 << 30, ElementwiseKind::norm) == doctest::Approx(p.memory_rate_at(1 << 30)));
  CHECK(p.memory_rate_at(1 << 20, ElementwiseKind::norm) == doctest::Approx(p.memory_rate_at(1 << 20)));
}

TEST_CASE("calibrate: decode attention's fit per batch comes back exactly and the cost model reads it") {
  FakeDevice d;
  const auto plan = small_plan(d);
  const auto r = calib::measure(d, plan);
  CHECK(r.excluded.empty());
  REQUIRE(r.decode.size() == 3 * 3);
  for (int64_t b : plan.decode_batch) {
    const auto f = calib::fit_decode(b, r.decode);
    REQUIRE(f);
    CHECK(f->fixed_s == doctest::Approx(FakeDevice::decode_fixed(b)).epsilon(1e-6));
    CHECK(f->bandwidth == doctest::Approx(d.decode_bandwidth(b)).epsilon(1e-9));
    CHECK(f->worst_residual < 1e-9);
  }
  const auto g = round_trip(r, "fake-decode.json");
  REQUIRE(g.decode_attention.size() == 3);
  CHECK(g.decode_attention[1].batch == 8);
  const model::ComputeModel c(g, input::Dtype::bf16);
  const double bytes = 3e8;
  // At a measured batch: its fixed time per layer and its bandwidth.
  CHECK(c.in_decode_table(8));
  CHECK(c.decode_attention(bytes, 32, 8).seconds ==
        doctest::Approx(32 * FakeDevice::decode_fixed(8) + bytes / d.decode_bandwidth(8)).epsilon(1e-6));
  // Between two batches, linear in the batch: fixed time and seconds per byte (4 is 3/7 of 1 to 8).
  const double w = 3.0 / 7.0;
  const double fixed = (1 - w) * FakeDevice::decode_fixed(1) + w * FakeDevice::decode_fixed(8);
  const double per_byte = (1 - w) / d.decode_bandwidth(1) + w / d.decode_bandwidth(8);
  CHECK(c.decode_attention(bytes, 32, 4).seconds == doctest::Approx(32 * fixed + bytes * per_byte).epsilon(1e-6));
  // Affine in the bytes, as decode windows need.
  CHECK(c.decode_attention(2 * bytes, 32, 4).seconds - c.decode_attention(bytes, 32, 4).seconds ==
        doctest::Approx(bytes * per_byte).epsilon(1e-6));
  // Outside the table: the analytic memory-bound rate and a launch per layer.
  CHECK(!c.in_decode_table(65));
  CHECK(c.decode_attention(bytes, 32, 65).seconds ==
        doctest::Approx(bytes / c.memory_rate() + 32 * c.launch_overhead_s()).epsilon(1e-9));
  // The calibration section keeps every point and each batch's fit.
  std::ifstream in(temp_dir() / "fake-decode.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"decode_attention\": {") != std::string::npos);
  CHECK(text.find("\"worst_residual\"") != std::string::npos);
}

TEST_CASE("calibrate: GEMMs in another dtype make their own grid against their own peak") {
  FakeDevice d;
  d.fp8 = true;
  d.broken_fp8 = {{256, 512, 1024}};
  const auto plan = small_plan(d);
  REQUIRE(plan.gemm_dtypes == std::vector<std::string>{"fp8"});
  const auto r = calib::measure(d, plan);
  REQUIRE(r.excluded.size() == 1);
  CHECK(r.excluded[0] == "gemm fp8 256x512x1024: the fake's check failed");
  REQUIRE(r.gemm_by_dtype.at("fp8").size() == 11);
  const auto g = round_trip(r, "fake-fp8.json");
  CHECK(g.peak(input::Dtype::fp8) == doctest::Approx(2e12).epsilon(1e-4));
  // The bf16 grid is whole; the fp8 grid lost k = 1024 with its failed point.
  CHECK(g.gemm_efficiency.size() == 12);
  REQUIRE(g.gemm_by_dtype.count(input::Dtype::fp8));
  const auto& fp8 = g.gemm_by_dtype.at(input::Dtype::fp8);
  CHECK(fp8.size() == 8);
  for (const auto& p : fp8) {
    CHECK(p.k != 1024);
    CHECK(p.efficiency == doctest::Approx(FakeDevice::fp8_efficiency(p.k)).epsilon(1e-3));
  }
  CHECK(g.provenance.notes.find("k = 1024 left the fp8 GEMM grid") != std::string::npos);
  // Each dtype's cost model reads its own grid.
  const model::ComputeModel bf16(g, input::Dtype::bf16), f8(g, input::Dtype::fp8);
  CHECK(bf16.gemm_efficiency(1024, 2048, 4096) == doctest::Approx(FakeDevice::efficiency(4096)).epsilon(1e-3));
  CHECK(f8.gemm_efficiency(1024, 2048, 4096) == doctest::Approx(FakeDevice::fp8_efficiency(4096)).epsilon(1e-3));
  CHECK(f8.gemm(1024, 2048, 4096).seconds ==
        doctest::Approx(2.0 * 1024 * 2048 * 4096 / (2e12 * FakeDevice::fp8_efficiency(4096)) + f8.launch_overhead_s())
            .epsilon(1e-3));
  // Without a nominal peak the best fp8 rate stands in, and the notes say so.
  FakeDevice u;
  u.fp8 = true;
  u.nominal = false;
  const auto gu = round_trip(calib::measure(u, small_plan(u)), "fake-fp8-best.json");
  CHECK(gu.provenance.notes.find("peak fp8: the best measured GEMM rate") != std::string::npos);
}

TEST_CASE("calibrate: a device with graphs gets its graph-replayed kernel time; one without, none") {
  FakeDevice d;
  d.graphs = true;
  const auto plan = small_plan(d);
  CHECK(plan.graph_kernels > 0);
  const auto r = calib::measure(d, plan);
  REQUIRE(r.graph_kernel);
  CHECK(r.graph_kernel->median == doctest::Approx(1.5e-6));
  const auto g = round_trip(r, "fake-graph.json");
  CHECK(g.graph_kernel_overhead.seconds() == doctest::Approx(1.5e-6));
  const model::ComputeModel c(g, input::Dtype::bf16);
  CHECK(c.graph_kernel_s() == doctest::Approx(1.5e-6));
  FakeDevice none;
  CHECK(small_plan(none).graph_kernels == 0);
  const auto r2 = calib::measure(none, small_plan(none));
  CHECK(!r2.graph_kernel);
  CHECK(r2.excluded.empty());
  CHECK(round_trip(r2, "fake-nograph.json").graph_kernel_overhead.seconds() == 0);
}

TEST_CASE("calibrate: host copies give the link's rate and each copy's fixed time, which the cost model charges a copy") {
  FakeDevice d;
  d.copy_overhead_s = 7e-6;
  const auto plan = small_plan(d);
  REQUIRE(plan.host_bytes.size() >= 2);
  CHECK(plan.host_bytes.front() <= 4096);  // small enough that the fixed time is most of it
  const auto g = round_trip(calib::measure(d, plan), "fake-copy.json");
  // The rate between the smallest and the largest copy, not the largest's own (which holds the
  // fixed time too), and the smallest's excess over it.
  CHECK(g.host_link.achieved() == doctest::Approx(20e9).epsilon(1e-6));
  CHECK(g.host_copy_overhead.seconds() == doctest::Approx(7e-6).epsilon(1e-6));
  input::ClusterSpec c;
  c.gpus_per_node = 1;  // one device: nothing to price between devices
  c.gpu = g;
  const model::AnalyticCostModel cost(c, input::Dtype::bf16);
  CHECK(cost.seconds(model::HostTransferOp{70e3}) == doctest::Approx(70e3 / 20e9 + 7e-6));
  CHECK(cost.seconds(model::HostTransferOp{0}) == 0);  // no copy, no fixed time
  // A device whose copies have none gets 0, and copies cost their bytes alone.
  FakeDevice none;
  const auto g0 = round_trip(calib::measure(none, small_plan(none)), "fake-copy-none.json");
  CHECK(g0.host_copy_overhead.seconds() == doctest::Approx(0).epsilon(1e-12));
}

TEST_CASE("calibrate: decode points keep a batch only with two lengths that fit; a fit needs a positive slope") {
  calib::Plan p;
  p.decode_batch = {1, 4, 16};
  p.decode_kv_len = {1000, 2000, 4000};
  p.decode_kv_heads = 2;
  p.decode_head_dim = 10;
  // 2 x b x len x 2 x 10 x 2 bytes = 80 b len: a cap of 640,000 keeps b = 1 (every length), b = 4
  // (1000 and 2000) and drops b = 16 (none fits).
  p.decode_max_bytes = 640000;
  const auto points = calib::decode_points(p, 2);
  using P = std::pair<int64_t, int64_t>;
  CHECK(points == std::vector<P>{{1, 1000}, {1, 2000}, {1, 4000}, {4, 1000}, {4, 2000}});
  CHECK(calib::decode_kv_bytes(4, 2000, 2, 10, 2) == 640000);
  // A negative intercept: the fit goes through the origin instead.
  std::vector<calib::DecodeResult> rs = {{1, 1000, 1e6, {1e-6, 0, 3}}, {1, 2000, 2e6, {3e-6, 0, 3}}};
  auto f = calib::fit_decode(1, rs);
  REQUIRE(f);
  CHECK(f->fixed_s == 0);
  CHECK(f->bandwidth == doctest::Approx(1.0 / ((1e6 * 1e-6 + 2e6 * 3e-6) / (1e12 + 4e12))));
  // Falling time with bytes gives nothing; one point gives nothing.
  rs[1].seconds.median = 1e-7;
  rs[0].seconds.median = 1e-5;
  CHECK(!calib::fit_decode(1, rs));
  CHECK(!calib::fit_decode(1, {rs[0]}));
}

TEST_CASE("calibrate: without a nominal peak the best GEMM stands in; a failed check is excluded, never written") {
  FakeDevice d;
  d.nominal = false;
  d.broken = {{1024, 512, 256}};
  const auto r = calib::measure(d, small_plan(d));
  REQUIRE(r.excluded.size() == 1);
  CHECK(r.excluded[0] == "gemm 1024x512x256: the fake's check failed");
  const auto g = round_trip(r, "fake-broken.json");
  // k = 256 left the grid with its failed point: 2 x 2 x 2 remain, and the best has efficiency 1.
  REQUIRE(g.gemm_efficiency.size() == 8);
  double best = 0;
  for (const auto& p : g.gemm_efficiency) {
    CHECK(p.k != 256);
    best = std::max(best, p.efficiency);
  }
  CHECK(best == doctest::Approx(1.0));
  CHECK(g.peak(input::Dtype::bf16) == doctest::Approx(d.peak * FakeDevice::efficiency(4096)).epsilon(1e-4));
  CHECK(g.provenance.notes.find("k = 256 left the bf16 GEMM grid") != std::string::npos);
  CHECK(g.provenance.notes.find("excluded (failed its check): gemm 1024x512x256") != std::string::npos);
  // The streaming kernels' best rate stands in for the bandwidth.
  CHECK(g.memory_bandwidth_bytes_per_s == doctest::Approx(80e9).epsilon(1e-4));
  CHECK(g.memory_bound_efficiency == doctest::Approx(1.0));
}

TEST_CASE("calibrate: a profile is written whole or not at all") {
  const auto dir = temp_dir();
  const auto path = (dir / "atomic.json").string();
  CHECK(calib::write_atomically(path, "{\"a\": 1}\n").empty());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "{\"a\": 1}\n");
  CHECK(!std::filesystem::exists(path + ".partial"));
  // A folder that does not exist: an error, and no file.
  const auto missing = (dir / "no-such-folder" / "x.json").string();
  CHECK(!calib::write_atomically(missing, "{}").empty());
  CHECK(!std::filesystem::exists(missing));
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate: collectives in nccl-tests' bus bandwidth, the largest size per group, the ring's latency fitted") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  CHECK(p.collective_ranks == std::vector<int64_t>{2, 4});
  CHECK(p.collective_bytes.front() == 8);
  const auto r = calib::measure(d, p);
  // Six ops out of place and the four NCCL runs in place (not all-to-all, not send/recv) in place
  // too, at each size of each group size.
  REQUIRE(r.collectives.size() == 2 * (6 + 4) * p.collective_bytes.size());
  int64_t in_place = 0;
  for (const auto& c : r.collectives) {
    in_place += c.in_place ? 1 : 0;
    CHECK_FALSE((c.in_place && (c.op == model::CollectiveOp::all_to_all || c.op == model::CollectiveOp::send_recv)));
  }
  CHECK(in_place == 2 * 4 * static_cast<int64_t>(p.collective_bytes.size()));
  for (const auto& c : r.collectives) {
    if (c.in_place) {
      CHECK(c.seconds.median == doctest::Approx(FakeDevice::collective_seconds(c.op, c.bytes, c.ranks) - 1e-6));
      continue;
    }
    const double n = static_cast<double>(c.ranks);
    double factor = 1;  // broadcast, send/recv
    if (c.op == model::CollectiveOp::all_reduce) factor = 2 * (n - 1) / n;
    if (c.op == model::CollectiveOp::all_gather || c.op == model::CollectiveOp::reduce_scatter ||
        c.op == model::CollectiveOp::all_to_all)
      factor = (n - 1) / n;
    CHECK(c.algbw() == doctest::Approx(c.bytes / FakeDevice::collective_seconds(c.op, c.bytes, c.ranks)));
    CHECK(c.busbw() == doctest::Approx(c.algbw() * factor));
  }
  const auto g = round_trip(r, "fake-collectives.json");
  // One point per op and group size: its bus bandwidth at the largest size.
  REQUIRE(g.collectives.size() == 12);
  const double top = p.collective_bytes.back();
  for (const auto& c : g.collectives) {
    CHECK(c.scope == "intra_node");
    const auto op = c.op == "all_reduce" ? model::CollectiveOp::all_reduce : c.op == "send_recv" ? model::CollectiveOp::send_recv
                                                                                                : model::CollectiveOp::broadcast;
    if (c.op != "all_reduce" && c.op != "send_recv" && c.op != "broadcast") continue;
    CHECK(c.algorithm == (c.op == "send_recv" ? "direct" : "ring"));
    // From the in-place runs (1 us faster in the fake), but send/recv's from its out-of-place ones.
    const double in_place_s = op == model::CollectiveOp::send_recv ? 0 : 1e-6;
    const double want = top * model::bus_factor(op, c.ranks) / (FakeDevice::collective_seconds(op, top, c.ranks) - in_place_s);
    CHECK(c.bus_bandwidth_bytes_per_s == doctest::Approx(want).epsilon(1e-4));
  }
  // t = base + 2(n - 1) hop from the 8-byte in-place all-reduces of 2 and 4 ranks: 3 - 1 us and 5 us back.
  REQUIRE(g.collective_protocols.size() == 1);
  CHECK(g.collective_protocols[0].algorithm == "ring");
  CHECK(g.collective_protocols[0].base.seconds() == doctest::Approx(2e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  // The cost model prices collectives from it: the profile's all-reduce rate and latency come back.
  input::ClusterSpec cluster;
  cluster.gpu = g;
  cluster.gpus_per_node = 4;
  cluster.nodes = 1;
  cluster.gpu_link = g.gpu_link;
  REQUIRE(model::missing_collective_data(cluster).empty());
}

namespace {

// Sixteen processes on two nodes: 2 us, 5 us per ring step within a node and 12 us per step
// between nodes (2 x nodes of an all-reduce's 2(n - 1), nodes - 1 of the other rings, the one of
// a send/recv), and the bytes each process moves at 40 GB/s.
class FakeFabric final : public calib::Fabric {
 public:
  int64_t ranks() const override { return 16; }
  int64_t nodes() const override { return 2; }
  std::string link() const override { return "fake fabric"; }
  static double seconds(model::CollectiveOp op, double bytes) {
    const bool all_reduce = op == model::CollectiveOp::all_reduce, send_recv = op == model::CollectiveOp::send_recv;
    const double steps = all_reduce ? 30 : send_recv ? 1 : 15, between = all_reduce ? 4 : 1;
    return 2e-6 + (steps - between) * 5e-6 + between * 12e-6 + bytes * model::bus_factor(op, 16) / 40e9;
  }
  std::optional<double> collective(model::CollectiveOp op, double bytes, double* used, bool) override {
    *used = bytes;
    if (fail_broadcast && op == model::CollectiveOp::broadcast) return std::nullopt;
    return seconds(op, bytes);
  }
  std::string problem() const override { return "the fabric's check failed"; }
  bool fail_broadcast = false;
};

}  // namespace

TEST_CASE("calibrate: collectives across nodes become inter-node points, the hop between nodes and the NIC's efficiency") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  auto r = calib::measure(d, p);
  FakeFabric f;
  f.fail_broadcast = true;
  calib::measure_fabric(f, p, r);
  r.nic = {25e9, 0};
  // Every op at every size, the four NCCL runs in place too, less the broadcast's, which failed.
  REQUIRE(r.inter_node.size() == 8 * p.collective_bytes.size());
  CHECK(r.fabric == "fake fabric");
  CHECK(std::any_of(r.excluded.begin(), r.excluded.end(), [](const std::string& e) {
    return e.rfind("broadcast x16 over 2 nodes 8 B: the fabric's check failed", 0) == 0;
  }));
  for (const auto& c : r.inter_node) {
    CHECK(c.ranks == 16);
    CHECK(c.nodes == 2);
    CHECK(c.seconds.median == doctest::Approx(FakeFabric::seconds(c.op, c.bytes)));
  }
  const auto g = round_trip(r, "fake-inter-node.json");
  const double top = p.collective_bytes.back();
  int64_t inter = 0;
  double all_reduce_busbw = 0;
  for (const auto& c : g.collectives) {
    if (c.scope != "inter_node") continue;
    ++inter;
    CHECK(c.ranks == 16);
    CHECK(c.nodes == 2);
    CHECK(c.op != "broadcast");
    const auto op = c.op == "all_reduce"   ? model::CollectiveOp::all_reduce
                    : c.op == "send_recv"  ? model::CollectiveOp::send_recv
                    : c.op == "all_to_all" ? model::CollectiveOp::all_to_all
                    : c.op == "all_gather" ? model::CollectiveOp::all_gather
                                           : model::CollectiveOp::reduce_scatter;
    CHECK(c.algorithm == (c.op == "send_recv" || c.op == "all_to_all" ? "direct" : "ring"));
    const double want = top * model::bus_factor(op, 16) / FakeFabric::seconds(op, top);
    CHECK(c.bus_bandwidth_bytes_per_s == doctest::Approx(want).epsilon(1e-4));
    if (op == model::CollectiveOp::all_reduce) all_reduce_busbw = want;
  }
  CHECK(inter == 5);
  // The hop between nodes from the 8-byte all-reduce, with the hop and base fitted within a node
  // (5 us and 2 us): 12 us back.
  REQUIRE(g.collective_protocols.size() == 1);
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_inter_node.seconds() == doctest::Approx(12e-6).epsilon(1e-3));
  // The NIC's efficiency: the all-reduce's bus bandwidth over the 8 NICs a node's 8 processes use.
  CHECK(g.nic_bandwidth_bytes_per_s == doctest::Approx(25e9));
  CHECK(g.nic_efficiency == doctest::Approx(all_reduce_busbw / (8 * 25e9)).epsilon(1e-3));
  // The cost model prices a 16-GPU all-reduce over 2 nodes at the measured rate.
  input::ClusterSpec cluster;
  cluster.gpu = g;
  cluster.gpus_per_node = 8;
  cluster.nodes = 2;
  cluster.nics_per_node = 8;
  cluster.nic_bandwidth_bytes_per_s = g.nic_bandwidth_bytes_per_s;
  cluster.gpu_link = g.gpu_link;
  REQUIRE(model::missing_collective_data(cluster).empty());
  const model::CollectiveModel cm(cluster);
  CHECK(cm.inter_node_busbw(model::CollectiveOp::all_reduce, {16, 8}) == doctest::Approx(all_reduce_busbw).epsilon(1e-4));
  // Without the NIC's rate no efficiency is derived, and the notes say so.
  r.nic = {};
  const auto bare = round_trip(r, "fake-inter-node-bare.json");
  CHECK(bare.nic_efficiency == 0);
  CHECK(bare.provenance.notes.find("no NIC rate stated") != std::string::npos);
}

TEST_CASE("calibrate: the CUDA backend's nominal rates from what the runtime reports") {
  // A100: 108 SMs at 1,410 MHz, 2,048 dense bf16 FLOPs per SM per clock: 312 TFLOP/s.
  CHECK(calib::nominal_bf16_peak(8, 0, 108, 1410000) == doctest::Approx(311.9e12).epsilon(1e-3));
  CHECK(calib::bf16_flops_per_sm_clock(9, 0) == 4096);  // Hopper
  CHECK(calib::bf16_flops_per_sm_clock(8, 9) == 1024);  // Ada
  CHECK(calib::bf16_flops_per_sm_clock(7, 5) == 0);     // Turing: not known, the best GEMM stands in
  // fp16 at the bf16 rate from Ampere; fp8 at twice it on Ada, Hopper and Blackwell, not on A100.
  auto names = [](int major, int minor) {
    std::string s;
    for (const auto& r : calib::other_gemm_dtypes(major, minor)) s += std::string(r.dtype) + "x" + std::to_string(static_cast<int>(r.times_bf16)) + " ";
    return s;
  };
  CHECK(names(8, 0) == "fp16x1 ");
  CHECK(names(9, 0) == "fp16x1 fp8x2 ");
  CHECK(names(8, 9) == "fp16x1 fp8x2 ");
  CHECK(names(7, 5).empty());
  // HBM: two transfers per memory clock over the bus. A100 80GB: 1,593 MHz x 5,120 bits = 2.04 TB/s;
  // H100 SXM: 2,619 MHz x 5,120 bits = 3.35 TB/s.
  CHECK(calib::nominal_memory_bandwidth(1593000, 5120) == doctest::Approx(2.039e12).epsilon(1e-3));
  CHECK(calib::nominal_memory_bandwidth(2619000, 5120) == doctest::Approx(3.352e12).epsilon(1e-3));
}

TEST_CASE("calibrate: a sweep that leaves no usable profile is refused before it replaces anything") {
  FakeDevice d;
  d.nominal = false;
  calib::Plan p = small_plan(d);
  for (int64_t m : p.gemm_m)
    for (int64_t n : p.gemm_n)
      for (int64_t k : p.gemm_k) d.broken.insert({m, n, k});  // every GEMM fails: no peak
  const auto r = calib::measure(d, p);
  CHECK(r.gemm.empty());
  const auto dir = temp_dir();
  const auto path = (dir / "kept.json").string();
  REQUIRE(calib::write_atomically(path, "old\n").empty());
  auto check = [](const std::string& written) {
    input::Diagnostics diag;
    return input::check_document(written, input::SpecKind::gpu, {}, diag) ? std::string() : input::format_all(diag);
  };
  const std::string problem = calib::write_atomically(path, calib::profile_json(r, {"x", "test", "2026-01-01"}), check);
  CHECK(problem.find("peak") != std::string::npos);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "old\n");  // the old file stands
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate: a CPU's kernels are measured with the run's other devices busy, its collectives without") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  p.busy_peers = 3;  // as make_plan sets it for a CPU's 4 thread-devices
  calib::measure(d, p);
  CHECK(d.peers_at_gemm == std::set<int64_t>{3});
  CHECK(d.peers_at_collective == std::set<int64_t>{0});
  CHECK(d.peers_ == 0);
  // make_plan: a CPU's plan keeps one fewer than its largest group busy; a GPU's none.
  auto cpu = d.info();
  cpu.gemm_dtype = "fp32";
  CHECK(calib::make_plan(cpu, {calib::Op::gemm}, true, 4).busy_peers == 3);
  CHECK(calib::make_plan(d.info(), {calib::Op::gemm}, true, 4).busy_peers == 0);
}

TEST_CASE("calibrate: a GPU's collective groups go up to its node's GPUs; a machine of one GPU has none") {
  FakeDevice d;
  calib::DeviceInfo gpu = d.info();  // bf16: a GPU's plan
  const std::vector<calib::Op> ops = {calib::Op::collective};
  CHECK(calib::make_plan(gpu, ops, true).collective_ranks == std::vector<int64_t>{2, 4, 8});
  gpu.max_ranks = 1;
  const calib::Plan one = calib::make_plan(gpu, ops, true);
  CHECK(one.collective_ranks.empty());
  CHECK(calib::estimated_seconds(one, 1e12, 1e9, 1e-5) == 0.0);
  // Asked for (the program refuses --ranks on such a machine), a group is planned and each of its
  // points fails its check, reported.
  CHECK(calib::make_plan(gpu, ops, true, 2).collective_ranks == std::vector<int64_t>{2});
}

TEST_CASE("calibrate: collectives whose in-place runs all fail are fitted to their out-of-place runs") {
  FakeDevice d;
  d.fail_in_place = true;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::collective}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  const auto r = calib::measure(d, p);
  CHECK(d.in_place_calls > 0);
  for (const auto& c : r.collectives) CHECK_FALSE(c.in_place);
  CHECK_FALSE(r.excluded.empty());  // the failed in-place runs are reported
  const auto g = round_trip(r, "fake-no-in-place.json");
  REQUIRE(g.collective_protocols.size() == 1);
  // The out-of-place all-reduces' 3 us and 5 us per step.
  CHECK(g.collective_protocols[0].base.seconds() == doctest::Approx(3e-6).epsilon(1e-3));
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(5e-6).epsilon(1e-3));
  CHECK(g.collectives.size() == 2 * 5);
}

TEST_CASE("calibrate: send/recv alone fits its latency to one hop, not to a ring") {
  FakeDevice d;
  calib::Plan p = calib::make_plan(d.info(), {calib::Op::gemm, calib::Op::memory, calib::Op::p2p}, true, 4);
  p.gemm_m = p.gemm_n = p.gemm_k = {1024};
  p.memory_bytes = {1 << 20};
  const auto g = round_trip(calib::measure(d, p), "fake-p2p.json");
  REQUIRE(g.collective_protocols.size() == 1);
  // Both group sizes give one step: no base to separate, the mean time per hop (the fake's send/recv
  // takes 3 us + (n - 1) x 5 us: 8 us at 2 ranks, 18 us at 4).
  CHECK(g.collective_protocols[0].base.seconds() == 0);
  CHECK(g.collective_protocols[0].hop_intra_node.seconds() == doctest::Approx(13e-6).epsilon(1e-2));
  // Ops not asked for leave no points and no notes.
  CHECK(g.provenance.notes.find("GEMM grid") == std::string::npos);
  CHECK(g.attention_efficiency.empty());
}

TEST_CASE("calibrate: the CPU device's collectives among 3 threads, at sizes that do not split evenly, check out") {
  auto dev = calib::make_cpu_device();
  for (auto op : {model::CollectiveOp::all_reduce, model::CollectiveOp::all_gather, model::CollectiveOp::reduce_scatter,
                  model::CollectiveOp::all_to_all, model::CollectiveOp::broadcast, model::CollectiveOp::send_recv})
    for (double bytes : {4.0, 400.0, 100000.0}) {
      double used = 0;
      for (const bool in_place : {false, true}) {
        if (in_place && !calib::in_place_capable(op)) continue;
        const auto t = dev->collective(op, bytes, 3, &used, in_place);
        CHECK_MESSAGE(t.has_value(), model::collective_name(op), " ", bytes, (in_place ? " in place: " : ": "), dev->problem());
        CHECK(used >= bytes);
      }
    }
  // Attention forward and backward pass their reference rows at a length that is not a multiple of
  // the 128-query block.
  CHECK(dev->attention(300, 64, false).has_value());
  CHECK(dev->attention(300, 64, true).has_value());
}

TEST_CASE("calibrate: a GPU's GEMM held back to back gives the profile the rate the power limit sustains") {
  FakeDevice d;
  const auto plan = small_plan(d);
  REQUIRE(plan.held_seconds > 0);
  const auto r = calib::measure(d, plan);
  REQUIRE(r.held);
  const int64_t x = plan.held_mnk;
  const double first = FakeDevice::efficiency(x) * d.peak;
  REQUIRE(r.held->window_flops.size() >= 2);
  CHECK(r.held->window_flops.front() == doctest::Approx(first));
  CHECK(r.held->held_flops == doctest::Approx(0.8 * first));
  const auto g = round_trip(r, "fake-held.json");
  CHECK(g.power_limited_rate(input::Dtype::bf16).gemm_flops_per_s == doctest::Approx(0.8 * first).epsilon(1e-4));
  CHECK(g.power_limited_rate(input::Dtype::bf16).attention_flops_per_s == 0);
  // The cost model runs no GEMM faster than that.
  const model::ComputeModel c(g, input::Dtype::bf16);
  CHECK(c.gemm(x, x, x).seconds - c.launch_overhead_s() >= 2.0 * std::pow(static_cast<double>(x), 3) / (0.8 * first) * (1 - 1e-4));
  // A device that does not hold one, one whose held run fails its check, and a CPU's plan: none.
  FakeDevice none;
  none.held = false;
  const auto r2 = calib::measure(none, small_plan(none));
  CHECK(!r2.held);
  CHECK(r2.excluded.empty());
  CHECK(round_trip(r2, "fake-noheld.json").power_limited.empty());
  FakeDevice failing;
  failing.held_fails = true;
  const auto r3 = calib::measure(failing, small_plan(failing));
  CHECK(!r3.held);
  REQUIRE(r3.excluded.size() == 1);
  CHECK(r3.excluded.front().find("held gemm") == 0);
  calib::DeviceInfo cpu = d.info();
  cpu.gemm_dtype = "fp32";
  CHECK(calib::make_plan(cpu, {calib::Op::gemm}, true).held_seconds == 0);
  CHECK(calib::make_plan(d.info(), {calib::Op::attention}, true).held_seconds == 0);
}
