#include "planner/dispatch_plan.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/core/assert.h"
#include "sim/rl/dispatch.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

DispatchPlanResult evaluate_plan(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                 const std::vector<DispatchPlanSample>& samples, const std::string& name,
                                 input::DispatchMode mode, const std::vector<int64_t>& rank) {
  const auto tensors = rl::dispatch_tensors(s.workload.use_reference, s.workload.critic.has_value());
  double data_bytes_per_token = 0, data_bytes_per_sample = 0;
  for (const auto& t : tensors)
    if (t.role == rl::TensorRole::data) {
      data_bytes_per_token += t.bytes_per_token;
      data_bytes_per_sample += t.bytes_per_sample;
    }
  DispatchPlanResult p;
  p.name = name;
  p.mode = input::dispatch_name(mode);
  p.rank = rank;
  std::vector<int64_t> tokens;
  for (const auto& x : samples) tokens.push_back(x.tokens);
  p.imbalance = rl::imbalance(tokens, rank, train.dp);
  std::vector<rl::DispatchSample> ds;
  std::map<std::pair<int64_t, int64_t>, Transfer> pairs;
  const graph::Placement ranks = rl::train_placement(s, train);
  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t to = ranks.replica_device(rank[i]);
    ds.push_back({samples[i].tokens, samples[i].producer_gpu, to});
    auto& t = pairs[{samples[i].producer_gpu, to}];
    t.from_gpu = samples[i].producer_gpu;
    t.to_gpu = to;
    ++t.samples;
    t.bytes += data_bytes_per_token * static_cast<double>(samples[i].tokens) + data_bytes_per_sample;
  }
  for (auto& [key, t] : pairs)
    if (t.from_gpu != t.to_gpu) p.transfers.push_back(t);
  rl::DispatchOptions opt;
  opt.mode = mode;
  opt.controller_bandwidth_bytes_per_s = s.cluster.controller_bandwidth_bytes_per_s;
  opt.transport = s.policy.dispatch_transport;
  const auto r = rl::simulate_dispatch(s.cluster, ds, tensors, opt);
  p.seconds = r.seconds;
  p.bytes = r.bytes_moved;
  p.cross_node_bytes = r.cross_node_bytes;
  return p;
}

std::vector<DispatchPlanSample> samples_round_robin(const input::ScenarioSpec& s, const input::RolloutLayout& rollout,
                                                    const std::vector<int64_t>& tokens) {
  const graph::Placement engines = rl::rollout_placement(s, rollout);
  std::vector<DispatchPlanSample> out;
  for (size_t i = 0; i < tokens.size(); ++i)
    out.push_back({tokens[i], engines.replica_device(static_cast<int64_t>(i) % engines.shape().dp)});
  return out;
}

const parse::Registry<DispatchPlanKind>& dispatch_plans() {
  static const parse::Registry<DispatchPlanKind> r{
      "dispatch plan",
      {{"layout-aware", "the layout-aware assignment (policy/balance_batch), dispatched directly",
        DispatchPlanKind::layout_aware},
       {"balanced", "tokens balanced over ranks longest first (LPT), wherever the sample is", DispatchPlanKind::balanced},
       {"round-robin", "sample i to rank i mod dp", DispatchPlanKind::round_robin},
       {"centralized", "balanced ranks, every tensor through the single controller", DispatchPlanKind::centralized}}};
  return r;
}

DispatchComparison compare_dispatch(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                    const std::vector<DispatchPlanSample>& samples, int64_t step) {
  DispatchComparison out;
  out.step = step;
  out.samples = static_cast<int64_t>(samples.size());
  std::vector<int64_t> producer_gpu, tokens;
  for (const auto& x : samples) {
    producer_gpu.push_back(x.producer_gpu);
    tokens.push_back(x.tokens);
  }
  std::vector<int64_t> round_robin(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) round_robin[i] = static_cast<int64_t>(i) % train.dp;
  const auto balanced = rl::assign_ranks(tokens, train.dp, true);
  for (const auto& plan : dispatch_plans().choices()) {
    const std::string name(plan.name);
    const size_t before = out.plans.size();
    switch (plan.value) {
      case DispatchPlanKind::layout_aware:
        out.plans.push_back(evaluate_plan(s, train, samples, name, input::DispatchMode::decentralized,
                                          rl::layout_aware_ranks(s, train, tokens, producer_gpu)));
        break;
      case DispatchPlanKind::balanced:
        out.plans.push_back(evaluate_plan(s, train, samples, name, input::DispatchMode::decentralized, balanced));
        break;
      case DispatchPlanKind::round_robin:
        out.plans.push_back(evaluate_plan(s, train, samples, name, input::DispatchMode::decentralized, round_robin));
        break;
      case DispatchPlanKind::centralized:
        out.plans.push_back(evaluate_plan(s, train, samples, name, input::DispatchMode::centralized, balanced));
        break;
    }
    if (out.plans.size() > before) out.plans.back().kind = plan.value;
  }
  return out;
}

int64_t best_adoptable_plan(const DispatchComparison& c, const input::PolicySpec& current, double passes_s) {
  int64_t best = -1;
  double best_s = 0;
  bool best_is_current = false;
  for (size_t i = 0; i < c.plans.size(); ++i) {
    const auto& p = c.plans[i];
    if (p.kind == DispatchPlanKind::round_robin || p.mode != input::dispatch_name(current.dispatch)) continue;
    input::PolicySpec as_plan = current;
    adopt_dispatch_plan(as_plan, p.kind);
    const bool is_current = as_plan.batch_assignment == current.batch_assignment;
    const double step_s = p.seconds + passes_s * p.imbalance;
    const double margin = 1e-9 * std::max(step_s, best_s);
    if (best < 0 || step_s < best_s - margin || (is_current && !best_is_current && step_s <= best_s + margin)) {
      best = static_cast<int64_t>(i);
      best_s = step_s;
      best_is_current = is_current;
    }
  }
  return best;
}

void adopt_dispatch_plan(input::PolicySpec& p, DispatchPlanKind kind) {
  switch (kind) {
    case DispatchPlanKind::layout_aware:
      p.batch_assignment = input::BatchAssignment::layout_aware;
      p.dispatch = input::DispatchMode::decentralized;
      break;
    case DispatchPlanKind::balanced:
      p.batch_assignment = input::BatchAssignment::balanced;
      p.dispatch = input::DispatchMode::decentralized;
      break;
    case DispatchPlanKind::centralized:
      p.batch_assignment = input::BatchAssignment::balanced;
      p.dispatch = input::DispatchMode::centralized;
      break;
    case DispatchPlanKind::round_robin: ARLSIM_ASSERT(false && "round-robin is compared, not adopted"); break;
  }
}

std::string dispatch_json(const DispatchComparison& d) {
  nlohmann::ordered_json j;
  j["step"] = d.step;
  j["samples"] = d.samples;
  j["plans"] = nlohmann::ordered_json::array();
  for (const auto& p : d.plans) {
    nlohmann::ordered_json transfers = nlohmann::ordered_json::array();
    for (const auto& t : p.transfers)
      transfers.push_back({{"from_gpu", t.from_gpu}, {"to_gpu", t.to_gpu}, {"samples", t.samples}, {"bytes", t.bytes}});
    j["plans"].push_back({{"name", p.name},
                          {"mode", p.mode},
                          {"seconds", p.seconds},
                          {"bytes", p.bytes},
                          {"cross_node_bytes", p.cross_node_bytes},
                          {"token_imbalance", p.imbalance},
                          {"rank_of_sample", p.rank},
                          {"transfers", transfers}});
  }
  return j.dump();
}

}  // namespace arlsim::planner
