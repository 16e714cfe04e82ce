// The stages of one RL step, in one table: each stage's id, its name (the key in summary.json, the
// `NAME_s` column of steps.csv, the name on the timeline), which side of the cluster runs it, and
// the kind of op it is, and a one-line description. Adding a stage means a row here and a field
// in StageTimes; the step graph, summaries and timelines follow.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace arlsim::graph {

enum class Stage : uint8_t { rollout, reward, old_logprob, ref_logprob, critic, dispatch, train, weight_sync };

// Which GPUs a stage runs on: the rollout engines' or the training ranks'.
enum class Side : uint8_t { rollout, training };

// What an activity does, as the cost model priced it.
enum class OpKind : uint8_t {
  engine_run,  // rollout engines generating, tools and rewards included
  forward,     // forward-only passes over the samples
  train,       // forward, backward and optimizer steps
  transfer,    // point-to-point transfers over the network (dispatch)
  sync,        // weight sync (collectives or host transfers), layout switches included
};
const char* op_name(OpKind op);

// Seconds each stage of a step took (0 when the stage does not run, e.g. critic without PPO).
struct StageTimes {
  double rollout = 0;
  double reward = 0;
  double old_logprob = 0;
  double ref_logprob = 0;
  double critic = 0;
  double dispatch = 0;
  double train = 0;
  double weight_sync = 0;

  double& operator[](Stage s);
  double operator[](Stage s) const;
};

struct StageInfo {
  Stage id;
  std::string_view name;
  Side side;
  OpKind op;
  double StageTimes::*seconds;
  std::string_view description;
};

// In the order a synchronous step runs them.
inline constexpr std::array<StageInfo, 8> kStages{{
    {Stage::rollout, "rollout", Side::rollout, OpKind::engine_run, &StageTimes::rollout,
     "the engines generate the step's trajectories, tool calls included, until the last one is generated"},
    {Stage::reward, "reward", Side::rollout, OpKind::engine_run, &StageTimes::reward,
     "the rewards that finish after the last generation (rule-based on CPUs or a reward model)"},
    {Stage::old_logprob, "old_logprob", Side::training, OpKind::forward, &StageTimes::old_logprob,
     "a forward pass of the actor for the log-probabilities of the sampled tokens"},
    {Stage::ref_logprob, "ref_logprob", Side::training, OpKind::forward, &StageTimes::ref_logprob,
     "a forward pass of the reference model for the KL penalty (when the workload uses one)"},
    {Stage::critic, "critic", Side::training, OpKind::forward, &StageTimes::critic,
     "a forward pass of the critic for the values (PPO)"},
    {Stage::dispatch, "dispatch", Side::training, OpKind::transfer, &StageTimes::dispatch,
     "the intermediate tensors moving from the engines that produced them to the training ranks"},
    {Stage::train, "train", Side::training, OpKind::train, &StageTimes::train,
     "PPO epochs x mini-batches of forward, backward and optimizer steps (the critic's too)"},
    {Stage::weight_sync, "weight_sync", Side::training, OpKind::sync, &StageTimes::weight_sync,
     "the new weights to the rollout engines, and any layout switch before the next step"},
}};
inline constexpr size_t kStageCount = kStages.size();

constexpr const StageInfo& stage_info(Stage s) { return kStages[static_cast<size_t>(s)]; }
constexpr std::string_view stage_name(Stage s) { return stage_info(s).name; }
std::optional<Stage> find_stage(std::string_view name);

// The work of each stage of a step: model FLOPs computed (forward passes 2 per parameter and
// token plus attention, training three times that) and bytes moved over links (dispatch, weight
// sync). What an executor needs to run a stage for real, and what reports rate against.
struct StageWork {
  std::array<double, kStageCount> flops{}, bytes{};
};

inline double& StageTimes::operator[](Stage s) { return this->*stage_info(s).seconds; }
inline double StageTimes::operator[](Stage s) const { return this->*stage_info(s).seconds; }

}  // namespace arlsim::graph
