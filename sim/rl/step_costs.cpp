// The stateless pieces of a step that the simulator and the planner share (step.h): the layouts
// in force, engines and ranks on GPUs, the assignment of samples to training ranks, and what
// stages and layout switches cost. RunSimulator (step.cpp) places them in time.
#include "sim/rl/step.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "sim/core/assert.h"
#include "sim/model/collective.h"
#include "sim/model/cost_model.h"
#include "sim/model/memory.h"
#include "sim/model/train.h"
#include "sim/model/transformer.h"
#include "sim/rl/rollout.h"
#include "sim/rl/routing.h"

namespace arlsim::rl {

namespace {

double real(int64_t v) { return static_cast<double>(v); }

}  // namespace

int64_t rollout_engines(const input::ScenarioSpec& s, const input::RolloutLayout& r) {
  return r.replicas > 0 ? r.replicas : s.rollout_gpus() / r.gpus_per_engine();
}

RolloutOptions rollout_options(const input::ScenarioSpec& s, const input::RolloutLayout& layout) {
  RolloutOptions ro;
  ro.model = &s.model;
  ro.cluster = &s.cluster;
  ro.layout = {layout.tp, layout.pp, layout.ep};
  ro.engines = rollout_engines(s, layout);
  ro.engine = s.workload.engine;
  ro.routing = s.policy.routing;
  ro.tool_policy = s.policy.tool_policy;
  ro.max_turns = s.workload.max_turns;
  ro.max_context = s.workload.max_context_tokens;
  ro.stop_fraction = s.policy.partial_rollout > 0 ? s.policy.partial_rollout : 1.0;
  ro.reward.cpu_time_per_sample = s.workload.reward_cpu_time_per_sample;
  for (const auto& pool : s.cluster.pools)
    if (pool.name == "reward") ro.reward.pool = pool.name;
  if (s.workload.reward == input::RewardKind::model && s.workload.reward_model) {
    ro.reward.kind = input::RewardKind::model;
    ro.reward.model = &*s.workload.reward_model;
    ro.reward.engine = s.workload.engine;
    for (const auto& pool : s.cluster.pools)
      if (pool.kind == input::PoolKind::reward_server) ro.reward.engines = std::max<int64_t>(1, pool.gpus);
    if (ro.reward.engines == 0) ro.reward.engines = 1;
  }
  return ro;
}

uint64_t rollout_seed(const input::ScenarioSpec& s, int64_t step) { return s.seed + static_cast<uint64_t>(step); }

double rollout_relaunch_bytes(const input::ScenarioSpec& s, const input::RolloutLayout& r) {
  return 2.0 * model::count_params(s.model).total / real(r.gpus_per_engine());  // bf16 bytes per GPU
}

double rollout_relaunch_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r) {
  return model::AnalyticCostModel(s.cluster, s.workload.dtype).seconds(model::HostTransferOp{rollout_relaunch_bytes(s, r)});
}

double train_state_move_bytes(const input::ScenarioSpec& s, const input::TrainLayout& l) {
  const model::TrainingState state = model::training_state(s.model, l, s.workload.dtype);
  return state.weights + state.optimizer;
}

double train_state_move_seconds(const input::ScenarioSpec& s, const input::TrainLayout& l) {
  return model::AnalyticCostModel(s.cluster, s.workload.dtype).seconds(model::HostTransferOp{train_state_move_bytes(s, l)});
}

bool same_train_sharding(const input::TrainLayout& from, const input::TrainLayout& to) {
  // Micro-batching, recompute and sequence parallelism leave the state where it is.
  return from.tp == to.tp && from.pp == to.pp && from.dp == to.dp && from.cp == to.cp && from.ep == to.ep &&
         from.vpp == to.vpp && from.zero == to.zero && from.offload_optimizer == to.offload_optimizer &&
         from.offload_params == to.offload_params && from.sharding_ranks() == to.sharding_ranks() &&
         from.first_stage_layers == to.first_stage_layers && from.last_stage_layers == to.last_stage_layers;
}

double train_reshard_seconds(const input::ScenarioSpec& s, const input::TrainLayout& from, const input::TrainLayout& to) {
  return train_state_move_seconds(s, from) + train_state_move_seconds(s, to);
}

double rollout_switch_seconds(const input::RolloutLayout& from, const input::RolloutLayout& to, double relaunch_s,
                              double overhead_s) {
  return from == to ? 0.0 : overhead_s + relaunch_s;
}

double train_switch_seconds(const input::TrainLayout& from, const input::TrainLayout& to, double reshard_s,
                            double overhead_s) {
  if (from == to) return 0.0;
  return overhead_s + (same_train_sharding(from, to) ? 0.0 : reshard_s);  // else a restart only
}

double rollout_switch_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& from, const input::RolloutLayout& to,
                              double overhead_s) {
  return rollout_switch_seconds(from, to, rollout_relaunch_seconds(s, to), overhead_s);
}

double train_switch_seconds(const input::ScenarioSpec& s, const input::TrainLayout& from, const input::TrainLayout& to,
                            double overhead_s) {
  return train_switch_seconds(from, to, train_reshard_seconds(s, from, to), overhead_s);
}

input::TrainLayout pass_layout(const input::TrainLayout& train, const std::optional<input::InferenceLayout>& pass) {
  input::TrainLayout tl = train;
  if (pass) {
    tl.tp = pass->tp;
    tl.pp = pass->pp;
    tl.dp = pass->dp;
    tl.cp = pass->cp;
    tl.vpp = 1;
    // The training layout's own shape choices do not carry over to a pass in another layout.
    tl.first_stage_layers = tl.last_stage_layers = 0;
    if (tl.shard_group > 0 && (tl.dp * tl.cp) % tl.shard_group != 0) tl.shard_group = 0;
    tl.ulysses = false;
  }
  return tl;
}

double forward_pass_seconds(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& layout,
                            int64_t sequences, int64_t mean_len, bool value_head, int64_t attention_len) {
  auto r = train_request(layout, sequences, mean_len, s.workload);
  r.value_head = value_head;
  r.attention_len = attention_len;
  return model::estimate_forward_seconds(m, s.cluster, r);  // asserts that the layout takes the model
}

std::string check_step_layouts(const input::ScenarioSpec& s, const input::TrainLayout& train) {
  const auto fits = [&](const char* what, const input::ModelSpec& m, const input::TrainLayout& l) -> std::string {
    const std::string problem = model::check_train_request(m, s.cluster, train_request(l, l.dp, 1024, s.workload));
    return problem.empty() || !what ? problem : std::string(what) + ": " + problem;
  };
  std::string problem = fits(nullptr, s.model, train);  // the training layout's own problem, as is
  if (problem.empty() && !s.workload.use_rollout_log_probs)
    problem = fits("old_logprob", s.model, pass_layout(train, s.policy.old_logprob));
  if (problem.empty() && s.workload.use_reference) problem = fits("ref_logprob", s.model, pass_layout(train, s.policy.ref_logprob));
  if (problem.empty() && s.workload.critic) problem = fits("critic training", *s.workload.critic, train);
  if (problem.empty() && s.workload.critic) problem = fits("critic", *s.workload.critic, pass_layout(train, s.policy.critic));
  return problem;
}

model::TrainRequest train_request(const input::TrainLayout& l, int64_t sequences, int64_t seq_len, const input::WorkloadSpec& w) {
  model::TrainRequest r;
  r.layout = l;
  r.seq_len = std::max<int64_t>(l.cp, (seq_len + l.cp - 1) / l.cp * l.cp);
  if (l.max_tokens_per_gpu > 0) {
    // Dynamic batching packs a rank's share of the sequences into micro-batches of at most the
    // token budget: as many sequences per micro-batch as fit it, but never more than the rank has
    // (a rank with less than one budget's worth runs one smaller micro-batch, not a full one).
    const int64_t per_rank = std::max<int64_t>(1, (sequences + l.dp - 1) / l.dp);
    const int64_t fit = std::max<int64_t>(1, l.max_tokens_per_gpu * l.cp / r.seq_len);
    const int64_t micro_batches = (per_rank + fit - 1) / fit;
    r.layout.micro_batch = (per_rank + micro_batches - 1) / micro_batches;  // balanced over them
  }
  const int64_t unit = l.dp * r.layout.micro_batch;
  r.global_batch = std::max<int64_t>(unit, (sequences + unit - 1) / unit * unit);
  r.dtype = w.dtype;
  r.unfused_attention = w.unfused_attention;
  r.moe_imbalance = w.moe_imbalance;
  return r;
}

namespace {

// Bins by load, all empty at first: pop() takes the least loaded, the lowest index among equals,
// as std::min_element over the loads would, in O(log n).
class LightestFirst {
 public:
  explicit LightestFirst(size_t n) {
    heap_.reserve(n);
    for (size_t i = 0; i < n; ++i) heap_.emplace_back(0, i);  // sorted, hence a heap
  }
  std::pair<int64_t, size_t> pop_with_key() {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const auto top = heap_.back();
    heap_.pop_back();
    return top;
  }
  size_t pop() { return pop_with_key().second; }
  void push(int64_t load, size_t i) {
    heap_.emplace_back(load, i);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

 private:
  std::vector<std::pair<int64_t, size_t>> heap_;
};

}  // namespace

std::vector<MicroBatch> rank_micro_batches(const std::vector<int64_t>& lengths, const input::TrainLayout& l,
                                           int64_t at_least) {
  std::vector<MicroBatch> out;
  if (lengths.empty()) return out;
  const auto add = [](MicroBatch& b, int64_t len) {
    b.tokens += len;
    b.squares += real(len) * real(len);
  };
  if (l.max_tokens_per_gpu <= 0) {
    const auto per = static_cast<size_t>(std::max<int64_t>(1, l.micro_batch));
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (i % per == 0) out.emplace_back();
      add(out.back(), lengths[i]);
    }
    return out;
  }
  int64_t total = 0;
  for (int64_t len : lengths) total += len;
  const int64_t budget = l.max_tokens_per_gpu * l.cp;  // the budget is per GPU; a rank's sequence spans cp GPUs
  const int64_t count = std::min<int64_t>(static_cast<int64_t>(lengths.size()),
                                          std::max<int64_t>({1, at_least, (total + budget - 1) / budget}));
  std::vector<size_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  out.resize(static_cast<size_t>(count));
  // The lightest micro-batch (the first of equals) from a heap on (tokens, index): a rank can have
  // thousands of sequences over hundreds of micro-batches.
  LightestFirst lightest(out.size());
  for (size_t i : order) {
    const size_t b = lightest.pop();
    add(out[b], lengths[i]);
    lightest.push(out[b].tokens, b);
  }
  return out;
}

std::vector<std::vector<int64_t>> samples_by_rank(const std::vector<int64_t>& tokens, const std::vector<int64_t>& rank,
                                                  int64_t ranks, int64_t part, int64_t parts) {
  ARLSIM_ASSERT(tokens.size() == rank.size() && ranks >= 1 && parts >= 1 && part >= 0 && part < parts);
  std::vector<std::vector<int64_t>> all(static_cast<size_t>(ranks));
  for (size_t i = 0; i < tokens.size(); ++i) all[static_cast<size_t>(rank[i])].push_back(tokens[i]);
  if (parts == 1) return all;
  for (auto& mine : all) {
    const size_t n = mine.size(), k = static_cast<size_t>(parts), j = static_cast<size_t>(part);
    const size_t from = n * j / k, to = n * (j + 1) / k;
    mine = std::vector<int64_t>(mine.begin() + static_cast<std::ptrdiff_t>(from), mine.begin() + static_cast<std::ptrdiff_t>(to));
  }
  return all;
}

std::vector<std::vector<MicroBatch>> micro_batches_of_ranks(const std::vector<std::vector<int64_t>>& by_rank,
                                                            const input::TrainLayout& l) {
  std::vector<std::vector<MicroBatch>> out;
  size_t most = 0;
  for (const auto& lengths : by_rank) {
    out.push_back(rank_micro_batches(lengths, l));
    most = std::max(most, out.back().size());
  }
  if (l.pp > 1 && l.max_tokens_per_gpu > 0) {
    // Megatron's interleaved schedule takes micro-batches in multiples of pp (its groups of
    // microbatch_group_size_per_vp_stage, pp by default), so verl splits each mini-batch into a
    // multiple of them under vpp.
    if (l.vpp > 1) most = (most + static_cast<size_t>(l.pp) - 1) / static_cast<size_t>(l.pp) * static_cast<size_t>(l.pp);
    for (size_t r = 0; r < out.size(); ++r)
      if (out[r].size() < most) out[r] = rank_micro_batches(by_rank[r], l, static_cast<int64_t>(most));
  }
  return out;
}

namespace {

// Data-parallel ranks per shard group (cp GPUs a rank); a group that splits a rank chains its
// neighbours, so then all step together.
size_t ranks_per_shard_group(const input::TrainLayout& l) {
  const int64_t cp = std::max<int64_t>(1, l.cp);
  return static_cast<size_t>(l.sharding_ranks() % cp == 0 ? std::max<int64_t>(1, l.sharding_ranks() / cp)
                                                          : std::max<int64_t>(1, l.dp));
}

}  // namespace

bool ranks_in_step(const input::TrainLayout& l) { return l.zero >= 3 && l.pp == 1 && ranks_per_shard_group(l) > 1; }

double ranks_seconds(const std::vector<std::vector<double>>& slots, const input::TrainLayout& l, double fill_slots) {
  double busiest = 0;
  const size_t shard = ranks_per_shard_group(l);
  if (ranks_in_step(l)) {
    for (size_t first = 0; first < slots.size(); first += shard) {
      const size_t end = std::min(slots.size(), first + shard);
      std::vector<double> slowest;  // by micro-batch index
      for (size_t r = first; r < end; ++r) {
        slowest.resize(std::max(slowest.size(), slots[r].size()), 0.0);
        for (size_t k = 0; k < slots[r].size(); ++k) slowest[k] = std::max(slowest[k], slots[r][k]);
      }
      double group = 0;
      for (double t : slowest) group += t;
      busiest = std::max(busiest, group);
    }
    return busiest;
  }
  for (const auto& rank : slots) busiest = std::max(busiest, pipeline_seconds(rank, fill_slots, l.vpp));
  return busiest;
}

std::vector<PipelineOp> play_orders(const std::vector<std::vector<PipelineOp>>& order, int64_t chunks,
                                    int64_t micro_batches, double start_s,
                                    const std::function<double(int64_t stage, bool forward)>& seconds) {
  const auto stages = static_cast<int64_t>(order.size());
  const int64_t virtual_stages = stages * chunks;
  // End times of each (virtual stage, micro-batch) forward and backward.
  const double unset = -1;
  std::vector<std::vector<double>> fwd(static_cast<size_t>(virtual_stages),
                                       std::vector<double>(static_cast<size_t>(micro_batches), unset));
  auto bwd = fwd;
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  std::vector<double> free_at(static_cast<size_t>(stages), start_s);
  std::vector<PipelineOp> played;
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      const auto si = static_cast<size_t>(s);
      while (next[si] < order[si].size()) {
        PipelineOp op = order[si][next[si]];
        const auto vs = static_cast<size_t>(op.chunk * stages + s);
        const auto mi = static_cast<size_t>(op.micro);
        op.start_s = free_at[si];
        if (!op.forward || vs > 0) {
          const double dep = op.forward ? fwd[vs - 1][mi]
                                        : (vs + 1 < static_cast<size_t>(virtual_stages) ? bwd[vs + 1][mi] : fwd[vs][mi]);
          if (dep == unset) break;
          op.start_s = std::max(op.start_s, dep);
        }
        op.stage = s;
        op.end_s = op.start_s + seconds(s, op.forward);
        (op.forward ? fwd : bwd)[vs][mi] = op.end_s;
        free_at[si] = op.end_s;
        played.push_back(op);
        ++next[si];
        progress = true;
      }
    }
  }
  return played;
}

std::vector<PipelineOp> play_pipeline(int64_t stages, int64_t micro_batches, bool forward_only, double start_s,
                                      const std::function<double(int64_t stage, bool forward)>& seconds) {
  const int64_t m = micro_batches;
  std::vector<std::vector<PipelineOp>> order(static_cast<size_t>(stages));
  for (int64_t s = 0; s < stages; ++s) {
    auto& ops = order[static_cast<size_t>(s)];
    const auto fwd = [&](int64_t i) { ops.push_back({s, 0, i, true}); };
    const auto bwd = [&](int64_t i) { ops.push_back({s, 0, i, false}); };
    one_forward_one_backward(m, forward_only ? m : std::min(stages - s - 1, m), forward_only, fwd, bwd);
  }
  return play_orders(order, 1, m, start_s, seconds);
}

double pipeline_seconds(const std::vector<double>& slots, double fill_slots, int64_t chunks) {
  double sum = 0, longest = 0;
  for (double t : slots) {
    sum += t;
    longest = std::max(longest, t);
  }
  return sum + std::max(0.0, fill_slots) / real(std::max<int64_t>(1, chunks)) * longest;
}

MicroBatchTimer::MicroBatchTimer(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l,
                                 bool value_head)
    : s_(s), m_(m), l_(l), value_head_(value_head) {
  // One micro-batch of one packed sequence per data-parallel rank; weights' uploads from host
  // memory are priced with the whole pass, not per slot.
  l_.max_tokens_per_gpu = 0;
  l_.micro_batch = 1;
  l_.offload_params = false;
}

double MicroBatchTimer::fill(const MicroBatch& b, bool forward_only) const {
  if (l_.pp <= 1 || b.tokens <= 0) return 0;
  const auto r = request(b);
  return forward_only ? model::forward_fill_slots(m_, s_.cluster, r) : model::estimate_train(m_, s_.cluster, r).breakdown.fill_slots;
}

model::TrainRequest MicroBatchTimer::request(const MicroBatch& b) const {
  auto r = train_request(l_, l_.dp, std::max<int64_t>(1, b.tokens), s_.workload);
  r.attention_len = std::max<int64_t>(1, std::llround(b.squares / real(std::max<int64_t>(1, b.tokens))));
  r.value_head = value_head_;
  return r;
}

namespace {

double cached(core::IntMap<double>& cache, const model::TrainRequest& r, const std::function<double()>& price) {
  ARLSIM_ASSERT(r.seq_len >= 0 && r.seq_len < (int64_t{1} << 31) && r.attention_len >= 0 &&
                r.attention_len < (int64_t{1} << 31));
  const int64_t key = r.seq_len << 31 | r.attention_len;
  if (const double* v = cache.find(key)) return *v;
  const double v = price();
  cache[key] = v;
  return v;
}

}  // namespace

double MicroBatchTimer::forward(const MicroBatch& b) {
  if (b.tokens <= 0) return 0;
  const auto r = request(b);
  return cached(forward_, r, [&] {
    // One micro-batch through a forward-only pipeline takes 1 + fill slots (pp with equal stages;
    // over vpp with virtual stages).
    return model::estimate_forward_seconds(m_, s_.cluster, r) /
           (1.0 + model::forward_fill_slots(m_, s_.cluster, r) / real(std::max<int64_t>(1, r.layout.vpp)));
  });
}

double MicroBatchTimer::train(const MicroBatch& b) {
  if (b.tokens <= 0) return 0;
  const auto r = request(b);
  return cached(train_, r, [&] {
    const auto e = model::estimate_train(m_, s_.cluster, r);
    return e.breakdown.forward_s + e.breakdown.backward_s + e.breakdown.pp_comm_exposed_s;
  });
}

double training_memory_fraction(const input::ScenarioSpec& s) {
  // A resident engine keeps its share of every GPU it shares with training.
  const bool resident = s.policy.placement == input::Placement::colocated && s.workload.engine.sleep_level == 0;
  return resident ? 1.0 - s.workload.engine.gpu_memory_utilization : 1.0;
}

model::MemoryBreakdown train_memory_at(const input::ScenarioSpec& s, const input::TrainLayout& l, int64_t per_mini_batch,
                                       int64_t longest) {
  return train_memory_at(s, s.model, l, per_mini_batch, longest, false);
}

model::MemoryBreakdown train_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l,
                                       int64_t per_mini_batch, int64_t longest, bool value_head) {
  auto worst = train_request(l, per_mini_batch, longest, s.workload);
  worst.layout.micro_batch = l.max_tokens_per_gpu > 0 ? 1 : l.micro_batch;
  worst.value_head = value_head;
  worst.usable_memory_fraction = training_memory_fraction(s);
  return model::estimate_train(m, s.cluster, worst).memory;
}

model::MemoryBreakdown forward_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l,
                                         int64_t longest, bool value_head) {
  const auto r = train_request(l, l.dp, longest, s.workload);
  model::TrainShape shape;
  shape.micro_batch = l.max_tokens_per_gpu > 0 ? 1 : l.micro_batch;
  shape.seq_len = r.seq_len;
  shape.value_head = value_head;
  shape.dtype = s.workload.dtype;
  shape.unfused_attention = s.workload.unfused_attention;
  shape.usable_fraction = training_memory_fraction(s);
  return model::forward_memory(m, s.cluster.gpu, l, shape);
}

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
  // A rank's part of the largest stage: its dense part split over tp, its experts over max(ep, tp)
  // (model::params_of_stage), each sharded once more under ZeRO-3.
  const model::StageParams stage = model::largest_stage_params(s.model, train);
  const double all_experts = model::params_of_stage(s.model, input::TrainLayout{}, 0).experts;  // one rank holding all
  const bool tp_splits_experts = train.tp > train.ep;  // tp peers hold different slices of the same experts
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
  if (!tp_splits_experts) add(Dim::ep, model::strided_group(train.ep, train.tp * train.cp, per_node), w * all_experts);
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

namespace {

int64_t train_first_gpu(const input::ScenarioSpec& s) {
  return s.policy.placement == input::Placement::colocated ? 0 : s.policy.rollout_gpus;
}

}  // namespace

graph::Placement rollout_placement(const input::ScenarioSpec& s, const input::RolloutLayout& r) {
  return {{r.tp, 1, std::max<int64_t>(1, rollout_engines(s, r)), r.pp, graph::RankOrder::replica_outer}, 0,
          s.cluster.gpus_per_node};
}

graph::Placement train_placement(const input::ScenarioSpec& s, const input::TrainLayout& l) {
  return {{l.tp, l.cp, l.dp, l.pp, graph::RankOrder::pipeline_outer}, train_first_gpu(s), s.cluster.gpus_per_node};
}

graph::Placement rollout_pool(const input::ScenarioSpec& s) {
  return {{1, 1, s.rollout_gpus(), 1, graph::RankOrder::replica_outer}, 0, s.cluster.gpus_per_node};
}

graph::SideDevices side_devices(const input::ScenarioSpec& s) {
  const graph::Placement r = rollout_pool(s), t = train_pool(s);
  return {{r.first_device(), r.ranks()}, {t.first_device(), t.ranks()}};
}

graph::Placement train_pool(const input::ScenarioSpec& s) {
  return {{1, 1, s.train_gpus(), 1, graph::RankOrder::replica_outer}, train_first_gpu(s), s.cluster.gpus_per_node};
}

std::vector<int64_t> assign_ranks(const std::vector<int64_t>& tokens, int64_t ranks, bool balance) {
  std::vector<int64_t> rank(tokens.size(), 0);
  if (!balance) {
    const int64_t per = (static_cast<int64_t>(tokens.size()) + ranks - 1) / ranks;
    for (size_t i = 0; i < tokens.size(); ++i) rank[i] = static_cast<int64_t>(i) / std::max<int64_t>(per, 1);
    return rank;
  }
  std::vector<size_t> order(tokens.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Longest first, equals in their order (the planner's contexts come so already: nothing to sort).
  if (!std::is_sorted(tokens.begin(), tokens.end(), std::greater<>()))
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tokens[a] > tokens[b]; });
  // The least-loaded rank (the first of equals) from a heap on (load, rank).
  LightestFirst least(static_cast<size_t>(ranks));
  for (size_t i : order) {
    const auto [load, best] = least.pop_with_key();
    rank[i] = static_cast<int64_t>(best);
    least.push(load + tokens[i], best);
  }
  return rank;
}

std::vector<int64_t> layout_aware_ranks(const std::vector<int64_t>& tokens, const std::vector<int64_t>& sample_node,
                                        const std::vector<int64_t>& rank_node, double slack) {
  ARLSIM_ASSERT(tokens.size() == sample_node.size());
  const size_t ranks = rank_node.size();
  std::vector<int64_t> rank(tokens.size(), 0);
  if (ranks == 0) return rank;
  double total = 0;
  for (int64_t t : tokens) total += real(t);
  const double cap = total / real(static_cast<int64_t>(ranks)) * (1 + slack);
  std::vector<size_t> order(tokens.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tokens[a] > tokens[b]; });
  std::vector<double> load(ranks, 0);
  for (size_t i : order) {
    const double t = real(tokens[i]);
    size_t least = 0, local = ranks;
    for (size_t r = 0; r < ranks; ++r) {
      if (load[r] < load[least]) least = r;
      if (rank_node[r] == sample_node[i] && (local == ranks || load[r] < load[local])) local = r;
    }
    const size_t pick = local < ranks && load[local] + t <= std::max(cap, load[least] + t) ? local : least;
    rank[i] = static_cast<int64_t>(pick);
    load[pick] += t;
  }
  return rank;
}

std::vector<int64_t> sample_ranks(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                  const std::vector<int64_t>& tokens, const std::vector<int64_t>& producer_gpu) {
  switch (s.policy.batch_assignment) {
    case input::BatchAssignment::in_order: return assign_ranks(tokens, train.dp, false);
    case input::BatchAssignment::balanced: return assign_ranks(tokens, train.dp, true);
    case input::BatchAssignment::layout_aware: break;
  }
  return layout_aware_ranks(s, train, tokens, producer_gpu);
}

std::vector<int64_t> layout_aware_ranks(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                        const std::vector<int64_t>& tokens, const std::vector<int64_t>& producer_gpu) {
  const graph::Placement ranks = train_placement(s, train);
  std::vector<int64_t> sample_node, rank_node;
  for (int64_t g : producer_gpu) sample_node.push_back(ranks.node_of_device(g));
  for (int64_t r = 0; r < train.dp; ++r) rank_node.push_back(ranks.node_of_device(ranks.replica_device(r)));
  return layout_aware_ranks(tokens, sample_node, rank_node, kLayoutAwareSlack);
}

int32_t optimizer_steps(const input::WorkloadSpec& w) { return static_cast<int32_t>(w.ppo_epochs * w.mini_batches); }

graph::SyncMode sync_mode(const input::PolicySpec& p) {
  return {p.sync == input::SyncMode::async, std::max<int64_t>(1, p.staleness)};
}

Layouts layouts_at(const input::PolicySpec& p, int64_t step) {
  Layouts l{p.rollout, p.train};
  for (const auto& e : p.schedule) {
    if (step < e.first_step || (e.last_step >= 0 && step > e.last_step)) continue;
    if (e.rollout) l.rollout = *e.rollout;
    if (e.train) l.train = *e.train;
  }
  return l;
}

double token_weighted_length(const std::vector<int64_t>& lengths) {
  double sum = 0, squares = 0;
  for (int64_t l : lengths) {
    sum += real(l);
    squares += real(l) * real(l);
  }
  return sum > 0 ? squares / sum : 0;
}

double imbalance(const std::vector<int64_t>& tokens, const std::vector<int64_t>& rank, int64_t ranks) {
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  double total = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    load[static_cast<size_t>(rank[i])] += real(tokens[i]);
    total += real(tokens[i]);
  }
  if (total <= 0) return 1.0;
  return *std::max_element(load.begin(), load.end()) / (total / real(ranks));
}

}  // namespace arlsim::rl
