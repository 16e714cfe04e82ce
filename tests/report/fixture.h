// A small hand-built run shared by the output tests: three steps (the last one hits an OOM in
// training), activities on two processes, and counters on one of them and on a third process
// that has counters only.
#pragma once

#include "sim/report/timeline.h"
#include "sim/rl/step_result.h"

namespace arlsim::report::testing {

inline rl::StepRecord step(int64_t n, double start_s, double time_s, double rollout_s, double train_s, int64_t tokens) {
  rl::StepRecord s;
  s.step = n;
  s.start_s = start_s;
  s.time_s = time_s;
  s.end_s = start_s + time_s;
  s.stages = {.rollout = rollout_s, .reward = 0.5, .old_logprob = 1, .ref_logprob = 0.5, .critic = 0,
              .dispatch = 0.25, .train = train_s, .weight_sync = 0.25};
  s.tokens = tokens;
  s.tokens_per_s = static_cast<double>(tokens) / time_s;
  return s;
}

inline TimelineEvent event(const char* process, const char* thread, const char* name, int64_t start_ns,
                           int64_t end_ns, int64_t step, const char* stage) {
  return {process, thread, name, SimTime::from_ns(start_ns), SimTime::from_ns(end_ns), step, stage};
}

inline rl::OomEvent train_oom() {
  return {.step = 2, .stage = "train", .rank = 3, .needed_gib = 92.5, .available_gib = 80,
          .contributors_gib = {{"activations", 40.25}, {"weights", 30}, {"optimizer", 22.25}}};
}

// Stage sums per step: 10, 12 and 8 s (= time_s).
inline rl::RunResult sample_run() {
  rl::RunResult r;
  r.scenario = "demo";
  r.gpus = 16;
  r.price_usd_per_gpu_hour = 2.5;
  r.steps = {step(0, 0, 10, 6, 1.5, 20000), step(1, 10, 12, 7.5, 2, 24000), step(2, 22, 8, 5, 0.5, 16000)};
  r.steps[0].memory_peak_gib = {{"rollout", 60.5}, {"train", 70.25}};
  r.steps[1].memory_peak_gib = {{"rollout", 61}, {"train", 79.5}};
  r.steps[2].memory_peak_gib = {{"rollout", 61}, {"train", 92.5}};
  r.steps[2].oom = train_oom();
  r.oom_events = {train_oom()};
  r.total_time_s = 30;
  r.gpu_hours = 16 * 30 / 3600.0;
  r.cost_usd = r.gpu_hours * 2.5;
  return r;
}

// The named tracks the timeline writer takes, as timeline_of() makes them from a run.
inline Timeline sample_timeline() {
  Timeline r;
  r.scenario = "demo";
  r.gpus = 16;
  r.steps = 3;
  // Deliberately out of time order; the writer sorts.
  r.events = {event("node0", "gpu1", "generate", 0, 6'000'000'000, 0, "rollout"),
              event("node0", "gpu0", "generate", 0, 6'000'000'000, 0, "rollout"),
              event("sandboxes", "slot0", "tool \"search\"\n", 1'000'000'500, 2'500'000'000, 0, "rollout"),
              event("node0", "gpu0", "train", 10'000'000'000, 11'500'000'000, 0, "train"),
              event("node0", "gpu0", "rollout phase", 0, 7'000'000'000, 0, "rollout")};
  r.counters = {{"node0", "memory_gib", SimTime::from_ns(6'000'000'000), 60.5},
                {"node1", "kv_util", SimTime::from_ns(3'000'000'000), 0.75},
                {"node0", "memory_gib", SimTime::zero(), 12.5}};
  return r;
}

}  // namespace arlsim::report::testing
