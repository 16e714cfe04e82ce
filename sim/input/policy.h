// PolicySpec: how a run is laid out and scheduled — placement of rollout and training, the parallel
// layout of every stage, dispatch, sync mode, tool scheduling, routing, weight sync, and a schedule
// of layout switches over steps (EARL's parallelism selector writes one).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "sim/input/parse_names.h"
#include "sim/parse/registry.h"

namespace arlsim::input {


enum class Placement { colocated, disaggregated };
enum class Recompute { none, selective, full };
enum class DispatchMode { centralized, decentralized, transfer_dock };
// Which training data-parallel rank takes each sample: contiguous chunks in order; balanced by
// tokens (verl's balance_batch); or balanced while keeping samples on their producer's node
// (EARL's layout-aware dispatch).
enum class BatchAssignment { in_order, balanced, layout_aware };
enum class SyncMode { sync, async };
enum class ToolPolicy { static_binding, pooled };
enum class Routing { round_robin, least_loaded, sticky, length_aware };
enum class WeightSync { automatic, offload, allgather_swap, broadcast };
// How a colocated weight sync moves the training state to host memory and back: gradients and
// optimizer states through pinned buffers at the host link's rate (MindSpeed RL's swap), or as
// PyTorch frameworks do it (NeMo RL's colocated workers): the optimizer's moments by
// `tensor.to("cpu")` into newly allocated pageable memory and back, the bf16 weights through a
// pinned buffer (Megatron's offload_to_cpu), the gradient buffers freed rather than copied.
enum class StateSwap { pinned, to_cpu };
// What each training rank gathers for a refit: every parameter whole, across its tensor-, expert-
// and pipeline-parallel groups and its ZeRO-3 shards, as NeMo RL, verl and OpenRLHF gather a tensor
// before handing it to their engines, which then receive, or take through CUDA IPC, whole tensors
// (the default); or only the parts of its engine's shard, as MindSpeed RL's all-gather-swap
// reshards.
enum class RefitGather { engine_shard, full_model };
// Where the reference model's weights live between its passes: on the GPUs beside the policy's
// (resident), or in host memory, swapped into the training ranks' model for each reference pass
// (NeMo RL's Megatron and DTensor workers: the policy's weights out to pinned host memory, the
// reference's in, and the policy's back after the pass).
enum class ReferenceWeights { resident, swapped };

const char* recompute_name(Recompute r);

// The registered policies (parse/registry.h): their names, descriptions and values, read by the
// parser, `arlsim list policies` and every output that names them.
const parse::Registry<Routing>& routing_policies();
const parse::Registry<ToolPolicy>& tool_policies();
const parse::Registry<DispatchMode>& dispatch_modes();
// balance_batch's values: true, false, or "layout-aware".
const parse::Registry<BatchAssignment>& batch_assignments();
std::string_view dispatch_name(DispatchMode d);

struct RolloutLayout {
  int64_t tp = 1, pp = 1, ep = 1;
  int64_t replicas = 0;  // engines; 0 = as many as the rollout GPUs hold
  int64_t gpus_per_engine() const { return tp * pp; }
  bool operator==(const RolloutLayout&) const = default;
};

// Layout of a forward-only pass (old/reference log-probs, critic values).
struct InferenceLayout {
  int64_t tp = 1, pp = 1, dp = 1, cp = 1;
  int64_t gpus() const { return tp * pp * dp * cp; }
  bool operator==(const InferenceLayout&) const = default;
};

// Communication hidden under computation, as Megatron-Core names its switches. Unset: the
// framework's default for the layout — Megatron-LM's for ZeRO 0-2 (no overlap: its
// --overlap-grad-reduce, --overlap-param-gather and --tp-comm-overlap are off unless given;
// pipeline transfers overlapped with the interleaved schedule, its --overlap-p2p-communication
// default, and not with plain 1F1B, which batches them), and FSDP's for ZeRO-3 (gradient
// reduce-scatters during the backward and parameter gathers prefetched ahead of use, by design).
struct Overlap {
  std::optional<bool> tp_comm;       // TP all-gathers and reduce-scatters under the GEMMs (needs SP)
  std::optional<bool> grad_reduce;   // gradient buckets reduced during the last backward
  std::optional<bool> param_gather;  // updated (or ZeRO-3) parameters gathered under the forward
  std::optional<bool> p2p;           // pipeline sends and receives under the next chunk's compute
  bool operator==(const Overlap&) const = default;
};

struct TrainLayout {
  int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vpp = 1;
  // The experts' own tensor parallelism: without expert parallelism they split over tp as a dense
  // MLP does (Megatron's default, expert tp = tp); with it, none (expert tp 1, Megatron's parallel
  // folding: the ep group is ep consecutive ranks of the tp x cp x dp ones, each holding its
  // experts whole), as NeMo RL requires with vLLM engines and Megatron's MoE recipes set.
  int64_t expert_tp() const { return ep > 1 ? 1 : tp; }
  int64_t zero = 1;  // ZeRO stage 0..3; FSDP full sharding is stage 3
  // Layers of the first and last pipeline stages when they differ from the rest (Megatron's
  // --decoder-first/last-pipeline-num-layers, for a 61-layer model or a light first stage beside
  // the embedding); 0: an even split. The other stages split the remaining layers evenly.
  int64_t first_stage_layers = 0, last_stage_layers = 0;
  // Hybrid sharding (FSDP's HSDP, Megatron's partial distributed optimizer): ZeRO shards the
  // states over groups of this many data-parallel ranks and replicates them across the groups;
  // 0: over all dp x cp ranks.
  int64_t shard_group = 0;
  // How context parallelism splits attention: ring attention (K and V blocks passed around the cp
  // ranks under the attention) or Ulysses (all-to-alls that trade the sequence split for a head
  // split before the attention and back after it).
  bool ulysses = false;
  int64_t sharding_ranks() const { return shard_group > 0 ? shard_group : dp * cp; }
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  int64_t micro_batch = 1;           // sequences per micro-batch (when max_tokens_per_gpu is 0)
  int64_t max_tokens_per_gpu = 0;    // dynamic batching token budget; 0 = fixed micro-batches
  // The critic's own token budget for its training and its values pass (verl's
  // critic.ppo_max_token_len_per_gpu); 0: the layout's.
  int64_t critic_max_tokens_per_gpu = 0;
  bool offload_optimizer = false;
  bool offload_params = false;
  // The dtype gradients are reduced in across data-parallel ranks, fp32 (true) or bf16. Unset:
  // bf16 for ZeRO 0-2, the default of Megatron-Core's DDP config (grad_reduce_in_fp32 off, as NeMo
  // RL keeps it; Megatron-LM's own launcher reduces a bf16 run's gradients in fp32 unless given
  // --grad-reduce-in-bf16, and DeepSpeed in bf16), and fp32 for ZeRO-3, the reduce_dtype of the
  // FSDP MixedPrecisionPolicy that torchtitan, verl and NeMo RL's DTensor worker set. Importers
  // set it from the launch where the framework's default differs.
  std::optional<bool> grad_reduce_fp32;
  // The dtype ZeRO-3 keeps its parameter shards in, fp32 (true) or bf16. Unset: fp32, as FSDP keeps
  // a model loaded in fp32 under a mixed-precision policy that casts to bf16 for compute (NeMo RL's
  // DTensor worker, verl); DeepSpeed's ZeRO-3 keeps bf16 partitions, its fp32 masters being the
  // optimizer's. Whole-model gathers of the shards (a refit's full_tensor(), the reference
  // weights' state dict) move them in this dtype.
  std::optional<bool> shard_fp32;
  // How the layers' element-wise work runs: fused kernels (false: Megatron-Core with Transformer
  // Engine, one kernel a norm, a rotary embedding, a SwiGLU) or eager PyTorch (true: a Hugging
  // Face model's modules as written, an RMSNorm in fp32 as eight kernels, a rotary embedding as
  // five on q and five on k, SiLU and the product as two, and autograd's kernels for each backward). Unset: eager under
  // ZeRO-3, whose frameworks (FSDP in NeMo RL's DTensor worker and verl, DeepSpeed in OpenRLHF)
  // train Hugging Face models, fused below.
  std::optional<bool> eager;
  // Under pipeline parallelism with a token budget, every micro-batch padded to the longest of
  // the rank's mini-batch (true), as NeMo RL's Megatron backend pads its packed sequences to one
  // length for a static pipeline buffer (pad_full_seq_to), or each run at its own length (false:
  // Megatron-LM's variable_seq_lengths, verl's Megatron engine).
  bool pad_to_longest = false;
  // How a token budget packs a rank's sequences: into ceil(tokens / budget) balanced
  // micro-batches (false: verl's rearrange_micro_batches, which may pass the budget a little), or
  // longest first into bins of at most the budget (true: NeMo RL's first-fit-decreasing packers).
  bool fit_packing = false;
  Overlap overlap;
  int64_t gpus() const { return tp * pp * dp * cp; }
  bool uneven_stages() const { return first_stage_layers > 0 || last_stage_layers > 0; }
  // Layers of pipeline stage `stage` (0 .. pp - 1) and the index of its first layer, for a model of
  // `num_layers`.
  int64_t stage_layers(int64_t num_layers, int64_t stage) const;
  int64_t stage_first_layer(int64_t num_layers, int64_t stage) const;
  // "" or why this model's layers do not split over the stages as the layout asks.
  std::string stage_split_problem(int64_t num_layers) const;
  bool overlaps_tp_comm() const { return overlap.tp_comm.value_or(false); }
  double grad_reduce_bytes() const { return grad_reduce_fp32.value_or(zero >= 3) ? 4.0 : 2.0; }
  // Bytes a parameter of the rank's state dict takes in a bf16 run: the fp32 or bf16 shards under
  // ZeRO-3 (shard_fp32), Megatron's bf16 copy below.
  double state_dict_bytes() const { return zero >= 3 && shard_fp32.value_or(true) ? 4.0 : 2.0; }
  bool eager_kernels() const { return eager.value_or(zero >= 3); }
  // A layout derived from `run`'s (a planner candidate, a schedule entry; a copy of it, so its
  // packing and padding are the run's unless it names its own) keeps the run's kernels unless it
  // names its own: the framework does not change with the layout.
  void keep_framework_of(const TrainLayout& run) {
    if (!eager && eager_kernels() != run.eager_kernels()) eager = run.eager_kernels();
  }
  // ZeRO-2 and -3 keep only their shard of the gradients, so each micro-batch's are reduced to
  // their owners after its backward (FSDP and DeepSpeed reduce at every backward); below stage 2
  // they accumulate in the rank's whole buffer and are reduced once an optimizer step.
  bool reduces_each_micro_batch() const { return zero >= 2; }
  bool overlaps_grad_reduce() const { return overlap.grad_reduce.value_or(zero >= 3); }
  bool overlaps_param_gather() const { return overlap.param_gather.value_or(zero >= 3); }
  bool overlaps_p2p() const { return overlap.p2p.value_or(vpp > 1); }
  bool operator==(const TrainLayout&) const = default;
};

struct ScheduleEntry {
  int64_t first_step = 0;
  int64_t last_step = -1;  // inclusive; -1 = to the end
  std::optional<RolloutLayout> rollout;
  std::optional<TrainLayout> train;
};

// The software a dispatch's transfers go through, beyond the links' bandwidth: per-message calls
// at the sender (an object-store put) and the receiver (a get), a copy of every byte sent into
// host memory (serialising into the store), and a fixed cost per phase (the controller's call that
// starts it). All zero: GPU-to-GPU transfers as NCCL or RDMA make them ("direct").
struct DispatchTransport {
  std::string name = "direct";
  double send_per_message_s = 0;
  double receive_per_message_s = 0;
  double copy_bytes_per_s = 0;  // 0: no copy
  double per_phase_s = 0;
  bool operator==(const DispatchTransport&) const = default;
};
// "direct", or "ray": Ray's object store with its published microbenchmark figures
// (calib/SOURCES.md); nullptr for another name.
const DispatchTransport* find_dispatch_transport(std::string_view name);

struct PolicySpec {
  std::string name;
  std::string description;
  Placement placement = Placement::colocated;
  int64_t rollout_gpus = 0;  // disaggregated: GPUs of the rollout pool
  RolloutLayout rollout;
  TrainLayout train;
  std::optional<InferenceLayout> old_logprob, ref_logprob, critic;  // default: the train layout
  DispatchMode dispatch = DispatchMode::centralized;
  DispatchTransport dispatch_transport;
  BatchAssignment batch_assignment = BatchAssignment::balanced;  // the key "balance_batch"
  SyncMode sync = SyncMode::sync;
  int64_t staleness = 0;
  // Partial rollout: a step's rollout ends once this fraction of its trajectories is done; the
  // others pause and go on in the next step. 0 = off.
  double partial_rollout = 0;
  // Continuous generation (async only): the engines hold the trajectories of several steps at once
  // (`continuous_batches`: `staleness` when the key is true, else its number), and a step's rollout
  // ends when a batch's worth of them has finished; the unfinished go on in the next step's.
  bool continuous = false;
  int64_t continuous_batches = 0;  // continuous: the steps' batches the engines hold (`staleness` when true)
  // The steps' batches the engines hold at once: 1 but for continuous generation.
  int64_t batches_held() const { return continuous ? std::max<int64_t>(1, continuous_batches) : 1; }
  // Continuous generation: the requests still running when a step's rollout ends keep their KV
  // cache across the weight update ("keep", NeMo RL's default) instead of prefilling their
  // contexts again ("recompute", AReaL's).
  bool keep_kv_cache = false;
  ToolPolicy tool_policy = ToolPolicy::static_binding;
  Routing routing = Routing::least_loaded;
  WeightSync weight_sync = WeightSync::automatic;
  double weight_sync_bucket_bytes = 512.0 * 1024 * 1024;
  StateSwap weight_sync_state = StateSwap::pinned;
  std::optional<RefitGather> weight_sync_gather;  // unset: refit_gather() decides
  ReferenceWeights reference_weights = ReferenceWeights::resident;
  // The refit's gather: the policy's, else the whole model, as the frameworks gather it, but for
  // an offload refit, which loads each engine's shard from host memory and gathers nothing.
  RefitGather refit_gather() const {
    return weight_sync_gather.value_or(weight_sync == WeightSync::offload ? RefitGather::engine_shard : RefitGather::full_model);
  }
  // Whether the weight sync swaps the training state to host memory and back (all-gather-swap
  // or offload, as `automatic` picks for a colocated placement); broadcast does not.
  bool swaps_training_state() const {
    return weight_sync == WeightSync::allgather_swap || weight_sync == WeightSync::offload ||
           (weight_sync == WeightSync::automatic && placement == Placement::colocated);
  }
  std::vector<ScheduleEntry> schedule;
  // Fixed time of each layout switch, beyond moving weights and state: processes restart,
  // communicators form again, CUDA graphs are captured again.
  double switch_overhead_s = 0;
};

bool parse_policy(const Value& v, const std::string& pointer, Diagnostics& diag, PolicySpec& out);

// The parallel degrees, ZeRO stage, sequence parallelism and offload of a training layout: the
// keys a policy's "train" shares with a stage file's "layout".
void read_parallel_degrees(ObjectReader& r, TrainLayout& l);
// Megatron refuses a mixture-of-experts layer under tp > 1 without sequence parallelism: the
// warning a scenario's check and a training stage give of it, or "" (a dense model, or a layout
// that has it).
std::string moe_sequence_parallel_warning(bool moe, const TrainLayout& l);

}  // namespace arlsim::input
