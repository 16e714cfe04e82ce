// Rollout simulation speed: one step of 8,192 trajectories x 8 turns, contexts up to 32K, on 128
// engines of TP8 (1,024 H100). Prints the wall time, events and peak memory of the simulation
// alone (the trace is generated first). Target: under 0.3 s on one core, under 1 GB.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "sim/rl/rollout.h"
#include "sim/input/check.h"
#include "sim/trace/generator.h"

using namespace arlsim;

int main() {
  trace::GenParams p;
  p.steps = 1;
  p.prompts_per_step = 512;
  p.group_size = 16;
  p.prompt_tokens = 1024;
  p.response_mean = trace::Growth::constant(12000);
  p.response_limit = trace::Growth::constant(30000);
  p.context_limit = trace::Growth::constant(32768);
  p.turns_mean = trace::Growth::constant(8);
  p.turns_distribution = trace::TurnsDistribution::fixed;
  p.turns_min = p.turns_max = 8;
  std::string error;
  p.tools.push_back(*trace::parse_tool_spec("python: dist=lognormal mean=2s sigma=0.8 cold_start=3s", error));
  trace::Trace t;
  trace::TraceBuilder builder(t);
  trace::generate(p, builder);

  input::Diagnostics diag;
  const auto model = std::get<input::ModelSpec>(input::check_document("qwen3-32b", input::SpecKind::model, {}, diag)->spec);
  auto cluster = std::get<input::ClusterSpec>(input::check_document("dgx-h100", input::SpecKind::cluster, {"/nodes=128"}, diag)->spec);
  cluster.pools = {input::PoolSpec{"python", input::PoolKind::sandbox, 2048, 8192, SimTime::from_seconds(3), {}, 0}};

  rl::RolloutOptions o;
  o.model = &model;
  o.cluster = &cluster;
  o.layout = {8, 1, 1};
  o.engines = 128;
  o.engine.gpu_memory_utilization = 0.9;
  o.tool_policy = input::ToolPolicy::pooled;
  rl::RolloutInput in;
  for (size_t i = 0; i < t.size(); ++i) in.trajectories.push_back(t.trajectory(i));
  in.tool_names = t.tool_names();

  const auto start = std::chrono::steady_clock::now();
  const auto r = rl::simulate_rollout(o, in);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("rollout of %zu trajectories, %zu turns on %lld engines (%lld GPUs)\n", t.size(), t.turn_count(),
              static_cast<long long>(o.engines), static_cast<long long>(o.engines * 8));
  std::printf("  simulated makespan  %10.1f s (90%% done at %.1f s)\n", r.makespan.seconds(), r.p90_done.seconds());
  std::printf("  generated tokens    %10lld\n  preemptions         %10lld\n  events              %10llu\n",
              static_cast<long long>(r.generated_tokens), static_cast<long long>(r.preemptions()),
              static_cast<unsigned long long>(r.events));
  std::printf("  wall time           %10.3f s (target < 0.3 s)\n", wall);
  std::printf("  peak memory         %10.1f MiB (whole process; target < 1 GiB)\n", usage.ru_maxrss / 1024.0);
  return 0;
}
