#include "app/estimate_rollout.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "sim/model/error_band.h"
#include "sim/rl/metrics.h"
#include "sim/rl/rollout.h"
#include "sim/rl/routing.h"
#include "sim/trace/random.h"
#include "sim/trace/reader.h"

namespace arlsim::app {
using nlohmann::ordered_json;

namespace {

// The requests as single-turn (or, from a trace, multi-turn) trajectories.
struct Requests {
  trace::Trace trace;
  std::vector<SimTime> arrivals;
};

int64_t draw(trace::Rng& rng, const input::RequestLengths& l) {
  if (l.sigma <= 0) return std::max<int64_t>(1, std::llround(l.mean));
  // A log-normal with the given mean: exp(sigma z - sigma^2 / 2) has mean 1.
  return std::max<int64_t>(1, std::llround(l.mean * std::exp(l.sigma * rng.normal() - l.sigma * l.sigma / 2)));
}

bool build_requests(const input::RolloutStage& ro, Requests& out, input::Diagnostics& diag) {
  auto add = [&](int64_t in, int64_t gen) {
    trace::Turn t;
    t.prefill_tokens = static_cast<int32_t>(std::min<int64_t>(in, INT32_MAX));
    t.gen_tokens = static_cast<int32_t>(std::min<int64_t>(gen, INT32_MAX));
    const auto n = static_cast<int32_t>(out.trace.size());
    out.trace.add({0, 0, n, false}, std::span<const trace::Turn>(&t, 1));
  };
  if (!ro.trace_path.empty()) {
    auto loaded = trace::load_trace(ro.trace_path, diag);
    if (!loaded) return false;
    int64_t step = ro.trace_step;
    if (step < 0 && !loaded->empty()) step = loaded->trajectory(0).info.step;
    for (size_t i = 0; i < loaded->size(); ++i) {
      const auto t = loaded->trajectory(i);
      if (t.info.step != step) continue;
      // Re-intern the tool kinds so the new trace's table matches its turns.
      std::vector<trace::Turn> turns(t.turns.begin(), t.turns.end());
      for (auto& turn : turns)
        if (turn.tool != trace::kNoTool) turn.tool = out.trace.intern_tool(loaded->tool_names()[static_cast<size_t>(turn.tool)]);
      out.trace.add(t.info, turns);
    }
    if (out.trace.empty()) {
      diag.error_global(ro.trace_path + ": no trajectories at step " + std::to_string(step));
      return false;
    }
  } else if (!ro.requests.empty()) {
    for (const auto& [in, gen] : ro.requests) add(in, gen);
  } else {
    trace::Rng rng(ro.seed);
    for (int64_t i = 0; i < ro.count; ++i) {
      const int64_t in = draw(rng, ro.input);
      add(in, draw(rng, ro.output));
    }
  }
  if (ro.arrival_rate_per_s > 0) {
    trace::Rng rng(ro.seed + 1);
    double t = 0;
    for (size_t i = 0; i < out.trace.size(); ++i) {
      out.arrivals.push_back(SimTime::from_seconds(t));
      t += rng.exponential(1.0 / ro.arrival_rate_per_s);
    }
  }
  return true;
}

ordered_json dist_json(const rl::Distribution& d) {
  return ordered_json{{"mean", d.mean}, {"p50", d.p50}, {"p99", d.p99}, {"max", d.max}};
}

}  // namespace

int estimate_rollout(const input::StageSpec& s, const std::string& file, bool json, bool per_iteration) {
  const auto& ro = s.rollout;
  if (s.model.num_heads % ro.tp != 0 || s.model.num_layers % ro.pp != 0) {
    std::cerr << file << ": /engine: tp " << ro.tp << " pp " << ro.pp << " does not split the model's heads or layers\n";
    return kExitBadInput;
  }
  rl::RolloutOptions o;
  o.model = &s.model;
  o.cluster = &s.cluster;
  o.layout = {ro.tp, ro.pp, ro.ep};
  o.engines = ro.engines;
  o.engine = ro.engine;
  o.routing = ro.routing;
  o.tool_policy = ro.tool_policy;
  o.per_iteration = per_iteration;
  input::Diagnostics diag;
  Requests req;
  if (!build_requests(ro, req, diag)) {
    std::cerr << input::format_all(diag);
    return kExitBadInput;
  }
  rl::RolloutInput in;
  for (size_t i = 0; i < req.trace.size(); ++i) in.trajectories.push_back(req.trace.trajectory(i));
  in.tool_names = req.trace.tool_names();
  in.arrivals = req.arrivals;
  if (const std::string problem = rl::check_rollout(o, &in); !problem.empty()) {
    std::cerr << file << ": /engine: " << problem << "\n";
    return kExitBadInput;
  }
  const auto r = rl::simulate_rollout(o, in);
  const auto m = rl::rollout_metrics(r, req.arrivals);
  const auto mem = model::inference_memory(s.model, s.cluster.gpu, rl::engine_memory_options(o));
  const auto band = model::validation_band("rollout", s.cluster.gpu.name);
  if (json) {
    ordered_json j;
    j["kind"] = "rollout";
    j["requests"] = m.requests;
    j["trajectories"] = m.trajectories;
    j["makespan_s"] = m.makespan_s;
    if (band) {
      j["makespan_s_low"] = band->time_low(m.makespan_s);
      j["makespan_s_high"] = band->time_high(m.makespan_s);
    }
    j["requests_per_s"] = m.requests_per_s;
    j["output_tokens_per_s"] = m.output_tokens_per_s;
    j["ttft_s"] = dist_json(m.ttft_s);
    j["tpot_s"] = dist_json(m.tpot_s);
    j["latency_s"] = dist_json(m.latency_s);
    j["preemptions"] = m.preemptions;
    j["long_tail_s"] = m.long_tail_s;
    j["engine_busy_fraction"] = m.engine_busy_fraction;
    j["kv_capacity_tokens"] = mem.kv_capacity_tokens;
    j["kv_peak_fraction"] = m.kv_peak_fraction;
    j["prefill_tokens"] = m.prefill_tokens;
    j["cached_tokens"] = m.cached_tokens;
    j["generated_tokens"] = m.generated_tokens;
    j["events"] = r.events;
    ordered_json pools = ordered_json::array();
    for (const auto& p : m.pools)
      pools.push_back({{"name", p.name}, {"actions", p.actions}, {"act_s", dist_json(p.act_s)},
                       {"queue_s", dist_json(p.queue_s)}, {"busy_resource_s", p.busy_resource_s},
                       {"peak_in_use", p.peak_in_use}, {"peak_provisioned", p.peak_provisioned},
                       {"cold_starts", p.cold_starts}});
    j["tools"] = pools;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("rollout %s on %lld engine(s) of tp %lld pp %lld (%s): %lld requests, %lld trajectories\n",
              s.model.name.c_str(), static_cast<long long>(ro.engines), static_cast<long long>(ro.tp),
              static_cast<long long>(ro.pp), s.cluster.gpu.name.c_str(), static_cast<long long>(m.requests),
              static_cast<long long>(m.trajectories));
  std::printf("  makespan             %10.3f s (long tail %.3f s after 90%% done)\n", m.makespan_s, m.long_tail_s);
  if (band && m.makespan_s > 0)
    std::printf("                       %+.0f%% to %+.0f%%: 80%% of %d published serving runs%s%s\n",
                100 * (band->time_low(m.makespan_s) / m.makespan_s - 1),
                100 * (band->time_high(m.makespan_s) / m.makespan_s - 1), band->rows, band->gpu.empty() ? "" : " on ",
                band->gpu.c_str());
  std::printf("  request throughput   %10.2f req/s\n  output throughput    %10.1f tok/s\n", m.requests_per_s,
              m.output_tokens_per_s);
  std::printf("  TTFT mean/p50/p99    %10.1f / %.1f / %.1f ms\n", 1e3 * m.ttft_s.mean, 1e3 * m.ttft_s.p50, 1e3 * m.ttft_s.p99);
  std::printf("  TPOT mean/p50/p99    %10.2f / %.2f / %.2f ms\n", 1e3 * m.tpot_s.mean, 1e3 * m.tpot_s.p50, 1e3 * m.tpot_s.p99);
  std::printf("  preemptions          %10lld\n  KV cache             %10lld tokens per engine, peak %.0f%% used\n",
              static_cast<long long>(m.preemptions), static_cast<long long>(mem.kv_capacity_tokens), 100 * m.kv_peak_fraction);
  std::printf("  engines busy         %10.0f %%\n", 100 * m.engine_busy_fraction);
  for (const auto& p : m.pools)
    std::printf("  tool pool %-10s %lld actions, ACT mean/p99 %.2f / %.2f s, queue mean %.2f s, %.0f busy resource-s, peak %lld\n",
                p.name.c_str(), static_cast<long long>(p.actions), p.act_s.mean, p.act_s.p99, p.queue_s.mean,
                p.busy_resource_s, static_cast<long long>(p.peak_in_use));
  return kExitOk;
}

}  // namespace arlsim::app
