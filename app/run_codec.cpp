#include "app/run_codec.h"

#include <nlohmann/json.hpp>


namespace arlsim::rl {

// nlohmann's conversions by field (found by argument-dependent lookup); doubles are written in
// their shortest round-trip form, so a run comes back bit for bit.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Distribution, count, mean, p50, p90, p99, max)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OomEvent, step, stage, host, rank, needed_gib, available_gib, contributors_gib)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunWarning, step, kind, message)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunResult::PoolRun, name, act_s, queue_s, busy_resource_s, provisioned_resource_s,
                                   peak_in_use, peak_provisioned, cold_starts, price_usd_per_unit_hour)

}  // namespace arlsim::rl

namespace arlsim::graph {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageTimes, rollout, reward, old_logprob, ref_logprob, critic, dispatch, train, weight_sync)
}  // namespace arlsim::graph

namespace arlsim::app {

namespace {

using nlohmann::json;

json step_json(const rl::StepRecord& s) {
  return json{{"step", s.step},
              {"start_s", s.start_s},
              {"end_s", s.end_s},
              {"time_s", s.time_s},
              {"stages", s.stages},
              {"tokens", s.tokens},
              {"contexts", s.contexts},
              {"tokens_per_s", s.tokens_per_s},
              {"memory_peak_gib", s.memory_peak_gib},
              {"oom", s.oom ? json(*s.oom) : json(nullptr)},
              {"preemptions", s.preemptions},
              {"recomputed_tokens", s.recomputed_tokens}};
}

rl::StepRecord step_of(const json& j) {
  rl::StepRecord s;
  j.at("step").get_to(s.step);
  j.at("start_s").get_to(s.start_s);
  j.at("end_s").get_to(s.end_s);
  j.at("time_s").get_to(s.time_s);
  j.at("stages").get_to(s.stages);
  j.at("tokens").get_to(s.tokens);
  j.at("contexts").get_to(s.contexts);
  j.at("tokens_per_s").get_to(s.tokens_per_s);
  j.at("memory_peak_gib").get_to(s.memory_peak_gib);
  if (!j.at("oom").is_null()) s.oom = j.at("oom").get<rl::OomEvent>();
  j.at("preemptions").get_to(s.preemptions);
  j.at("recomputed_tokens").get_to(s.recomputed_tokens);
  return s;
}

}  // namespace

std::string pack_run(const rl::RunResult& r) {
  json steps = json::array();
  for (const auto& s : r.steps) steps.push_back(step_json(s));
  return json{{"scenario", r.scenario},
              {"gpus", r.gpus},
              {"price_usd_per_gpu_hour", r.price_usd_per_gpu_hour},
              {"gpu_memory_gib", r.gpu_memory_gib},
              {"steps", steps},
              {"total_time_s", r.total_time_s},
              {"gpu_hours", r.gpu_hours},
              {"cost_usd", r.cost_usd},
              {"steps_total", r.steps_total},
              {"steps_planned", r.steps_planned},
              {"stopped_on_oom", r.stopped_on_oom},
              {"projected", {r.projected_total_time_s, r.projected_gpu_hours, r.projected_cost_usd}},
              {"oom_events", r.oom_events},
              {"warnings", r.warnings},
              {"gpus_per_node", r.gpus_per_node},
              {"pool_names", r.pool_names},
              {"pools", r.pools}}
      .dump();
}

rl::RunResult unpack_run(const std::string& text) {
  const json j = json::parse(text);
  rl::RunResult r;
  j.at("scenario").get_to(r.scenario);
  j.at("gpus").get_to(r.gpus);
  j.at("price_usd_per_gpu_hour").get_to(r.price_usd_per_gpu_hour);
  j.at("gpu_memory_gib").get_to(r.gpu_memory_gib);
  for (const auto& s : j.at("steps")) r.steps.push_back(step_of(s));
  j.at("total_time_s").get_to(r.total_time_s);
  j.at("gpu_hours").get_to(r.gpu_hours);
  j.at("cost_usd").get_to(r.cost_usd);
  j.at("steps_total").get_to(r.steps_total);
  j.at("steps_planned").get_to(r.steps_planned);
  j.at("stopped_on_oom").get_to(r.stopped_on_oom);
  const auto& projected = j.at("projected");
  projected.at(0).get_to(r.projected_total_time_s);
  projected.at(1).get_to(r.projected_gpu_hours);
  projected.at(2).get_to(r.projected_cost_usd);
  j.at("oom_events").get_to(r.oom_events);
  j.at("warnings").get_to(r.warnings);
  j.at("gpus_per_node").get_to(r.gpus_per_node);
  j.at("pool_names").get_to(r.pool_names);
  j.at("pools").get_to(r.pools);
  return r;
}

}  // namespace arlsim::app
