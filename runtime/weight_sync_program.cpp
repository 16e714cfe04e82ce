// The weight sync's and layout switches' kernels of a step's program (program.h): the reference
// weights swapped around their pass, the refit as rl::refit_shape gives it (the training devices'
// gathers, the training state's swap, the engines' sleep and wake, or the broadcast to separate
// engines) and the moves of a layout switch.
#include "runtime/program.h"

#include <algorithm>
#include <cmath>

#include "sim/rl/rollout.h"
#include "sim/rl/step.h"

namespace arlsim::runtime {

void add_reference_swap(Program& p, const input::ScenarioSpec& s, const input::TrainLayout& pass, int64_t first_device,
                        int64_t ranks, bool before_pass) {
  const double bytes = rl::reference_swap_bytes(s, pass);
  if (bytes <= 0) return;
  for (int64_t device = first_device; device < first_device + ranks; ++device)
    for (int copies = before_pass ? 2 : 1; copies > 0; --copies) p.on(device).push_back(copy(bytes, -1));
}

namespace {

// A full-model gather (rl::RefitShape::gathers): each training device makes every parameter whole,
// one all-gather over each of its groups in the shape's order (under ZeRO-3 its shard group and its
// experts' data-parallel group, then tp, pp, ep).
void add_full_model_gather(Program& p, const rl::RefitShape& shape, const input::TrainLayout& t, int64_t first_device) {
  const int64_t data_ranks = t.dp * t.cp;
  for (int64_t i = 0; i < t.gpus(); ++i) {
    const int64_t tp = i % t.tp, rank = i / t.tp % data_ranks, stage = i / (t.tp * data_ranks);
    for (const rl::RefitGatherStep& step : shape.gathers) {
      DeviceGroup g;
      switch (step.dim) {
        case rl::RefitGatherStep::Dim::shard: {
          const auto groups = shard_groups(t, first_device, rank, stage);
          if (!groups.empty()) g = groups[static_cast<size_t>(tp)];
          break;
        }
        case rl::RefitGatherStep::Dim::expert_shard: g = expert_group(t, first_device, rank, stage, tp); break;
        case rl::RefitGatherStep::Dim::tp: g = tp_group(t, first_device, rank, stage); break;
        case rl::RefitGatherStep::Dim::ep: {
          const auto groups = ep_groups(t, first_device, rank, stage);
          if (!groups.empty()) g = groups[static_cast<size_t>(tp)];
          break;
        }
        case rl::RefitGatherStep::Dim::pp:
          for (int64_t other = 0; other < t.pp; ++other) g.push_back(tp_group(t, first_device, rank, other)[static_cast<size_t>(tp)]);
          break;
      }
      if (g.size() > 1) p.on(first_device + i).push_back(collective(model::CollectiveOp::all_gather, step.output_bytes, p.group(g)));
    }
  }
}

}  // namespace

void add_weight_sync(Program& p, const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& t) {
  const rl::RefitShape shape = rl::refit_shape(s, r, t);
  const double rollout_shard = shape.rollout_shard_bytes;
  const int64_t gpus = t.gpus();
  if (shape.full_model) add_full_model_gather(p, shape, t, rl::train_placement(s, t).first_device());
  if (shape.method == input::WeightSync::broadcast) {
    // Disaggregated: the new weights broadcast in buckets (one NCCL broadcast per bucket over the
    // group, as frameworks push weights to their engines), checked at every receiver: the whole
    // model from one training rank to every engine GPU, or each rollout tp rank's shard from a
    // training rank to that rank of every engine.
    const graph::Placement engines = rl::rollout_placement(s, r);
    const graph::Placement ranks = rl::train_placement(s, t);
    const int64_t per_engine = r.gpus_per_engine(), count = engines.shape().dp;
    const double bucket = std::max(1.0, s.policy.weight_sync_bucket_bytes);
    // Each receiver's bytes in buckets over the group, as refit_seconds counts them.
    auto broadcast = [&](const DeviceGroup& g, double total) {
      const int32_t group = p.group(g);
      const auto buckets = static_cast<int64_t>(std::ceil(total / bucket));
      for (int64_t b = 0; b < buckets; ++b) {
        const double bytes = std::min(bucket, total - static_cast<double>(b) * bucket);
        for (int64_t d : g) p.on(d).push_back(collective(model::CollectiveOp::broadcast, bytes, group));
      }
    };
    if (shape.full_model) {
      // Whole tensors from one training rank to every engine GPU (one group, as NeMo RL's and
      // OpenRLHF's collective refits broadcast from rank 0).
      DeviceGroup g{ranks.first_device()};
      for (int64_t e = 0; e < count; ++e)
        for (int64_t j = 0; j < per_engine; ++j) g.push_back(engines.replica_device(e) + j);
      broadcast(g, shape.engine_bytes);
      return;
    }
    for (int64_t j = 0; j < per_engine; ++j) {
      DeviceGroup g{ranks.first_device() + j % gpus};
      for (int64_t e = 0; e < count; ++e) g.push_back(engines.replica_device(e) + j);
      broadcast(g, rollout_shard);
    }
    return;
  }
  const model::TrainingState state = rl::state_on_gpu(s, t);
  for (int64_t device = 0; device < gpus; ++device) {
    if (shape.method == input::WeightSync::allgather_swap) {
      // Gradients and optimizer states out to host memory and back; the rollout shard gathered
      // from the training shards, over groups of as many ranks as hold its parts (one with a
      // full-model gather, which made it whole above).
      const int64_t size = std::min<int64_t>(gpus, shape.gather_ranks);
      DeviceGroup g;
      const int64_t first = device / size * size;
      for (int64_t i = first; i < std::min(gpus, first + size); ++i) g.push_back(i);
      if (g.size() > 1) p.on(device).push_back(collective(model::CollectiveOp::all_gather, rollout_shard, p.group(g)));
      p.on(device).push_back(copy(state.gradients + state.optimizer, -1));
      p.on(device).push_back(copy(state.gradients + state.optimizer, device));
    } else {
      p.on(device).push_back(copy(state.total(), -1));
      p.on(device).push_back(copy(state.total() + rollout_shard, device));
    }
    // The engine's weights to host memory after the rollout and back before the next (sleep level 1).
    if (s.workload.engine.sleep_level == 1) {
      p.on(device).push_back(copy(rollout_shard, -1));
      p.on(device).push_back(copy(rollout_shard, device));
    }
  }
}

void add_layout_switch(Program& p, const input::ScenarioSpec& s, const input::RolloutLayout& from_rollout,
                       const input::TrainLayout& from_train, const input::RolloutLayout& to_rollout,
                       const input::TrainLayout& to_train) {
  const double overhead = s.policy.switch_overhead_s;
  auto wait = [&](int64_t device) {
    if (overhead <= 0) return;
    Kernel w;
    w.kind = Kernel::Kind::wait;
    w.seconds = overhead;
    p.on(device).push_back(w);
  };
  if (!(from_rollout == to_rollout)) {
    // The engines restart in the new layout and load their shards from host memory.
    const graph::Placement engines = rl::rollout_placement(s, to_rollout);
    const double shard = rl::rollout_relaunch_bytes(s, to_rollout);
    for (int64_t e = 0; e < engines.shape().dp; ++e)
      for (int64_t j = 0; j < to_rollout.gpus_per_engine(); ++j) {
        const int64_t device = engines.replica_device(e) + j;
        wait(device);
        p.on(device).push_back(copy(shard, device));
      }
  }
  if (!(from_train == to_train)) {
    // Training restarts; its state goes out to host memory as the old layout shards it and comes
    // back as the new one does.
    const graph::Placement before = rl::train_placement(s, from_train), after = rl::train_placement(s, to_train);
    const bool reshard = !rl::same_train_sharding(from_train, to_train);
    for (int64_t i = 0; i < to_train.gpus(); ++i) wait(after.first_device() + i);
    if (reshard) {
      const double out = rl::train_state_move_bytes(s, from_train), in = rl::train_state_move_bytes(s, to_train);
      for (int64_t i = 0; i < from_train.gpus(); ++i) p.on(before.first_device() + i).push_back(copy(out, -1));
      for (int64_t i = 0; i < to_train.gpus(); ++i) {
        const int64_t device = after.first_device() + i;
        p.on(device).push_back(copy(in, device));
      }
    }
  }
}

}  // namespace arlsim::runtime
