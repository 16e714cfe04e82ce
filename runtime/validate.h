// `arlsim validate`: predict a plan's steps with the event simulator, execute every activity of
// the same step graph for real on a backend (runtime/cpu), and compare them activity by activity.
#pragma once

#include <functional>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "sim/input/scenario.h"
#include "runtime/kernel_comparison.h"
#include "sim/rl/step.h"
#include "sim/rl/step_result.h"
#include "sim/trace/trace.h"

namespace arlsim::runtime {

struct ValidationReport {
  rl::RunResult predicted, measured;
  std::vector<Comparison> stages;      // per stage, summed over the steps
  std::vector<Comparison> activities;  // per activity kind (graph::OpKind)
  KernelSeconds kernels;               // measured, per kind of kernel, summed over devices
  std::vector<KernelComparison> kernel_kinds;   // per stage and kind of kernel, in stage order
  std::vector<KernelComparison> kernel_shapes;  // per stage, kind and shape, largest |difference| first
  double bytes_verified = 0;
  int64_t checksum_failures = 0;
  double median_abs_stage_error = 0, worst_abs_stage_error = 0;
  double median_abs_activity_error = 0, worst_abs_activity_error = 0;
  double scale = 1;  // --scale: the plan as predicted and executed (runtime/scale.h)
  std::string refused;  // why the prediction was not executed (the caller's check), "" when it was
  // Stage activities executed, and those of them run beside others the prediction overlaps them
  // with on devices of their own (concurrent_waves).
  int64_t executed = 0, concurrent = 0;
};

// Runs the scenario's steps (options.first_step / last_step) on the backend. The scenario must
// be executable (unsupported_reason) and need no more devices than the backend has. `check`, when
// given, sees the prediction first, with the bytes the backend's buffers will take in this
// process's memory over the whole execution (0 when it keeps none there: Backend::buffer_sizer);
// what it returns ("" to go on) stops the execution (ValidationReport::refused). A prediction that
// ran out of memory is not executed either.
// `progress`, when given, hears of each group of activities run at once (concurrent_waves) before
// it runs (`done` false) and after (`done` true, with the longest device time it measured and the
// wall time its run took, buffers filled and checksums checked included): its name ("step 1
// rollout"), its place and the number of groups.
using ValidationCheck = std::function<std::string(const rl::RunResult& prediction, double buffer_bytes)>;
struct ValidationProgress {
  std::string name;
  size_t index = 0, count = 0;
  bool done = false;
  double measured_s = 0, wall_s = 0;
};
ValidationReport validate(const input::ScenarioSpec& s, const trace::Trace& t, const rl::RunOptions& options,
                          Backend& backend, const ValidationCheck& check = {},
                          const std::function<void(const ValidationProgress&)>& progress = {});

// Which activities run at once: groups of indices into `activities` (stage records, in their
// order), each a set the prediction overlaps in time whose devices (`devices`, by activity) are
// disjoint, every pair of them overlapping (so none waits for another), formed from the pairs of
// longest overlap first; the rest alone. An activity without devices (a timer) runs alone.
// Groups in the order of their first member.
std::vector<std::vector<size_t>> concurrent_waves(const std::vector<exec::ActivityRecord>& activities,
                                                  const std::vector<std::set<int64_t>>& devices);

std::string report_table(const ValidationReport& r);
std::string report_json(const ValidationReport& r);

}  // namespace arlsim::runtime
