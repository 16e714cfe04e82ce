// Weight sync and the training state's place in host memory (step.h): the refit by each method
// and gather, the engines' sleep and wake, the training state's swap around the rollout, the
// reference weights kept in host memory, and what a node's host memory holds meanwhile.
#include "sim/rl/step.h"

#include <algorithm>
#include <cmath>

#include "sim/model/collective.h"
#include "sim/model/cost_model.h"
#include "sim/model/memory.h"
#include "sim/model/train.h"
#include "sim/model/transformer.h"

namespace arlsim::rl {

namespace {

double real(int64_t v) { return static_cast<double>(v); }

}  // namespace

std::optional<model::MemoryBreakdown> host_memory_at(const input::ScenarioSpec& s, const input::RolloutLayout& rollout,
                                                     const input::TrainLayout& train) {
  if (s.cluster.host_memory_bytes <= 0) return std::nullopt;
  model::MemoryBreakdown b;
  b.capacity_bytes = s.cluster.host_memory_bytes;
  // The busiest node holds a whole node of training ranks (or all of them, on fewer GPUs).
  const double ranks = real(std::min(s.cluster.gpus_per_node, train.gpus()));
  double optimizer = 0, weights = 0;
  auto offloaded = [&](const input::ModelSpec& m) {
    const model::TrainingState state = model::training_state(m, train, s.workload.dtype);
    if (train.offload_optimizer) optimizer += ranks * state.optimizer;
    if (train.offload_params) weights += ranks * state.weights;
  };
  offloaded(s.model);
  if (s.workload.critic) offloaded(*s.workload.critic);
  b.items.emplace_back("offloaded optimizer states", optimizer);
  b.items.emplace_back("offloaded weights", weights);
  // Reference weights kept in host memory stay there for the whole run, and so do the pinned
  // blocks the policy's weights wait in during the reference pass (PyTorch's caching host
  // allocator keeps them for the next step): twice a rank's state dict, in both phases.
  const double reference = 2 * ranks * reference_swap_bytes(s, pass_layout(train, s.policy.ref_logprob));
  b.items.emplace_back("reference weights", reference);
  // Colocated engines asleep at level 1 keep each rollout GPU's bf16 shard in host memory.
  double asleep = 0;
  if (s.policy.placement == input::Placement::colocated && s.workload.engine.sleep_level == 1)
    asleep = real(s.cluster.gpus_per_node) * 2.0 * model::count_params(s.model).total / real(rollout.gpus_per_engine());
  b.items.emplace_back("sleeping engines' weights", asleep);
  // During the rollout the engines are awake and a colocated swap has put each training rank's
  // state in host memory instead; the node must hold the larger of the two phases. A state
  // swapped to-cpu stays there into training too (the moments until the update, the weights'
  // pinned buffer for good), beside the engines asleep.
  if (!s.policy.swaps_training_state()) return b;
  const model::TrainingState state = state_on_gpu(s, train);
  if (s.policy.weight_sync_state == input::StateSwap::to_cpu) {
    b.items.emplace_back("swapped training state", ranks * (state.weights + state.moments));
    return b;
  }
  const double swapped = refit_shape(s, rollout, train).method == input::WeightSync::offload
                             ? state.total()
                             : state.gradients + state.optimizer;
  model::MemoryBreakdown during_rollout;
  during_rollout.capacity_bytes = b.capacity_bytes;
  during_rollout.items.emplace_back("offloaded optimizer states", optimizer);
  during_rollout.items.emplace_back("offloaded weights", weights);
  during_rollout.items.emplace_back("reference weights", reference);
  during_rollout.items.emplace_back("swapped training state", ranks * swapped);
  return during_rollout.total() > b.total() ? during_rollout : b;
}

double engine_sleep_wake_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r) {
  if (s.policy.placement != input::Placement::colocated || s.workload.engine.sleep_level != 1) return 0;
  // Level 1: each rollout GPU's shard of the weights (bf16) out to host memory after the rollout
  // and back before the next, over the host link; the KV cache is dropped and mapped again.
  const double rollout_shard = 2.0 * model::count_params(s.model).total / real(r.gpus_per_engine());
  return 2 * model::AnalyticCostModel(s.cluster, s.workload.dtype).seconds(model::HostTransferOp{rollout_shard});
}

namespace {

// The training state out to host memory as PyTorch frameworks move it (input::StateSwap::to_cpu):
// the bf16 weights through a pinned buffer, the optimizer's moments into new pageable memory; the
// gradient buffers are freed, and the fp32 master weights stay on the GPU.
double state_out_to_cpu_seconds(const model::AnalyticCostModel& cost, const model::TrainingState& state) {
  return cost.seconds(model::HostTransferOp{state.weights, model::HostMemory::pinned}) +
         cost.seconds(model::HostTransferOp{state.moments, model::HostMemory::pageable_out});
}

// Bytes a parameter of a rank's state dict takes: 4 in an fp32 run, else Megatron's bf16 copy, or
// under ZeRO-3 the layout's shard dtype (FSDP's fp32 shards by default).
double state_dict_bytes(const input::ScenarioSpec& s, const input::TrainLayout& l) {
  const bool fp32 = s.workload.dtype == input::Dtype::fp32 || s.workload.dtype == input::Dtype::tf32;
  return fp32 ? 4.0 : l.state_dict_bytes();
}

// The all-gathers of a full-model gather, one after another.
double gather_steps_seconds(const model::AnalyticCostModel& cost, const RefitShape& shape) {
  double seconds = 0;
  for (const RefitGatherStep& g : shape.gathers)
    seconds += cost.seconds(model::CollectiveCallOp{model::CollectiveOp::all_gather, g.output_bytes, {g.ranks, g.ranks_per_node}});
  return seconds;
}

}  // namespace

bool host_memory_during_rollout(const model::MemoryBreakdown& b) {
  return b.get("swapped training state") > 0 && b.get("sleeping engines' weights") == 0;
}

model::TrainingState state_on_gpu(const input::ScenarioSpec& s, const input::TrainLayout& train) {
  model::TrainingState state = model::training_state(s.model, train, s.workload.dtype);
  if (train.offload_optimizer) state.optimizer = state.moments = 0;
  if (train.offload_params) state.weights = 0;
  return state;
}

StateSwapIn state_swap_in(const input::ScenarioSpec& s, const input::TrainLayout& train) {
  StateSwapIn in;
  if (s.policy.weight_sync_state != input::StateSwap::to_cpu || !s.policy.swaps_training_state()) return in;
  const model::AnalyticCostModel cost(s.cluster, s.workload.dtype);
  const model::TrainingState state = state_on_gpu(s, train);
  in.weights_s = cost.seconds(model::HostTransferOp{state.weights, model::HostMemory::pinned});
  in.optimizer_s = cost.seconds(model::HostTransferOp{state.moments, model::HostMemory::pageable_in});
  return in;
}

double reference_swap_bytes(const input::ScenarioSpec& s, const input::TrainLayout& pass) {
  if (!s.workload.use_reference || s.policy.reference_weights != input::ReferenceWeights::swapped || pass.offload_params)
    return 0;
  // A model's state dict is Megatron's bf16 copy (the fp32 master weights are the optimizer's), or
  // under ZeRO-3 the sharded parameters in the layout's shard dtype (FSDP keeps them in fp32 and
  // casts to bf16 for each pass): the rank's parameters at that many bytes each.
  const model::TrainingState bf16 = model::training_state(s.model, pass, input::Dtype::bf16);
  return bf16.weights / 2.0 * state_dict_bytes(s, pass);
}

double reference_swap_seconds(const input::ScenarioSpec& s, const input::TrainLayout& pass) {
  const double bytes = reference_swap_bytes(s, pass);
  if (bytes <= 0) return 0;
  // Out, in, and back: three copies through pinned memory (PyTorch's caching host allocator keeps
  // the pinned blocks from one step to the next).
  return 3 * model::AnalyticCostModel(s.cluster, s.workload.dtype).seconds(model::HostTransferOp{bytes, model::HostMemory::pinned});
}

double weight_sync_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train) {
  return refit_seconds(s, r, train) + engine_sleep_wake_seconds(s, r);
}

RefitShape refit_shape(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train) {
  RefitShape shape;
  const double params = model::count_params(s.model).total;
  const bool colocated = s.policy.placement == input::Placement::colocated;
  shape.method = s.policy.weight_sync;
  if (shape.method == input::WeightSync::automatic)
    shape.method = colocated ? (train.dp * train.tp >= r.tp ? input::WeightSync::allgather_swap : input::WeightSync::offload)
                             : input::WeightSync::broadcast;
  shape.rollout_shard_bytes = 2.0 * params / real(r.gpus_per_engine());  // bf16 bytes per rollout GPU
  // MindSpeed RL's all-gather-swap: each rollout GPU must end up with its engine's whole shard;
  // it holds the part of it its training rank kept (the training shard: 1 / (tp x pp) of the
  // weights, and 1 / dp more under ZeRO-3) and receives the rest from the ranks holding the other
  // parts — an all-gather over that many pieces. A rank that already holds its engine's whole
  // shard (training sharded no finer than the engine) gathers nothing: one piece.
  const double held = 2.0 * params / real(train.tp * train.pp * (train.zero >= 3 ? train.sharding_ranks() : 1));
  shape.gather_ranks = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(shape.rollout_shard_bytes / held - 1e-9)));
  shape.engine_bytes = shape.rollout_shard_bytes;
  if (s.policy.refit_gather() != input::RefitGather::full_model) return shape;
  // Every rank makes every parameter whole, so a colocated engine finds its shard on its own GPU
  // whatever the layouts (no offload of the training state to load it from).
  if (colocated && shape.method == input::WeightSync::offload) shape.method = input::WeightSync::allgather_swap;
  shape.full_model = true;
  shape.gather_ranks = 1;
  shape.engine_bytes = 2.0 * params;
  // The gather's dtype: the weights as the rank's state dict keeps them (NeMo RL and verl gather
  // FSDP's fp32 shards whole before casting to the engine's bf16).
  const double w = state_dict_bytes(s, train);
  // A rank's part of the largest stage: its dense part split over tp, its experts over ep x the
  // experts' tp (model::params_of_stage, TrainLayout::expert_tp), each sharded once more under ZeRO-3.
  const model::StageParams stage = model::largest_stage_params(s.model, train);
  const double all_experts = model::params_of_stage(s.model, input::TrainLayout{}, 0).experts;  // one rank holding all
  const bool tp_splits_experts = train.expert_tp() > 1;  // tp peers hold different slices of the same experts
  const int64_t per_node = s.cluster.gpus_per_node;
  using Dim = RefitGatherStep::Dim;
  auto add = [&](Dim dim, const model::CollectiveGroup& g, double output) {
    if (g.ranks > 1 && output > 0) shape.gathers.push_back({dim, g.ranks, g.ranks_per_node, output});
  };
  if (train.zero >= 3) {
    add(Dim::shard, model::strided_group(train.sharding_ranks(), train.tp, per_node), w * stage.dense);
    add(Dim::expert_shard, model::expert_group_of(s.cluster, train), w * stage.experts);
  }
  add(Dim::tp, model::strided_group(train.tp, 1, per_node),
      w * real(train.tp) * (stage.dense + (tp_splits_experts ? stage.experts : 0.0)));
  const double experts_held = tp_splits_experts ? all_experts : all_experts / real(train.ep);
  add(Dim::pp, model::strided_group(train.pp, train.tp * train.cp * train.dp, per_node), w * (params - all_experts + experts_held));
  if (!tp_splits_experts) add(Dim::ep, model::strided_group(train.ep, 1, per_node), w * all_experts);
  return shape;
}

double full_model_gather_seconds(const input::ScenarioSpec& s, const RefitShape& shape) {
  return gather_steps_seconds(model::AnalyticCostModel(s.cluster, s.workload.dtype), shape);
}

double refit_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train) {
  const model::AnalyticCostModel cost(s.cluster, s.workload.dtype);
  const RefitShape shape = refit_shape(s, r, train);
  const double rollout_shard = shape.rollout_shard_bytes;
  switch (shape.method) {
    case input::WeightSync::allgather_swap: {
      // All-gather the training shards into whole rollout tp shards per pipeline stage (across
      // nodes when the pieces do not fit one), and swap the training state to host memory and
      // back around the rollout.
      model::CollectiveGroup g;
      g.ranks = shape.gather_ranks;
      g.ranks_per_node = std::min(g.ranks, s.cluster.gpus_per_node);
      // The weights stay on the GPUs for the gather; gradients and optimizer states make room.
      const double gather = shape.full_model
                                ? gather_steps_seconds(cost, shape)
                                : cost.seconds(model::CollectiveCallOp{model::CollectiveOp::all_gather, rollout_shard, g});
      const model::TrainingState state = state_on_gpu(s, train);
      if (s.policy.weight_sync_state == input::StateSwap::to_cpu) return gather + state_out_to_cpu_seconds(cost, state);
      return gather + 2 * cost.seconds(model::HostTransferOp{state.gradients + state.optimizer});
    }
    case input::WeightSync::offload: {
      // Training state out to host memory and back, rollout weights loaded over the host link.
      const model::TrainingState state = state_on_gpu(s, train);
      const double load = cost.seconds(model::HostTransferOp{rollout_shard});
      if (s.policy.weight_sync_state == input::StateSwap::to_cpu) return state_out_to_cpu_seconds(cost, state) + load;
      return 2 * cost.seconds(model::HostTransferOp{state.total()}) + load;
    }
    case input::WeightSync::broadcast:
    case input::WeightSync::automatic: {
      // Buckets broadcast from the training ranks to every rollout GPU: across the network, or over
      // the GPU link when both pools share the one node (a profile's NIC efficiency of 0 means not
      // given: the nominal rate).
      const double nic_efficiency = s.cluster.gpu.nic_efficiency > 0 ? s.cluster.gpu.nic_efficiency : 1.0;
      const double nic = s.cluster.nodes == 1 ? s.cluster.gpu_link.achieved()
                                              : s.cluster.nic_bandwidth_bytes_per_s * nic_efficiency;
      // With a full-model gather the training ranks make each tensor whole first, and every engine
      // GPU receives it whole.
      const double bytes = shape.engine_bytes;
      const double buckets = std::ceil(bytes / s.policy.weight_sync_bucket_bytes);
      return gather_steps_seconds(cost, shape) + bytes / nic + buckets * model::call_latency_s(s.cluster.gpu);
    }
  }
  return 0;
}

}  // namespace arlsim::rl
