#include "calib/harness/harness.h"
#include "calib/cuda/cuda_peaks.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sim/input/check.h"
#include "sim/model/compute.h"
#include "sim/model/cost_model.h"
#include "calib/cpu/cpu_device.h"
#include "tests/calib/calib_fixtures.h"

using namespace arlsim;
using test::FakeDevice;
using test::round_trip;
using test::small_plan;
using test::temp_dir;


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
