#include "sim/rl/rollout.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <map>

#include "sim/core/assert.h"
#include "sim/core/percentile.h"
#include "sim/core/resource.h"
#include "sim/model/memory.h"
#include "sim/input/scenario.h"
#include "sim/rl/routing.h"
#include "sim/trace/distributions.h"
#include "sim/trace/random.h"

namespace arlsim::rl {

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

constexpr int32_t kWorkPhase = 0;     // engine iterations end before anything arrives at that time
constexpr int32_t kArrivalPhase = 1;
constexpr int32_t kStartPhase = 2;    // an idle engine starts after every same-time arrival is queued
enum Kind : uint64_t {
  kEngineDone = 0,
  kTurnArrives = 1,
  kToolGranted = 2,
  kToolDone = 3,
  kEngineStart = 4,
  kRewardGranted = 5,
  kRewardDone = 6
};

uint64_t encode(Kind k, uint64_t index) { return (uint64_t{k} << 60) | index; }

class Rollout final : public core::EventHandler {
 public:
  Rollout(const RolloutOptions& o, const RolloutInput& in);
  // Leases still held go back to their pools as the trajectories are destroyed, and a pool hands
  // a freed unit to its next waiter: no prefetch of a trajectory then, and no grant handled.
  ~Rollout() override { closing_ = true; }
  RolloutResult run();
  void on_event(uint64_t payload) override;
  void prefetch(uint64_t payload) const override;
  static double state_bytes(int64_t trajectories, int64_t turn_records, int64_t tool_calls, int64_t pools, int64_t engines);

 private:
  struct Engine {
    std::unique_ptr<EngineScheduler> sched;
    const model::InferenceModel* im = nullptr;
    bool busy = false;
    bool starting = false;  // a start is scheduled for requests that arrived while idle
    core::Simulation::TimerId timer = 0;  // its start, or the end of its work in flight
    double start_s = 0;  // when the work in flight started
    double end_s = 0;    // and when it ends
    Planned plan;
    int64_t iterations = 1;   // of the plan in flight
    model::DecodeWindow window;
    bool windowed = false;
    double busy_s = 0;
  };
  static constexpr size_t kInlineLeases = 1;
  // What the rollout keeps of a trajectory: what every one of its events reads, in one cache
  // line. A million trajectories interleave, so that each event meets its trajectory's state
  // cold: a field anywhere else (the trace's view or turn, a heap block of leases, a record)
  // costs a miss of its own. What the turn's later events need of the trace is copied here when
  // the turn starts.
  struct alignas(64) Trajectory {
    const trace::Turn* turns = nullptr;  // its turns in the trace
    int64_t context = 0;   // tokens in the context so far
    // The record of what it is doing: the TurnRecord of the turn generating, then the
    // ToolCallRecord of the turn's tool call until it starts (RolloutOptions::record_tool_calls;
    // without records, when the call was asked for, in nanoseconds).
    int64_t record = -1;
    SimTime tool_latency;  // the current turn's, from the trace
    // Its units of the first kInlineLeases pools (the others' are in extra_leases_); static
    // binding holds them to the end. The reward pool's unit is held in the reward pool's place,
    // once the trajectory has given back all others.
    core::Lease leases[kInlineLeases];
    int32_t turn_count = 0;
    int32_t turn = 0;
    int32_t engine = -1;
    int32_t prompt = 0;      // its group, as a dense index
    int32_t obs_tokens = 0;  // the current turn's
    int16_t tool = trace::kNoTool;  // the current turn's
    bool truncated : 1 = false;
    bool scoring : 1 = false;  // its request on an engine is the reward model's
    bool in_tool : 1 = false;  // between a tool call and its result
    bool pinned : 1 = false;   // its next turn goes to `engine`, which holds its context's KV
    bool continues : 1 = false;  // carried over mid-way: its first turn's prefill shares no prompt
    bool over : 1 = false;     // finished in the event that stopped the rollout, beyond its count
  };
  static_assert(sizeof(Trajectory) == 64);
  core::Lease& lease(int64_t t, int pool) {
    const auto p = static_cast<size_t>(pool);
    if (p < kInlineLeases) return traj_[static_cast<size_t>(t)].leases[p];
    return extra_leases_[static_cast<size_t>(t) * (pools_.size() - kInlineLeases) + p - kInlineLeases];
  }

  void start_turn(int64_t t);
  void plan(int64_t e);
  void work_done(int64_t e);
  void turn_finished(int64_t t);
  void tool_granted(int64_t t);
  void tool_done(int64_t t, uint64_t call);
  void finish_trajectory(int64_t t);
  void finish_carried(int64_t t);
  void record_paused();
  void keep_completed_iterations();
  // Applies `iterations` of engine e's plan in flight, ending at end_s: its busy time, span and
  // log, the scheduler's progress (finished turns and first tokens into the scratch lists).
  void complete_work(int64_t e, double end_s, int64_t iterations);
  void sample_kv(int64_t e);
  void start_reward(int64_t t);
  void reward_granted(int64_t t);
  void reward_done(int64_t t);
  void submit(int64_t engine, const Request& r);
  EngineLoad load(int64_t e) const;
  void stale(int64_t e);  // engine e's scheduler is about to change
  void refresh_loads();
  void add_span(int64_t e, bool prefill, double start_s, double end_s, int64_t iterations);
  int pool_for(int16_t tool) const;
  // What is left of trajectory t's predicted length (length-aware routing) as its turn begins.
  int64_t predicted_left(int64_t t) const;

  const RolloutOptions& o_;
  const RolloutInput& in_;
  core::Simulation sim_;
  model::InferenceModel im_;
  std::unique_ptr<model::InferenceModel> reward_im_;
  int64_t policy_engines_ = 0;
  int reward_pool_ = -1;
  std::vector<Engine> engines_;
  std::vector<std::unique_ptr<core::CountedPool>> pools_;
  // Per pool: whether a call holds its unit only while it runs (pooled policy, or an API's
  // concurrency limit), and the latency of a call the trace gives none for.
  std::vector<bool> per_action_;
  std::vector<std::optional<trace::Latency>> pool_latency_;
  // After pools_: their leases go back to the pools before they go.
  std::vector<Trajectory> traj_;
  std::vector<core::Lease> extra_leases_;  // per trajectory, of the pools beyond kInlineLeases
  bool closing_ = false;  // being destroyed
  std::vector<int> tool_pool_;  // trace tool index -> pool index
  std::unique_ptr<RoutingPolicy> router_;
  trace::Rng rng_;
  RolloutResult result_;
  std::vector<int64_t> scratch_finished_, scratch_first_;
  // The policy engines' loads and the reward engines', each up to date but for the engines in
  // `stale_`, whose state changed since (refresh_loads() brings them up to date).
  EngineLoads loads_, reward_loads_;
  std::vector<char> is_stale_;
  std::vector<int64_t> stale_;
  std::vector<int64_t> last_span_;  // per engine, index of its latest span (-1: none)
  // For prefetch(): per engine, where its work in flight ends a turn. Per tool call under way
  // (numbered in its done event's payload), what its end will write and read.
  std::vector<EngineScheduler::TurnEndHint> ending_;
  // A tool call under way: its record (written once, when the call ends: the record has gone
  // cold since it was made) or without records when it was asked for and its pool, when it
  // started, and for prefetch() what its end will read.
  struct ToolCall {
    bool live = false;            // false: the entry is free
    int32_t pool = -1;
    int64_t record = -1;          // in result_.tool_calls; -1: none kept
    SimTime requested;            // without a record
    SimTime started;
    const void* turn = nullptr;   // the trajectory's next turn in the trace
    const void* entry = nullptr;  // its entry on its last engine
  };
  static constexpr uint64_t kCallMask = (uint64_t{1} << 28) - 1;  // payload bits 32-59
  std::vector<ToolCall> calls_;
  std::vector<uint64_t> free_calls_;
  std::vector<SimTime> last_kv_sample_;  // per engine
  int64_t finished_ = 0;                 // trajectories whose generation ended
  int64_t stop_after_ = 0;               // partial or continuous rollout: stop at this many (0: never)
};

Rollout::Rollout(const RolloutOptions& o, const RolloutInput& in)
    : o_(o),
      in_(in),
      im_(*o.model, *o.cluster, o.layout, engine_speculation(o.engine)),
      router_(make_routing_policy(o.routing)),
      rng_(o.seed) {
  ARLSIM_ASSERT(router_ != nullptr);
  im_.set_execution(engine_execution(o.engine));
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
    reward_im_->set_execution(engine_execution(o.reward.engine));
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

int64_t Rollout::predicted_left(int64_t t) const {
  const Trajectory& tr = traj_[static_cast<size_t>(t)];
  const int64_t predicted = in_.predicted_tokens[static_cast<size_t>(t)];
  // A trajectory carried over has done the part of its predicted length it brings as context: what
  // is left of it is the backlog it adds (none once it has outgrown the prediction).
  if (tr.continues && tr.turn == 0 && tr.turn_count > 0) return std::max<int64_t>(0, predicted - tr.turns[0].prefill_tokens);
  return predicted;
}

int Rollout::pool_for(int16_t tool) const {
  if (tool < 0 || static_cast<size_t>(tool) >= tool_pool_.size()) return -1;
  return tool_pool_[static_cast<size_t>(tool)];
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
  if (!in_.predicted_tokens.empty() && router_->uses_prediction(rr)) {
    rr.predicted_tokens = predicted_left(t);
  }
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

void Rollout::work_done(int64_t e) {
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

void Rollout::turn_finished(int64_t t) {
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

void Rollout::tool_done(int64_t t, uint64_t call) {
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

void Rollout::sample_kv(int64_t e) {
  if (o_.kv_sample_interval <= SimTime::zero()) return;
  SimTime& last = last_kv_sample_[static_cast<size_t>(e)];
  if (last.ns() >= 0 && sim_.now() - last < o_.kv_sample_interval) return;
  last = sim_.now();
  const auto& s = *engines_[static_cast<size_t>(e)].sched;
  const double fraction =
      s.total_blocks() > 0 ? static_cast<double>(s.used_blocks()) / static_cast<double>(s.total_blocks()) : 0.0;
  result_.kv.push_back({e, sim_.now(), fraction});
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

}  // namespace

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

double rollout_memory_bytes(int64_t trajectories, int64_t turn_records, int64_t tool_calls, int64_t pools,
                            int64_t engines, int64_t pool_times) {
  return Rollout::state_bytes(trajectories, turn_records, tool_calls, pools, engines) +
         4.0 * sizeof(float) * static_cast<double>(pool_times);
}

RolloutResult simulate_rollout(const RolloutOptions& options, const RolloutInput& input) {
  ARLSIM_ASSERT(options.model && options.cluster && options.engines >= 1);
  ARLSIM_ASSERT(check_rollout(options, &input).empty());
  Rollout r(options, input);
  return r.run();
}

}  // namespace arlsim::rl
