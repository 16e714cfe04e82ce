// The rollout's event simulation (internal to sim/rl: rollout.cpp runs it, rollout_setup.cpp
// builds it from its input and says what it hands on when it stops). See rollout.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "sim/core/resource.h"
#include "sim/rl/rollout.h"
#include "sim/rl/routing.h"
#include "sim/trace/distributions.h"
#include "sim/trace/random.h"

namespace arlsim::rl::rollout_detail {

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

inline uint64_t encode(Kind k, uint64_t index) { return (uint64_t{k} << 60) | index; }

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
  int pool_for(int16_t tool) const {
    if (tool < 0 || static_cast<size_t>(tool) >= tool_pool_.size()) return -1;
    return tool_pool_[static_cast<size_t>(tool)];
  }
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

}  // namespace arlsim::rl::rollout_detail
