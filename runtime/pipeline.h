// A data rank's micro-batches through its pipeline stages: the 1F1B schedule as the simulator
// draws it, or Megatron-Core's interleaved one with virtual stages, as programs of kernels whose
// transfers between stages every device meets in one deadlock-free order.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/program.h"
#include "sim/rl/step.h"

namespace arlsim::runtime {

// A data rank's micro-batches through its pipeline (`stages`: each stage's tp group) in the 1F1B
// schedule, or forward only: each stage its layers (TrainLayout::stage_layers), the activations
// sent to the next stage after each forward and their gradients back after each backward, as
// two-member broadcasts that both sides wait for. `groups` gives each stage's other groups (as
// add_micro_batch takes them; none when empty): every data rank adds its pipeline, and since they
// all run the same schedule they meet their cp and ep all-to-alls in one order.
// Under expert parallelism the ep peers' pipelines must meet their all-to-alls in one order: each
// plays the schedule over as many micro-batches as the most of its ep group has, those from
// `own` on the largest peer's, which it only joins (add_part_joins; no transfers between its
// stages), and each micro-batch's all-to-alls move `ep_tokens` of it (its largest member's).
// Under ZeRO-3 the members of a shard group (and of an expert group) meet each micro-batch's
// gathers: a rank plays as many micro-batches as the most of them, those from `gathers_only` on
// (which none of its ep peers has either) joined for their gathers alone.
struct PipelineJoins {
  size_t own = static_cast<size_t>(-1);
  std::vector<int64_t> ep_tokens;  // by micro-batch; empty: each its own
  size_t gathers_only = static_cast<size_t>(-1);
};
// One operation of a pipeline schedule: a forward or backward of micro-batch `micro` through
// model chunk `chunk` (0 without virtual stages) of stage `stage`, as the simulator's schedules
// play them (rl::play_orders).
using ChunkOp = rl::PipelineOp;
// Megatron-Core's interleaved 1F1B schedule (Narayanan et al. 2021, sec. 2.2) of `micro_batches`
// through `stages` stages of `chunks` model chunks each (virtual stage chunk x stages + stage),
// played out with a forward of 1 unit and a backward of 2: micro-batches taken in groups of
// `stages`, each group through chunk 0, then chunk 1, ... (backwards with the chunks reversed);
// stage r runs (stages - r - 1) x 2 + (chunks - 1) x stages warm-up forwards (all of them when
// forward only or when there are exactly `stages` micro-batches), then a forward and a backward
// in turn, then its remaining backwards. A forward waits for the previous virtual stage's, a
// backward for the next one's.
std::vector<ChunkOp> play_interleaved(int64_t stages, int64_t chunks, int64_t micro_batches, bool forward_only);
// With virtual stages (layout vpp > 1) each stage holds vpp chunks of layers / (pp x vpp) layers,
// chunk c at virtual stage c x pp + stage, and the micro-batches run in play_interleaved's order;
// the first virtual stage has the embedding, the last the head and loss. Megatron's interleaved
// schedule takes micro-batches in multiples of pp: other counts throw UnsupportedPlan.
void add_pipeline(Program& p, const input::ModelSpec& m, const std::vector<model::TrainRequest>& micro_batches,
                  const std::vector<DeviceGroup>& stages, bool forward_only, int32_t weight_base = 0,
                  const std::vector<RankGroups>& groups = {}, const PipelineJoins& joins = {});

}  // namespace arlsim::runtime
