#include "planner/space.h"

#include "sim/input/scenario.h"
#include "sim/model/train.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

std::vector<int64_t> powers_of_two(int64_t max) {
  std::vector<int64_t> v;
  for (int64_t x = 1; x <= max; x *= 2) v.push_back(x);
  return v;
}

}  // namespace

std::string layout_name(const input::RolloutLayout& l) {
  std::string n = "tp" + std::to_string(l.tp);
  if (l.pp > 1) n += " pp" + std::to_string(l.pp);
  if (l.ep > 1) n += " ep" + std::to_string(l.ep);
  if (l.replicas > 0) n += " x" + std::to_string(l.replicas);
  return n;
}

std::string layout_name(const input::TrainLayout& l) {
  std::string n = "tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp);
  if (l.vpp > 1) n += " vpp" + std::to_string(l.vpp);
  if (l.cp > 1) n += " cp" + std::to_string(l.cp);
  if (l.ep > 1) n += " ep" + std::to_string(l.ep);
  n += " dp" + std::to_string(l.dp) + " z" + std::to_string(l.zero) + " " + input::recompute_name(l.recompute);
  if (l.offload_optimizer) n += " offload-optimizer";
  if (l.offload_params) n += " offload-params";
  return n;
}

std::vector<RolloutCandidate> rollout_space(const input::ScenarioSpec& s) {
  const auto& m = s.model;
  const int64_t gpus = s.rollout_gpus(), per_node = s.cluster.gpus_per_node;
  std::vector<RolloutCandidate> out;
  auto add = [&](input::RolloutLayout l) {
    for (const auto& c : out)
      if (c.layout == l) return;
    RolloutCandidate c{l, {}, {}};
    if (l.replicas == 0 && gpus % l.gpus_per_engine() != 0)
      c.pruned = std::to_string(l.gpus_per_engine()) + "-GPU engines do not divide the " + std::to_string(gpus) + " rollout GPUs";
    else if (!out.empty() && s.cluster.straddles(l.gpus_per_engine()))  // the scenario's own layout stays
      c.pruned = std::to_string(l.gpus_per_engine()) + "-GPU engines straddle nodes of " + std::to_string(per_node) + " GPUs";
    else  // heads and layers that do not split, weights or KV cache that do not fit
      c.pruned = rl::check_rollout(rl::rollout_options(s, l));
    out.push_back(c);
  };
  add(s.policy.rollout);
  for (int64_t tp : powers_of_two(per_node))
    for (int64_t pp : powers_of_two(tp == per_node ? 8 : 1))
      for (int64_t ep : m.has_moe && tp > 1 ? std::vector<int64_t>{1, tp} : std::vector<int64_t>{1})
        add({tp, pp, ep, 0});
  return out;
}

std::vector<TrainCandidate> train_space(const input::ScenarioSpec& s) {
  const auto& m = s.model;
  const int64_t gpus = s.train_gpus(), per_node = s.cluster.gpus_per_node;
  const auto& base = s.policy.train;
  std::vector<TrainCandidate> out;
  auto add = [&](const input::TrainLayout& l) {
    for (const auto& c : out)
      if (c.layout == l) return;
    TrainCandidate c{l, {}, {}};
    if (l.gpus() != gpus)
      c.pruned = "tp x pp x dp x cp = " + std::to_string(l.gpus()) + ", the training stage has " + std::to_string(gpus) + " GPUs";
    else if (!out.empty() && s.cluster.straddles(l.tp))  // the scenario's own layout stays
      c.pruned = "tensor-parallel groups of " + std::to_string(l.tp) + " straddle nodes of " + std::to_string(per_node) + " GPUs";
    else if (input::dp_split(l, s.workload) == input::DpSplit::refused)
      c.pruned = input::uneven_dp_text(l, s.workload);
    else if (!out.empty() && l.cp > 1 && s.workload.pad_policy)
      c.pruned = "cp " + std::to_string(l.cp) + " with padded tensors (workload padding \"limits\"), which verl's FSDP "
                 "engine refuses";
    else
      c.pruned = model::check_train_request(m, s.cluster, rl::train_request(l, l.dp, 1024 * l.cp, s.workload));
    if (c.pruned.empty() && l.pp > 1 && l.vpp > 1 && l.max_tokens_per_gpu <= 0) {
      // Megatron's interleaved schedule takes a rank's micro-batches of a mini-batch in multiples
      // of pp; fixed-size micro-batches (no token budget, which verl rounds so) must come out so.
      const int64_t samples = s.workload.prompts_per_step * s.workload.samples_per_prompt;
      const int64_t per_rank = samples / std::max<int64_t>(1, s.workload.mini_batches * l.dp);
      const int64_t count = (per_rank + std::max<int64_t>(1, l.micro_batch) - 1) / std::max<int64_t>(1, l.micro_batch);
      if (count % l.pp != 0)
        c.pruned = "vpp " + std::to_string(l.vpp) + ": a data rank's " + std::to_string(count) +
                   " micro-batches a mini-batch are no multiple of pp = " + std::to_string(l.pp) +
                   ", which Megatron's interleaved schedule requires";
    }
    out.push_back(c);
  };
  add(base);
  const std::vector<input::Recompute> recomputes{input::Recompute::none, input::Recompute::selective, input::Recompute::full};
  for (int64_t tp : powers_of_two(per_node)) {
    if (m.num_heads % tp != 0) continue;
    for (int64_t cp : powers_of_two(8))
      for (int64_t pp : powers_of_two(16)) {
        const bool configured_uneven = pp == base.pp && base.uneven_stages();
        if (gpus % (tp * cp * pp) != 0 || (m.num_layers % pp != 0 && !configured_uneven)) continue;
        for (int64_t vpp : pp > 1 && m.num_layers % (2 * pp) == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1})
          for (int64_t zero : {1, 3})
            for (auto recompute : recomputes) {
              input::TrainLayout l = base;
              l.tp = tp;
              l.cp = cp;
              l.pp = pp;
              l.vpp = vpp;
              // Uneven first and last stages belong to the configured pipeline only.
              if (pp != base.pp || vpp > 1) l.first_stage_layers = l.last_stage_layers = 0;
              l.dp = gpus / (tp * cp * pp);
              if (l.shard_group > 0 && (l.dp * l.cp) % l.shard_group != 0) l.shard_group = 0;
              l.ep = 1;
              l.zero = zero;
              // The scenario's framework runs its kernels whatever the layout (a search over ZeRO
              // stages does not swap Megatron's fused kernels for a Hugging Face model's eager ones).
              l.keep_framework_of(base);
              l.sequence_parallel = tp > 1;
              if (tp == 1) l.overlap.tp_comm.reset();  // nothing to overlap
              l.recompute = recompute;
              // What users do when memory is short: with the states sharded and every activation
              // recomputed, the optimizer states (and then the parameters) offloaded to host
              // memory — searched only where the states do not fit without, so that offload
              // never lengthens the search of a model that fits.
              add(l);
              if (zero == 3 && recompute == input::Recompute::full && l.gpus() == gpus) {
                // The states alone (a mini-batch of one short sequence) decide it.
                const auto short_run = [&](const input::TrainLayout& x) { return rl::train_memory_at(s, x, x.dp, 1024).fits(); };
                if (!short_run(l)) {
                  l.offload_optimizer = true;
                  add(l);
                  if (!short_run(l)) {
                    l.offload_params = true;
                    add(l);
                  }
                }
              }
            }
      }
  }
  return out;
}

}  // namespace arlsim::planner
