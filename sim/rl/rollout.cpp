#include "sim/rl/rollout_sim.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/core/assert.h"
#include "sim/core/percentile.h"
#include "sim/model/memory.h"
#include "sim/input/scenario.h"

namespace arlsim::rl::rollout_detail {

int64_t Rollout::predicted_left(int64_t t) const {
  const Trajectory& tr = traj_[static_cast<size_t>(t)];
  const int64_t predicted = in_.predicted_tokens[static_cast<size_t>(t)];
  // A trajectory carried over has done the part of its predicted length it brings as context: what
  // is left of it is the backlog it adds (none once it has outgrown the prediction).
  if (tr.continues && tr.turn == 0 && tr.turn_count > 0) return std::max<int64_t>(0, predicted - tr.turns[0].prefill_tokens);
  return predicted;
}


RolloutResult Rollout::run() {
  // Length-aware routing sends the longest predicted trajectories first.
  std::vector<int64_t> order(traj_.size());
  std::iota(order.begin(), order.end(), 0);
  if (o_.routing == input::Routing::length_aware && in_.predicted_tokens.size() == traj_.size())
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return predicted_left(a) > predicted_left(b); });
  for (int64_t t : order) {
    const auto i = static_cast<size_t>(t);
    if (i < in_.carried.size() && in_.carried[i].finished) {
      finish_carried(t);
      continue;
    }
    const SimTime at = in_.arrivals.empty() ? SimTime::zero() : in_.arrivals[i];
    sim_.at(at, kArrivalPhase, this, encode(kTurnArrives, static_cast<uint64_t>(t)));
  }
  sim_.run();
  if (sim_.stopped()) {
    keep_completed_iterations();
    record_paused();
  }
  result_.events = sim_.events_run();
  for (size_t e = 0; e < engines_.size(); ++e) {
    result_.engines[e].busy_s = engines_[e].busy_s;
    result_.engines[e].stats = engines_[e].sched->stats();
  }
  for (size_t p = 0; p < pools_.size(); ++p) result_.pools[p].stats = pools_[p]->stats();
  std::vector<SimTime> ends;
  for (size_t t = 0; t < traj_.size(); ++t)
    if (result_.done[t]) ends.push_back(result_.trajectory_end[t]);
  std::sort(ends.begin(), ends.end());
  if (!ends.empty()) {
    result_.makespan = ends.back();
    result_.p90_done = nearest_rank(ends, 90);
  }
  return std::move(result_);
}

void Rollout::on_event(uint64_t payload) {
  if (closing_) return;  // a pool granting at once a unit given back as the trajectories go
  const auto kind = static_cast<Kind>(payload >> 60);
  const auto index = static_cast<int64_t>(payload & 0xffffffffu);
  switch (kind) {
    case kEngineDone: work_done(index); break;
    case kTurnArrives: start_turn(index); break;
    case kToolGranted: tool_granted(index); break;
    case kToolDone: tool_done(index, payload >> 32 & kCallMask); break;
    case kRewardGranted: reward_granted(index); break;
    case kRewardDone: reward_done(index); break;
    case kEngineStart: {
      Engine& eng = engines_[static_cast<size_t>(index)];
      eng.starting = false;
      eng.start_s = sim_.now().seconds();
      plan(index);
      break;
    }
  }
}

void Rollout::prefetch(uint64_t payload) const {
  const auto kind = static_cast<Kind>(payload >> 60);
  const auto index = static_cast<size_t>(payload & 0xffffffffu);
  if (closing_ || kind == kEngineStart) return;
  if (kind == kEngineDone) {
    // A window ends where a grouped request ends its turn: its request, its entry on the engine
    // and its trajectory have all gone cold while the other engines ran.
    const EngineScheduler::TurnEndHint& h = ending_[index];
    if (h.trajectory < 0) return;
    __builtin_prefetch(&traj_[static_cast<size_t>(h.trajectory)]);
    __builtin_prefetch(h.request);
    __builtin_prefetch(static_cast<const char*>(h.request) + 64);  // a request spans two lines
    if (h.entry) __builtin_prefetch(h.entry);
    return;
  }
  if (index >= traj_.size()) return;
  __builtin_prefetch(&traj_[index]);
  if (kind == kToolDone) {
    // What the tool's end and the next turn read beyond the trajectory, located when the tool
    // started: one hop, where finding them from the trajectory would take a miss per hop.
    const ToolCall& c = calls_[payload >> 32 & kCallMask];
    if (c.record >= 0) __builtin_prefetch(&result_.tool_calls[static_cast<size_t>(c.record)], 1);
    if (c.turn) __builtin_prefetch(c.turn);
    if (c.entry) __builtin_prefetch(c.entry);
  }
}

void Rollout::start_turn(int64_t t) {
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  const trace::Turn& turn = tr.turns[tr.turn];
  tr.tool = turn.tool;
  tr.tool_latency = turn.tool_latency;
  tr.obs_tokens = turn.obs_tokens;
  tr.context += turn.prefill_tokens;
  int64_t gen = turn.gen_tokens;
  if (o_.max_context > 0 && tr.context + gen > o_.max_context) {
    // The context limit cuts the response, as frameworks truncate at max_model_len.
    gen = std::max<int64_t>(0, o_.max_context - tr.context);
    tr.truncated = true;
  }
  if (gen == 0 && tr.truncated) {
    finish_trajectory(t);
    return;
  }
  RouteRequest rr{t, tr.turn, tr.pinned ? -1 : tr.engine, 0};
  if (!in_.predicted_tokens.empty() && router_->uses_prediction(rr)) rr.predicted_tokens = predicted_left(t);
  if (tr.pinned) {
    tr.pinned = false;  // back to the engine that kept its KV, whose backlog a router may count
    router_->placed(rr, tr.engine, loads_);
  } else {
    if (router_->uses_load(rr)) refresh_loads();
    tr.engine = static_cast<int32_t>(router_->route(rr, loads_));
  }
  result_.engine[static_cast<size_t>(t)] = tr.engine;
  Request r;
  r.trajectory = t;
  r.prompt_id = tr.prompt;
  r.prompt_tokens = tr.turn == 0 && !tr.continues ? turn.prefill_tokens : 0;
  r.context = tr.context;
  r.gen_target = gen;
  if (o_.record_turns) {
    tr.record = static_cast<int64_t>(result_.turns.size());
    result_.turns.push_back({t, tr.engine, sim_.now(), sim_.now(), sim_.now(), tr.context, 0});
  }
  submit(tr.engine, r);
}

EngineLoad Rollout::load(int64_t e) const {
  const Engine& eng = engines_[static_cast<size_t>(e)];
  return {static_cast<int64_t>(eng.sched->running() + eng.sched->waiting()), eng.sched->pending_prefill_tokens()};
}

void Rollout::stale(int64_t e) {
  if (is_stale_[static_cast<size_t>(e)]) return;
  is_stale_[static_cast<size_t>(e)] = 1;
  stale_.push_back(e);
}

void Rollout::refresh_loads() {
  // Only engines whose scheduler was called since the last refresh can have another load:
  // thousands of first turns arrive together, and between two of them one engine changes.
  for (int64_t e : stale_) {
    is_stale_[static_cast<size_t>(e)] = 0;
    if (e < policy_engines_) loads_.set(static_cast<size_t>(e), load(e));
    else reward_loads_.set(static_cast<size_t>(e - policy_engines_), load(e));
  }
  stale_.clear();
}

void Rollout::submit(int64_t e, const Request& r) {
  Engine& eng = engines_[static_cast<size_t>(e)];
  stale(e);
  eng.sched->arrive(r);
  if (!eng.busy) {
    if (!eng.starting) {
      eng.starting = true;
      ARLSIM_ASSERT(!sim_.timer_pending(eng.timer));  // one timer serves the start and the work: never both
      sim_.set_timer(eng.timer, sim_.now(), kStartPhase, this, encode(kEngineStart, static_cast<uint64_t>(e)));
    }
  } else if (eng.windowed) {
    // Cut the window short: the iteration in progress completes, then the engine re-plans.
    const double elapsed = sim_.now().seconds() - eng.start_s;
    const int64_t done = eng.window.iterations_within(elapsed, eng.plan.batch.decode_kv_tokens);
    const int64_t keep = std::min(eng.iterations, done + 1);
    if (keep < eng.iterations) {
      eng.iterations = keep;
      ending_[static_cast<size_t>(e)] = {};  // it no longer ends a turn
      eng.end_s = eng.start_s + eng.window.sum(keep, eng.plan.batch.decode_kv_tokens);
      sim_.set_timer(eng.timer, SimTime::from_seconds(eng.end_s), kWorkPhase, this,
                     encode(kEngineDone, static_cast<uint64_t>(e)));
    }
  }
}

void Rollout::plan(int64_t e) {
  Engine& eng = engines_[static_cast<size_t>(e)];
  stale(e);
  if (eng.sched->idle()) {
    eng.busy = false;
    return;
  }
  eng.sched->plan(eng.plan);
  ending_[static_cast<size_t>(e)] = eng.sched->turn_end_hint();
  if (eng.plan.chunks.empty() && eng.plan.batch.decode_seqs == 0) {
    eng.busy = false;  // nothing can run (cannot happen with a non-empty engine, but stay safe)
    return;
  }
  eng.busy = true;
  double seconds = 0;
  eng.windowed = !o_.per_iteration && eng.plan.skippable >= 2;
  if (eng.windowed) {
    eng.window = eng.im->decode_window(eng.plan.batch.decode_seqs);
    eng.iterations = eng.plan.skippable;
    seconds = eng.window.sum(eng.iterations, eng.plan.batch.decode_kv_tokens);
  } else {
    eng.iterations = 1;
    // A decode-only iteration is priced by the same closed form a window uses, so that both
    // granularities add the same terms.
    seconds = eng.plan.chunks.empty() ? eng.im->decode_window(eng.plan.batch.decode_seqs).sum(1, eng.plan.batch.decode_kv_tokens)
                                      : eng.im->iteration(eng.plan.batch).seconds;
  }
  eng.end_s = eng.start_s + seconds;
  sim_.set_timer(eng.timer, SimTime::from_seconds(eng.end_s), kWorkPhase, this,
                 encode(kEngineDone, static_cast<uint64_t>(e)));
}

void Rollout::add_span(int64_t e, bool prefill, double start_s, double end_s, int64_t iterations) {
  auto& spans = result_.spans;
  const SimTime start = SimTime::from_seconds(start_s), end = SimTime::from_seconds(end_s);
  int64_t& last = last_span_[static_cast<size_t>(e)];
  if (last >= 0) {
    EngineSpan& s = spans[static_cast<size_t>(last)];
    if (s.prefill == prefill && s.end == start) {  // contiguous with the engine's last span: merge
      s.end = end;
      s.iterations += iterations;
      return;
    }
  }
  last = static_cast<int64_t>(spans.size());
  spans.push_back({e, prefill, start, end, iterations});
}

inline void Rollout::work_done(int64_t e) {
  Engine& eng = engines_[static_cast<size_t>(e)];
  stale(e);
  // As run: a window cut short by an arrival ends here with the iterations it kept.
  complete_work(e, eng.end_s, eng.iterations);
  sample_kv(e);
  if (o_.record_turns)
    for (int64_t t : scratch_first_) {
      const Trajectory& tr = traj_[static_cast<size_t>(t)];
      if (!tr.scoring) result_.turns[static_cast<size_t>(tr.record)].first_token = sim_.now();
    }
  for (int64_t t : scratch_finished_) turn_finished(t);
  plan(e);
}

void Rollout::complete_work(int64_t e, double end_s, int64_t iterations) {
  Engine& eng = engines_[static_cast<size_t>(e)];
  eng.busy_s += end_s - eng.start_s;
  if (o_.record_spans) add_span(e, !eng.plan.chunks.empty(), eng.start_s, end_s, iterations);
  if (o_.log_iterations) result_.iterations.push_back({e, eng.start_s, end_s, eng.plan.batch, iterations});
  scratch_finished_.clear();
  scratch_first_.clear();
  eng.sched->complete(eng.plan, iterations, scratch_finished_, scratch_first_);
  eng.start_s = end_s;
}

inline void Rollout::turn_finished(int64_t t) {
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  stale(tr.engine);
  if (tr.scoring) {
    engines_[static_cast<size_t>(tr.engine)].sched->release(t);
    reward_done(t);
    return;
  }
  const Request r = engines_[static_cast<size_t>(tr.engine)].sched->release(t);
  if (o_.record_turns) {
    TurnRecord& rec = result_.turns[static_cast<size_t>(tr.record)];
    rec.end = sim_.now();
    rec.generated = r.produced;
  }
  result_.generated_tokens += r.produced;
  tr.context += r.produced;
  const bool has_next = tr.turn + 1 < tr.turn_count;
  const bool allowed = o_.max_turns == 0 || tr.turn + 1 < o_.max_turns;
  if (has_next && !allowed) tr.truncated = true;  // cut by max_turns
  if (tr.truncated || !has_next) {
    finish_trajectory(t);
    return;
  }
  if (tr.tool == trace::kNoTool) {
    ++tr.turn;
    sim_.at(sim_.now(), kArrivalPhase, this, encode(kTurnArrives, static_cast<uint64_t>(t)));
    return;
  }
  tr.in_tool = true;
  const int pool = pool_for(tr.tool);
  if (o_.record_tool_calls) {
    tr.record = static_cast<int64_t>(result_.tool_calls.size());
    result_.tool_calls.push_back({t, pool, sim_.now(), sim_.now(), sim_.now()});
  } else {
    tr.record = sim_.now().ns();  // no record: when the call was asked for
  }
  if (pool < 0 || lease(t, pool).held() || pools_[static_cast<size_t>(pool)]->try_acquire(lease(t, pool))) {
    tool_granted(t);  // a free unit is taken without waiting for an event
  } else {
    pools_[static_cast<size_t>(pool)]->request(this, encode(kToolGranted, static_cast<uint64_t>(t)));
  }
}

void Rollout::tool_granted(int64_t t) {
  const Trajectory& tr = traj_[static_cast<size_t>(t)];
  const int pool = pool_for(tr.tool);
  if (pool >= 0 && !lease(t, pool).held()) lease(t, pool) = pools_[static_cast<size_t>(pool)]->take_lease();
  SimTime latency = tr.tool_latency;
  if (latency == SimTime::zero() && pool >= 0 && pool_latency_[static_cast<size_t>(pool)])
    latency = SimTime::from_seconds(pool_latency_[static_cast<size_t>(pool)]->sample(rng_));
  uint64_t call = calls_.size();
  if (free_calls_.empty()) {
    ARLSIM_ASSERT(call <= kCallMask);  // one per tool call under way
    calls_.emplace_back();
  } else {
    call = free_calls_.back();
    free_calls_.pop_back();
  }
  ToolCall& c = calls_[call];
  c.live = true;
  c.record = o_.record_tool_calls ? tr.record : -1;
  c.requested = o_.record_tool_calls ? SimTime::zero() : SimTime::from_ns(tr.record);
  c.pool = pool;
  c.started = sim_.now();
  c.turn = tr.turn + 1 < tr.turn_count ? tr.turns + tr.turn + 1 : nullptr;
  c.entry = engines_[static_cast<size_t>(tr.engine)].sched->entry_address(t);
  sim_.after(latency, kArrivalPhase, this, encode(kToolDone, static_cast<uint64_t>(t)) | call << 32);
}

inline void Rollout::tool_done(int64_t t, uint64_t call) {
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  ToolCall& c = calls_[call];
  const int pool = c.pool;
  if (c.record >= 0) {
    ToolCallRecord& rec = result_.tool_calls[static_cast<size_t>(c.record)];
    rec.started = c.started;
    rec.ended = sim_.now();
  } else if (pool >= 0) {
    PoolRecord& p = result_.pools[static_cast<size_t>(pool)];
    p.act_s.push_back(static_cast<float>((sim_.now() - c.requested).seconds()));
    p.queue_s.push_back(static_cast<float>((c.started - c.requested).seconds()));
  }
  c.live = false;
  free_calls_.push_back(call);
  tr.in_tool = false;
  if (pool >= 0 && per_action_[static_cast<size_t>(pool)]) lease(t, pool).release();
  tr.context += tr.obs_tokens;
  ++tr.turn;
  start_turn(t);
}

void Rollout::finish_trajectory(int64_t t) {
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  for (size_t p = 0; p < pools_.size(); ++p) lease(t, static_cast<int>(p)).release();
  if (stop_after_ > 0 && finished_ >= stop_after_) {
    // It ended in the event that reached the count: the step trains on the count, and this one
    // waits, finished, for the next.
    tr.over = true;
    return;
  }
  result_.generation_end[static_cast<size_t>(t)] = sim_.now();
  result_.truncated[static_cast<size_t>(t)] = tr.truncated;
  // What the framework keeps: at most the context limit (an observation that overran it is cut too).
  result_.context_tokens[static_cast<size_t>(t)] = o_.max_context > 0 ? std::min(tr.context, o_.max_context) : tr.context;
  result_.done[static_cast<size_t>(t)] = true;
  start_reward(t);
  if (stop_after_ > 0 && ++finished_ >= stop_after_) sim_.stop();  // a partial or continuous rollout ends here
}

inline void Rollout::sample_kv(int64_t e) {
  if (o_.kv_sample_interval <= SimTime::zero()) return;
  SimTime& last = last_kv_sample_[static_cast<size_t>(e)];
  if (last.ns() >= 0 && sim_.now() - last < o_.kv_sample_interval) return;
  last = sim_.now();
  const auto& s = *engines_[static_cast<size_t>(e)].sched;
  const double fraction =
      s.total_blocks() > 0 ? static_cast<double>(s.used_blocks()) / static_cast<double>(s.total_blocks()) : 0.0;
  result_.kv.push_back({e, sim_.now(), fraction});
}

void Rollout::start_reward(int64_t t) {
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  if (reward_im_) {
    // A prefill of the whole context on the least-loaded reward engine (by what a router knows);
    // its one sampled token is the score.
    refresh_loads();
    const int64_t best = policy_engines_ + static_cast<int64_t>(reward_loads_.min_index());
    Request r;
    r.trajectory = t;
    r.prompt_id = -1 - t;  // no prompt sharing between scored trajectories
    r.context = tr.context;
    r.gen_target = 1;
    tr.scoring = true;
    tr.engine = static_cast<int32_t>(best);
    submit(best, r);
    return;
  }
  if (o_.reward.cpu_time_per_sample <= SimTime::zero()) {
    reward_done(t);
  } else if (reward_pool_ >= 0) {
    pools_[static_cast<size_t>(reward_pool_)]->request(this, encode(kRewardGranted, static_cast<uint64_t>(t)));
  } else {
    sim_.after(o_.reward.cpu_time_per_sample, kArrivalPhase, this, encode(kRewardDone, static_cast<uint64_t>(t)));
  }
}

void Rollout::reward_granted(int64_t t) {
  lease(t, reward_pool_) = pools_[static_cast<size_t>(reward_pool_)]->take_lease();
  sim_.after(o_.reward.cpu_time_per_sample, kArrivalPhase, this, encode(kRewardDone, static_cast<uint64_t>(t)));
}

void Rollout::reward_done(int64_t t) {
  if (reward_pool_ >= 0) lease(t, reward_pool_).release();
  result_.trajectory_end[static_cast<size_t>(t)] = sim_.now();
}

}  // namespace arlsim::rl::rollout_detail
