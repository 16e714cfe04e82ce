#include "runtime/validate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "runtime/pipeline.h"
#include "runtime/program.h"
#include "sim/exec/analytic.h"
#include "sim/graph/step_graph.h"
#include "sim/rl/step.h"
#include "sim/core/assert.h"
#include "sim/core/percentile.h"
#include "sim/rl/dispatch.h"

namespace arlsim::runtime {

namespace {

// The median of the absolute values, by the nearest rank as every report takes percentiles.
double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  std::sort(v.begin(), v.end());
  return nearest_rank(v, 50);
}

// Each data-parallel rank's micro-batches on its tp groups: every one of its cp ranks (data ranks
// dp x cp .. dp x cp + cp - 1) runs each of them on its part of the tokens, a rank with fewer
// than those it gathers parameters with (ZeRO-3) joining the gathers of the ones it lacks.
void add_micro_batches(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, int64_t first_device,
                       const std::vector<std::vector<rl::MicroBatch>>& batches, rl::MicroBatchTimer& timer,
                       bool forward_only, int32_t weights) {
  const int64_t data_ranks = l.dp * l.cp;
  std::vector<std::vector<model::TrainRequest>> requests(static_cast<size_t>(l.dp));  // by data-parallel rank
  for (int64_t dp = 0; dp < l.dp; ++dp)
    for (const auto& b : batches[static_cast<size_t>(dp)])
      if (b.tokens > 0) requests[static_cast<size_t>(dp)].push_back(timer.request(b));
  const auto local_tokens = [&](const model::TrainRequest& r) { return r.layout.micro_batch * r.seq_len / l.cp; };
  // Each data-parallel rank's micro-batches as its ep group meets them: its own, then under expert
  // parallelism those only its peers have (the largest of theirs at that index, joined), each
  // one's all-to-alls exchanging the group's largest at that index (the members run micro-batches
  // of their own sizes and counts; the backends move equal parts).
  std::vector<std::vector<model::TrainRequest>> runs = requests;
  std::vector<PipelineJoins> joins(static_cast<size_t>(l.dp));
  for (int64_t dp = 0; dp < l.dp; ++dp) {
    auto& j = joins[static_cast<size_t>(dp)];
    j.own = requests[static_cast<size_t>(dp)].size();
    if (l.ep == 1) continue;
    for (size_t i = 0;; ++i) {
      const model::TrainRequest* largest = nullptr;
      for (int64_t peer = dp / l.ep * l.ep; peer < dp / l.ep * l.ep + l.ep; ++peer) {
        const auto& theirs = requests[static_cast<size_t>(peer)];
        if (i < theirs.size() && (!largest || local_tokens(theirs[i]) > local_tokens(*largest))) largest = &theirs[i];
      }
      if (!largest) break;
      j.ep_tokens.push_back(local_tokens(*largest));
      if (i >= j.own) runs[static_cast<size_t>(dp)].push_back(*largest);
    }
  }
  // Under ZeRO-3 every member of a shard group (or of an expert group) joins each parameter
  // gather, so each data-parallel rank meets as many micro-batches' gathers as the busiest of its
  // shard group: of every rank when a mixture-of-experts model gathers its experts (their groups
  // cross the shard groups) or when a shard group splits a rank's cp ranks (which chains them).
  struct Busiest {
    size_t count = 0, dp = 0;
  };
  std::vector<Busiest> busiest(static_cast<size_t>(l.dp));
  for (size_t dp = 0; dp < runs.size(); ++dp) busiest[dp] = {runs[dp].size(), dp};
  const RankGroups first_groups = rank_groups(l, first_device, 0);
  const bool experts = model::largest_stage_params(m, l).experts > 0 && !first_groups.experts.empty();
  if (!first_groups.shard.empty() || experts) {
    const int64_t size = std::min(data_ranks, l.sharding_ranks());
    const bool whole = experts || size % l.cp != 0;
    const auto set_of = [&](size_t dp) { return whole ? 0 : static_cast<int64_t>(dp) * l.cp / size; };
    std::map<int64_t, Busiest> of_set;
    for (size_t dp = 0; dp < runs.size(); ++dp)
      if (auto& b = of_set[set_of(dp)]; runs[dp].size() > b.count) b = {runs[dp].size(), dp};
    for (size_t dp = 0; dp < runs.size(); ++dp) busiest[dp] = of_set[set_of(dp)];
  }
  if (l.pp > 1) {
    // Each data rank's pipeline, over as many micro-batches as the busiest it gathers with: the
    // ones beyond its ep group's joined for their gathers alone.
    for (size_t dp = 0; dp < runs.size(); ++dp) {
      joins[dp].gathers_only = runs[dp].size();
      while (runs[dp].size() < busiest[dp].count) runs[dp].push_back(runs[busiest[dp].dp][runs[dp].size()]);
    }
    for (int64_t rank = 0; rank < data_ranks; ++rank) {
      std::vector<DeviceGroup> stages;
      std::vector<RankGroups> groups;
      for (int64_t stage = 0; stage < l.pp; ++stage) {
        stages.push_back(tp_group(l, first_device, rank, stage));
        groups.push_back(rank_groups(l, first_device, rank, stage));
      }
      const auto dp = static_cast<size_t>(rank / l.cp);
      add_pipeline(p, m, runs[dp], stages, forward_only, weights, groups, joins[dp]);
    }
    return;
  }
  for (int64_t rank = 0; rank < data_ranks; ++rank) {
    RankGroups groups = rank_groups(l, first_device, rank);
    const auto dp = static_cast<size_t>(rank / l.cp);
    const PipelineJoins& j = joins[dp];
    const DeviceGroup devices = tp_group(l, first_device, rank);
    for (size_t i = 0; i < runs[dp].size(); ++i) {
      groups.ep_tokens = j.ep_tokens.empty() ? 0 : j.ep_tokens[i];
      if (i < j.own) add_micro_batch(p, m, runs[dp][i], devices, forward_only, weights, groups);
      else add_micro_batch_joins(p, m, runs[dp][i], devices, forward_only, weights, groups);
    }
    // Then the gathers of the micro-batches it lacks.
    for (size_t i = runs[dp].size(); i < busiest[dp].count; ++i)
      add_parameter_gathers(p, m, l, devices, forward_only, groups);
  }
}

// The program of one activity of a step, from the step's execution record (and the previous
// simulated step's, whose layouts a weight sync switches from; none for the first).
Program program_of(const input::ScenarioSpec& s, const rl::StepExecution& e, const rl::StepExecution* previous,
                   const exec::ActivityRecord& a, double* tail_s) {
  Program p;
  const auto& l = e.train;
  const graph::Placement ranks = rl::train_placement(s, l);
  switch (a.stage) {
    case graph::Stage::rollout: {
      // Each engine runs its iterations as the scheduler formed them, idle (its requests at their
      // tools) for as long as the simulator had it idle.
      const graph::Placement engines = rl::rollout_placement(s, e.rollout);
      const input::EngineSpec& engine_spec = rl::rollout_options(s, e.rollout).engine;
      const model::EngineExecution execution = rl::engine_execution(engine_spec, s.cluster.gpu);
      const model::Speculation spec = rl::engine_speculation(engine_spec);
      std::map<int64_t, double> last_end;
      std::map<int64_t, double> verifications;  // by engine: the fraction of a verification step owed
      double latest = 0;
      for (const auto& it : e.iterations) {
        DeviceGroup devices;
        for (int64_t d : engines.replica_devices(it.engine)) devices.push_back(d);
        const double gap = it.start_s - last_end[it.engine];
        if (gap > 1e-9)
          for (int64_t d : devices) {
            Kernel w;
            w.kind = Kernel::Kind::wait;
            w.seconds = gap;
            p.on(d).push_back(w);
          }
        std::vector<size_t> before;
        for (int64_t d : devices) before.push_back(p.on(d).size());
        if (spec.on() && it.batch.prefill.empty() && it.batch.decode_seqs > 0) {
          // Speculative decoding, as the inference model prices it: a decode-only iteration's
          // tokens come mean_accepted at a time from verification steps of draft_tokens + 1 rows
          // a sequence, each after the host drafts them (draft_s, the engine busy). A record's
          // iterations / mean_accepted steps run, the fraction left carried to the engine's next
          // decode-only record, so that each engine runs the steps the model prices in expectation.
          double& owed = verifications[it.engine];
          owed += static_cast<double>(it.iterations) / spec.mean_accepted;
          const auto steps = static_cast<int64_t>(std::floor(owed + 1e-9));
          owed -= static_cast<double>(steps);
          model::IterationBatch verify = it.batch;
          verify.decode_rows_per_seq = spec.draft_tokens + 1;
          for (int64_t j = 0; j < steps; ++j) {
            verify.decode_kv_tokens =
                it.batch.decode_kv_tokens + std::llround(static_cast<double>(j) * spec.mean_accepted * static_cast<double>(it.batch.decode_seqs));
            for (int64_t device : devices) {
              Kernel draft;
              draft.kind = Kernel::Kind::wait;
              draft.seconds = spec.draft_s;
              draft.busy = true;
              if (draft.seconds > 0) p.on(device).push_back(draft);
            }
            add_engine_iteration(p, s.model, devices, verify, 1, model::serving_element_bytes(s.cluster.gpu), execution);
          }
        } else {
          add_engine_iteration(p, s.model, devices, it.batch, it.iterations, model::serving_element_bytes(s.cluster.gpu),
                               execution);
        }
        const int8_t phase = it.batch.prefill.empty() ? 1 : 2;
        for (size_t j = 0; j < devices.size(); ++j) {
          auto& ks = p.on(devices[j]);
          for (size_t x = before[j]; x < ks.size(); ++x) ks[x].phase = phase;
        }
        last_end[it.engine] = it.end_s;
        latest = std::max(latest, it.end_s);
      }
      *tail_s = std::max(0.0, e.rollout_s - latest);  // the last tool calls after the engines' work
      break;
    }
    case graph::Stage::reward:
      *tail_s = a.end_s - a.start_s;  // rule rewards on the host: a timer
      break;
    case graph::Stage::old_logprob:
    case graph::Stage::ref_logprob:
    case graph::Stage::critic: {
      // A forward pass in the policy's layout for it, over the samples as the simulator assigned
      // them: where dispatch put them when the pass keeps the training ranks, else balanced anew.
      const bool critic = a.stage == graph::Stage::critic;
      if (critic && !s.workload.critic) break;  // no critic: the activity is empty
      const auto& layout = a.stage == graph::Stage::old_logprob ? s.policy.old_logprob
                           : a.stage == graph::Stage::ref_logprob ? s.policy.ref_logprob
                                                                  : s.policy.critic;
      const input::ModelSpec& m = critic ? *s.workload.critic : s.model;
      // The critic in its own token budget; a model that computes padded tensors at the limits.
      const input::TrainLayout pl = rl::pass_layout(l, layout);
      const input::TrainLayout tl = critic ? rl::model_layout_of(m, pl, true) : pl;
      const std::vector<int64_t> rank =
          tl.dp == l.dp ? e.rank
                        : rl::assign_ranks(e.tokens, tl.dp, s.policy.batch_assignment != input::BatchAssignment::in_order);
      const graph::Placement devices = rl::train_placement(s, tl);
      rl::MicroBatchTimer timer(s, m, tl, critic);
      const auto batches =
          rl::micro_batches_of_ranks(rl::samples_by_rank(e.tokens, rank, tl.dp, 0, 1), tl, s.workload.padded_length(critic));
      const int32_t weights = critic ? weights_after(s.model) : 0;
      const bool reference = a.stage == graph::Stage::ref_logprob;
      if (reference) add_reference_swap(p, s, tl, devices.first_device(), devices.ranks(), true);
      add_micro_batches(p, m, tl, devices.first_device(), batches, timer, true, weights);
      if (reference) add_reference_swap(p, s, tl, devices.first_device(), devices.ranks(), false);
      break;
    }
    case graph::Stage::dispatch: {
      std::vector<double> bytes;
      std::vector<int64_t> receiver;
      const auto tensors = rl::dispatch_tensors(s.workload.use_reference, s.workload.critic.has_value());
      for (size_t i = 0; i < e.tokens.size(); ++i) {
        double b = 0;
        for (const auto& t : tensors) b += t.bytes_per_token * static_cast<double>(e.tokens[i]) + t.bytes_per_sample;
        bytes.push_back(b);
        receiver.push_back(ranks.replica_device(e.rank[i]));
      }
      add_dispatch(p, bytes, e.producer_gpu, receiver);
      break;
    }
    case graph::Stage::train: {
      // The policy's optimizer step on this part's mini-batch, then the critic's on the same
      // samples with its value head (the simulator spreads both over the parts alike).
      const int64_t mini_batches = s.workload.mini_batches;
      const int64_t part = a.part % mini_batches;
      auto optimizer_step = [&](const input::ModelSpec& m, bool value_head, int32_t weights) {
        // Each model's micro-batches in its own budget, padded where it computes padded tensors.
        const input::TrainLayout ml = value_head ? rl::model_layout_of(m, l, true) : l;
        const auto batches = rl::micro_batches_of_ranks(rl::samples_by_rank(e.tokens, e.rank, l.dp, part, mini_batches), ml,
                                                        s.workload.padded_length(value_head));
        rl::MicroBatchTimer timer(s, m, l, value_head);
        add_micro_batches(p, m, l, ranks.first_device(), batches, timer, false, weights);
        // Under ZeRO 2-3 the gradients are reduced after every micro-batch's backward, as many
        // times as the rank with the most micro-batches ran one (all ranks join each reduction).
        int64_t reductions = 1;
        if (l.reduces_each_micro_batch())
          for (const auto& rank_batches : batches) reductions = std::max(reductions, static_cast<int64_t>(rank_batches.size()));
        for (int64_t stage = 0; stage < l.pp; ++stage) {
          add_expert_reduction(p, m, l, ranks.first_device(), stage, ExpertPhase::gradients, reductions);
          for (int64_t tp = 0; tp < l.tp; ++tp) add_optimizer_step(p, m, l, dp_group(l, ranks.first_device(), tp, stage), reductions);
          add_expert_reduction(p, m, l, ranks.first_device(), stage, ExpertPhase::parameters);
        }
      };
      optimizer_step(s.model, false, 0);
      if (s.workload.critic) optimizer_step(*s.workload.critic, true, weights_after(s.model));
      break;
    }
    case graph::Stage::weight_sync:
      if (previous) add_layout_switch(p, s, previous->rollout, previous->train, e.rollout, l);
      add_weight_sync(p, s, e.rollout, l);
      break;
  }
  return p;
}

}  // namespace

std::vector<std::vector<size_t>> concurrent_waves(const std::vector<exec::ActivityRecord>& activities,
                                                  const std::vector<std::set<int64_t>>& devices) {
  constexpr double kEps = 1e-9;
  const size_t n = activities.size();
  const auto overlap = [&](size_t x, size_t y) {
    const auto &a = activities[x], &b = activities[y];
    return std::min(a.end_s, b.end_s) - std::max(a.start_s, b.start_s);
  };
  const auto disjoint = [&](size_t x, size_t y) {
    for (int64_t d : devices[x])
      if (devices[y].count(d)) return false;
    return true;
  };
  // Pairs that could run at once, the longest overlap first: an activity overlapping several
  // others in turn (a rollout beside a step's passes, then its training) runs beside the one it
  // overlaps most.
  struct Pair {
    double overlap;
    size_t x, y;
  };
  std::vector<Pair> pairs;
  for (size_t x = 0; x < n; ++x)
    for (size_t y = x + 1; y < n; ++y)
      if (!devices[x].empty() && !devices[y].empty() && overlap(x, y) > kEps && disjoint(x, y))
        pairs.push_back({overlap(x, y), x, y});
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.overlap > b.overlap; });
  std::vector<std::vector<size_t>> waves;
  std::vector<int64_t> wave_of(n, -1);
  const auto joins = [&](size_t x, const std::vector<size_t>& wave) {
    for (size_t member : wave)
      if (overlap(x, member) <= kEps || !disjoint(x, member)) return false;
    return true;
  };
  for (const Pair& p : pairs) {
    const int64_t wx = wave_of[p.x], wy = wave_of[p.y];
    if (wx < 0 && wy < 0) {
      wave_of[p.x] = wave_of[p.y] = static_cast<int64_t>(waves.size());
      waves.push_back({p.x, p.y});
    } else if ((wx < 0) != (wy < 0)) {
      const size_t free = wx < 0 ? p.x : p.y;
      const auto w = static_cast<size_t>(wx < 0 ? wy : wx);
      if (joins(free, waves[w])) {
        wave_of[free] = static_cast<int64_t>(w);
        waves[w].push_back(free);
      }
    }
  }
  for (size_t x = 0; x < n; ++x)
    if (wave_of[x] < 0) waves.push_back({x});
  // In the order of each group's first member in `activities`.
  for (auto& w : waves) std::sort(w.begin(), w.end());
  std::sort(waves.begin(), waves.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return waves;
}

ValidationReport validate(const input::ScenarioSpec& s, const trace::Trace& t, const rl::RunOptions& options,
                          Backend& backend, const ValidationCheck& check,
                          const std::function<void(const ValidationProgress&)>& progress) {
  ARLSIM_ASSERT(unsupported_reason(s).empty());
  ValidationReport report;
  std::map<int64_t, rl::StepExecution> executions;
  rl::RunOptions o = options;
  o.timeline = true;
  o.sink = nullptr;
  o.on_step = [&](rl::StepExecution&& e) { executions[e.step] = std::move(e); };
  report.predicted = rl::simulate_run(s, t, o);
  const rl::RunResult& pred = report.predicted;
  // A plan the simulator finds out of memory is not executed (the caller says where it ran out):
  // its stopped step has activities but no execution record.
  if (!pred.oom_events.empty()) return report;
  auto previous_of = [&](int64_t step) -> const rl::StepExecution* {
    const auto it = executions.find(step);
    return it == executions.begin() ? nullptr : &std::prev(it)->second;
  };

  // Every activity of the step graph, in its order (ids are a topological order), run for real.
  std::vector<exec::ActivityRecord> stages;
  for (const auto& a : pred.activities)
    if (a.kind == exec::RecordKind::stage) stages.push_back(a);
  std::sort(stages.begin(), stages.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  std::vector<std::set<int64_t>> devices_of;  // by activity: the devices its program runs on
  std::vector<std::vector<size_t>> waves;      // what runs at once (concurrent_waves)
  // The program of a group of activities run at once, and its name: the members' programs merged,
  // each rollout's tool calls after its engines' work a wait on its first device. A group of one
  // is its activity's program, with the tail apart (the second member).
  auto wave_program = [&](const std::vector<size_t>& wave) -> std::pair<Program, double> {
    const auto build = [&](size_t i, double* tail) {
      return program_of(s, executions.at(stages[i].step), previous_of(stages[i].step), stages[i], tail);
    };
    double tail = 0;
    if (wave.size() == 1) {
      Program alone = build(wave.front(), &tail);
      return {std::move(alone), tail};
    }
    Program merged;
    for (size_t i : wave) {
      tail = 0;  // program_of sets it for a rollout or a reward only
      Program p = build(i, &tail);
      if (tail > 0 && !p.devices.empty()) {
        Kernel w;
        w.kind = Kernel::Kind::wait;
        w.seconds = tail;
        p.devices.front().second.push_back(w);
      }
      merge_into(merged, std::move(p));
    }
    return {std::move(merged), 0.0};
  };
  {
    // Every program built before any runs: one the runtime cannot execute as the simulation
    // formed it is refused whole; and the buffers they will need (the programs are built again
    // below: holding them all would take more memory than building them twice takes time).
    auto sizer = check ? backend.buffer_sizer() : nullptr;
    devices_of.assign(stages.size(), {});
    try {
      double tail = 0;
      for (size_t i = 0; i < stages.size(); ++i) {
        const auto& a = stages[i];
        const Program p = program_of(s, executions.at(a.step), previous_of(a.step), a, &tail);
        for (const auto& [device, kernels] : p.devices) devices_of[i].insert(device);
      }
    } catch (const UnsupportedPlan& e) {
      report.refused = e.what();
      return report;
    }
    waves = concurrent_waves(stages, devices_of);
    if (sizer)
      for (const auto& wave : waves) sizer->add(wave_program(wave).first);  // what runs at once, together
    if (check) {
      report.refused = check(pred, sizer ? sizer->bytes() : 0.0);
      if (!report.refused.empty()) return report;
    }
  }
  std::vector<double> measured(stages.size(), 0);
  // Each rollout's engines as measured: their spans of work, from the activity's start.
  std::vector<std::vector<exec::ActivityRecord>> engine_spans(stages.size());
  // What one activity's run measured: its duration (the slowest of its devices, and the tool
  // calls after its engines' work) and its engines' spans.
  auto take = [&](size_t i, const RunStats& r, double tail) {
    const auto& a = stages[i];
    const rl::StepExecution& e = executions.at(a.step);
    double slowest = 0;
    for (const auto& [device, seconds] : r.device_seconds)
      if (devices_of[i].count(device)) slowest = std::max(slowest, seconds);
    measured[i] = slowest + tail;
    if (a.stage != graph::Stage::rollout) return;
    const graph::Placement engines = rl::rollout_placement(s, e.rollout);
    const int64_t per_engine = e.rollout.gpus_per_engine();
    std::set<int64_t> active;  // the engines that ran
    for (const auto& iteration : e.iterations) active.insert(iteration.engine);
    std::map<int64_t, const std::vector<BusySpan>*> busy;
    for (const auto& [device, spans] : r.busy) busy[device] = &spans;
    for (int64_t engine : active) {
      const int64_t first = engines.replica_device(engine);
      const auto found = busy.find(first);
      if (found == busy.end()) continue;
      for (const BusySpan& b : *found->second) {
        exec::ActivityRecord span;
        span.step = a.step;
        span.stage = graph::Stage::rollout;
        span.op = graph::OpKind::engine_run;
        span.side = graph::Side::rollout;
        span.kind = exec::RecordKind::engine_span;
        span.index = engine;
        span.a = b.phase == 2 ? 1 : 0;
        span.devices = {first, per_engine};
        span.start_s = b.start;
        span.end_s = b.end;
        engine_spans[i].push_back(span);
      }
    }
  };
  // Each kernel as measured and as the cost model prices it alone.
  KernelTally tally(s);
  auto account = [&](const RunStats& r) {
    report.kernels += r.kernels;
    report.bytes_verified += r.bytes_verified;
    report.checksum_failures += r.checksum_failures;
  };
  report.executed = static_cast<int64_t>(stages.size());
  for (size_t w = 0; w < waves.size(); ++w) {
    const std::vector<size_t>& wave = waves[w];
    // Activities the prediction overlaps on devices of their own run at once, as the plan runs
    // them (an asynchronous step's next rollout beside this step's training): one program, each
    // activity's duration its own devices', so that what they share (a CPU's memory, a node's
    // links) slows them as it would.
    if (wave.size() > 1) report.concurrent += static_cast<int64_t>(wave.size());
    std::string name = "step";
    for (size_t i : wave)
      name += " " + std::to_string(stages[i].step) + " " + std::string(graph::stage_name(stages[i].stage)) +
              (i == wave.back() ? "" : " and");
    ValidationProgress heard{name, w, waves.size()};
    if (progress) progress(heard);
    const auto started = std::chrono::steady_clock::now();
    const auto [program, tail] = wave_program(wave);
    const RunStats r = backend.run(program, name);
    if (tail > 0) std::this_thread::sleep_for(std::chrono::duration<double>(tail));
    if (progress) {
      heard.done = true;
      heard.measured_s = r.seconds + tail;
      heard.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      progress(heard);
    }
    for (size_t i : wave) take(i, r, tail);
    report.kernels.wait += tail;
    account(r);
    tally.add(program, r, [&](int64_t device) {
      for (size_t i : wave)
        if (devices_of[i].count(device)) return stages[i].stage;
      return stages[wave.front()].stage;
    });
  }
  report.kernel_kinds = tally.by_kind();
  report.kernel_shapes = tally.by_shape();

  // The measured run: the same records, placed by the measured durations on the same step graph
  // (the scenario's sync mode: a synchronous step is a chain; an asynchronous one overlaps the
  // next step's rollout with this step's training), each activity starting when those it waits
  // for have ended (the analytic executor).
  rl::RunResult& m = report.measured;
  m.scenario = pred.scenario;
  m.gpus = pred.gpus;
  m.gpus_per_node = pred.gpus_per_node;
  m.price_usd_per_gpu_hour = pred.price_usd_per_gpu_hour;
  m.gpu_memory_gib = pred.gpu_memory_gib;
  m.gpu_profile = pred.gpu_profile;
  m.pool_names = pred.pool_names;
  std::map<int64_t, size_t> step_index;
  for (const auto& st : pred.steps) {
    step_index[st.step] = m.steps.size();
    rl::StepRecord r;
    r.step = st.step;
    r.tokens = st.tokens;
    r.contexts = st.contexts;
    r.memory_peak_gib = st.memory_peak_gib;
    r.start_s = -1;
    m.steps.push_back(r);
  }
  // Each stage record's measured duration, and each step's optimizer steps (the graph's shape).
  std::map<int64_t, int32_t> train_parts;
  std::map<std::tuple<int64_t, graph::Stage, int32_t>, double> measured_of;
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto& a = stages[i];
    if (a.stage == graph::Stage::train) train_parts[a.step] = std::max(train_parts[a.step], a.parts);
    measured_of[{a.step, a.stage, a.part}] += measured[i];
  }
  graph::StepGraphBuilder builder(rl::sync_mode(s.policy));
  for (const auto& st : pred.steps) builder.add_step(st.step, {}, {}, std::max<int32_t>(1, train_parts[st.step]));
  graph::StepGraph g = builder.graph();
  for (auto& act : g.activities) {  // durations as measured
    const auto it = measured_of.find({act.step, act.stage, act.part});
    act.seconds = it != measured_of.end() ? it->second : 0.0;
  }
  exec::AnalyticExecutor placed;
  placed.advance(g);
  std::map<std::tuple<int64_t, graph::Stage, int32_t>, const exec::ActivityRecord*> placed_of;
  for (const auto& r : placed.records()) placed_of[{r.step, r.stage, r.part}] = &r;
  for (size_t i = 0; i < stages.size(); ++i) {
    exec::ActivityRecord a = stages[i];
    const auto where = placed_of.find({a.step, a.stage, a.part});
    ARLSIM_ASSERT(where != placed_of.end());
    a.start_s = where->second->start_s;
    a.end_s = a.start_s + measured[i];
    for (exec::ActivityRecord e : engine_spans[i]) {
      e.start_s += a.start_s;
      e.end_s += a.start_s;
      m.activities.push_back(e);
    }
    m.activities.push_back(a);
    rl::StepRecord& r = m.steps[step_index[a.step]];
    if (r.start_s < 0 || a.start_s < r.start_s) r.start_s = a.start_s;
    r.end_s = std::max(r.end_s, a.end_s);
    r.stages[a.stage] += measured[i];
  }
  double previous = 0;
  for (auto& r : m.steps) {
    r.start_s = std::max(0.0, r.start_s);
    r.time_s = r.end_s - previous;
    previous = r.end_s;
    r.tokens_per_s = r.time_s > 0 ? static_cast<double>(r.tokens) / r.time_s : 0;
  }
  m.total_time_s = previous;
  m.gpu_hours = static_cast<double>(m.gpus) * m.total_time_s / 3600.0;
  m.cost_usd = m.price_usd_per_gpu_hour > 0 ? m.gpu_hours * m.price_usd_per_gpu_hour : 0;
  m.steps_planned = static_cast<int64_t>(m.steps.size());

  // Predicted vs measured, per stage and per kind of activity.
  std::map<graph::Stage, Comparison> by_stage;
  std::map<graph::OpKind, Comparison> by_kind;
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto& a = stages[i];
    auto& st = by_stage[a.stage];
    st.name = std::string(graph::stage_name(a.stage));
    st.predicted_s += a.end_s - a.start_s;
    st.measured_s += measured[i];
    auto& k = by_kind[a.op];
    k.name = graph::op_name(a.op);
    k.predicted_s += a.end_s - a.start_s;
    k.measured_s += measured[i];
  }
  std::vector<double> stage_errors, kind_errors;
  for (const auto& [stage, c] : by_stage) {
    if (c.predicted_s <= 0 && c.measured_s <= 0) continue;
    report.stages.push_back(c);
    stage_errors.push_back(c.error());
  }
  for (const auto& [kind, c] : by_kind) {
    if (c.predicted_s <= 0 && c.measured_s <= 0) continue;
    report.activities.push_back(c);
    kind_errors.push_back(c.error());
  }
  report.median_abs_stage_error = median_abs(stage_errors);
  report.median_abs_activity_error = median_abs(kind_errors);
  for (double e : stage_errors) report.worst_abs_stage_error = std::max(report.worst_abs_stage_error, std::abs(e));
  for (double e : kind_errors) report.worst_abs_activity_error = std::max(report.worst_abs_activity_error, std::abs(e));
  return report;
}

std::string report_table(const ValidationReport& r) {
  std::string out;
  char line[256];
  auto rows = [&](const char* title, const std::vector<Comparison>& cs) {
    std::snprintf(line, sizeof line, "%-14s %13s %13s %9s\n", title, "predicted (s)", "measured (s)", "error");
    out += line;
    for (const auto& c : cs) {
      std::snprintf(line, sizeof line, "  %-12s %13.4f %13.4f %+8.1f%%\n", c.name.c_str(), c.predicted_s, c.measured_s,
                    100 * c.error());
      out += line;
    }
  };
  out += r.predicted.scenario + ": " + std::to_string(r.predicted.steps.size()) + " step(s) predicted and executed on " +
         std::to_string(r.predicted.gpus) + " devices";
  if (r.scale < 1) {
    std::snprintf(line, sizeof line, " (the plan scaled by %g)", r.scale);
    out += line;
  }
  out += "\n\n";
  rows("stage", r.stages);
  out += "\n";
  rows("activity", r.activities);
  std::snprintf(line, sizeof line,
                "\n|error| per stage     median %.1f%%, worst %.1f%%\n|error| per activity  median %.1f%%, worst %.1f%%\n",
                100 * r.median_abs_stage_error, 100 * r.worst_abs_stage_error, 100 * r.median_abs_activity_error,
                100 * r.worst_abs_activity_error);
  out += line;
  if (!r.kernel_kinds.empty()) {
    std::snprintf(line, sizeof line, "\n%-29s %9s %13s %13s %9s\n", "kernels, each priced alone", "count", "predicted (s)",
                  "measured (s)", "error");
    out += line;
    for (const auto& c : r.kernel_kinds) {
      std::snprintf(line, sizeof line, "  %-12s %-16s %7lld %13.4f %13.4f %+8.1f%%\n", c.stage.c_str(), c.kind.c_str(),
                    static_cast<long long>(c.count), c.predicted_s, c.measured_s, 100 * c.error());
      out += line;
    }
    out += "largest differences by shape (all in kernels.csv with --out):\n";
    for (size_t i = 0; i < std::min<size_t>(6, r.kernel_shapes.size()); ++i) {
      const auto& c = r.kernel_shapes[i];
      std::snprintf(line, sizeof line, "  %-12s %-16s %-40s x%-6lld %+.4f s %+8.1f%%\n", c.stage.c_str(), c.kind.c_str(),
                    c.shape.c_str(), static_cast<long long>(c.count), c.predicted_s - c.measured_s, 100 * c.error());
      out += line;
    }
    out += "\n";
  }
  std::snprintf(line, sizeof line, "total time    predicted %.3f s, measured %.3f s\n", r.predicted.total_time_s,
                r.measured.total_time_s);
  out += line;
  if (r.concurrent > 0) {
    std::snprintf(line, sizeof line, "at once       %lld of %lld activities ran beside another, as the prediction overlaps them\n",
                  static_cast<long long>(r.concurrent), static_cast<long long>(r.executed));
    out += line;
  }
  std::snprintf(line, sizeof line, "data          %.1f MiB moved with checksums, %lld checksum failure%s%s\n",
                r.bytes_verified / (1024.0 * 1024.0), static_cast<long long>(r.checksum_failures),
                r.checksum_failures == 1 ? "" : "s", r.checksum_failures == 0 ? ": nothing lost or corrupted" : "");
  out += line;
  return out;
}

std::string report_json(const ValidationReport& r) {
  using nlohmann::ordered_json;
  auto list = [](const std::vector<Comparison>& cs, const char* key) {
    ordered_json a = ordered_json::array();
    for (const auto& c : cs)
      a.push_back({{key, c.name}, {"predicted_s", c.predicted_s}, {"measured_s", c.measured_s}, {"error", c.error()}});
    return a;
  };
  ordered_json j;
  j["scenario"] = r.predicted.scenario;
  j["steps"] = r.predicted.steps.size();
  j["devices"] = r.predicted.gpus;
  j["scale"] = r.scale;
  j["stages"] = list(r.stages, "stage");
  j["activities"] = list(r.activities, "kind");
  j["median_abs_stage_error"] = r.median_abs_stage_error;
  j["worst_abs_stage_error"] = r.worst_abs_stage_error;
  j["median_abs_activity_error"] = r.median_abs_activity_error;
  j["worst_abs_activity_error"] = r.worst_abs_activity_error;
  j["predicted_total_s"] = r.predicted.total_time_s;
  j["measured_total_s"] = r.measured.total_time_s;
  j["kernels_measured_s"] = {{"gemm", r.kernels.gemm},          {"attention", r.kernels.attention},
                             {"decode_attention", r.kernels.decode_attention}, {"memory", r.kernels.memory},
                             {"collective", r.kernels.collective}, {"copy", r.kernels.copy},
                             {"wait", r.kernels.wait}};
  auto kernel_rows = [](const std::vector<KernelComparison>& cs, size_t most) {
    ordered_json a = ordered_json::array();
    for (size_t i = 0; i < std::min(most, cs.size()); ++i) {
      const auto& c = cs[i];
      ordered_json row = {{"stage", c.stage}, {"kind", c.kind}};
      if (!c.shape.empty()) row["shape"] = c.shape;
      row["count"] = c.count;
      row["predicted_s"] = c.predicted_s;
      row["measured_s"] = c.measured_s;
      row["error"] = c.error();
      a.push_back(std::move(row));
    }
    return a;
  };
  j["kernels"] = kernel_rows(r.kernel_kinds, r.kernel_kinds.size());
  j["kernel_shapes"] = kernel_rows(r.kernel_shapes, 20);  // the largest differences; every shape in kernels.csv
  j["bytes_verified"] = r.bytes_verified;
  j["checksum_failures"] = r.checksum_failures;
  j["activities_executed"] = r.executed;
  j["activities_concurrent"] = r.concurrent;
  return j.dump(2) + "\n";
}

}  // namespace arlsim::runtime
