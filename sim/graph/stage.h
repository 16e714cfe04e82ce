// The stages of one RL step, in one table: each stage's id, its name (the key in summary.json, the
// `NAME_s` column of steps.csv, the name on the timeline), which side of the cluster runs it, and
// a one-line description (`arlsim list stages`, docs/formats.md). Adding a stage means a row
// here, a field in StageTimes and the activity that produces it in the step graph.
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
  double StageTimes::*seconds;
  std::string_view description;
};

// In the order a synchronous step runs them.
inline constexpr std::array<StageInfo, 8> kStages{{
    {Stage::rollout, "rollout", Side::rollout, &StageTimes::rollout,
     "the engines generate the step's trajectories, tool calls included, until the last one is generated"},
    {Stage::reward, "reward", Side::rollout, &StageTimes::reward,
     "the rewards that finish after the last generation (rule-based on CPUs or a reward model)"},
    {Stage::old_logprob, "old_logprob", Side::training, &StageTimes::old_logprob,
     "a forward pass of the actor for the log-probabilities of the sampled tokens"},
    {Stage::ref_logprob, "ref_logprob", Side::training, &StageTimes::ref_logprob,
     "a forward pass of the reference model for the KL penalty (when the workload uses one)"},
    {Stage::critic, "critic", Side::training, &StageTimes::critic,
     "a forward pass of the critic for the values (PPO)"},
    {Stage::dispatch, "dispatch", Side::training, &StageTimes::dispatch,
     "the intermediate tensors moving from the engines that produced them to the training ranks"},
    {Stage::train, "train", Side::training, &StageTimes::train,
     "PPO epochs x mini-batches of forward, backward and optimizer steps (the critic's too)"},
    {Stage::weight_sync, "weight_sync", Side::training, &StageTimes::weight_sync,
     "the new weights to the rollout engines, and any layout switch before the next step"},
}};
inline constexpr size_t kStageCount = kStages.size();

constexpr const StageInfo& stage_info(Stage s) { return kStages[static_cast<size_t>(s)]; }
constexpr std::string_view stage_name(Stage s) { return stage_info(s).name; }
std::optional<Stage> find_stage(std::string_view name);

inline double& StageTimes::operator[](Stage s) { return this->*stage_info(s).seconds; }
inline double StageTimes::operator[](Stage s) const { return this->*stage_info(s).seconds; }

}  // namespace arlsim::graph
