// Dispatch plans: which training data-parallel rank consumes each sample of a step, and the
// transfers that follow. Given where the samples are (the rollout engine that produced each) and
// the consumer layout, the layout-aware plan balances tokens over the ranks (longest first, as
// LPT) but puts a sample on a rank of its producer's node whenever that keeps the rank within a
// small slack of the balanced load, so that fewer bytes cross nodes (EARL's layout-aware
// dispatch, arXiv 2510.05943). It is compared with the plans frameworks use: token-balanced ranks
// regardless of locality (verl's balance_batch) sent directly or through a single controller, and
// naive round-robin.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/input/scenario.h"
#include "sim/parse/registry.h"

namespace arlsim::planner {

// The dispatch plans compare_dispatch() makes, registered with a line each.
enum class DispatchPlanKind { layout_aware, balanced, round_robin, centralized };
const parse::Registry<DispatchPlanKind>& dispatch_plans();

struct DispatchPlanSample {
  int64_t tokens = 0;
  int64_t producer_gpu = 0;
};

// Aggregated point-to-point traffic of a plan (controller traffic is not listed).
struct Transfer {
  int64_t from_gpu = 0, to_gpu = 0;
  int64_t samples = 0;
  double bytes = 0;
};

struct DispatchPlanResult {
  DispatchPlanKind kind = DispatchPlanKind::balanced;
  std::string name;
  std::string mode;             // the dispatch mode it runs with
  std::vector<int64_t> rank;    // consumer rank per sample
  double imbalance = 1;         // the busiest rank's tokens over the mean rank's
  double bytes = 0;             // every byte moved, controller traffic included
  double cross_node_bytes = 0;
  double seconds = 0;           // the dispatch simulated over the topology
  std::vector<Transfer> transfers;
};

struct DispatchComparison {
  int64_t step = 0;
  int64_t samples = 0;
  std::vector<DispatchPlanResult> plans;  // layout-aware first
};

// The plans for one step's samples (where the rollout left them) to the ranks of `train`.
DispatchComparison compare_dispatch(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                    const std::vector<DispatchPlanSample>& samples, int64_t step);

// The plan to adopt for a policy dispatching in `mode`: among the plans a policy can run in that
// mode (layout-aware or balanced when decentralized, centralized when centralized; round-robin is
// compared, never adopted), the one that costs the step least — its dispatch plus the step's
// forward and training passes (`passes_s`, their time with ranks balanced) slowed by its busiest
// rank; on a tie, the plan of the policy's own balance_batch (`current`). -1 when no plan runs in
// that mode (the transfer dock).
int64_t best_adoptable_plan(const DispatchComparison& c, const input::PolicySpec& current, double passes_s);
// Sets the policy's balance_batch (and dispatch mode) to run plan `kind`.
void adopt_dispatch_plan(input::PolicySpec& p, DispatchPlanKind kind);

// One plan: the given consumer ranks, dispatched in `mode` over the topology.
DispatchPlanResult evaluate_plan(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                 const std::vector<DispatchPlanSample>& samples, const std::string& name,
                                 input::DispatchMode mode, const std::vector<int64_t>& rank);

// Samples of a step as the rollout leaves them: sample i on engine i mod engines.
std::vector<DispatchPlanSample> samples_round_robin(const input::ScenarioSpec& s, const input::RolloutLayout& rollout,
                                                    const std::vector<int64_t>& tokens);

std::string dispatch_json(const DispatchComparison& d);

}  // namespace arlsim::planner
