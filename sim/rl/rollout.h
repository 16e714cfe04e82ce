// The rollout stage: agentic trajectories served by a fleet of inference engines, turn by turn.
// A trajectory's turn prefills its new context on the engine the routing policy picks, decodes
// its response, then (if the turn calls a tool) runs the tool action on an external pool, waits,
// appends the observation and continues. Tools follow the tool policy: `static` binds one
// sandbox to a trajectory from its first tool call to its end; `pooled` (ARL-Tangram) acquires a
// unit per action from an elastic pool.
//
// Engines jump over decode iterations whose batch composition cannot change (event skipping,
// using the closed form of model::DecodeWindow); `per_iteration` simulates each iteration as its
// own event instead, and both give the same times (a test checks it). Each engine keeps its
// iteration clock in double seconds — iteration boundaries are sums of many sub-microsecond
// terms, and the two modes must agree to 1e-9 — and schedules events at the nanosecond nearest
// to them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/resource.h"
#include "sim/model/inference.h"
#include "sim/model/memory.h"
#include "sim/rl/engine.h"
#include "sim/input/cluster.h"
#include "sim/input/policy.h"
#include "sim/trace/trace.h"

namespace arlsim::rl {

// Scoring a finished trajectory: rule-based (CPU time per sample, on a pool when one is named) or
// by a reward model on its own inference engines (a prefill of the whole context).
struct RewardOptions {
  input::RewardKind kind = input::RewardKind::rule;
  SimTime cpu_time_per_sample;
  std::string pool;  // rule: the pool it runs on ("" = no pool: every sample at once)
  const input::ModelSpec* model = nullptr;  // model: the reward model...
  model::EngineLayout layout;             // ...its engines' layout...
  int64_t engines = 0;                    // ...and how many
  input::EngineSpec engine;
};

struct RolloutOptions {
  const input::ModelSpec* model = nullptr;
  const input::ClusterSpec* cluster = nullptr;  // its GPU profile and tool pools
  model::EngineLayout layout;
  int64_t engines = 1;
  input::EngineSpec engine;
  input::Routing routing = input::Routing::sticky;
  input::ToolPolicy tool_policy = input::ToolPolicy::static_binding;
  bool per_iteration = false;
  SimTime kv_sample_interval;  // record each engine's KV use at most this often (0: never)
  int64_t max_turns = 0;    // 0: no limit
  int64_t max_context = 0;  // 0: no limit
  RewardOptions reward;
  // Partial rollout: stop once this fraction of trajectories ended its generation (1 = wait for
  // all). The others are reported in RolloutResult::paused.
  double stop_fraction = 1.0;
  // Continuous generation: stop once this many trajectories ended their generation (0 = no
  // count); the others are reported in RolloutResult::paused, as a partial rollout's are.
  int64_t stop_count = 0;
  // Seeds the draws of tool latencies from a pool's `latency` for calls whose trace gives none.
  uint64_t seed = 1;
  bool log_iterations = false;  // keep every planned iteration in RolloutResult::iterations
  bool record_spans = true;     // keep each engine's spans of work in RolloutResult::spans (for timelines)
  bool record_turns = true;     // keep a TurnRecord per turn in RolloutResult::turns (for latency metrics)
  // Keep a ToolCallRecord per call in RolloutResult::tool_calls (for timelines and rollout
  // metrics); else only each pool's times (PoolRecord::act_s, queue_s), which a run's summary reads.
  bool record_tool_calls = true;
};

struct RolloutInput {
  std::vector<trace::TrajectoryView> trajectories;
  std::vector<std::string> tool_names;    // the trace's tool-kind table
  std::vector<SimTime> arrivals;          // per trajectory; empty: all at time zero
  std::vector<int64_t> predicted_tokens;  // per trajectory, for length-aware routing; may be empty
  // The leading trajectories carried over from the rollout before (partial rollout, continuous
  // generation; may be empty): how each comes back.
  struct Carried {
    // Its first turn continues one begun before: its prefill is its context, not its group's
    // prompt to share.
    bool continues = false;
    // It had finished its generation when the rollout before stopped, beyond the count that
    // stopped it: it is done at the start, with the engine it last ran on.
    bool finished = false;
    // The policy engine that still holds `kv_tokens` of its context's KV (continuous generation
    // keeping the cache), or -1; its first turn goes there and computes only what follows.
    int32_t engine = -1;
    int64_t kv_tokens = 0;
  };
  std::vector<Carried> carried;
};

// One turn of one trajectory on an engine.
struct TurnRecord {
  int64_t trajectory = 0;
  int64_t engine = 0;
  SimTime arrival, first_token, end;
  int64_t prefill_tokens = 0;  // context to compute (before prefix-cache hits)
  int64_t generated = 0;
};

struct ToolCallRecord {
  int64_t trajectory = 0;
  int pool = -1;  // index into RolloutResult::pools, -1 when the tool has no pool
  SimTime requested, started, ended;
};

struct EngineRecord {
  double busy_s = 0;
  EngineStats stats;
  int64_t kv_blocks = 0;
};

struct PoolRecord {
  std::string name;
  core::PoolStats stats;
  // Without RolloutOptions::record_tool_calls, each of its calls' action completion time
  // (request to end) and queueing time (request to start), in no particular order; a call still
  // under way when a partial rollout stops counts with what it had by then, as its record would.
  std::vector<float> act_s = {}, queue_s = {};
};

// An engine's KV-cache use at a moment (fraction of its blocks held by requests).
struct KvSample {
  int64_t engine = 0;
  SimTime time;
  double used_fraction = 0;
};

// A contiguous run of one kind of iterations on an engine, for timelines.
// One planned iteration of an engine (or `iterations` decode-only iterations run as one window,
// the KV growing by a token per sequence each): what a runtime executes again.
struct IterationRecord {
  int64_t engine = 0;
  double start_s = 0, end_s = 0;
  model::IterationBatch batch;
  int64_t iterations = 1;
};

struct EngineSpan {
  int64_t engine = 0;
  bool prefill = false;  // iterations with prefill work (else decode only)
  SimTime start, end;
  int64_t iterations = 0;
};

// Where a trajectory paused by a partial rollout stands: in turn `turn`, with `generated` of the
// turn's tokens produced and `context` tokens in its context.
struct PausedTrajectory {
  int64_t trajectory = 0;
  int turn = 0;
  int64_t generated = 0;
  int64_t context = 0;
  // A request running when the rollout stopped: its policy engine and the tokens of KV it held
  // there (else engine -1).
  int32_t engine = -1;
  int64_t kv_tokens = 0;
  // Its generation had ended when the rollout stopped, beyond the stop count (its turn and context
  // are then its last; `engine` the policy engine of its last turn).
  bool finished = false;
};

struct RolloutResult {
  SimTime makespan;
  SimTime p90_done;  // when 90% of trajectories were done
  std::vector<SimTime> generation_end;  // per trajectory: its last turn ended
  std::vector<SimTime> trajectory_end;  // and it was scored
  std::vector<bool> truncated;
  std::vector<TurnRecord> turns;
  std::vector<ToolCallRecord> tool_calls;
  std::vector<EngineRecord> engines;  // the policy's engines, then the reward model's
  std::vector<PoolRecord> pools;
  std::vector<EngineSpan> spans;  // with RolloutOptions::record_spans
  std::vector<IterationRecord> iterations;  // with RolloutOptions::log_iterations
  std::vector<KvSample> kv;  // KV use over time, every kv_sample_interval per engine
  int64_t generated_tokens = 0;
  uint64_t events = 0;
  std::vector<PausedTrajectory> paused;  // partial rollout: in trajectory order
  std::vector<bool> done;                // per trajectory: its generation ended
  std::vector<int64_t> context_tokens;   // per trajectory: its context when it ended (cut as simulated)
  std::vector<int32_t> engine;           // per trajectory: the policy engine of its latest turn (0 before any)
  int64_t preemptions() const;
  int64_t recomputed_tokens() const;
};

model::EngineMemoryOptions engine_memory_options(const RolloutOptions& o);
// The speculative decoding an engine's settings ask for (off when tau or the draft length is 0).
model::Speculation engine_speculation(const input::EngineSpec& e);
// How an engine's settings launch kernels: CUDA graphs, or eager dispatch.
model::EngineExecution engine_execution(const input::EngineSpec& e, const input::GpuProfile& gpu);
// Checks that the engine fits in memory; returns "" or the reason.
// With `in`, also that its longest trajectory fits an engine's KV cache. The reward model's
// engines too, where the reward is a model's (check_policy_engines: the policy's alone;
// check_reward: theirs alone).
std::string check_rollout(const RolloutOptions& o, const RolloutInput* in = nullptr);
std::string check_policy_engines(const RolloutOptions& o, const RolloutInput* in = nullptr);
std::string check_reward(const RolloutOptions& o, const RolloutInput* in = nullptr);
// The options a reward model's engine runs with: the policy's, with its model, layout and engine.
RolloutOptions reward_engine_options(const RolloutOptions& o);

RolloutResult simulate_rollout(const RolloutOptions& options, const RolloutInput& input);
// Trajectories paused by a partial rollout continue in the next step from where they stood,
// their context prefilled again (the weights changed, so no cached KV is valid), unless the
// policy keeps the running requests' KV across the update (`carried`: how each comes back; the
// trajectories came back as `before_carried` says).
// Those that finished beyond the stop count come back finished; a rollout that did not run (an
// OOM) hands every trajectory on as it was.
trace::Trace carry_over(const input::PolicySpec& policy, const std::vector<trace::TrajectoryView>& trajectories,
                        const std::vector<RolloutInput::Carried>& before_carried, const RolloutResult& r,
                        std::vector<RolloutInput::Carried>& carried);
// The bytes a rollout of that many trajectories, turns and tool calls on that many engines holds
// at its peak: its records of turns and tool calls (or, for `pool_times` calls without records,
// each call's two times as its pool keeps them and as the run gathers them), each trajectory's
// state here, on its engine and in the step around it, and each engine's; from the sizes of
// those records.
double rollout_memory_bytes(int64_t trajectories, int64_t turn_records, int64_t tool_calls, int64_t pools,
                            int64_t engines, int64_t pool_times = 0);

}  // namespace arlsim::rl
