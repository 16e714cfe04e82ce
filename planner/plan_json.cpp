#include "planner/plan_json.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "planner/dispatch_plan.h"
#include "sim/model/transformer.h"
#include "sim/report/summary.h"

namespace arlsim::planner {

namespace {

using nlohmann::ordered_json;

ordered_json to_json(const input::Value& v) {
  switch (v.kind()) {
    case input::Value::Kind::null: return nullptr;
    case input::Value::Kind::boolean: return v.as_bool();
    case input::Value::Kind::number:
      if (v.is_int64()) return v.as_int64();
      return v.as_double();
    case input::Value::Kind::string: return v.as_string();
    case input::Value::Kind::array: {
      ordered_json a = ordered_json::array();
      for (const auto& item : v.items()) a.push_back(to_json(item));
      return a;
    }
    case input::Value::Kind::object: {
      ordered_json o = ordered_json::object();
      for (const auto& m : v.members()) o[m.key] = to_json(*m.value);
      return o;
    }
  }
  return nullptr;
}

ordered_json layout_json(const input::RolloutLayout& l) {
  ordered_json j{{"tp", l.tp}, {"pp", l.pp}, {"ep", l.ep}};
  if (l.replicas > 0) j["replicas"] = l.replicas;
  return j;
}

ordered_json layout_json(const input::TrainLayout& l) {
  ordered_json j{{"tp", l.tp},
                 {"pp", l.pp},
                 {"dp", l.dp},
                 {"cp", l.cp},
                 {"ep", l.ep},
                 {"vpp", l.vpp},
                 {"zero", l.zero},
                 {"sequence_parallel", l.sequence_parallel},
                 {"recompute", input::recompute_name(l.recompute)}};
  if (l.max_tokens_per_gpu > 0) j["max_tokens_per_gpu"] = l.max_tokens_per_gpu;
  else j["micro_batch"] = l.micro_batch;
  if (l.critic_max_tokens_per_gpu > 0) j["critic_max_tokens_per_gpu"] = l.critic_max_tokens_per_gpu;
  if (l.shard_group > 0) j["shard_group"] = l.shard_group;
  if (l.ulysses) j["cp_kind"] = "ulysses";
  if (l.first_stage_layers > 0) j["first_stage_layers"] = l.first_stage_layers;
  if (l.last_stage_layers > 0) j["last_stage_layers"] = l.last_stage_layers;
  if (l.offload_optimizer) j["offload_optimizer"] = true;
  if (l.offload_params) j["offload_params"] = true;
  if (l.grad_reduce_fp32) j["grad_reduce_dtype"] = *l.grad_reduce_fp32 ? "fp32" : "bf16";
  if (l.shard_fp32) j["shard_dtype"] = *l.shard_fp32 ? "fp32" : "bf16";
  if (l.eager) j["kernels"] = *l.eager ? "eager" : "fused";
  if (l.fit_packing) j["packing"] = "fit";
  if (l.pad_to_longest) j["pad_micro_batches"] = "longest";
  ordered_json overlap = ordered_json::object();
  if (l.overlap.tp_comm && l.sequence_parallel && l.tp > 1) overlap["tp_comm"] = *l.overlap.tp_comm;
  if (l.overlap.grad_reduce) overlap["grad_reduce"] = *l.overlap.grad_reduce;
  if (l.overlap.param_gather) overlap["param_gather"] = *l.overlap.param_gather;
  if (l.overlap.p2p) overlap["p2p"] = *l.overlap.p2p;
  if (!overlap.empty()) j["overlap"] = overlap;
  return j;
}

ordered_json schedule_json(const std::vector<input::ScheduleEntry>& schedule) {
  ordered_json a = ordered_json::array();
  for (const auto& e : schedule) {
    ordered_json j;
    j["steps"] = std::to_string(e.first_step) + ":" + (e.last_step >= 0 ? std::to_string(e.last_step) : "");
    if (e.rollout) j["rollout"] = layout_json(*e.rollout);
    if (e.train) j["train"] = layout_json(*e.train);
    a.push_back(j);
  }
  return a;
}

template <typename Candidate>
ordered_json candidates_json(const std::vector<Candidate>& candidates, const StageSchedules& st) {
  ordered_json a = ordered_json::array();
  for (size_t c = 0; c < candidates.size(); ++c) {
    ordered_json j{{"layout", layout_json(candidates[c].layout)}, {"name", layout_name(candidates[c].layout)}};
    if (!candidates[c].pruned.empty()) {
      j["feasible"] = false;
      j["reason"] = candidates[c].pruned;
    } else {
      double total = 0;
      int64_t misfits = 0;
      for (size_t i = 0; i < st.costs.steps(); ++i) {
        if (st.costs.fits(i, c)) total += st.costs.cost[i][c];
        else ++misfits;
      }
      j["feasible"] = misfits == 0;
      j["reason"] = candidates[c].misfit.empty() ? ordered_json(nullptr) : ordered_json(candidates[c].misfit);
      j["steps_that_fit"] = static_cast<int64_t>(st.costs.steps()) - misfits;
      j["time_s"] = total;  // over the steps that fit
    }
    a.push_back(j);
  }
  return a;
}

template <typename Candidate>
ordered_json selectors_json(const std::vector<Candidate>& candidates, const StageSchedules& st, const std::vector<int64_t>& steps) {
  ordered_json a = ordered_json::array();
  for (const auto& s : st.schedules) {
    ordered_json layouts = ordered_json::array();
    for (size_t i = 0; i < s.choice.size(); ++i)
      if (i == 0 || s.choice[i] != s.choice[i - 1])
        layouts.push_back({{"from_step", steps[i]}, {"layout", layout_name(candidates[s.choice[i]].layout)}});
    a.push_back({{"selector", s.selector},
                 {"total_time_s", s.total_seconds()},
                 {"step_time_s", s.step_seconds},
                 {"switch_time_s", s.switch_seconds},
                 {"switches", s.switches},
                 {"oom_steps", s.misfits},
                 {"layouts", layouts}});
  }
  return a;
}

}  // namespace

std::string plan_json(const PlanDocument& d) {
  const auto& s = *d.scenario;
  const auto& p = *d.plan;
  ordered_json j;
  j["format"] = "arlsim-plan/1";
  j["name"] = s.name;
  j["selector"] = p.selector;
  const auto params = model::count_params(s.model);
  j["cluster"] = {{"name", s.cluster.name},
                  {"gpu", s.cluster.gpu.name},
                  {"nodes", s.cluster.nodes},
                  {"gpus_per_node", s.cluster.gpus_per_node},
                  {"gpus", s.cluster.total_gpus()},
                  {"price_usd_per_gpu_hour", s.cluster.price_usd_per_gpu_hour > 0 ? ordered_json(s.cluster.price_usd_per_gpu_hour) : ordered_json(nullptr)}};
  j["model"] = {{"name", s.model.name}, {"parameters", params.total}, {"active_parameters", params.active}};
  j["workload"] = {{"name", s.workload.name},
                   {"prompts_per_step", s.workload.prompts_per_step},
                   {"samples_per_prompt", s.workload.samples_per_prompt},
                   {"max_context_tokens", s.workload.max_context_tokens},
                   {"ppo_epochs", s.workload.ppo_epochs},
                   {"mini_batches", s.workload.mini_batches}};
  const auto& pol = p.policy;
  j["placement"] = {{"mode", pol.placement == input::Placement::colocated ? "colocated" : "disaggregated"},
                    {"rollout_gpus", s.rollout_gpus()},
                    {"train_gpus", s.train_gpus()}};
  j["layouts"] = {{"rollout", layout_json(pol.rollout)}, {"train", layout_json(pol.train)}};
  const auto pass_json = [](const std::optional<input::InferenceLayout>& l) {
    return l ? ordered_json{{"tp", l->tp}, {"pp", l->pp}, {"dp", l->dp}, {"cp", l->cp}} : ordered_json(nullptr);
  };
  const auto seconds = [](double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); };
  ordered_json passes = ordered_json::array();
  for (const auto& c : p.passes)
    passes.push_back({{"stage", c.stage},
                      {"searched", c.searched},
                      {"layout", pass_json(c.chosen)},
                      {"time_s", seconds(c.chosen_s)},
                      {"training_layout_s", seconds(c.training_layout_s)},
                      {"layouts_tried", c.candidates}});
  j["passes"] = passes;
  j["schedule"] = schedule_json(pol.schedule);
  j["sync"] = {{"mode", pol.sync == input::SyncMode::sync ? "sync" : "async"}, {"staleness", pol.staleness}};
  if (pol.continuous) {
    if (pol.continuous_batches == pol.staleness) j["sync"]["continuous"] = true;
    else j["sync"]["continuous"] = pol.continuous_batches;
  }
  if (pol.keep_kv_cache) j["sync"]["kv_cache"] = "keep";
  j["dispatch"] = {{"mode", input::dispatch_name(pol.dispatch)}};
  j["dispatch"]["balance_batch"] = std::string(input::batch_assignments().name(pol.batch_assignment));
  if (d.dispatch) j["dispatch"]["plan"] = nlohmann::ordered_json::parse(dispatch_json(*d.dispatch));
  j["selectors"] = {{"rollout", selectors_json(p.rollout, p.rollout_schedules, p.steps)},
                    {"train", selectors_json(p.train, p.train_schedules, p.steps)}};
  ordered_json confirmations = ordered_json::array();
  for (const auto& c : p.confirmations)
    confirmations.push_back({{"step", c.step},
                             {"layout", layout_name(p.rollout[c.candidate].layout)},
                             {"analytic_s", c.analytic_s},
                             {"simulated_s", c.simulated_s}});
  j["confirmations"] = confirmations;
  j["candidates"] = {{"rollout", candidates_json(p.rollout, p.rollout_schedules)},
                     {"train", candidates_json(p.train, p.train_schedules)}};
  if (d.predicted) {
    // What the planner's own composition predicts against the event simulator, on the same steps.
    j["agreement"] = {{"analytic_s", d.analytic_total_s ? ordered_json(*d.analytic_total_s) : ordered_json(nullptr)},
                      {"simulated_s", d.predicted->total_time_s}};
    if (d.configured)
      j["agreement"]["configured"] = {
          {"analytic_s", d.configured_analytic_s ? ordered_json(*d.configured_analytic_s) : ordered_json(nullptr)},
          {"simulated_s", d.configured->total_time_s}};
    j["predicted"] = ordered_json::parse(report::summary_json(*d.predicted));
  }
  // The scenario as loaded, with the planned policy, so that the plan replays on its own.
  ordered_json scenario = to_json(*d.scenario_document);
  if (scenario.contains("policy") && scenario["policy"].is_object()) {
    auto& policy = scenario["policy"];
    policy["rollout"] = layout_json(pol.rollout);
    policy["train"] = layout_json(pol.train);
    if (pol.schedule.empty()) policy.erase("schedule");
    else policy["schedule"] = schedule_json(pol.schedule);
    policy["switch_overhead"] = pol.switch_overhead_s;
    for (const auto& [key, layout] : {std::pair{"old_logprob", &pol.old_logprob}, std::pair{"ref_logprob", &pol.ref_logprob},
                                      std::pair{"critic", &pol.critic}}) {
      if (*layout) policy[key] = pass_json(*layout);
      else policy.erase(key);
    }
    policy["dispatch"] = std::string(input::dispatch_name(pol.dispatch));
    if (pol.batch_assignment == input::BatchAssignment::layout_aware) policy["balance_batch"] = "layout-aware";
    else policy["balance_batch"] = pol.batch_assignment == input::BatchAssignment::balanced;
  }
  if (!s.trace_path.empty()) scenario["trace"] = std::filesystem::absolute(s.trace_path).lexically_normal().string();
  j["scenario"] = scenario;
  return j.dump(2) + "\n";
}

std::string document_json(const input::Value& v) { return to_json(v).dump(2) + "\n"; }

}  // namespace arlsim::planner
