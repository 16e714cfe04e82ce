// Presets for the tests, failing the test with the diagnostics when one does not load.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/input/check.h"

namespace arlsim::test {

inline input::ModelSpec preset_model(const std::string& name) {
  input::Diagnostics diag;
  auto doc = input::check_document(name, input::SpecKind::model, {}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::ModelSpec>(doc->spec);
}

inline input::ClusterSpec preset_cluster(const std::string& name, int64_t nodes) {
  input::Diagnostics diag;
  auto doc = input::check_document(name, input::SpecKind::cluster, {"/nodes=" + std::to_string(nodes)}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::ClusterSpec>(doc->spec);
}

// A cluster of `nodes` 8-GPU nodes whose GPU's compute figures are the test's own, so that tests of
// the formulas do not break when a shipped profile is recalibrated: 1,000 TFLOP/s bf16, 128 SMs,
// 128 x 256 tiles, one GEMM point (4096^3 at 70%, whole tiles and waves: e_max = 0.70), 2 TB/s
// HBM at 75% for streaming, 5 us per launch, and attention points at head dim 128: forward and
// backward 30% at 4K and 32% at 8K tokens, forward 50% at 4K and 60% at 64K. Communication: a GPU
// link of 400 GB/s at 80%, one 25 GB/s NIC per GPU at 90%, all-reduce measured in a node at
// 300 GB/s (ring) and 400 GB/s (NVLS) bus bandwidth; the Simple protocol only, with latencies of
// 5 (ring), 10 (tree) and 20 us (NVLS) plus 1 us a step inside a node (none for NVLS) and 4 us
// across nodes.
// A relative comparison. doctest's Approx also allows an absolute difference of about 1e-5, which
// would let any microsecond-sized error in a time in seconds pass.
inline doctest::Approx near(double v) { return doctest::Approx(v).scale(0); }

inline input::ClusterSpec own_cluster(int64_t nodes) {
  input::ClusterSpec c = preset_cluster("dgx-h100", nodes);
  auto& g = c.gpu;
  g.name = "test-gpu";
  g.peak_flops_per_s = {{input::Dtype::bf16, 1000e12}};
  g.sm_count = 128;
  g.gemm_tile_m = 128;
  g.gemm_tile_n = 256;
  g.gemm_efficiency = {{4096, 4096, 4096, 0.70}};
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.memory_bound_efficiency = 0.75;
  g.kernel_launch_overhead = SimTime::from_seconds(5e-6);
  g.gemm_kernel_overhead = SimTime();  // a GEMM's fixed time: the launch
  g.benchmark_clock_mhz = g.sustained_clock_mhz = 0;  // efficiencies as measured
  g.power_limited.clear();                            // and no power limit
  g.attention_efficiency = {{4096, 128, true, "fwd_bwd", 0.30}, {8192, 128, true, "fwd_bwd", 0.32},
                            {4096, 128, true, "fwd", 0.50}, {65536, 128, true, "fwd", 0.60}};
  c.gpu_link = {"test-link", 400e9, 0.8};
  g.gpu_link = c.gpu_link;
  c.nic_bandwidth_bytes_per_s = g.nic_bandwidth_bytes_per_s = 25e9;
  c.nics_per_node = 8;
  g.nic_efficiency = 0.9;
  g.collectives = {{"all_reduce", "intra_node", "ring", 8, 300e9}, {"all_reduce", "intra_node", "nvls", 8, 400e9}};
  auto protocol = [](const char* algorithm, double base_us) {
    input::CollectiveProtocol p;
    p.algorithm = algorithm;
    p.base = SimTime::from_seconds(base_us * 1e-6);
    p.hop_intra_node = SimTime::from_seconds(algorithm == std::string("nvls") ? 0 : 1e-6);
    p.hop_inter_node = SimTime::from_seconds(4e-6);
    return p;
  };
  g.collective_protocols = {protocol("ring", 5), protocol("tree", 10), protocol("nvls", 20)};
  return c;
}

// The overrides, and one more after them.
inline std::vector<std::string> plus(std::vector<std::string> overrides, std::string more) {
  overrides.push_back(std::move(more));
  return overrides;
}

inline input::ScenarioSpec preset_scenario(const std::string& name, const std::vector<std::string>& overrides) {
  input::Diagnostics diag;
  auto s = input::load_scenario(name, overrides, diag);
  REQUIRE_MESSAGE(s, input::format_all(diag));
  return *s;
}

}  // namespace arlsim::test
