// A plan: the layouts of rollout and training chosen over a trace, step by step, by each
// selector (see selector.h), with what every candidate cost. The analytic costs of analytic.h
// rank the candidates; the event simulator then runs the best few rollout layouts on one
// representative step of each context range and rescales that range's costs by what it found.
// The chosen schedule becomes the policy's layout schedule, which `arlsim simulate` replays.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/features.h"
#include "planner/passes.h"
#include "planner/selector.h"
#include "planner/space.h"
#include "sim/input/scenario.h"
#include "sim/trace/trace.h"

namespace arlsim::planner {

struct PlanOptions {
  std::string selector = "offline";  // the schedule the plan adopts
  int64_t confirm = 3;               // rollout candidates simulated per context range (0: none)
  int64_t online_window = 1;         // steps in the online selector's running average
  // Added to every layout switch on top of the data it moves: process restarts, communicator
  // setup, CUDA graph capture. Nothing public measures it for a given stack; set it from your
  // cluster's logs. It keeps schedules from switching for gains smaller than a restart.
  double switch_overhead_s = 30;
  std::vector<double> bucket_edges = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
  // How the confirmation runs of a round are executed: task(i) for every i < n, every result
  // returned by index (to every process sharing the plan). Empty: one after another, here. The
  // runs of a round are independent, and they are recorded in index order either way, so the
  // plan is the same however they are shared out.
  std::function<std::vector<std::string>(size_t n, const std::function<std::string(size_t)>& task)> map;
};

// The event simulator's time for a rollout layout on a representative step, against the
// analytic estimate it corrects.
struct Confirmation {
  int64_t step = 0;
  size_t bucket = 0;
  size_t candidate = 0;
  double analytic_s = 0;
  double simulated_s = 0;
};

struct StageSchedules {
  CostTable costs;
  std::vector<Schedule> schedules;  // as configured, static, online, offline
  const Schedule& find(const std::string& selector) const;
};

struct Plan {
  std::vector<int64_t> steps;  // trace step numbers, in order
  std::vector<RolloutCandidate> rollout;
  std::vector<TrainCandidate> train;
  StageSchedules rollout_schedules, train_schedules;
  std::vector<Confirmation> confirmations;
  std::vector<PassChoice> passes;  // the preparation passes' layouts (chosen first: training's costs include them)
  int64_t evaluations = 0;  // analytic stage evaluations
  std::string selector;
  input::PolicySpec policy;  // the scenario's policy with the adopted layouts and schedule
};

// `trace` is the trace the features were read from (for confirmation runs); it may be null.
Plan make_plan(const input::ScenarioSpec& s, const std::vector<StepFeatures>& features, const trace::Trace* trace,
               const PlanOptions& o);

// The policy schedule of a choice of layouts per step (entries for each run of equal layouts).
std::vector<input::ScheduleEntry> to_schedule(const std::vector<int64_t>& steps, const std::vector<input::RolloutLayout>& rollout,
                                             const std::vector<input::TrainLayout>& train);

}  // namespace arlsim::planner
