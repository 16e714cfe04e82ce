#include "sim/report/summary.h"

#include <nlohmann/json.hpp>

#include <vector>

#include "sim/model/error_band.h"
#include "sim/report/text.h"
#include "sim/rl/metrics.h"

namespace arlsim::report {
namespace {

using nlohmann::ordered_json;

ordered_json gib_object(const std::vector<std::pair<std::string, double>>& entries) {
  ordered_json j = ordered_json::object();
  for (const auto& [name, gib] : entries) j[name] = gib;
  return j;
}

ordered_json oom_json(const rl::OomEvent& e) {
  return ordered_json{{"step", e.step},
                      {"stage", e.stage},
                      {"memory", e.host ? "host" : "gpu"},
                      {"rank", e.rank},
                      {"needed_gib", e.needed_gib},
                      {"available_gib", e.available_gib},
                      {"contributors_gib", gib_object(e.contributors_gib)}};
}

ordered_json stages_json(const rl::StageTimes& t) {
  ordered_json j = ordered_json::object();
  for (size_t s = 0; s < kStageCount; ++s) j[std::string(graph::kStages[s].name)] = stage_seconds(t, s);
  return j;
}

ordered_json step_json(const rl::StepRecord& st) {
  return ordered_json{{"step", st.step},
                      {"start_s", st.start_s},
                      {"end_s", st.end_s},
                      {"time_s", st.time_s},
                      {"stages", stages_json(st.stages)},
                      {"tokens", st.tokens},
                      {"tokens_per_s", st.tokens_per_s},
                      {"memory_peak_gib", gib_object(st.memory_peak_gib)},
                      {"oom", st.oom ? oom_json(*st.oom) : ordered_json(nullptr)},
                      {"preemptions", st.preemptions},
                      {"recomputed_tokens", st.recomputed_tokens}};
}

ordered_json stats_json(const RunStats& s) {
  const auto& t = s.step_time_s;
  ordered_json share = ordered_json::object();
  for (size_t i = 0; i < kStageCount; ++i) share[std::string(graph::kStages[i].name)] = s.stage_share[i];
  return ordered_json{
      {"step_time_s", {{"mean", t.mean}, {"p50", t.p50}, {"p90", t.p90}, {"p99", t.p99}, {"max", t.max}}},
      {"stage_share", share},
      {"tokens_per_s", s.tokens_per_s}};
}

// A price of 0 means unknown, and a cost computed from it would read as "free".
ordered_json if_priced(const rl::RunResult& r, double value) {
  return r.price_usd_per_gpu_hour > 0 ? ordered_json(value) : ordered_json(nullptr);
}

void append_csv_field(std::string& out, const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

double stage_seconds(const rl::StageTimes& t, size_t stage) { return t.*graph::kStages[stage].seconds; }

RunStats run_stats(const rl::RunResult& r) {
  RunStats s;
  std::vector<double> times;
  times.reserve(r.steps.size());
  for (const auto& st : r.steps) {
    times.push_back(st.time_s);
    s.tokens += st.tokens;
    for (size_t i = 0; i < kStageCount; ++i) s.stage_total_s[i] += stage_seconds(st.stages, i);
  }
  const rl::Distribution d = rl::summarize(std::move(times));
  s.step_time_s = {d.mean, d.p50, d.p90, d.p99, d.max};
  double sum = 0;
  for (double v : s.stage_total_s) sum += v;
  if (sum > 0)
    for (size_t i = 0; i < kStageCount; ++i) s.stage_share[i] = s.stage_total_s[i] / sum;
  if (r.total_time_s > 0) s.tokens_per_s = static_cast<double>(s.tokens) / r.total_time_s;
  return s;
}

TotalBand total_time_band(const rl::RunResult& r, const RunStats& stats) {
  TotalBand b{r.total_time_s, r.total_time_s, 0};
  // Each stage takes the band of its kind's record: the engines' runs the rollout record's, the
  // forward passes and training the training record's; the rest (dispatch, weight sync) none.
  const auto training = model::validation_band("training", r.gpu_profile);
  const auto rollout = model::validation_band("rollout", r.gpu_profile);
  double low = 0, high = 0;
  for (size_t i = 0; i < kStageCount; ++i) {
    const auto op = graph::kStages[i].op;
    const auto& band = op == graph::OpKind::engine_run ? rollout
                       : op == graph::OpKind::forward || op == graph::OpKind::train ? training
                                                                                  : std::optional<model::ErrorBand>{};
    if (!band) continue;
    b.covered_share += stats.stage_share[i];
    low += stats.stage_share[i] * (band->time_low(1.0) - 1);
    high += stats.stage_share[i] * (band->time_high(1.0) - 1);
  }
  b.low_s = r.total_time_s * (1 + low);
  b.high_s = r.total_time_s * (1 + high);
  return b;
}

std::vector<PoolSummary> pool_summaries(const rl::RunResult& r) {
  std::vector<PoolSummary> out;
  for (const auto& p : r.pools) {
    PoolSummary s;
    s.name = p.name;
    s.act_s = rl::summarize(std::vector<double>(p.act_s.begin(), p.act_s.end()));
    s.queue_s = rl::summarize(std::vector<double>(p.queue_s.begin(), p.queue_s.end()));
    s.busy_resource_s = p.busy_resource_s;
    s.provisioned_resource_s = p.provisioned_resource_s;
    s.peak_in_use = p.peak_in_use;
    s.peak_provisioned = p.peak_provisioned;
    s.cold_starts = p.cold_starts;
    s.cost_usd = p.provisioned_resource_s / 3600 * p.price_usd_per_unit_hour;
    out.push_back(std::move(s));
  }
  return out;
}

std::string summary_json(const rl::RunResult& r) {
  ordered_json steps = ordered_json::array();
  for (const auto& st : r.steps) steps.push_back(step_json(st));
  ordered_json ooms = ordered_json::array();
  for (const auto& e : r.oom_events) ooms.push_back(oom_json(e));
  ordered_json pools = ordered_json::array();
  const auto dist = [](const rl::Distribution& d) {
    return ordered_json{{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
  };
  for (const auto& p : pool_summaries(r)) {
    const auto* run = &r.pools[pools.size()];
    pools.push_back({{"name", p.name},
                     {"actions", p.act_s.count},
                     {"act_s", dist(p.act_s)},
                     {"queue_s", dist(p.queue_s)},
                     {"busy_resource_s", p.busy_resource_s},
                     {"provisioned_resource_s", p.provisioned_resource_s},
                     {"peak_in_use", p.peak_in_use},
                     {"peak_provisioned", p.peak_provisioned},
                     {"cold_starts", p.cold_starts},
                     {"cost_usd", run->price_usd_per_unit_hour > 0 ? ordered_json(p.cost_usd) : ordered_json(nullptr)}});
  }
  ordered_json warnings = ordered_json::array();
  for (const auto& w : r.warnings) warnings.push_back({{"step", w.step}, {"kind", w.kind}, {"message", w.message}});
  const RunStats stats = run_stats(r);
  const TotalBand band = total_time_band(r, stats);
  const ordered_json j{{"scenario", r.scenario},
                       {"gpus", r.gpus},
                       {"reward_gpus", r.reward_gpus},
                       {"steps", std::move(steps)},
                       {"total_time_s", r.total_time_s},
                       {"total_time_s_low", band.low_s},
                       {"total_time_s_high", band.high_s},
                       {"band_covered_share", band.covered_share},
                       {"gpu_hours", r.gpu_hours},
                       {"cost_usd", if_priced(r, r.cost_usd)},
                       {"price_usd_per_gpu_hour", if_priced(r, r.price_usd_per_gpu_hour)},
                       {"stopped", r.stopped_on_oom && !r.oom_events.empty()
                                       ? ordered_json{{"step", r.oom_events.front().step},
                                                      {"stage", r.oom_events.front().stage},
                                                      {"steps_run", r.steps.size()},
                                                      {"steps_planned", r.steps_planned}}
                                       : ordered_json(nullptr)},
                       {"steps_simulated", r.steps.size()},
                       {"steps_total", r.steps_total > 0 ? r.steps_total : static_cast<int64_t>(r.steps.size())},
                       {"projected", r.steps_total > 0 ? ordered_json{{"total_time_s", r.projected_total_time_s},
                                                                      {"gpu_hours", r.projected_gpu_hours},
                                                                      {"cost_usd", if_priced(r, r.projected_cost_usd)}}
                                                       : ordered_json(nullptr)},
                       {"oom_events", std::move(ooms)},
                       {"warnings", std::move(warnings)},
                       {"pools", std::move(pools)},
                       {"stats", stats_json(stats)}};
  // `replace` turns invalid UTF-8 in names into U+FFFD instead of throwing.
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string steps_csv(const rl::RunResult& r) {
  std::string out = "step,start_s,end_s,time_s";
  for (const auto& stage : graph::kStages) out += ',' + std::string(stage.name) + "_s";
  out += ",tokens,tokens_per_s,oom_stage\n";
  for (const auto& st : r.steps) {
    out += std::to_string(st.step);
    out += ',' + format_fixed(st.start_s, 6);
    out += ',' + format_fixed(st.end_s, 6);
    out += ',' + format_fixed(st.time_s, 6);
    for (size_t i = 0; i < kStageCount; ++i) out += ',' + format_fixed(stage_seconds(st.stages, i), 6);
    out += ',' + std::to_string(st.tokens);
    out += ',' + format_fixed(st.tokens_per_s, 3);
    out += ',';
    if (st.oom) append_csv_field(out, st.oom->stage);
    out += '\n';
  }
  return out;
}

}  // namespace arlsim::report
