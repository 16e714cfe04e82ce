#include "planner/analytic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/model/memory.h"
#include "sim/model/train.h"
#include "sim/rl/step.h"

namespace arlsim::planner {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kStepsPerOctave = 8;

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / kGiB);
  return buf;
}

}  // namespace

// Lengths on a grid of 8 points per doubling (steps of 9%): training costs are memoised per grid
// point, so a trace of hundreds of steps costs a candidate a few dozen evaluations. Times take the
// nearest point (within 4.5%), memory the next one up (never optimistic).
int64_t grid_length(double tokens, bool up) {
  const double x = std::log2(std::max(1.0, tokens)) * kStepsPerOctave;
  const double k = up ? std::ceil(x - 1e-9) : std::round(x);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::exp2(k / kStepsPerOctave))));
}


RolloutEstimator::RolloutEstimator(const input::ScenarioSpec& s, const input::RolloutLayout& layout)
    : s_(s), layout_(layout) {
  const auto o = rl::rollout_options(s, layout);
  engines_ = o.engines;
  if (engines_ < 1) {
    problem_ = "no engine of " + std::to_string(layout.gpus_per_engine()) + " GPUs fits the " +
               std::to_string(s.rollout_gpus()) + " rollout GPUs";
    return;
  }
  problem_ = rl::check_rollout(o);
  if (!problem_.empty()) return;
  kv_capacity_ = model::inference_memory(s.model, s.cluster.gpu, rl::engine_memory_options(o)).kv_capacity_tokens /
                 o.engine.block_size * o.engine.block_size;
  im_ = std::make_unique<model::InferenceModel>(s.model, s.cluster, o.layout, rl::engine_speculation(o.engine));
  im_->set_execution(rl::engine_execution(o.engine, s.cluster.gpu));
}

StageCost RolloutEstimator::cost(const StepFeatures& f) const {
  if (!problem_.empty()) return {0, problem_};
  if (f.max_context > kv_capacity_)
    return {0, "a context of " + std::to_string(f.max_context) + " tokens does not fit an engine's KV cache of " +
                   std::to_string(kv_capacity_) + " tokens"};
  if (f.trajectories == 0) return {};
  const double engines = static_cast<double>(engines_);
  // Generating continuously, the engines hold the trajectories of several steps, and a step ends
  // when a batch's worth has finished: its longest trajectory spans steps and bounds none.
  const double held = static_cast<double>(s_.policy.batches_held());
  const bool continuous = held > 1;
  const double per_engine = held * static_cast<double>(f.trajectories) / engines;
  const double kv = std::max(1.0, f.decode_kv_tokens);
  const auto& e = s_.workload.engine;
  const double by_cache = std::floor(static_cast<double>(kv_capacity_) / kv);
  const auto batch = static_cast<int64_t>(std::max(1.0, std::min({static_cast<double>(e.max_num_seqs), std::ceil(per_engine), by_cache})));
  const model::DecodeWindow w = im_->decode_window(batch);
  // Every generated token reads kv cached tokens: b x kv per token, however the batch is made up.
  // The per-iteration part a is paid once per iteration: gen / batch iterations when the engine
  // stays full, but at least one per token of the longest trajectory, which decodes one token an
  // iteration while its engine's batch drains around it.
  const double per_engine_tokens = f.gen_tokens / engines;
  const double kv_read_s = w.b * per_engine_tokens * kv;
  model::IterationBatch chunk;
  chunk.prefill.push_back({e.max_num_batched_tokens, static_cast<int64_t>(kv), true});
  // Recomputing the KV after each weight update, the requests running at a step's end prefill
  // their contexts again in the next: a batch of them an engine, half-way on average.
  const double carried_prefill = continuous && !s_.policy.keep_kv_cache ? static_cast<double>(batch) * f.mean_context / 2 : 0.0;
  const double prefill_s = (f.prefill_tokens / engines + carried_prefill) / static_cast<double>(e.max_num_batched_tokens) *
                           im_->iteration(chunk).seconds;
  const double throughput_s = per_engine_tokens / static_cast<double>(batch) * w.a + kv_read_s + prefill_s;
  double critical_s = 0;
  if (!continuous)
    for (const auto& t : f.tail) critical_s = std::max(critical_s, t.gen_tokens * w.a + t.tool_s + kv_read_s + prefill_s);
  return {std::max(throughput_s, critical_s), {}};
}

TrainEstimator::TrainEstimator(const input::ScenarioSpec& s, const input::TrainLayout& layout) : s_(s), layout_(layout) {
  if (layout.gpus() != s.train_gpus()) {
    problem_ = "tp x pp x dp x cp = " + std::to_string(layout.gpus()) + " GPUs, the training stage has " +
               std::to_string(s.train_gpus());
    return;
  }
  problem_ = rl::check_step_layouts(s, layout);
}

TrainEstimator::AtLength TrainEstimator::at_length(int64_t mean_len, int64_t attention_len, int64_t sequences) const {
  const auto key = std::make_tuple(mean_len, attention_len, sequences);
  if (const auto it = times_.find(key); it != times_.end()) return it->second;
  const int64_t per_mini_batch = std::max<int64_t>(1, sequences / s_.workload.mini_batches);
  AtLength a;
  // A model that computes padded tensors does so at least as wide as the limits.
  const auto& w = s_.workload;
  const auto passes = [&](const input::ModelSpec& m, bool value_head) {
    auto r = rl::train_request(rl::model_layout_of(m, layout_, value_head), per_mini_batch,
                               w.computed_length(value_head, mean_len), w);
    r.value_head = value_head;
    r.attention_len = w.computed_length(value_head, attention_len);
    const auto e = model::estimate_train(m, s_.cluster, r);
    const auto steps = static_cast<double>(s_.workload.ppo_epochs * s_.workload.mini_batches);
    a.train_pipeline_s += e.breakdown.pipeline_s * steps;
    a.train_fixed_s += (e.breakdown.dp_comm_exposed_s + e.breakdown.optimizer_s) * steps;
  };
  passes(s_.model, false);
  // The forward passes in the policy's layouts for them, as the simulator runs them.
  const auto forward = [&](const input::ModelSpec& m, const std::optional<input::InferenceLayout>& pass, bool value_head) {
    return rl::forward_pass_seconds(s_, m, rl::model_layout_of(m, rl::pass_layout(layout_, pass), value_head), sequences,
                                    w.computed_length(value_head, mean_len), value_head, w.computed_length(value_head, attention_len));
  };
  double prepare = !s_.workload.old_logprob_pass() ? 0.0 : forward(s_.model, s_.policy.old_logprob, false);
  if (s_.workload.use_reference)
    prepare += forward(s_.model, s_.policy.ref_logprob, false) +
               rl::reference_swap_seconds(s_, rl::pass_layout(layout_, s_.policy.ref_logprob));
  if (s_.workload.critic) {
    passes(*s_.workload.critic, true);
    prepare += forward(*s_.workload.critic, s_.policy.critic, true);
  }
  a.prepare_s = prepare;
  times_.emplace(key, a);
  return a;
}

std::string TrainEstimator::memory_problem(int64_t longest, int64_t sequences, int64_t mean_len, int64_t policy_packed,
                                           int64_t critic_packed) const {
  const auto key = std::make_tuple(longest, sequences, mean_len, policy_packed, critic_packed);
  if (const auto it = memory_.find(key); it != memory_.end()) return it->second;
  const int64_t per_mini_batch = std::max<int64_t>(1, sequences / s_.workload.mini_batches);
  auto needs = [&](const std::string& stage, const model::MemoryBreakdown& m) {
    return stage + " needs " + gib(m.total()) + " GiB per GPU at " + std::to_string(longest) + " tokens, " +
           gib(m.capacity_bytes) + " GiB available";
  };
  // In the simulator's order: the forward passes in the policy's layouts for them, then training
  // (the policy, then the critic with its value head).
  // Under a token budget a rank holds a micro-batch of about budget / mean_len sequences at once
  // (at most its share), each at least the padded width where the model computes padded tensors.
  const auto at = [&](bool critic, const input::TrainLayout& given, bool training) {
    const int64_t padded = s_.workload.padded_length(critic);
    const input::TrainLayout l = rl::model_layout_of(critic ? *s_.workload.critic : s_.model, given, critic);
    const int64_t per_rank = sequences / std::max<int64_t>(1, l.dp) / (training ? s_.workload.mini_batches : 1);
    return rl::memory_width(
        l, padded, longest,
        mean_len > 0 ? rl::widest_micro_batch_estimate(l, padded, per_rank, mean_len, critic ? critic_packed : policy_packed) : 0);
  };
  std::string problem;
  const std::pair<const char*, const std::optional<input::InferenceLayout>*> passes[] = {
      {"old_logprob", &s_.policy.old_logprob}, {"ref_logprob", &s_.policy.ref_logprob}, {"critic", &s_.policy.critic}};
  for (const auto& [stage, pass] : passes) {
    const bool critic = std::string_view(stage) == "critic";
    if ((std::string_view(stage) == "ref_logprob" && !s_.workload.use_reference) || (critic && !s_.workload.critic) ||
        (std::string_view(stage) == "old_logprob" && !s_.workload.old_logprob_pass()))
      continue;
    const input::ModelSpec& m = critic ? *s_.workload.critic : s_.model;
    const input::TrainLayout tl = rl::model_layout_of(m, rl::pass_layout(layout_, *pass), critic);
    const auto f = rl::forward_memory_at(s_, m, tl, at(critic, tl, false), critic);
    if (!f.fits()) {
      problem = needs(stage, f);
      break;
    }
  }
  if (problem.empty()) {
    if (const auto m = rl::train_memory_at(s_, layout_, per_mini_batch, at(false, layout_, true)); !m.fits())
      problem = needs("training", m);
    else if (s_.workload.critic) {
      const auto c = rl::train_memory_at(s_, *s_.workload.critic, rl::model_layout_of(*s_.workload.critic, layout_, true),
                                         per_mini_batch, at(true, layout_, true), true);
      if (!c.fits()) problem = needs("critic training", c);
    }
  }
  memory_.emplace(key, problem);
  return problem;
}

StageCost TrainEstimator::cost(const StepFeatures& f) const {
  if (!problem_.empty()) return {0, problem_};
  if (f.trajectories == 0) return {};
  // A padded model's micro-batches are as wide as their count of sequences: the most that one
  // budget packs of the step's shortest.
  const auto packed = [&](bool critic) -> int64_t {
    if (critic && !s_.workload.critic) return int64_t{0};
    const input::TrainLayout l = rl::model_layout_of(critic ? *s_.workload.critic : s_.model, layout_, critic);
    return rl::most_packed(l, s_.workload.padded_length(critic), f.contexts);
  };
  if (auto problem = memory_problem(grid_length(static_cast<double>(f.max_context), true), f.trajectories,
                                    std::max<int64_t>(1, std::llround(f.mean_context)), packed(false), packed(true));
      !problem.empty())
    return {0, problem};
  // Offloaded states and the sleeping engines' weights in the nodes' host memory, beside the
  // rollout layout the policy has at this step (the engines' share depends on it).
  if (const auto host = rl::host_memory_at(s_, rl::layouts_at(s_.policy, f.step).rollout, layout_); host && !host->fits()) {
    const auto most = *std::max_element(host->items.begin(), host->items.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    return {0, std::string(rl::host_memory_during_rollout(*host) ? "the state the weight sync swaps out" : "training") +
                   " needs " + gib(host->total()) + " GiB of host memory per node (" + most.first + " " +
                   gib(most.second) + " GiB), " + gib(host->capacity_bytes) + " GiB available"};
  }
  const auto a = at_length(grid_length(f.mean_context, false), grid_length(f.attention_context, false), f.trajectories);
  return {a.prepare_s + a.train_pipeline_s * mini_batch_skew(f) + a.train_fixed_s, {}};
}

double TrainEstimator::mini_batch_skew(const StepFeatures& f) const {
  const auto key = std::make_pair(f.step, f.contexts.size());
  if (const auto it = skew_.find(key); it != skew_.end()) return it->second;
  // The simulator's assignment where the policy balances; otherwise (in trace order, which the
  // sorted contexts no longer hold) the samples dealt round-robin. Each rank's samples, longest
  // first, are dealt to the mini-batches in turn: the order within a rank is not known here.
  const int64_t dp = layout_.dp, k = std::max<int64_t>(1, s_.workload.mini_batches);
  const bool in_step = rl::ranks_in_step(layout_);
  const bool balanced = s_.policy.batch_assignment != input::BatchAssignment::in_order;
  // Without ranks in step the skew depends on dp, the mini-batches and the samples alone: every
  // layout of this dp shares it (FNV-1a over the samples tells copies of the step apart).
  const bool shareable = !in_step && f.shared;
  // A policy that computes padded tensors spends on each sample at least the padded width.
  const int64_t padded = s_.workload.padded_length(false);
  const auto cost = [&](int64_t context) { return static_cast<double>(std::max(context, padded)); };
  uint64_t fingerprint = 1469598103934665603ull;
  if (shareable) {
    for (int64_t c : f.contexts) fingerprint = (fingerprint ^ static_cast<uint64_t>(c)) * 1099511628211ull;
    fingerprint = (fingerprint ^ static_cast<uint64_t>(padded)) * 1099511628211ull;
  }
  const auto shared_key = std::make_tuple(dp, k, balanced, fingerprint);
  if (shareable) {
    std::lock_guard<std::mutex> lock(f.shared->mutex);
    if (const auto it = f.shared->mini_batch_skew.find(shared_key); it != f.shared->mini_batch_skew.end()) {
      skew_.emplace(key, it->second);
      return it->second;
    }
  }
  std::vector<int64_t> rank(f.contexts.size());
  if (!balanced)
    for (size_t i = 0; i < rank.size(); ++i) rank[i] = static_cast<int64_t>(i) % dp;
  else
    rank = rl::assign_ranks(f.contexts, dp, true);
  // Tokens stand for time. A mini-batch takes its busiest rank's tokens; ranks that gather their
  // parameter shards for each micro-batch (ZeRO-3, FSDP) go through their micro-batches in step,
  // built from their samples as the simulator builds them: each micro-batch index then takes its
  // heaviest rank's (rl::ranks_seconds).
  std::vector<int64_t> seen(static_cast<size_t>(dp), 0);
  double sum = 0;
  int64_t parts = 0;
  if (!in_step) {
    // Each (mini-batch, rank)'s tokens are all it takes: summed in place, nothing kept per sample.
    std::vector<double> tokens(static_cast<size_t>(k * dp), 0.0);
    for (size_t i = 0; i < f.contexts.size(); ++i) {
      const auto r = static_cast<size_t>(rank[i]);
      tokens[static_cast<size_t>(seen[r]++ % k) * static_cast<size_t>(dp) + r] += cost(f.contexts[i]);
    }
    for (int64_t part = 0; part < k; ++part) {
      const auto first = tokens.begin() + static_cast<std::ptrdiff_t>(part * dp);
      double total = 0, busiest = 0;
      for (auto t = first; t != first + static_cast<std::ptrdiff_t>(dp); ++t) {
        total += *t;
        busiest = std::max(busiest, *t);
      }
      if (total <= 0) continue;
      sum += busiest / (total / static_cast<double>(dp));
      ++parts;
    }
  } else {
    std::vector<std::vector<std::vector<int64_t>>> samples(static_cast<size_t>(k),
                                                           std::vector<std::vector<int64_t>>(static_cast<size_t>(dp)));
    for (size_t i = 0; i < f.contexts.size(); ++i) {
      const auto r = static_cast<size_t>(rank[i]);
      samples[static_cast<size_t>(seen[r]++ % k)][r].push_back(f.contexts[i]);
    }
    for (const auto& by_rank : samples) {
      double total = 0;
      std::vector<std::vector<double>> slots;  // each rank's micro-batches
      for (const auto& lengths : by_rank) {
        for (int64_t len : lengths) total += cost(len);
        slots.emplace_back();
        auto batches = rl::rank_micro_batches(lengths, layout_);
        rl::pad_micro_batches_to(batches, padded);
        for (const auto& b : batches) slots.back().push_back(static_cast<double>(b.tokens));
      }
      if (total <= 0) continue;
      sum += rl::ranks_seconds(slots, layout_, 0.0) / (total / static_cast<double>(dp));  // ZeRO-3 without pipeline stages
      ++parts;
    }
  }
  const double skew = parts > 0 ? sum / static_cast<double>(parts) : 1.0;
  skew_.emplace(key, skew);
  if (shareable) {
    std::lock_guard<std::mutex> lock(f.shared->mutex);
    f.shared->mini_batch_skew.emplace(shared_key, skew);
  }
  return skew;
}

}  // namespace arlsim::planner
