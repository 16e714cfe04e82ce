// A rollout built from its input, what it hands on when it stops, and the memory it takes (the
// event handling that runs it is in rollout.cpp).
#include "sim/rl/rollout_sim.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/assert.h"
#include "sim/model/memory.h"
#include "sim/input/scenario.h"

namespace arlsim::rl {

namespace rollout_detail {

namespace {

// A pool's latency distribution as the trace generator samples them; none when it gives no time.
std::optional<trace::Latency> pool_latency(const input::LatencyDist& d) {
  trace::Latency l;
  l.mean_s = d.mean.seconds();
  l.sigma = d.sigma;
  l.min_s = d.min.seconds();
  l.max_s = d.max.seconds();
  switch (d.kind) {
    case input::LatencyKind::fixed: l.kind = trace::LatencyKind::fixed; break;
    case input::LatencyKind::exponential: l.kind = trace::LatencyKind::exponential; break;
    case input::LatencyKind::lognormal: l.kind = trace::LatencyKind::lognormal; break;
    case input::LatencyKind::uniform: l.kind = trace::LatencyKind::uniform; break;
  }
  if (l.mean_s <= 0 && l.max_s <= 0) return std::nullopt;
  return l;
}

}  // namespace

Rollout::Rollout(const RolloutOptions& o, const RolloutInput& in)
    : o_(o),
      in_(in),
      im_(*o.model, *o.cluster, o.layout, engine_speculation(o.engine)),
      router_(make_routing_policy(o.routing)),
      rng_(o.seed) {
  ARLSIM_ASSERT(router_ != nullptr);
  im_.set_execution(engine_execution(o.engine, o.cluster->gpu));
  const auto mem = model::inference_memory(*o.model, o.cluster->gpu, engine_memory_options(o));
  const int64_t blocks = mem.kv_capacity_tokens / o.engine.block_size;
  policy_engines_ = o.engines;
  const bool reward_model = o.reward.kind == input::RewardKind::model && o.reward.model && o.reward.engines > 0;
  engines_.resize(static_cast<size_t>(o.engines + (reward_model ? o.reward.engines : 0)));
  last_span_.assign(engines_.size(), -1);
  ending_.assign(engines_.size(), {});
  loads_.reset(static_cast<size_t>(policy_engines_));
  reward_loads_.reset(engines_.size() - static_cast<size_t>(policy_engines_));
  is_stale_.assign(engines_.size(), 0);
  last_kv_sample_.assign(engines_.size(), SimTime::from_ns(-1));
  result_.engines.resize(engines_.size());
  for (auto& eng : engines_) eng.timer = sim_.add_timer();
  for (int64_t e = 0; e < o.engines; ++e) {
    engines_[static_cast<size_t>(e)].sched = std::make_unique<EngineScheduler>(o.engine, blocks);
    engines_[static_cast<size_t>(e)].im = &im_;
    result_.engines[static_cast<size_t>(e)].kv_blocks = blocks;
  }
  if (reward_model) {
    reward_im_ = std::make_unique<model::InferenceModel>(*o.reward.model, *o.cluster, o.reward.layout);
    reward_im_->set_execution(engine_execution(o.reward.engine, o.cluster->gpu));
    RolloutOptions ro = o;
    ro.model = o.reward.model;
    ro.layout = o.reward.layout;
    ro.engine = o.reward.engine;
    const int64_t reward_blocks =
        model::inference_memory(*o.reward.model, o.cluster->gpu, engine_memory_options(ro)).kv_capacity_tokens /
        o.reward.engine.block_size;
    // Each trajectory is scored once: nothing to gain from keeping its context cached.
    input::EngineSpec reward_engine = o.reward.engine;
    reward_engine.prefix_caching = false;
    for (size_t e = static_cast<size_t>(o.engines); e < engines_.size(); ++e) {
      engines_[e].sched = std::make_unique<EngineScheduler>(reward_engine, reward_blocks);
      engines_[e].im = reward_im_.get();
      result_.engines[e].kv_blocks = reward_blocks;
    }
  }
  for (const auto& p : o.cluster->pools) {
    if (p.kind == input::PoolKind::reward_server) continue;
    core::CountedPool::Options po;
    po.name = p.name;
    po.cold_start = p.cold_start;
    // An API is a limit on concurrent calls: no trajectory binds a unit of it, and it does not grow.
    const bool api = p.kind == input::PoolKind::api;
    const bool pooled = input::pool_grows(p, o.tool_policy);
    po.min_units = p.count;
    po.max_units = input::pool_max_units(p, o.tool_policy);
    po.elastic = pooled;
    po.grant_at_once = true;  // a saturated pool hands a unit on at nearly every call's end
    pools_.push_back(std::make_unique<core::CountedPool>(sim_, po));
    per_action_.push_back(pooled || api);
    pool_latency_.push_back(pool_latency(p.latency));
    result_.pools.push_back({p.name, {}});
  }
  for (size_t i = 0; i < result_.pools.size(); ++i)
    if (!o.reward.pool.empty() && result_.pools[i].name == o.reward.pool) reward_pool_ = static_cast<int>(i);
  // A tool runs on the pool of its name, else on the first sandbox pool, else on no pool.
  for (const auto& name : in.tool_names) {
    int found = -1;
    for (size_t i = 0; i < result_.pools.size(); ++i)
      if (result_.pools[i].name == name) found = static_cast<int>(i);
    if (found < 0 && !pools_.empty()) found = 0;
    tool_pool_.push_back(found);
  }
  traj_.resize(in.trajectories.size());
  if (pools_.size() > kInlineLeases) extra_leases_.resize(traj_.size() * (pools_.size() - kInlineLeases));
  std::map<std::pair<int64_t, int64_t>, int32_t> dense;  // (step, prompt) groups in order of appearance
  for (size_t t = 0; t < traj_.size(); ++t) {
    const trace::TrajectoryView& view = in.trajectories[t];
    Trajectory& tr = traj_[t];
    tr.turns = view.turns.data();
    tr.turn_count = static_cast<int32_t>(view.turns.size());
    const std::pair<int64_t, int64_t> key{view.info.step, view.info.prompt_id};
    tr.prompt = dense.emplace(key, static_cast<int32_t>(dense.size())).first->second;
  }
  // The trajectories carried over from the rollout before: how each comes back; a context whose
  // KV an engine kept is held there for its next turn.
  for (size_t t = 0; t < std::min(in.carried.size(), traj_.size()); ++t) {
    const RolloutInput::Carried& c = in.carried[t];
    Trajectory& tr = traj_[t];
    tr.continues = c.continues;
    if (c.finished) continue;
    if (c.engine < 0 || c.engine >= policy_engines_ || c.kv_tokens <= 0) continue;
    if (!engines_[static_cast<size_t>(c.engine)].sched->seed_resident(static_cast<int64_t>(t), c.kv_tokens)) continue;
    tr.engine = c.engine;
    tr.pinned = true;
  }
  result_.trajectory_end.assign(in.trajectories.size(), SimTime::zero());
  result_.generation_end.assign(in.trajectories.size(), SimTime::zero());
  result_.done.assign(in.trajectories.size(), false);
  const auto n = static_cast<int64_t>(in.trajectories.size());
  if (o.stop_count > 0 && o.stop_count < n) stop_after_ = o.stop_count;
  else if (o.stop_fraction < 1.0) stop_after_ = static_cast<int64_t>(std::ceil(o.stop_fraction * static_cast<double>(n)));
  result_.truncated.assign(in.trajectories.size(), false);
  result_.context_tokens.assign(in.trajectories.size(), 0);
  result_.engine.assign(in.trajectories.size(), 0);
  // At most one record per turn and per tool call of the trace (limits only cut them short):
  // reserved, the step's largest vectors are written once instead of copied as they double.
  size_t turns = 0, calls = 0;
  std::vector<size_t> pool_calls(pools_.size(), 0);
  for (const auto& t : in.trajectories) {
    turns += t.turns.size();
    for (const auto& turn : t.turns) {
      if (turn.tool == trace::kNoTool) continue;
      ++calls;
      if (const int pool = pool_for(turn.tool); pool >= 0) ++pool_calls[static_cast<size_t>(pool)];
    }
  }
  if (o.record_turns) result_.turns.reserve(turns);
  if (o.record_tool_calls) {
    result_.tool_calls.reserve(calls);
  } else {
    for (size_t p = 0; p < pools_.size(); ++p) {
      result_.pools[p].act_s.reserve(pool_calls[p]);
      result_.pools[p].queue_s.reserve(pool_calls[p]);
    }
  }
}

void Rollout::finish_carried(int64_t t) {
  // It ended its generation in the rollout before, after the count that stopped it: done now,
  // scored now, with the context and the engine it ended with.
  Trajectory& tr = traj_[static_cast<size_t>(t)];
  const trace::TrajectoryView& view = in_.trajectories[static_cast<size_t>(t)];
  tr.context = view.context_tokens();
  tr.turn = std::max<int32_t>(0, tr.turn_count - 1);
  tr.truncated = o_.max_context > 0 && tr.context > o_.max_context;
  const int32_t engine = in_.carried[static_cast<size_t>(t)].engine;
  tr.engine = engine >= 0 && engine < policy_engines_ ? engine : 0;
  result_.engine[static_cast<size_t>(t)] = tr.engine;
  finish_trajectory(t);
}

void Rollout::keep_completed_iterations() {
  // A partial rollout interrupts the engines between iterations, and the requests keep what they
  // produced: a decode window in flight keeps the iterations it completed by now, as simulating
  // iteration by iteration keeps them (the one in progress is lost either way). A window ends
  // before any of its requests ends its turn, so none ends here.
  const double now_s = sim_.now().seconds();
  for (size_t i = 0; i < engines_.size(); ++i) {
    Engine& eng = engines_[i];
    if (!eng.busy || !eng.windowed) continue;
    const int64_t kv = eng.plan.batch.decode_kv_tokens;
    const int64_t done = std::min(eng.iterations - 1, eng.window.iterations_within(now_s - eng.start_s, kv));
    if (done < 1) continue;
    complete_work(static_cast<int64_t>(i), eng.start_s + eng.window.sum(done, kv), done);
    ARLSIM_ASSERT(scratch_finished_.empty() && scratch_first_.empty());
    eng.busy = false;
  }
}

void Rollout::record_paused() {
  // Tool calls still under way have started; a record not ended counts no action time, one
  // not started no queueing either.
  std::vector<int64_t> queued(pools_.size(), 0);  // per pool, calls asked for and not started
  if (!o_.record_tool_calls)
    for (const Trajectory& tr : traj_)
      if (const int pool = pool_for(tr.tool); tr.in_tool && pool >= 0) ++queued[static_cast<size_t>(pool)];
  for (const ToolCall& c : calls_) {
    if (!c.live) continue;
    if (c.record >= 0) {
      result_.tool_calls[static_cast<size_t>(c.record)].started = c.started;
    } else if (c.pool >= 0) {
      PoolRecord& p = result_.pools[static_cast<size_t>(c.pool)];
      p.act_s.push_back(0.0f);
      p.queue_s.push_back(static_cast<float>((c.started - c.requested).seconds()));
      --queued[static_cast<size_t>(c.pool)];
    }
  }
  for (size_t p = 0; p < queued.size(); ++p) {
    result_.pools[p].act_s.insert(result_.pools[p].act_s.end(), static_cast<size_t>(queued[p]), 0.0f);
    result_.pools[p].queue_s.insert(result_.pools[p].queue_s.end(), static_cast<size_t>(queued[p]), 0.0f);
  }
  // Rewards still running when a partial rollout stops finish right after, in parallel.
  for (size_t t = 0; t < traj_.size(); ++t) {
    if (result_.done[t] && result_.trajectory_end[t] == SimTime::zero())
      result_.trajectory_end[t] = sim_.now() + o_.reward.cpu_time_per_sample;
    if (result_.done[t]) continue;
    const Trajectory& tr = traj_[t];
    PausedTrajectory p;
    p.trajectory = static_cast<int64_t>(t);
    p.turn = tr.turn;
    p.context = tr.context;
    if (tr.over) {
      p.finished = true;
      p.engine = tr.engine;
      result_.paused.push_back(p);
      continue;
    }
    // Mid-generation it keeps what it produced; waiting for a tool it resumes after the tool.
    const std::optional<Request> r =
        tr.engine >= 0 ? engines_[static_cast<size_t>(tr.engine)].sched->find(static_cast<int64_t>(t)) : std::nullopt;
    if (r) {
      p.generated = r->produced;
      p.context += r->produced;
      if (!tr.scoring && r->state != Request::State::waiting && r->kv_tokens() > 0) {
        p.engine = tr.engine;
        p.kv_tokens = r->kv_tokens();
      }
    } else if (tr.in_tool) {
      p.generated = -1;  // the turn's generation is complete; its tool call is under way
    }
    result_.paused.push_back(p);
  }
}

double Rollout::state_bytes(int64_t trajectories, int64_t turn_records, int64_t tool_calls, int64_t pools, int64_t engines) {
  // A small heap block with the allocator's header (glibc: 16 bytes of header, 32 at least).
  constexpr double kSmallBlock = 32;
  // Per trajectory: its state (with its group's dense index and the leases of the first pools) and
  // the leases of further pools; the result's arrays (two times, its context, its engine, its
  // flags); the step's view of its turns; its arrival event; on its engine a request slot (and its group
  // mark), its entry by trajectory (in a table a quarter full just after it grew: four slots) and
  // its cached context in the LRU ring (an entry, in a ring that may hold as many holes and have
  // doubled: four entries' room); a tool call under way (calls off any pool run all at once, one
  // a trajectory at most); and on the training side its length, producer and rank.
  const double extra_leases = static_cast<double>(std::max<int64_t>(0, pools - static_cast<int64_t>(kInlineLeases)));
  const double trajectory =
      static_cast<double>(sizeof(Trajectory)) + extra_leases * sizeof(core::Lease) +
      2 * sizeof(SimTime) + sizeof(int64_t) + sizeof(int32_t) + 1 + sizeof(trace::TrajectoryView) +
      sizeof(core::Event) + sizeof(Request) + sizeof(int64_t) + 8 * sizeof(int64_t) + 4 * EngineScheduler::cache_entry_bytes() + sizeof(ToolCall) +
      sizeof(uint64_t) + 3 * sizeof(int64_t);
  // Per engine: its state, its scheduler (whose waiting queue, a deque, allocates a 512-byte block
  // and its map on construction), its record, and its entry in the router's table of loads (the
  // load, a handle, and in the mutable heap a list node of the load and its index, with the
  // heap's iterator to it in a vector that may have doubled).
  const double load_entry = 2 * sizeof(EngineLoad) + 2 * sizeof(size_t) + 2 * sizeof(void*) + kSmallBlock / 2 +
                            3 * sizeof(void*);
  const double engine = static_cast<double>(sizeof(Engine) + sizeof(EngineScheduler) + sizeof(EngineRecord)) + 512 +
                        8 * sizeof(void*) + 2 * kSmallBlock + load_entry;
  return trajectory * static_cast<double>(trajectories) + sizeof(TurnRecord) * static_cast<double>(turn_records) +
         sizeof(ToolCallRecord) * static_cast<double>(tool_calls) + engine * static_cast<double>(engines);
}

}  // namespace rollout_detail

double rollout_memory_bytes(int64_t trajectories, int64_t turn_records, int64_t tool_calls, int64_t pools,
                            int64_t engines, int64_t pool_times) {
  return rollout_detail::Rollout::state_bytes(trajectories, turn_records, tool_calls, pools, engines) +
         4.0 * sizeof(float) * static_cast<double>(pool_times);
}

RolloutResult simulate_rollout(const RolloutOptions& options, const RolloutInput& input) {
  ARLSIM_ASSERT(options.model && options.cluster && options.engines >= 1);
  ARLSIM_ASSERT(check_rollout(options, &input).empty());
  rollout_detail::Rollout r(options, input);
  return r.run();
}

}  // namespace arlsim::rl
