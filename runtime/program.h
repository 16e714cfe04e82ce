// What a runtime executes for each activity of a step graph: a program of kernels per device,
// built from the same shapes the cost model priced (sim/model/inference.cpp for an engine
// iteration, sim/model/train.cpp for a micro-batch and an optimizer step, sim/rl/step_costs.cpp
// for weight sync), so that prediction and measurement differ only by what the cost model gets
// wrong. Backend-independent: a backend (runtime/cpu) runs the kernels.
//
// Executable plans: docs/runtime.md lists them (dense and mixture-of-experts models, standard or
// latent attention, training and passes with tp, dp, pp (1F1B or interleaved), Ulysses cp and ep,
// ZeRO 0-3, engines with tp, speculation, colocated and disaggregated steps, partial rollouts,
// layout switches). Pipelines are in runtime/pipeline.h.
// unsupported_reason() names what else a plan asks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <stdexcept>
#include <vector>

#include "sim/input/scenario.h"
#include "sim/model/collective.h"
#include "sim/model/inference.h"
#include "sim/model/train.h"

namespace arlsim::runtime {

struct Kernel {
  enum class Kind : uint8_t {
    gemm,              // m x n x k, `groups` times
    attention,         // causal, `heads` heads of seq_len x head_dim; backward: the backward pass only
    decode_attention,  // one layer's (`weight`) decode attention: `seqs` sequences of seq_len cached tokens,
                       // `heads` query heads on `kv_heads` KV heads of head_dim, reading `bytes` of cache;
                       // with value_dim the values are the first value_dim of each cached key (MLA's latent)
    memory,            // element-wise work streaming `bytes` in `launches` kernels (0: no launch of its own)
    collective,        // `op` over the devices of group `group`, on `bytes` (as nccl-tests counts them)
    copy,              // `bytes` to device `peer` (-1: host memory), checksummed at the receiver
    wait,              // `seconds` without using the device
  };
  Kind kind = Kind::gemm;
  int64_t m = 0, n = 0, k = 0, groups = 1;
  // gemm: the weight matrix it reads (a layer's own, as a model's layers each have theirs, so
  // that caches see the model's footprint); -1 for an operand of the moment.
  int32_t weight = -1;
  // gemm: a weight gradient (X^T dY), whose reduction runs over the tokens (k): both operands are
  // held token-major, as frameworks hold activations, so that the tokens are no leading dimension.
  bool weight_gradient = false;
  int64_t seq_len = 0, head_dim = 0, heads = 1;
  int64_t seqs = 0, kv_heads = 0;  // decode attention
  // Decode attention over a latent cache (MLA, absorbed as engines run it: DeepSeek-V2 sec. 2.1.2):
  // one cached vector a token serves as the key (head_dim) and, its first value_dim, as the value.
  // 0: keys and values of head_dim each.
  int64_t value_dim = 0;
  bool backward = false;
  double bytes = 0;
  int64_t launches = 1;
  // memory: which streaming kernel it runs (a norm runs calibration's norm, an add its triad; any, a copy).
  model::ElementwiseKind elementwise = model::ElementwiseKind::any;
  model::CollectiveOp op = model::CollectiveOp::all_reduce;
  int32_t group = -1;
  int64_t peer = -1;
  double seconds = 0;
  // wait: the device counts as busy meanwhile (an engine's host work between its iterations, which
  // the simulator counts in the engine's busy time), not idle (a tool call, a timer).
  bool busy = false;
  // An engine iteration's kernels: 1 decode only, 2 with prefill work (0 otherwise). The measured
  // engine spans are split where it changes, as the simulator's are.
  int8_t phase = 0;
};

// "gemm", "attention", "decode_attention", "memory", "collective", "copy", "wait".
const char* kernel_kind_name(Kernel::Kind kind);

// A memory kernel's arrays, in floats, for each of its launches: its bytes over the arrays its
// kind streams (an add reads two and writes one; a copy, norm or activation reads one and writes
// one), at least one float. 0 launches (replayed from a graph) is the whole work in one. Inline:
// the CUDA module, which is loaded into the program and links none of the runtime's sources but its
// own, computes it too.
inline size_t memory_floats_per_launch(const Kernel& k) {
  const double arrays = k.elementwise == model::ElementwiseKind::add ? 3.0 : 2.0;
  const auto launches = static_cast<double>(std::max<int64_t>(1, k.launches));
  return static_cast<size_t>(std::max(1.0, k.bytes / (4.0 * arrays) / launches));
}

// A group of devices that run collectives together (an engine's tp ranks, a data-parallel group).
using DeviceGroup = std::vector<int64_t>;

// Every device's kernels for one activity, in the order each device runs them; a collective's
// group refers to `groups`.
struct Program {
  std::vector<DeviceGroup> groups;
  std::vector<std::pair<int64_t, std::vector<Kernel>>> devices;  // (device, kernels)
  std::vector<Kernel>& on(int64_t device);
  int32_t group(const DeviceGroup& g);  // its index, added when new
};

// A collective kernel: `op` on `bytes` (as nccl-tests counts them) over group `group` (Program::group).
Kernel collective(model::CollectiveOp op, double bytes, int32_t group);
// A copy kernel: `bytes` into device `peer`'s memory, or out to host memory (peer -1).
Kernel copy(double bytes, int64_t peer);
// Appends `from`'s kernels to `into`'s devices (after what they hold), its collective groups
// renumbered into `into`'s.
void merge_into(Program& into, Program from);

// A plan the runtime cannot execute as it turned out (what unsupported_reason cannot know before
// the simulation): "/pointer: reason".
struct UnsupportedPlan : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// What in the scenario the runtime cannot execute yet, as "/pointer: reason"; "" when it can.
std::string unsupported_reason(const input::ScenarioSpec& s);

// One engine iteration (or `iterations` decode-only iterations, the KV growing by one token per
// sequence each) on every device of `engine`; KV elements of `kv_element_bytes` (the engines'
// serving dtype: model::serving_element_bytes).
// With `exec`, each iteration first waits, busy, for the host's work the inference model charges
// it: the engine's per-iteration and per-sequence host overhead and, in eager mode, the dispatch
// of each short kernel (model::InferenceModel::iteration).
void add_engine_iteration(Program& p, const input::ModelSpec& m, const DeviceGroup& engine,
                          const model::IterationBatch& batch, int64_t iterations, double kv_element_bytes = 2,
                          const model::EngineExecution& exec = {});
// The groups a rank of a tp group meets besides it, one entry per rank of the tp group (each
// empty when the layout has none): ZeRO-3's shard group (the devices its parameters are sharded
// over), its cp group (the devices that share its sequence under Ulysses, itself among them) and
// its ep group (the devices its tokens' experts are spread over).
struct RankGroups {
  std::vector<DeviceGroup> shard, cp, ep;
  // The tokens whose top-k copies the ep all-to-alls move (0: the rank's own). An all-to-all
  // waits for its largest exchange, and the members of an ep group run micro-batches of their
  // own sizes: each of them exchanges the largest member's (the backends move equal parts).
  int64_t ep_tokens = 0;
  // Under ZeRO-3, the group a mixture-of-experts model's experts are sharded over and gathered
  // from, one entry per rank of the tp group (expert_group); empty below ZeRO-3 or when the
  // group is one device. A dense model gathers nothing over it.
  std::vector<DeviceGroup> experts = {};
};
// One micro-batch of one packed sequence (the request MicroBatchTimer prices) on a tp group:
// forward, and unless forward_only the backward with the layout's recompute. Its weights are
// buffers weight_base + 4 x layer + i (the head after the layers): a second model on the same
// devices (a critic) takes a base past the first's, so that each reads its own weights.
// Under ZeRO-3 each device first all-gathers its parameters over its shard group before the
// forward and again before the backward, as the cost model counts them (one gather of the rank's
// parameters a pass; FSDP gathers layer by layer, the same bytes); a mixture-of-experts model's
// experts then over their own data-parallel group (groups.experts), as train.cpp prices them.
// Under Ulysses context parallelism each device runs its 1 / cp of the tokens and, around the
// attention, all-to-alls over its cp group that trade the sequence split for a split of the
// heads: the attention then runs over the whole sequence for heads / (tp x cp) of the heads.
// A mixture-of-experts layer routes the tokens (a router GEMM), permutes their top-k copies into
// expert order, all-to-alls them over the ep group, runs the local experts as grouped GEMMs at the
// busiest expert's rows (and the shared experts as dense ones), and all-to-alls and permutes them
// back; the backward the same in reverse. All of it as train.cpp prices it.
void add_micro_batch(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                     bool forward_only, int32_t weight_base = 0, const RankGroups& groups = {});
// What a rank that lacks a micro-batch its data-parallel peers run still joins of it: the
// collectives over groups that span data-parallel ranks (ZeRO-3's gathers, the ep all-to-alls),
// in the order the micro-batch runs them, so that the peers meet them in one order.
void add_micro_batch_joins(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                           bool forward_only, int32_t weight_base, const RankGroups& groups);
struct PassPart;
// The same for what a pipeline stage runs of it.
void add_part_joins(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                    const PassPart& part, int32_t weight_base, const RankGroups& groups);
// What of a micro-batch a pipeline stage runs: its forward and/or its backward, over layers
// [first_layer, first_layer + layers), with the embedding on the first stage and the head and
// loss on the last.
struct PassPart {
  bool forward = true, backward = true;
  int64_t first_layer = 0, layers = 0;
  bool first_stage = true, last_stage = true;
};
void add_micro_batch_part(Program& p, const input::ModelSpec& m, const model::TrainRequest& r, const DeviceGroup& tp_group,
                          const PassPart& part, int32_t weight_base = 0, const RankGroups& groups = {});
// The gathers alone of a micro-batch a rank does not have (ZeRO-3): every member of a shard group
// (and of an expert group) joins every gather, so a rank with fewer micro-batches than the others
// still gathers with them.
void add_parameter_gathers(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, const DeviceGroup& tp_group,
                           bool forward_only, const RankGroups& groups);
// ZeRO-3's shard groups of data rank `rank` (see tp_group; one per tp rank: the devices of that tp
// rank over the data ranks of its shard group, sharding_ranks() consecutive ones, all of them
// unless sharding is hybrid); empty below ZeRO-3 or with shard groups of one rank.
std::vector<DeviceGroup> shard_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0);
// Of a data-parallel group split in shard groups of `size` consecutive ranks: rank `rank`'s shard
// group, and its replicas (the ranks at its place in every shard group).
DeviceGroup shard_of(const DeviceGroup& dp_group, int64_t size, int64_t rank);
DeviceGroup replicas_of(const DeviceGroup& dp_group, int64_t size, int64_t rank);
// The first weight buffer past model m's (a base for the next model on the same devices).
int32_t weights_after(const input::ModelSpec& m, int32_t weight_base = 0);
// The end of an optimizer step on a data-parallel group (each device one rank): the gradients
// reduced (all-reduce, or reduce-scatter and all-gather under ZeRO 1-2) in the layout's reduction
// dtype and Adam over the shard. `reductions`: how many times the gradients were reduced, once or,
// under ZeRO 2-3, once per micro-batch the ranks ran (train.cpp's count).
void add_optimizer_step(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, const DeviceGroup& dp_group,
                        int64_t reductions = 1);
// A mixture-of-experts model's expert parameters of a pipeline stage over each device's expert
// data-parallel group (the stage's devices at its place in their ep groups: tp x cp x dp / ep of
// them), as train.cpp prices them: their gradients reduced (before add_optimizer_step, whose Adam
// covers the expert shard) or, under ZeRO 1-2, the updated parameters gathered (after it).
enum class ExpertPhase { gradients, parameters };
// The expert data-parallel group of the device at tp place `tp` of data rank `rank` of a stage:
// with ep (tp 1 in the runtime) the devices of every data rank at its place in the ep groups;
// without, the experts split over tp as the dense layers do and the group is the dense
// data-parallel one at that tp place; in increasing order (model::expert_data_parallel_ranks of them).
DeviceGroup expert_group(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0, int64_t tp = 0);
void add_expert_reduction(Program& p, const input::ModelSpec& m, const input::TrainLayout& l, int64_t first_device,
                          int64_t stage, ExpertPhase phase, int64_t reductions = 1);
// Reference weights kept in host memory (rl::reference_swap_bytes in the pass's layout `pass`), on
// `ranks` devices from `first_device`: before the reference pass each device copies the policy's
// weights out and the reference's in, after it the policy's back; nothing when the reference
// weights are resident.
void add_reference_swap(Program& p, const input::ScenarioSpec& s, const input::TrainLayout& pass, int64_t first_device,
                        int64_t ranks, bool before_pass);
// Weight sync of a colocated step on the training devices (step_costs.cpp's refit and the
// engines' sleep and wake).
void add_weight_sync(Program& p, const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& t);

// A change of layouts between two steps, as rl::rollout_switch_seconds and rl::train_switch_seconds
// price it (the step's weight sync carries it): the policy's switch overhead as a wait on each
// device of a layout that changes; the engines of a new rollout layout loading their shards from
// host memory; a training state sharded otherwise moved out to host memory in the old layout and
// back in the new one, checksummed.
void add_layout_switch(Program& p, const input::ScenarioSpec& s, const input::RolloutLayout& from_rollout,
                       const input::TrainLayout& from_train, const input::RolloutLayout& to_rollout,
                       const input::TrainLayout& to_train);

// Dispatch: each sample's tensors (`bytes`) from the device that produced it through the
// controller's host memory to its training rank's device, run by the receiving device.
void add_dispatch(Program& p, const std::vector<double>& bytes, const std::vector<int64_t>& producer,
                  const std::vector<int64_t>& receiver);

// The devices of the training layout's groups, numbered as Megatron-LM numbers them (tp fastest,
// then cp, then dp, pipeline stages outermost). A data rank is one of the dp x cp ranks that hold
// a replica's parameters, dp x cp + cp: a pipeline stage's tp group of a data rank; a stage's data
// group of a tp rank (every data rank: the gradients are reduced over dp x cp); and the cp groups
// of a data rank's stage, one per tp rank (empty with cp = 1).
DeviceGroup tp_group(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0);
DeviceGroup dp_group(const input::TrainLayout& l, int64_t first_device, int64_t tp, int64_t stage = 0);
std::vector<DeviceGroup> cp_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0);
// The ep groups of a data rank's stage, one per tp rank (empty with ep = 1): the same tp and cp
// rank of ep consecutive data-parallel ranks (Megatron's expert-parallel groups within dp).
std::vector<DeviceGroup> ep_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0);
// All of a data rank's groups at a stage.
RankGroups rank_groups(const input::TrainLayout& l, int64_t first_device, int64_t rank, int64_t stage = 0);

}  // namespace arlsim::runtime
