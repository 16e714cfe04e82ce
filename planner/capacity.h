// Capacity planning: the scenario's run on other clusters — GPU types x node counts x placements,
// each with the best layouts over the trace (the offline selector on analytic stage costs) — with
// step time, time to finish N steps, GPU-hours and cost; the Pareto frontier of time against
// cost; the cheapest configuration that meets a deadline and the fastest within a budget.
// Configurations that cannot run say why: the first step and stage that no layout fits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/features.h"
#include "sim/input/scenario.h"
#include "sim/trace/trace.h"

namespace arlsim::planner {

struct CapacityConfig {
  std::string gpu;  // profile name
  int64_t nodes = 1;
  std::string placement = "colocated";  // or "disaggregated"
  double rollout_share = 0;             // disaggregated: the rollout pool's share of the GPUs
};

struct CapacityResult {
  CapacityConfig config;
  int64_t gpus = 0;
  // The node of the cluster built: the scenario's, or where the GPU's profile names the system it
  // comes in (`system`, e.g. "gb200-nvl72"), an NVLink domain of that system. 0: not built.
  int64_t gpus_per_node = 0;
  std::string system;
  int64_t nodes() const { return gpus_per_node > 0 ? gpus / gpus_per_node : config.nodes; }
  // Disaggregated, as built: the rollout pool in whole nodes (whole hosts where a node is an
  // NVLink domain of several), so its share may differ from the one asked. 0: not built.
  int64_t rollout_gpus = 0;
  double rollout_share() const {
    return rollout_gpus > 0 && gpus > 0 ? static_cast<double>(rollout_gpus) / static_cast<double>(gpus) : config.rollout_share;
  }
  bool feasible = false;
  std::string reason;        // why not, when infeasible
  double step_time_s = 0;    // mean over the trace's steps
  double total_time_s = 0;   // N steps
  double gpu_hours = 0;
  std::optional<double> cost_usd;  // unknown without a price
  double price_usd_per_gpu_hour = 0;
  bool pareto = false;
  // Confirmation by the event simulator (confirm_and_recommend): whether it ran, its total for the
  // N steps (none when its run hit an OOM the analytic run did not foresee), and whether it
  // differs from total_time_s by more than kConfirmTolerance.
  bool confirmed = false;
  std::optional<double> simulated_total_s;
  bool beyond_tolerance = false;
  // Why the event simulator may not run it ("" when it may): its estimated peak memory is above
  // what the process may take. confirmation_list passes such results over.
  std::string unconfirmable;
  std::string rollout_layouts, train_layouts;  // the schedule's layouts, e.g. "tp2 -> tp4"
  // Other disaggregated shares asked that built this same split (fold_same_builds), in order.
  std::vector<double> same_shares;
  input::PolicySpec policy;  // the configuration's planned policy (its layout schedule), when feasible
};

struct CapacityOptions {
  std::vector<std::string> gpus;
  std::vector<int64_t> nodes;
  std::vector<CapacityConfig> placements;  // gpu and nodes unset: the placements to try
  int64_t steps = 0;                       // N; 0: the trace's steps
  std::vector<std::pair<std::string, double>> prices;  // per GPU profile, over the profile's own
  int threads = 1;
  // Called after each configuration is evaluated (done, total), from any thread, one call at a time.
  std::function<void(size_t, size_t)> progress;
  double switch_overhead_s = 30;  // see PlanOptions
  // Rollout layouts the event simulator confirms per context range of each configuration (see
  // PlanOptions::confirm); 0: analytic costs only. Needs the trace.
  int64_t confirm = 0;
  const trace::Trace* trace = nullptr;
};

// The scenario rebuilt on a configuration: its cluster with another GPU profile and node count, its
// layouts made to fit (the planner chooses them anyway). Another GPU's profile that names its
// system gets that system's nodes where the system's or the scenario's nodes are NVLink domains
// of several hosts; `shaped_by` (when given) then receives the system's name. Returns "" or why
// it cannot be built. `built` (when given) receives the shape decided before the scenario is
// checked, even where the check then fails: a node's GPUs and the disaggregated rollout's.
struct BuiltShape {
  int64_t gpus_per_node = 0;
  int64_t rollout_gpus = 0;  // 0: colocated, or not decided
};
std::string scenario_on(const input::ScenarioSpec& base, const input::Value& document, const CapacityConfig& c,
                        input::ScenarioSpec& out, std::string* shaped_by = nullptr, BuiltShape* built = nullptr);

std::vector<CapacityResult> plan_capacity(const input::ScenarioSpec& base, const input::Value& document,
                                          const std::vector<StepFeatures>& features, const CapacityOptions& o);
// Its parts, for callers that spread the configurations over processes: the configurations in
// plan_capacity's order, and one configuration's evaluation (mark_pareto over all afterwards).
std::vector<CapacityConfig> capacity_configs(const CapacityOptions& o);
CapacityResult evaluate_capacity_config(const input::ScenarioSpec& base, const input::Value& document,
                                        const std::vector<StepFeatures>& features, const CapacityConfig& config,
                                        const CapacityOptions& o);

// The event simulator's run of a feasible result's configuration with its planned policy over the
// trace steps of `features`, scaled to the result's N steps: the check of its analytic total
// (`arlsim capacity` prints both for the configurations it recommends). None when the simulated
// run hits an OOM the analytic one did not foresee, or the trace has none of those steps.
std::optional<double> simulated_total_seconds(const input::ScenarioSpec& base, const input::Value& document,
                                              const trace::Trace& trace, const std::vector<StepFeatures>& features,
                                              const CapacityResult& result, const CapacityOptions& o);

// The estimated peak memory of simulated_total_seconds's run of a feasible result (rl::run_memory
// of its configuration with its planned policy over the trace); 0 when it cannot be built.
double confirmation_memory_bytes(const input::ScenarioSpec& base, const input::Value& document, const trace::Trace& trace,
                                 const CapacityResult& result);

// Marks the Pareto frontier of (total time, cost) among the feasible results with a known cost.
void mark_pareto(std::vector<CapacityResult>& results);

// How far a simulated total may be from the analytic one before the answer is marked: the
// analytic costs' agreement with the simulator on the shipped scenarios is within 4% as
// configured and 11% with adopted layouts (docs/validation.md), so 10% flags a real departure.
inline constexpr double kConfirmTolerance = 0.10;
// Candidates the event simulator runs, at most, for each of the deadline, the budget and the
// fastest answer (besides the Pareto frontier).
inline constexpr size_t kConfirmCandidates = 4;

// What capacity recommends, by simulated figures: indices into the results.
struct Recommendation {
  std::optional<size_t> cheapest_in_deadline, fastest_in_budget;
  std::optional<size_t> fastest;  // with neither a deadline nor a budget
};
// Disaggregated shares that whole nodes (or hosts) round to the same split build one cluster:
// folds each such result into the first of them (its `same_shares` lists the others' shares,
// and it takes a confirmation any of them had), keeping the recommendation's indices on the
// results that remain.
void fold_same_builds(std::vector<CapacityResult>& results, Recommendation& rec);

// The simulator's total for N steps of a result's configuration (simulated_total_seconds, or a
// fake in tests); none when its run hits an OOM.
using Simulate = std::function<std::optional<double>(const CapacityResult&)>;
// Runs the event simulator on the Pareto frontier and on the analytic best candidates for the
// deadline (cheapest first: up to kConfirmCandidates within it and as many more just beyond it,
// by the tolerance), the budget (fastest first, the same) or, with neither, the fastest; records
// each confirmation in its result; and recommends among all confirmed results by the simulated
// figures (a result's cost scales with its simulated time). A result whose simulation misses the
// deadline or the budget, or hits an OOM, is not recommended. A simulation that throws is
// rethrown here once the others are done. The simulations run on `threads` threads (`simulate` must allow it).
// Its parts: the results to confirm (indices), the confirmations recorded, and the recommendation
// from them.
std::vector<size_t> confirmation_list(const std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                                      std::optional<double> budget_usd);
// What confirming one result gave: the simulated total (none: an OOM), or a run past the
// simulator's clock (SimTimeOutOfRange), which makes the configuration infeasible with that
// reason. Recorded for results[confirmed[k]] from outcome k; the Pareto frontier is marked again
// when one became infeasible.
struct CapacityConfirmation {
  std::optional<double> total_s;
  bool beyond_clock = false;
};
void record_confirmations(std::vector<CapacityResult>& results, const std::vector<size_t>& confirmed,
                          const std::vector<CapacityConfirmation>& outcomes);
Recommendation recommend(const std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                         std::optional<double> budget_usd);
Recommendation confirm_and_recommend(std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                                     std::optional<double> budget_usd, const Simulate& simulate, int threads = 1);

}  // namespace arlsim::planner
