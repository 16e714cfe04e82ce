// Event-engine throughput: schedule/pop with a steady queue of pending events.
// Run: build/tests/event_bench (target: over 10 million events per second on one core).
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/core/event_queue.h"

namespace {

using namespace arlsim;

// Each event schedules one more at a pseudo-random later time, keeping the queue size constant.
struct Chain : core::EventHandler {
  core::Simulation* sim = nullptr;
  uint64_t state = 88172645463325252ull;
  void on_event(uint64_t payload) override {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    sim->after(SimTime::from_ns(static_cast<int64_t>(state % 1000000)), static_cast<int32_t>(payload & 3), this,
               payload + 1);
  }
};

void schedule_pop(benchmark::State& st) {
  const int64_t queued = st.range(0);
  core::Simulation sim;
  Chain chain;
  chain.sim = &sim;
  for (int64_t i = 0; i < queued; ++i) sim.at(SimTime::from_ns(i), 0, &chain, static_cast<uint64_t>(i));
  for (auto _ : st) sim.run(sim.now() + SimTime::from_ns(1000000));
  st.SetItemsProcessed(static_cast<int64_t>(sim.events_run()));
}

BENCHMARK(schedule_pop)->Arg(1000)->Arg(100000);

// As a rollout's engines: each event moves one of 128 timers, half of them earlier (a window cut
// short), beside a steady queue of plain events.
struct Engines : core::EventHandler {
  core::Simulation* sim = nullptr;
  std::vector<core::Simulation::TimerId> timers;
  uint64_t state = 88172645463325252ull;
  void on_event(uint64_t payload) override {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const auto delay = SimTime::from_ns(static_cast<int64_t>(state % 1000000));
    if (payload & 1) sim->after(delay, 1, this, payload + 2);
    sim->set_timer(timers[(state >> 32) % timers.size()], sim->now() + delay, 0, this, payload | 1);
  }
};

void timers(benchmark::State& st) {
  core::Simulation sim;
  Engines engines;
  engines.sim = &sim;
  for (int i = 0; i < 128; ++i) engines.timers.push_back(sim.add_timer());
  for (int64_t i = 0; i < st.range(0); ++i) sim.at(SimTime::from_ns(i), 1, &engines, static_cast<uint64_t>(2 * i + 1));
  for (auto _ : st) sim.run(sim.now() + SimTime::from_ns(1000000));
  st.SetItemsProcessed(static_cast<int64_t>(sim.events_run()));
}

BENCHMARK(timers)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
