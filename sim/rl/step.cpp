#include "sim/rl/step.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "sim/core/assert.h"
#include "sim/exec/event.h"
#include "sim/graph/step_graph.h"
#include "sim/model/memory.h"
#include "sim/model/train.h"
#include "sim/model/transformer.h"
#include "sim/rl/dispatch.h"
#include "sim/rl/rollout.h"
#include "sim/rl/spill.h"
#include "sim/trace/generator.h"

namespace arlsim::rl {

namespace {

// A pipeline's fill and drain at the shape of the micro-batch whose slot is the longest, which the
// fill multiplies (rl::pipeline_seconds).
double longest_fill(const MicroBatchTimer& timer, const std::vector<std::vector<MicroBatch>>& batches,
                    const std::vector<std::vector<double>>& slots, bool forward_only) {
  const MicroBatch* longest = nullptr;
  double most = -1;
  for (size_t r = 0; r < slots.size(); ++r)
    for (size_t k = 0; k < slots[r].size(); ++k)
      if (slots[r][k] > most) {
        most = slots[r][k];
        longest = &batches[r][k];
      }
  return longest ? timer.fill(*longest, forward_only) : 0.0;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

double real(int64_t v) { return static_cast<double>(v); }

std::vector<std::pair<std::string, double>> largest_first(const model::MemoryBreakdown& m) {
  std::vector<std::pair<std::string, double>> items;
  for (const auto& [name, bytes] : m.items) items.emplace_back(name, bytes / kGiB);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return items;
}

// A stage that does not fit: it needs `needed_bytes` of the breakdown's capacity.
OomEvent oom_event(int64_t step, std::string stage, const model::MemoryBreakdown& m, double needed_bytes) {
  OomEvent oom;
  oom.step = step;
  oom.stage = std::move(stage);
  oom.needed_gib = needed_bytes / kGiB;
  oom.available_gib = m.capacity_bytes / kGiB;
  oom.contributors_gib = largest_first(m);
  return oom;
}

}  // namespace

namespace {

// Simulates one scenario step by step; see step.h.
class RunSimulator {
 public:
  RunSimulator(const input::ScenarioSpec& s, const RunOptions& o) : s_(s), o_(o), graph_(sync_mode(s.policy), side_devices(s)) {
    result_.scenario = s.name;
    result_.gpus = s.cluster.total_gpus();
    result_.reward_gpus = reward_model_gpus(s);
    result_.gpus_per_node = s.cluster.gpus_per_node;
    result_.price_usd_per_gpu_hour = s.cluster.price_usd_per_gpu_hour;
    result_.gpu_memory_gib = s.cluster.gpu.memory_bytes / (1024.0 * 1024.0 * 1024.0);
    result_.gpu_profile = s.cluster.gpu.name;
  }

  RunResult run(const trace::Trace& t, const Progress& progress);

 private:
  struct StepData {
    int64_t step = 0;
    std::vector<trace::TrajectoryView> trajectories;
    int64_t stop_count = 0;  // continuous generation: the rollout ends when this many have finished
    std::vector<RolloutInput::Carried> carried;  // of the carried trajectories, which come first
  };
  // What a step's stages took, before the mode places them in time.
  struct StagePlan {
    StageTimes times;
    graph::StageWork work;
    double rollout_s = 0;   // generation and exposed reward tail
    double training_s = 0;  // preparation, dispatch, training, weight sync
    RolloutResult rollout;
    std::optional<OomEvent> oom;
    double rollout_memory_gib = 0;
    double train_memory_gib = 0;
    // The actor's pipeline, per optimizer step: its slot, and each micro-batch's times on the
    // slowest stage (for the pipeline detail of the timeline).
    double optimizer_step_s = 0;
    double micro_forward_s = 0, micro_backward_s = 0;
    int64_t micro_batches = 0;
    int64_t stages = 1;
    std::vector<double> stage_shares;  // each stage's slot over the slowest's (the drawn schedule)
    // With virtual stages: a data rank's micro-batch count in a mini-batch that is no multiple of
    // pp, which Megatron's interleaved schedule refuses (0: none).
    int64_t uninterleavable = 0;
  };

  // switch_s: what changing to these layouts costs before the step (weight sync carries it).
  StagePlan plan_step(const StepData& d, const Layouts& l, double switch_s);
  void run_rollout(const StepData& d, const Layouts& l, StagePlan& p);
  void record_lengths(const StepData& d, const std::vector<bool>& done);
  void record_pools(const RolloutResult& r);
  // The stages after rollout see the finished samples: their tokens, the GPU that holds each
  // (its last turn's engine) and the training rank that takes each.
  struct Samples {
    std::vector<int64_t> tokens, producer_gpu, rank;
    int64_t longest = 0;   // tokens of the longest sample: what memory is checked at
    int64_t mean_len = 1;  // mean tokens per sample: what linear work is estimated at
    int64_t attention_len = 1;  // sum(L^2) / sum(L): what attention's work is estimated at
  };
  Samples finished_samples(const StepData& d, const Layouts& l, const StagePlan& p) const;
  void run_preparation(const StepData& d, const Layouts& l, StagePlan& p, const Samples& x);
  void run_training(const StepData& d, const Layouts& l, StagePlan& p, const Samples& x);
  void run_dispatch(const Layouts& l, StagePlan& p, const Samples& x);
  void add_rollout_events(const StepData& d, const Layouts& l, const RolloutResult& r);
  void add_memory_counters(const StagePlan& p, double rollout_start_s, double train_start_s);
  void add_pipeline_events(const StagePlan& p, const exec::ActivityRecord& train, double start_s);

  const input::ScenarioSpec& s_;
  const RunOptions& o_;
  RunResult result_;
  // Prompt -> the lengths of its samples the last time it was rolled out, by sample index: what a
  // length-aware router has seen (each sample predicted by the one of the same index, so that the
  // group's spread survives; the samples are exchangeable, so no assignment knows more).
  std::unordered_map<int64_t, std::vector<int64_t>> previous_tokens_;
  std::vector<std::string> tool_names_;
  std::optional<Layouts> previous_;  // the layouts of the step before
  trace::Trace carry_;  // partial rollout: what paused trajectories still have to do
  std::vector<RolloutInput::Carried> carry_info_;  // how each carried trajectory comes back
  std::unique_ptr<DispatchNetwork> dispatch_;
  graph::StepGraphBuilder graph_;
};

void RunSimulator::record_lengths(const StepData& d, const std::vector<bool>& done) {
  // The prompts of this step replace what was seen of them before; samples keep their index. Only
  // what finished is seen (a trajectory carried on is not known yet).
  std::unordered_set<int64_t> fresh;
  for (size_t i = 0; i < d.trajectories.size(); ++i) {
    if (!done.empty() && !done[i]) continue;
    const auto& v = d.trajectories[i];
    auto& lengths = previous_tokens_[v.info.prompt_id];
    if (fresh.insert(v.info.prompt_id).second) lengths.clear();
    const auto sample = static_cast<size_t>(std::max<int32_t>(0, v.info.sample));
    if (lengths.size() <= sample) lengths.resize(sample + 1, 0);
    lengths[sample] = v.context_tokens();
  }
  for (int64_t prompt : fresh) std::erase(previous_tokens_[prompt], int64_t{0});  // indices not seen
}

void RunSimulator::run_rollout(const StepData& d, const Layouts& l, StagePlan& p) {
  RolloutOptions ro = rollout_options(s_, l.rollout);
  ro.per_iteration = o_.per_iteration;
  ro.seed = rollout_seed(s_, d.step);
  ro.stop_count = d.stop_count;
  ro.log_iterations = static_cast<bool>(o_.on_step);
  if (o_.timeline) ro.kv_sample_interval = SimTime::from_seconds(1);
  ro.record_spans = o_.timeline;  // spans feed the timeline only: a step's can run to millions
  ro.record_turns = false;        // nothing of a run reads a turn's latencies
  ro.record_tool_calls = o_.timeline;  // else the pools' times alone, which the summary reads
  RolloutInput in;
  in.trajectories = d.trajectories;
  in.carried = d.carried;
  in.tool_names = tool_names_;
  for (const auto& t : d.trajectories) {
    const auto it = previous_tokens_.find(t.info.prompt_id);
    const std::vector<int64_t>* seen = it == previous_tokens_.end() ? nullptr : &it->second;
    in.predicted_tokens.push_back(
        seen && !seen->empty() ? (*seen)[static_cast<size_t>(std::max<int32_t>(0, t.info.sample)) % seen->size()] : 0);
  }
  const auto mem = model::inference_memory(s_.model, s_.cluster.gpu, engine_memory_options(ro));
  p.rollout_memory_gib = mem.breakdown.total() / kGiB;
  if (!check_policy_engines(ro, &in).empty()) {
    p.oom = oom_event(d.step, "rollout", mem.breakdown, mem.breakdown.total() - mem.breakdown.get("kv_cache"));
    return;
  }
  if (!check_reward(ro, &in).empty()) {  // the reward model's engines do not fit
    const auto rm = model::inference_memory(*ro.reward.model, s_.cluster.gpu, engine_memory_options(reward_engine_options(ro)));
    p.oom = oom_event(d.step, "reward", rm.breakdown, rm.breakdown.total() - rm.breakdown.get("kv_cache"));
    return;
  }
  p.rollout = simulate_rollout(ro, in);
  SimTime generation;
  for (SimTime e : p.rollout.generation_end) generation = std::max(generation, e);
  p.times.rollout = generation.seconds();
  p.times.reward = (p.rollout.makespan - generation).seconds();
  // Every token computed (prefill and generated), at the mean context of the step's trajectories.
  int64_t context = 0;
  for (const auto& t : d.trajectories) context += t.context_tokens();
  context /= std::max<int64_t>(1, static_cast<int64_t>(d.trajectories.size()));
  int64_t prefilled = 0;  // computed by the policy's engines (the reward model's come after them)
  for (size_t e = 0; e < p.rollout.engines.size() && static_cast<int64_t>(e) < ro.engines; ++e)
    prefilled += p.rollout.engines[e].stats.prefill_tokens;
  const double computed = real(p.rollout.generated_tokens + prefilled);
  p.work.flops[static_cast<size_t>(graph::Stage::rollout)] = computed * model::forward_flops_per_token_causal(s_.model, context);
}

RunSimulator::Samples RunSimulator::finished_samples(const StepData& d, const Layouts& l, const StagePlan& p) const {
  Samples x;
  const graph::Placement engines = rollout_placement(s_, l.rollout);
  const std::vector<int32_t>& engine = p.rollout.engine;  // each sample's producer: its last turn's
  for (size_t i = 0; i < d.trajectories.size(); ++i) {
    if (!p.rollout.done.empty() && !p.rollout.done[i]) continue;
    // Training sees the trajectories as the rollout left them: cut at the context or turn limit.
    const int64_t simulated = i < p.rollout.context_tokens.size() ? p.rollout.context_tokens[i] : 0;
    x.tokens.push_back(std::clamp<int64_t>(simulated > 0 ? simulated : d.trajectories[i].context_tokens(), 1,
                                           s_.workload.max_context_tokens));
    x.producer_gpu.push_back(engines.replica_device(engine[i]));
  }
  x.rank = sample_ranks(s_, l.train, x.tokens, x.producer_gpu);
  int64_t total = 0;
  for (int64_t t : x.tokens) {
    total += t;
    x.longest = std::max(x.longest, t);
  }
  x.mean_len = std::max<int64_t>(1, total / std::max<int64_t>(static_cast<int64_t>(x.tokens.size()), 1));
  x.attention_len = std::max<int64_t>(1, std::llround(token_weighted_length(x.tokens)));
  return x;
}

void RunSimulator::run_preparation(const StepData& d, const Layouts& l, StagePlan& p, const Samples& x) {
  const auto& tokens = x.tokens;
  const int64_t n = static_cast<int64_t>(tokens.size());
  auto pass = [&](const char* stage, const input::ModelSpec& m, const std::optional<input::InferenceLayout>& layout) {
    const bool value_head = std::string_view(stage) == "critic";
    const input::TrainLayout tl = model_layout_of(m, pass_layout(l.train, layout), value_head);
    // A model that computes padded tensors: every sequence as wide as the limits.
    const int64_t padded = s_.workload.padded_length(value_head);
    if (p.oom) return 0.0;
    // A pass with the training ranks reads the samples where dispatch put them; one with other
    // ranks balances them as the policy asks. Each rank runs its own samples in micro-batches
    // built from them; the pass ends with the busiest rank.
    const std::vector<int64_t> ranks =
        tl.dp == l.train.dp ? x.rank
                            : assign_ranks(tokens, tl.dp, s_.policy.batch_assignment != input::BatchAssignment::in_order);
    const auto by_rank = samples_by_rank(tokens, ranks, tl.dp, 0, 1);
    const auto batches_by_rank = micro_batches_of_ranks(by_rank, tl, padded);
    const int64_t width = memory_width(tl, padded, x.longest, largest_micro_batch(batches_by_rank));
    if (const auto memory = forward_memory_at(s_, m, tl, width, value_head); !memory.fits()) {
      p.train_memory_gib = memory.total() / kGiB;  // the stage's peak, as training reports its own
      p.oom = oom_event(d.step, stage, memory, memory.total());
      return 0.0;
    }
    p.work.flops[static_cast<size_t>(*graph::find_stage(stage))] =
        real(n) * real(x.mean_len) * model::forward_flops_per_token_causal(m, x.mean_len);
    MicroBatchTimer timer(s_, m, tl, value_head);
    std::vector<std::vector<double>> slots;
    for (const auto& batches : batches_by_rank) {
      slots.emplace_back();
      for (const auto& b : batches) slots.back().push_back(timer.forward(b));
    }
    // A forward-only pipeline fills once; with virtual stages Megatron runs it through the
    // interleaved schedule too (its forward_backward function is the interleaved one whenever
    // vpp is set), so the fill is pp - 1 chunks' slots: the stages' fill over vpp.
    double busiest = ranks_seconds(slots, tl, longest_fill(timer, batches_by_rank, slots, true));
    // Weights offloaded to host memory are uploaded for each micro-batch, behind the compute as
    // far as it lasts (the estimate of the whole pass at the mean length prices them).
    if (tl.offload_params)
      busiest = std::max(busiest, forward_pass_seconds(s_, m, tl, n, s_.workload.computed_length(value_head, x.mean_len), value_head,
                                                       s_.workload.computed_length(value_head, x.attention_len)));
    return busiest;
  };
  if (s_.workload.old_logprob_pass()) p.times.old_logprob = pass("old_logprob", s_.model, s_.policy.old_logprob);
  if (s_.workload.use_reference) {
    // The reference model is the policy's shape: in the old log-probs' layout its pass takes what
    // theirs took (the same memory, ranks and micro-batches), which need not be worked out again.
    if (s_.workload.old_logprob_pass() && s_.policy.ref_logprob == s_.policy.old_logprob && !p.oom) {
      p.times.ref_logprob = p.times.old_logprob;
      auto& flops = p.work.flops;
      flops[static_cast<size_t>(graph::Stage::ref_logprob)] = flops[static_cast<size_t>(graph::Stage::old_logprob)];
    } else {
      p.times.ref_logprob = pass("ref_logprob", s_.model, s_.policy.ref_logprob);
    }
    // Reference weights kept in host memory come in for the pass and the policy's go back after.
    if (!p.oom) p.times.ref_logprob += reference_swap_seconds(s_, pass_layout(l.train, s_.policy.ref_logprob));
  }
  if (s_.workload.critic) p.times.critic = pass("critic", *s_.workload.critic, s_.policy.critic);
}

void RunSimulator::run_training(const StepData& d, const Layouts& l, StagePlan& p, const Samples& x) {
  const int64_t n = static_cast<int64_t>(x.tokens.size());
  const int64_t per_mini_batch = std::max<int64_t>(1, n / s_.workload.mini_batches);
  // Each model's micro-batches of each mini-batch, built once from the samples as each rank holds
  // them (the critic trains in the policy's layout after it, with its value head and its own
  // budget): time takes them all; memory the longest sequence, or under a token budget the widest
  // micro-batch a rank holds at once (a model that computes padded tensors: at their width).
  struct ModelBatches {
    input::TrainLayout layout;
    int64_t padded = 0;
    std::vector<std::vector<std::vector<MicroBatch>>> by_mini_batch;  // [mini-batch][rank][micro-batch]
    int64_t memory_width = 0;
  };
  const int64_t mini_batches = s_.workload.mini_batches;
  const auto batches_of = [&](const input::ModelSpec& m, bool critic) {
    ModelBatches b{model_layout_of(m, l.train, critic), s_.workload.padded_length(critic), {}, 0};
    int64_t widest = 0;
    for (int64_t j = 0; j < mini_batches; ++j) {
      b.by_mini_batch.push_back(
          micro_batches_of_ranks(samples_by_rank(x.tokens, x.rank, b.layout.dp, j, mini_batches), b.layout, b.padded));
      widest = std::max(widest, largest_micro_batch(b.by_mini_batch.back()));
    }
    b.memory_width = memory_width(b.layout, b.padded, x.longest, widest);
    return b;
  };
  const ModelBatches actor = batches_of(s_.model, false);
  std::optional<ModelBatches> critic;
  if (s_.workload.critic) critic = batches_of(*s_.workload.critic, true);
  auto memory = train_memory_at(s_, l.train, per_mini_batch, actor.memory_width);
  if (critic && memory.fits())
    if (auto c = train_memory_at(s_, *s_.workload.critic, critic->layout, per_mini_batch, critic->memory_width, true);
        c.total() > memory.total())
      memory = std::move(c);
  p.train_memory_gib = memory.total() / kGiB;
  if (!memory.fits()) {
    p.oom = oom_event(d.step, "train", memory, memory.total());
    return;
  }
  if (const auto host = host_memory_at(s_, l.rollout, l.train); host && !host->fits()) {
    // The state a colocated swap puts in host memory goes there with the weight sync.
    p.oom = oom_event(d.step, host_memory_during_rollout(*host) ? "weight_sync" : "train", *host, host->total());
    p.oom->host = true;
    return;
  }
  auto optimizer_steps = [&](const input::ModelSpec& m, const ModelBatches& b, bool is_actor) {
    const input::TrainLayout& lt = b.layout;
    // Gradient reduction and the optimizer step from the estimate at the mean length. They do not
    // depend on how the tokens are split, but for the number of reductions under ZeRO 2-3 (one a
    // micro-batch), which is the estimate's micro-batches at that length, not those built below.
    auto r = train_request(lt, per_mini_batch, s_.workload.computed_length(!is_actor, x.mean_len), s_.workload);
    r.attention_len = s_.workload.computed_length(!is_actor, x.attention_len);
    r.value_head = !is_actor;
    const auto e = model::estimate_train(m, s_.cluster, r);
    const double fixed = e.breakdown.dp_comm_exposed_s + e.breakdown.optimizer_s;
    // Each mini-batch: every rank runs its part of it in its micro-batches, through the pipeline;
    // the optimizer step waits for the busiest rank.
    MicroBatchTimer timer(s_, m, lt, !is_actor);
    double pipelines = 0;
    for (const auto& batches_by_rank : b.by_mini_batch) {
      std::vector<std::vector<double>> slots;
      for (const auto& batches : batches_by_rank) {
        slots.emplace_back();
        for (const auto& mb : batches) slots.back().push_back(timer.train(mb));
        const auto count = static_cast<int64_t>(batches.size());
        if (lt.vpp > 1 && count % lt.pp != 0 && p.uninterleavable == 0) p.uninterleavable = count;
      }
      pipelines += ranks_seconds(slots, lt, longest_fill(timer, batches_by_rank, slots, false));
    }
    const double iteration = pipelines / real(mini_batches) + fixed;
    if (is_actor) {
      // The timeline's one drawn optimizer step: the estimate's micro-batches, scaled to the
      // mean mini-batch's pipeline.
      const double scale = e.breakdown.pipeline_s > 0 ? pipelines / real(mini_batches) / e.breakdown.pipeline_s : 1.0;
      p.optimizer_step_s = iteration;
      p.micro_forward_s = e.breakdown.forward_s * scale;
      p.micro_backward_s = e.breakdown.backward_s * scale;
      p.micro_batches = e.micro_batches;
      p.stages = r.layout.pp;
      if (o_.timeline && o_.detail_pipeline && r.layout.pp > 1) p.stage_shares = model::pipeline_stage_shares(m, s_.cluster, r);
    }
    return iteration * real(s_.workload.ppo_epochs * mini_batches);
  };
  p.times.train = optimizer_steps(s_.model, actor, true);
  if (critic) p.times.train += optimizer_steps(*s_.workload.critic, *critic, false);
  // Model FLOPs: forward and backward (3 x forward) over every sample in each PPO epoch.
  const double tokens = real(n) * real(x.mean_len) * real(s_.workload.ppo_epochs);
  double& flops = p.work.flops[static_cast<size_t>(graph::Stage::train)];
  flops = 3 * tokens * model::forward_flops_per_token_causal(s_.model, x.mean_len);
  if (s_.workload.critic) flops += 3 * tokens * model::forward_flops_per_token_causal(*s_.workload.critic, x.mean_len);
}

void RunSimulator::run_dispatch(const Layouts& l, StagePlan& p, const Samples& x) {
  // Each trajectory's tensors go from the rollout engine that generated it to the training rank
  // that will consume it.
  std::vector<DispatchSample> samples;
  const graph::Placement ranks = train_placement(s_, l.train);
  for (size_t i = 0; i < x.tokens.size(); ++i) samples.push_back({x.tokens[i], x.producer_gpu[i], ranks.replica_device(x.rank[i])});
  if (!dispatch_) {  // one network for every step: its routes are found once
    DispatchOptions opt;
    opt.mode = s_.policy.dispatch;
    opt.controller_bandwidth_bytes_per_s = s_.cluster.controller_bandwidth_bytes_per_s;
    opt.advantage_seconds_per_token = 0;
    opt.transport = s_.policy.dispatch_transport;
    dispatch_ = std::make_unique<DispatchNetwork>(s_.cluster, opt);
  }
  const DispatchResult moved =
      dispatch_->simulate(samples, dispatch_tensors(s_.workload.use_reference, s_.workload.critic.has_value()));
  p.times.dispatch = moved.seconds;
  p.work.bytes[static_cast<size_t>(graph::Stage::dispatch)] = moved.bytes_moved;
}

RunSimulator::StagePlan RunSimulator::plan_step(const StepData& d, const Layouts& l, double switch_s) {
  StagePlan p;
  run_rollout(d, l, p);
  p.rollout_s = p.times.rollout + p.times.reward;
  if (p.oom) return p;
  const Samples x = finished_samples(d, l, p);
  run_preparation(d, l, p, x);
  if (!p.oom) {  // a pass that does not fit ends the step there, as training that does not fit does
    run_dispatch(l, p, x);
    run_training(d, l, p, x);
  }
  if (!p.oom) {
    // A training state swapped out as PyTorch frameworks do it comes back where they bring it
    // back: the policy's weights before its first forward pass (not a critic's), the optimizer's
    // moments before the update.
    const StateSwapIn in = state_swap_in(s_, l.train);
    double& first_pass = p.times.old_logprob > 0   ? p.times.old_logprob
                         : p.times.ref_logprob > 0 ? p.times.ref_logprob
                                                   : p.times.train;
    first_pass += in.weights_s;
    p.times.train += in.optimizer_s;
  }
  const auto& t = p.times;
  p.training_s = t.old_logprob + t.ref_logprob + t.critic + t.dispatch + t.train;
  if (p.oom) return p;
  p.times.weight_sync = weight_sync_seconds(s_, l.rollout, l.train) + switch_s;
  // The bf16 weights every engine receives.
  p.work.bytes[static_cast<size_t>(graph::Stage::weight_sync)] =
      2.0 * model::count_params(s_.model).total * real(rollout_engines(s_, l.rollout));
  p.training_s += p.times.weight_sync;
  if (o_.on_step) {
    StepExecution e;
    e.step = d.step;
    e.rollout = l.rollout;
    e.train = l.train;
    e.rollout_s = p.times.rollout;
    for (const auto& eng : p.rollout.engines) e.kept_kv_tokens += eng.stats.resident_tokens;
    e.iterations = std::move(p.rollout.iterations);
    e.tokens = x.tokens;
    e.producer_gpu = x.producer_gpu;
    e.rank = x.rank;
    e.mean_len = x.mean_len;
    e.attention_len = x.attention_len;
    o_.on_step(std::move(e));
  }
  return p;
}

// The 1F1B schedule of one optimizer step (play_pipeline), each stage's operations taking its share
// of the slowest stage's (model::pipeline_stage_shares).
void RunSimulator::add_pipeline_events(const StagePlan& p, const exec::ActivityRecord& train, double start_s) {
  const auto played = play_pipeline(p.stages, p.micro_batches, false, start_s, [&](int64_t stage, bool forward) {
    const auto si = static_cast<size_t>(stage);
    const double share = si < p.stage_shares.size() ? p.stage_shares[si] : 1.0;
    return share * (forward ? p.micro_forward_s : p.micro_backward_s);
  });
  for (const PipelineOp& op : played) {
    exec::ActivityRecord r = train;
    r.kind = exec::RecordKind::pipeline_op;
    r.index = op.stage;
    r.a = static_cast<int32_t>(op.micro);
    r.b = op.forward ? 1 : 0;
    r.start_s = op.start_s;
    r.end_s = op.end_s;
    result_.activities.push_back(r);
  }
}

void RunSimulator::add_memory_counters(const StagePlan& p, double rollout_start_s, double train_start_s) {
  if (!o_.timeline) return;
  // Per node, the GPU memory of the stage holding its GPUs: rollout engines, then training.
  const graph::Placement rollout = rollout_pool(s_), training = train_pool(s_);
  using Kind = CounterSample::Kind;
  for (int64_t n = 0; n < s_.cluster.nodes; ++n) {
    if (n >= rollout.first_node() && n <= rollout.last_node())
      result_.counters.push_back({Kind::gpu_memory_gib, n, -1, SimTime::from_seconds(rollout_start_s), p.rollout_memory_gib});
    if (n >= training.first_node() && n <= training.last_node())
      result_.counters.push_back({Kind::gpu_memory_gib, n, -1, SimTime::from_seconds(train_start_s), p.train_memory_gib});
  }
}

// The rollout's parts as records relative to its start (run() moves them when the step is placed):
// each engine's busy spans on its GPUs and each tool call, and each engine's KV use.
void RunSimulator::record_pools(const RolloutResult& r) {
  if (result_.pools.size() < r.pools.size()) result_.pools.resize(r.pools.size());
  for (size_t i = 0; i < r.pools.size(); ++i) {
    auto& run = result_.pools[i];
    const auto& st = r.pools[i].stats;
    run.name = r.pools[i].name;
    for (const auto& spec : s_.cluster.pools)
      if (spec.name == run.name) run.price_usd_per_unit_hour = spec.price_usd_per_unit_hour;
    run.busy_resource_s += st.busy_unit_seconds;
    run.provisioned_resource_s += st.provisioned_unit_seconds;
    run.peak_in_use = std::max(run.peak_in_use, st.peak_in_use);
    run.peak_provisioned = std::max(run.peak_provisioned, st.peak_provisioned);
    run.cold_starts += st.cold_starts;
  }
  // Each call's times, from its record or (without records) as the rollout kept them.
  for (const auto& c : r.tool_calls) {
    if (c.pool < 0 || static_cast<size_t>(c.pool) >= result_.pools.size()) continue;
    auto& run = result_.pools[static_cast<size_t>(c.pool)];
    run.act_s.push_back(static_cast<float>((c.ended - c.requested).seconds()));
    run.queue_s.push_back(static_cast<float>((c.started - c.requested).seconds()));
  }
  for (size_t i = 0; i < r.pools.size(); ++i) {
    auto& run = result_.pools[i];
    run.act_s.insert(run.act_s.end(), r.pools[i].act_s.begin(), r.pools[i].act_s.end());
    run.queue_s.insert(run.queue_s.end(), r.pools[i].queue_s.begin(), r.pools[i].queue_s.end());
  }
}

void RunSimulator::add_rollout_events(const StepData& d, const Layouts& l, const RolloutResult& r) {
  if (!o_.timeline) return;
  const graph::Placement engines = rollout_placement(s_, l.rollout);
  const int64_t per_engine = l.rollout.gpus_per_engine();
  exec::ActivityRecord base;
  base.step = d.step;
  base.stage = graph::Stage::rollout;
  base.op = graph::OpKind::engine_run;
  base.side = graph::Side::rollout;
  for (const auto& span : r.spans) {
    exec::ActivityRecord e = base;
    e.kind = exec::RecordKind::engine_span;
    e.index = span.engine;
    e.a = span.prefill ? 1 : 0;
    e.devices = {engines.replica_device(span.engine), per_engine};
    e.start_s = span.start.seconds();
    e.end_s = span.end.seconds();
    result_.activities.push_back(e);
  }
  for (const auto& k : r.kv)
    result_.counters.push_back({CounterSample::Kind::kv_used_percent,
                                engines.node_of_device(engines.replica_device(k.engine)), k.engine, k.time,
                                100.0 * k.used_fraction});
  if (result_.pool_names.empty())
    for (const auto& pool : r.pools) result_.pool_names.push_back(pool.name);
  for (const auto& c : r.tool_calls) {
    exec::ActivityRecord e = base;
    e.kind = exec::RecordKind::tool_call;
    e.index = c.pool;
    e.start_s = c.started.seconds();
    e.end_s = c.ended.seconds();
    result_.activities.push_back(e);
  }
}

RunResult RunSimulator::run(const trace::Trace& t, const Progress& progress) {
  tool_names_ = t.tool_names();
  // Each step's trajectories, as a range of the trace: their views are made when the step runs,
  // so that a long trace is not held twice.
  struct StepRange {
    int64_t step = 0;
    size_t first = 0, end = 0;
  };
  std::vector<StepRange> steps;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto info = t.trajectory(i).info;
    if (o_.first_step >= 0 && info.step < o_.first_step) continue;
    if (steps.empty() || steps.back().step != info.step || steps.back().end != i) steps.push_back({info.step, i, i});
    steps.back().end = i + 1;
  }
  // Continuous generation: the engines hold the trajectories of `held` steps, the simulated ones
  // and, past the last, the trace's next ones (a run goes on generating them; they are not
  // reported).
  const auto held = static_cast<size_t>(s_.policy.batches_held());
  size_t simulated = steps.size();
  for (size_t i = 0; i < steps.size(); ++i)
    if (o_.last_step >= 0 && steps[i].step > o_.last_step) {
      simulated = i;
      break;
    }
  const int64_t limit = o_.max_steps > 0 ? o_.max_steps : s_.steps;
  simulated = std::min(simulated, static_cast<size_t>(std::max<int64_t>(0, limit)));
  steps.resize(std::min(steps.size(), simulated + held - 1));
  for (size_t i = 1; i < steps.size() && held > 1; ++i)
    if (steps[i].step != steps[i - 1].step + 1) {
      result_.warnings.push_back(
          {steps[i].step, "continuous_sampled_trace",
           "continuous generation over a trace that keeps some steps only (step " + std::to_string(steps[i - 1].step) +
               ", then " + std::to_string(steps[i].step) + "): the engines hold the next trajectories the trace has, "
               "from steps further ahead than a run would generate them"});
      break;
    }
  result_.steps_planned = static_cast<int64_t>(simulated);
  // First every step's costs, in order (a step's rollout depends on what the one before left
  // paused), each step's activities added to the step graph and its rollout's timeline events kept
  // relative to its start; then the graph runs on the event executor, where steps contend for
  // devices; then the records place the steps and their events in time.
  struct Pending {
    StagePlan plan;  // without its rollout result
    graph::StepNodes nodes;
    size_t events_begin = 0, events_end = 0, counters_begin = 0, counters_end = 0;
    Spill<exec::ActivityRecord>::Range spilled_events;  // with a sink: the rollout's parts, until placed
    Spill<CounterSample>::Range spilled_counters;
  };
  std::vector<Pending> pending;
  const bool streaming = o_.timeline && o_.sink;
  std::unique_ptr<Spill<exec::ActivityRecord>> event_spill;
  std::unique_ptr<Spill<CounterSample>> counter_spill;
  if (streaming) {
    event_spill = std::make_unique<Spill<exec::ActivityRecord>>();
    counter_spill = std::make_unique<Spill<CounterSample>>();
  }
  // Those of the steps after this one joined earlier and come back paused with the rest of the carry.
  size_t joined = 0;  // steps whose trajectories have been given to the engines
  for (size_t i = 0; i < simulated; ++i) {
    StepData d;
    d.step = steps[i].step;
    const size_t through = std::min(steps.size(), i + held);
    size_t fresh = 0;
    for (size_t k = joined; k < through; ++k) fresh += steps[k].end - steps[k].first;
    d.trajectories.reserve(fresh);
    for (; joined < through; ++joined)
      for (size_t j = steps[joined].first; j < steps[joined].end; ++j) d.trajectories.push_back(t.trajectory(j));
    if (s_.policy.continuous) d.stop_count = static_cast<int64_t>(steps[i].end - steps[i].first);
    if (!carry_.empty()) {
      // Paused trajectories first: they were admitted earlier.
      std::vector<trace::TrajectoryView> merged;
      for (size_t c = 0; c < carry_.size(); ++c) merged.push_back(carry_.trajectory(c));
      merged.insert(merged.end(), d.trajectories.begin(), d.trajectories.end());
      d.trajectories = std::move(merged);
      d.carried = std::move(carry_info_);
    }
    const Layouts l = layouts_at(s_.policy, d.step);
    // Engines relaunched in another layout keep no KV (and their indices name other engines).
    if (previous_ && !(previous_->rollout == l.rollout))
      for (auto& c : d.carried) {
        c.engine = -1;
        c.kv_tokens = 0;
      }
    const double overhead = s_.policy.switch_overhead_s;
    const double switch_s = previous_ ? rollout_switch_seconds(s_, previous_->rollout, l.rollout, overhead) +
                                            train_switch_seconds(s_, previous_->train, l.train, overhead)
                                      : 0.0;
    previous_ = l;
    StagePlan p = plan_step(d, l, switch_s);
    StepRecord rec;
    rec.step = d.step;
    // The tokens the step's trajectories hold as simulated: cut at the context limit or the turn
    // limit where the rollout cut them, not as long as the trace made them.
    std::vector<double> contexts;
    contexts.reserve(d.trajectories.size());
    for (size_t j = 0; j < d.trajectories.size(); ++j) {
      if (!p.rollout.done.empty() && !p.rollout.done[j]) continue;
      // A continuous rollout that did not run: its own step's trajectories, not those held ahead.
      if (p.rollout.done.empty() && d.stop_count > 0 && d.trajectories[j].info.step != d.step) continue;
      const int64_t context = j < p.rollout.context_tokens.size()
                                  ? p.rollout.context_tokens[j]
                                  : std::min(d.trajectories[j].context_tokens(), s_.workload.max_context_tokens);
      rec.tokens += context;
      contexts.push_back(real(context));
    }
    rec.contexts = summarize(std::move(contexts));
    rec.stages = p.times;
    rec.memory_peak_gib = {{"rollout", p.rollout_memory_gib}, {"train", p.train_memory_gib}};
    record_pools(p.rollout);
    rec.preemptions = p.rollout.preemptions();
    rec.recomputed_tokens = p.rollout.recomputed_tokens();
    if (rec.tokens > 0 && static_cast<double>(rec.recomputed_tokens) > kPreemptionStormShare * static_cast<double>(rec.tokens))
      result_.warnings.push_back(
          {d.step, "kv_exhaustion",
           std::to_string(rec.preemptions) + " preemptions recomputed " + std::to_string(rec.recomputed_tokens) +
               " tokens (" + std::to_string(static_cast<int64_t>(100.0 * static_cast<double>(rec.recomputed_tokens) /
                                                                   static_cast<double>(rec.tokens) + 0.5)) +
               "% of the step's): the engines' KV cache is too small for their batch; raise gpu_memory_utilization "
               "or tp, or lower max_num_seqs"});
    if (p.uninterleavable > 0)
      result_.warnings.push_back(
          {d.step, "interleaved_micro_batches",
           "a data rank has " + std::to_string(p.uninterleavable) + (p.uninterleavable == 1 ? " micro-batch" : " micro-batches") +
               " in a mini-batch, which Megatron's "
           "interleaved schedule (vpp = " + std::to_string(l.train.vpp) + ") refuses: it takes them in multiples of pp = " +
           std::to_string(l.train.pp) +
               (l.train.max_tokens_per_gpu > 0
                    ? ", and the rank has too few samples for its token budget to split them so; fewer "
                      "mini-batches or a smaller dp gives each rank more"
                    : "; a token budget (max_tokens_per_gpu) makes them a multiple")});
    Pending step;
    step.events_begin = result_.activities.size();
    step.counters_begin = result_.counters.size();
    add_rollout_events(d, l, p.rollout);
    step.events_end = result_.activities.size();
    step.counters_end = result_.counters.size();
    if (streaming) {
      step.spilled_events = event_spill->put(result_.activities.data(), result_.activities.size());
      step.spilled_counters = counter_spill->put(result_.counters.data(), result_.counters.size());
      result_.activities.clear();
      result_.counters.clear();
    }
    step.nodes = graph_.add_step(d.step, p.times, p.work, optimizer_steps(s_.workload));
    record_lengths(d, p.rollout.done);
    // Built before carry_, which d still views, goes.
    trace::Trace next = carry_over(s_.policy, d.trajectories, d.carried, p.rollout, carry_info_);
    carry_ = std::move(next);
    p.rollout = {};
    step.plan = std::move(p);
    if (step.plan.oom) {
      rec.oom = step.plan.oom;
      result_.oom_events.push_back(*step.plan.oom);
    }
    const bool stop = step.plan.oom && o_.stop_on_oom;
    pending.push_back(std::move(step));
    result_.steps.push_back(rec);
    if (progress) progress(static_cast<int64_t>(i) + 1, static_cast<int64_t>(simulated));
    if (stop) {
      result_.stopped_on_oom = true;
      break;
    }
  }

  const std::vector<exec::ActivityRecord> records = exec::run_events(graph_.graph());
  double previous_end = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& step = pending[i];
    if (streaming) {  // the step's rollout parts back from the file, the only records held now
      event_spill->take(step.spilled_events, result_.activities);
      counter_spill->take(step.spilled_counters, result_.counters);
      step.events_begin = step.counters_begin = 0;
      step.events_end = result_.activities.size();
      step.counters_end = result_.counters.size();
    }
    const StagePlan& p = step.plan;
    StepRecord& rec = result_.steps[i];
    const auto record = [&](graph::ActivityId id) -> const exec::ActivityRecord& { return records[static_cast<size_t>(id)]; };
    const double start = record(step.nodes.first).start_s;  // the rollout's: its parts are placed from it
    double first_s = start, end = record(step.nodes.last).end_s;
    for (graph::ActivityId id = step.nodes.first; id <= step.nodes.last; ++id) {
      first_s = std::min(first_s, record(id).start_s);
      end = std::max(end, record(id).end_s);
    }
    const SimTime base = SimTime::from_seconds(start);
    for (size_t e = step.events_begin; e < step.events_end; ++e) {
      auto& part = result_.activities[e];
      part.id = step.nodes.first;
      part.start_s += start;
      part.end_s += start;
      end = std::max(end, part.end_s);
    }
    rec.start_s = first_s;
    rec.end_s = end;
    rec.time_s = std::max(0.0, end - previous_end);
    rec.tokens_per_s = rec.time_s > 0 ? real(rec.tokens) / rec.time_s : 0;
    for (size_t c = step.counters_begin; c < step.counters_end; ++c) result_.counters[c].time += base;
    add_memory_counters(p, start, record(step.nodes.training_first).start_s);
    for (graph::ActivityId id = step.nodes.first; id <= step.nodes.last; ++id) {
      exec::ActivityRecord a = record(id);
      if (a.stage == graph::Stage::train) {  // an optimizer step: its epoch and mini-batch
        a.a = a.part / static_cast<int32_t>(s_.workload.mini_batches);
        a.b = a.part % static_cast<int32_t>(s_.workload.mini_batches);
      }
      result_.activities.push_back(a);
      if (a.stage == graph::Stage::train && o_.timeline && o_.detail_pipeline && p.micro_batches > 0 && a.end_s > a.start_s)
        add_pipeline_events(p, a, a.start_s);
    }
    previous_end = std::max(previous_end, end);
    if (streaming) {
      o_.sink->step_placed(result_, result_.activities, result_.counters);
      result_.activities.clear();
      result_.counters.clear();
    }
  }
  result_.total_time_s = previous_end;
  result_.gpu_hours = real(result_.gpus + result_.reward_gpus) * result_.total_time_s / 3600.0;
  result_.cost_usd = result_.gpu_hours * result_.price_usd_per_gpu_hour;
  return std::move(result_);
}

}  // namespace

RunResult simulate_run(const input::ScenarioSpec& s, const trace::Trace& t, const RunOptions& o, const Progress& progress) {
  RunSimulator sim(s, o);
  RunResult r = sim.run(t, progress);
  project_whole_run(s, t, r);
  return r;
}

}  // namespace arlsim::rl
