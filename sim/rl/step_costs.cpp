// The stateless pieces of a step that the simulator and the planner share (step.h): the layouts
// in force, engines and ranks on GPUs, the assignment of samples to training ranks, and what
// stages and layout switches cost. RunSimulator (step.cpp) places them in time.
#include "sim/rl/step.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "sim/core/assert.h"
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
    // Every reward_server pool's GPUs, an engine each; one where none is given.
    for (const auto& pool : s.cluster.pools)
      if (pool.kind == input::PoolKind::reward_server) ro.reward.engines += std::max<int64_t>(1, pool.gpus);
    if (ro.reward.engines == 0) ro.reward.engines = 1;
  }
  return ro;
}

int64_t reward_model_gpus(const input::ScenarioSpec& s) {
  if (s.workload.reward != input::RewardKind::model || !s.workload.reward_model) return 0;
  const RolloutOptions ro = rollout_options(s, s.policy.rollout);
  return ro.reward.engines * ro.reward.layout.tp * ro.reward.layout.pp;
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

input::TrainLayout layout_of(const input::ModelSpec& m, input::TrainLayout l) {
  if (!m.has_moe) l.ep = 1;
  return l;
}

input::TrainLayout model_layout_of(const input::ModelSpec& m, const input::TrainLayout& l, bool critic) {
  input::TrainLayout c = layout_of(m, l);
  if (critic && l.critic_max_tokens_per_gpu > 0) c.max_tokens_per_gpu = l.critic_max_tokens_per_gpu;
  return c;
}

double forward_pass_seconds(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& layout,
                            int64_t sequences, int64_t mean_len, bool value_head, int64_t attention_len) {
  auto r = train_request(layout_of(m, layout), sequences, mean_len, s.workload);
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
  if (problem.empty() && s.workload.old_logprob_pass())
    problem = fits("old_logprob", s.model, pass_layout(train, s.policy.old_logprob));
  if (problem.empty() && s.workload.use_reference) problem = fits("ref_logprob", s.model, pass_layout(train, s.policy.ref_logprob));
  if (problem.empty() && s.workload.critic)
    problem = fits("critic training", *s.workload.critic, model_layout_of(*s.workload.critic, train, true));
  if (problem.empty() && s.workload.critic)
    problem = fits("critic", *s.workload.critic, model_layout_of(*s.workload.critic, pass_layout(train, s.policy.critic), true));
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
    ++b.sequences;
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
  if (l.fit_packing) {
    // First fit decreasing, as NeMo RL's and AReaL's packers: longest first, each into the first
    // bin with room for it, a new bin past the last. The first bin with room is found in a
    // max-tree over the bins' free tokens (log n a sequence: a rank can hold thousands).
    std::vector<int64_t> sorted(lengths);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    size_t leaves = 1;
    while (leaves < sorted.size()) leaves *= 2;
    std::vector<int64_t> room(2 * leaves, -1);  // -1: no bin there yet
    for (int64_t len : sorted) {
      size_t node = 1;
      if (room[1] >= len) {
        while (node < leaves) node = room[2 * node] >= len ? 2 * node : 2 * node + 1;
      } else {
        node = leaves + out.size();  // a new bin
        out.emplace_back();
      }
      const size_t b = node - leaves;
      add(out[b], len);
      room[node] = budget - out[b].tokens;
      for (node /= 2; node >= 1; node /= 2) room[node] = std::max(room[2 * node], room[2 * node + 1]);
    }
    if (static_cast<int64_t>(out.size()) >= at_least) return out;
    out.clear();  // more micro-batches than bins asked (a pipeline's count): split as balanced
  }
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

void pad_micro_batches_to(std::vector<MicroBatch>& batches, int64_t padded_length) {
  if (padded_length <= 0) return;
  for (auto& b : batches) {
    // A context longer than the tensors' width (a turn limit past prompt + response) keeps its own.
    b.tokens = std::max(b.tokens, b.sequences * padded_length);
    b.squares = std::max(b.squares, real(b.sequences) * real(padded_length) * real(padded_length));
  }
}

int64_t memory_width(const input::TrainLayout& l, int64_t padded, int64_t longest, int64_t widest) {
  return std::max({padded, longest, l.max_tokens_per_gpu > 0 ? widest : 0});
}

int64_t widest_micro_batch_estimate(const input::TrainLayout& l, int64_t padded, int64_t per_rank, int64_t mean_len,
                                    int64_t most_packed) {
  if (l.max_tokens_per_gpu <= 0) return 0;
  const int64_t mean = std::max<int64_t>(1, mean_len);
  const int64_t packs = padded > 0 && most_packed > 0 ? most_packed : std::max<int64_t>(1, l.max_tokens_per_gpu * l.cp / mean);
  return std::min(packs, std::max<int64_t>(1, per_rank)) * std::max(padded, mean);
}

int64_t most_packed(const input::TrainLayout& l, int64_t padded, const std::vector<int64_t>& lengths_longest_first) {
  if (padded <= 0 || l.max_tokens_per_gpu <= 0) return 0;
  const int64_t budget = l.max_tokens_per_gpu * l.cp;
  int64_t count = 0, sum = 0;
  for (auto it = lengths_longest_first.rbegin(); it != lengths_longest_first.rend(); ++it) {
    if (sum + *it > budget) break;
    sum += *it;
    ++count;
  }
  return std::max<int64_t>(1, count);
}

int64_t largest_micro_batch(const std::vector<std::vector<MicroBatch>>& batches_by_rank) {
  int64_t most = 0;
  for (const auto& batches : batches_by_rank)
    for (const auto& b : batches) most = std::max(most, b.tokens);
  return most;
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
                                                            const input::TrainLayout& l, int64_t padded_length) {
  std::vector<std::vector<MicroBatch>> out;
  size_t most = 0;
  for (const auto& lengths : by_rank) {
    out.push_back(rank_micro_batches(lengths, l));
    pad_micro_batches_to(out.back(), padded_length);
    most = std::max(most, out.back().size());
  }
  if (l.pp > 1 && l.max_tokens_per_gpu > 0) {
    // Megatron's interleaved schedule takes micro-batches in multiples of pp (its groups of
    // microbatch_group_size_per_vp_stage, pp by default), so verl splits each mini-batch into a
    // multiple of them under vpp.
    if (l.vpp > 1) most = (most + static_cast<size_t>(l.pp) - 1) / static_cast<size_t>(l.pp) * static_cast<size_t>(l.pp);
    for (size_t r = 0; r < out.size(); ++r)
      if (out[r].size() < most) {
        out[r] = rank_micro_batches(by_rank[r], l, static_cast<int64_t>(most));
        pad_micro_batches_to(out[r], padded_length);
      }
    if (l.pad_to_longest)
      for (auto& batches : out) {
        // Each packed sequence padded to the rank's longest: the padding joins the pack's last
        // sequence, priced here as a sequence of its own (the attention's least).
        int64_t longest = 0;
        for (const auto& b : batches) longest = std::max(longest, b.tokens);
        for (auto& b : batches) {
          const int64_t pad = longest - b.tokens;
          b.tokens = longest;
          b.squares += real(pad) * real(pad);
        }
      }
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
    : s_(s), m_(m), l_(layout_of(m, l)), value_head_(value_head) {
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

model::MemoryBreakdown train_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& layout,
                                       int64_t per_mini_batch, int64_t longest, bool value_head) {
  const input::TrainLayout l = layout_of(m, layout);
  auto worst = train_request(l, per_mini_batch, longest, s.workload);
  worst.layout.micro_batch = l.max_tokens_per_gpu > 0 ? 1 : l.micro_batch;
  worst.value_head = value_head;
  worst.usable_memory_fraction = training_memory_fraction(s);
  return model::estimate_train(m, s.cluster, worst).memory;
}

model::MemoryBreakdown forward_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& layout,
                                         int64_t longest, bool value_head) {
  const input::TrainLayout l = layout_of(m, layout);
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
    // Consecutive chunks as even as counts allow: the first n mod ranks take one more.
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t base = n / ranks, longer = n % ranks;
    for (int64_t i = 0; i < n; ++i)
      rank[static_cast<size_t>(i)] = i < longer * (base + 1) ? i / (base + 1) : longer + (i - longer * (base + 1)) / std::max<int64_t>(base, 1);
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
