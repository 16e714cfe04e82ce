// Dispatch simulation speed at the scale of tests/bench/step-1024.json: 8,192 samples from 128
// TP8 rollout engines to 32 training replicas on 128 x 8 H100, in each mode; once with a network
// built for the call (simulate_dispatch) and once with one kept across steps (DispatchNetwork,
// as `arlsim simulate` does). Run: build/tests/dispatch_bench.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "sim/rl/dispatch.h"
#include "sim/input/check.h"

namespace {

using namespace arlsim;

constexpr int64_t kNodes = 128;
constexpr int64_t kEngines = 128;    // TP8
constexpr int64_t kReplicas = 32;    // TP8 x PP4
constexpr int64_t kSamples = 8192;

const input::ClusterSpec& cluster() {
  static const input::ClusterSpec c = [] {
    input::Diagnostics diag;
    const auto doc =
        input::check_document("dgx-h100", input::SpecKind::cluster, {"/nodes=" + std::to_string(kNodes)}, diag);
    if (!doc) {
      std::fprintf(stderr, "%s", input::format_all(diag).c_str());
      std::exit(1);
    }
    return std::get<input::ClusterSpec>(doc->spec);
  }();
  return c;
}

// Sample i comes from engine i mod 128 and goes to a pseudo-random replica, 2K-32K tokens.
std::vector<rl::DispatchSample> samples() {
  std::vector<rl::DispatchSample> out;
  uint64_t state = 88172645463325252ull;
  for (int64_t i = 0; i < kSamples; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const auto replica = static_cast<int64_t>(state % kReplicas);
    const auto tokens = static_cast<int64_t>(2048 + (state >> 20) % 30720);
    out.push_back({tokens, (i % kEngines) * 8, replica * 32});
  }
  return out;
}

rl::DispatchOptions options(input::DispatchMode mode) {
  rl::DispatchOptions o;
  o.mode = mode;
  o.controller_bandwidth_bytes_per_s = cluster().controller_bandwidth_bytes_per_s;
  return o;
}

void one_shot(benchmark::State& st) {
  const auto mode = static_cast<input::DispatchMode>(st.range(0));
  const auto s = samples();
  const auto tensors = rl::dispatch_tensors(true, false);
  for (auto _ : st) benchmark::DoNotOptimize(rl::simulate_dispatch(cluster(), s, tensors, options(mode)).seconds);
}

void kept_network(benchmark::State& st) {
  const auto mode = static_cast<input::DispatchMode>(st.range(0));
  const auto s = samples();
  const auto tensors = rl::dispatch_tensors(true, false);
  rl::DispatchNetwork net(cluster(), options(mode));
  for (auto _ : st) benchmark::DoNotOptimize(net.simulate(s, tensors).seconds);
}

// Arguments: 0 centralized, 1 decentralized, 2 transfer dock.
BENCHMARK(one_shot)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(kept_network)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
