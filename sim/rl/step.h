// The whole RL step, step after step: rollout (with tools and rewards) on the rollout engines,
// experience preparation (old and reference log-probs, critic values), dispatch of the
// intermediate tensors, training (PPO epochs x mini-batches) and weight sync, in the scenario's
// mode — synchronous colocated, synchronous disaggregated, or asynchronous with staleness k, where
// the rollout of step t + 1 overlaps the training of step t. Layout switches from the policy's
// schedule are charged an engine relaunch. Memory is checked for the rollout engines and the
// training ranks; a stage that does not fit yields an OOM event instead of a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/int_map.h"
#include "sim/graph/placement.h"
#include "sim/graph/step_graph.h"
#include "sim/model/train.h"
#include "sim/rl/rollout.h"
#include "sim/rl/step_result.h"
#include "sim/parse/diagnostics.h"
#include "sim/input/scenario.h"
#include "sim/trace/generator.h"
#include "sim/trace/trace.h"

namespace arlsim::rl {

// What a step ran, for a runtime that executes it again (`arlsim validate`): the layouts, the
// rollout engines' iterations, and the finished samples with the GPU that produced each and the
// training rank that takes each.
struct StepExecution {
  int64_t step = 0;
  input::RolloutLayout rollout;
  input::TrainLayout train;
  double rollout_s = 0;  // the rollout's generation, from its start
  std::vector<IterationRecord> iterations;
  std::vector<int64_t> tokens, producer_gpu, rank;
  int64_t mean_len = 1, attention_len = 1;
  // Context tokens whose KV stayed on their engines from the step before (continuous generation
  // keeping the cache), admitted without a prefill.
  int64_t kept_kv_tokens = 0;
};

struct RunOptions {
  int64_t first_step = -1;  // trace steps to run, inclusive; -1: from the first / to the last
  int64_t last_step = -1;
  int64_t max_steps = 0;    // 0: the scenario's `steps`
  bool per_iteration = false;
  bool stop_on_oom = true;  // else record the OOM and go on with the next step
  bool timeline = true;     // collect timeline events
  bool detail_pipeline = false;  // timeline: each micro-batch's forward and backward on each stage
  // With timeline: each step's records go here as the step is placed, and RunResult::activities
  // and counters stay empty; the rollouts' parts wait for their placement in a temporary file, so
  // that memory does not grow with the steps.
  RecordSink* sink = nullptr;
  // Called with each step's execution record once its stages are priced (engines' iterations
  // are then logged).
  std::function<void(StepExecution&&)> on_step;
};

// The scenario's trace: its file (or `override_path`), or the one it asks to generate. With `run`,
// only the trajectories of the steps that simulate_run(s, trace, *run) simulates are kept (the
// whole file is still read and checked).
std::optional<trace::Trace> load_scenario_trace(const input::ScenarioSpec& s, const std::string& override_path,
                                                input::Diagnostics& diag, const RunOptions* run = nullptr);
// The generator's parameters for the scenario's generated trace ("trace": {"generate": ...}):
// its preset, options, seed, steps and batch. The scenario must have one.
trace::GenParams scenario_gen_params(const input::ScenarioSpec& s);

// What a run of a loaded trace holds in memory at its peak: the trace, the cluster's network,
// and the rollout of its largest step on its policy and reward engines (steps are simulated one
// after another, and a step's records are dropped once its figures are kept). Not counted: a
// timeline's records (written as the run goes, but a step's engine spans and KV samples are held
// until it is placed) and trajectories a partial rollout carries into the next step. Generating
// continuously, the rollout holds `staleness` steps' trajectories, counted as that many of the step's.
struct RunMemory {
  double bytes = 0;
  double trace_bytes = 0;
  double cluster_bytes = 0;
  int64_t step = 0;  // the largest step (by the rollout's bytes)
  int64_t trajectories = 0, turns = 0;  // in it
};
RunMemory run_memory(const input::ScenarioSpec& s, const trace::Trace& t, bool timeline = false);
// A generated trace's storage before it is drawn (what the generator will lay out: `bytes` and
// `trace_bytes`), and its largest step (its trajectories and turns), so that a trace too large
// for memory is refused before it is made; run_memory() gives the run's whole figure once it is
// read. nullopt when the scenario's trace is a file. `run` selects the steps as
// load_scenario_trace() does.
std::optional<RunMemory> expected_run_memory(const input::ScenarioSpec& s, const RunOptions* run);

// The scenario's rollout engines in `layout`: how many, and the options (engine settings,
// routing, tools, rewards, limits) they run with.
int64_t rollout_engines(const input::ScenarioSpec& s, const input::RolloutLayout& layout);
// A reward model's engines' GPUs (its reward_server pools', or one), held beside the cluster's; 0
// without a reward model.
int64_t reward_model_gpus(const input::ScenarioSpec& s);
RolloutOptions rollout_options(const input::ScenarioSpec& s, const input::RolloutLayout& layout);
// The seed of step `step`'s tool-latency draws (RolloutOptions::seed): one stream per step.
uint64_t rollout_seed(const input::ScenarioSpec& s, int64_t step);

// What a change of rollout layout costs: the engines restart and load their weights (bf16 shards)
// over the host link.
double rollout_relaunch_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& layout);
double rollout_relaunch_bytes(const input::ScenarioSpec& s, const input::RolloutLayout& layout);  // per engine GPU
// Restarting training in another layout: each rank's weights and optimizer states
// (model::training_state; gradients are rebuilt by the next step) out to host memory in the old
// sharding and back in the new one.
double train_state_move_seconds(const input::ScenarioSpec& s, const input::TrainLayout& l);  // one way
double train_state_move_bytes(const input::ScenarioSpec& s, const input::TrainLayout& l);    // per rank, one way
// Whether two training layouts hold the state alike (no reshard between them).
bool same_train_sharding(const input::TrainLayout& from, const input::TrainLayout& to);
double train_reshard_seconds(const input::ScenarioSpec& s, const input::TrainLayout& from, const input::TrainLayout& to);
// A layout switch between two steps: 0 when the layout stays, else `overhead_s` (see
// PolicySpec::switch_overhead_s) plus the relaunch of the rollout engines, or the reshard of the
// training state when its sharding changes (not for micro-batching, recompute or sequence
// parallelism alone). The simulator charges it with the policy's overhead and the planner weighs
// it with its own.
double rollout_switch_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& from, const input::RolloutLayout& to,
                              double overhead_s);
double train_switch_seconds(const input::ScenarioSpec& s, const input::TrainLayout& from, const input::TrainLayout& to,
                            double overhead_s);
// The same with the relaunch (of `to`) or the reshard already priced, for callers that weigh
// many switches.
double rollout_switch_seconds(const input::RolloutLayout& from, const input::RolloutLayout& to, double relaunch_s,
                              double overhead_s);
double train_switch_seconds(const input::TrainLayout& from, const input::TrainLayout& to, double reshard_s, double overhead_s);

// How the policy's sync mode links steps in the step graph, and how many optimizer steps (PPO
// epochs x mini-batches) a step's training is.
graph::SyncMode sync_mode(const input::PolicySpec& p);
int32_t optimizer_steps(const input::WorkloadSpec& w);

// The layouts in force at a step: the policy's, or a schedule entry's.
struct Layouts {
  input::RolloutLayout rollout;
  input::TrainLayout train;
};
Layouts layouts_at(const input::PolicySpec& p, int64_t step);

// Where the stages sit on the cluster's GPUs: rollout takes the first GPUs of a disaggregated
// cluster and training the rest; colocated stages share all of them. The engines of a rollout
// layout and the ranks of a training layout (the first GPU of engine e is
// rollout_placement(...).replica_device(e), that of data-parallel rank i
// train_placement(...).replica_device(i)), and each side's whole pool of GPUs.
graph::Placement rollout_placement(const input::ScenarioSpec& s, const input::RolloutLayout& r);
graph::Placement train_placement(const input::ScenarioSpec& s, const input::TrainLayout& l);
graph::Placement rollout_pool(const input::ScenarioSpec& s);
graph::Placement train_pool(const input::ScenarioSpec& s);
// The two pools as the step graph's device blocks.
graph::SideDevices side_devices(const input::ScenarioSpec& s);
// Balances sequences over ranks by tokens: longest first onto the least-loaded rank (greedy LPT,
// as verl's balance_batch does), or in order in consecutive chunks whose counts differ by one at most.
std::vector<int64_t> assign_ranks(const std::vector<int64_t>& tokens, int64_t ranks, bool balance);
// EARL's layout-aware assignment: longest first onto the least-loaded rank, except that a sample
// goes to the least-loaded rank on its producer's node (sample_node) whenever that rank stays
// within `slack` of the mean load; rank_node gives each rank's node.
std::vector<int64_t> layout_aware_ranks(const std::vector<int64_t>& tokens, const std::vector<int64_t>& sample_node,
                                        const std::vector<int64_t>& rank_node, double slack);
constexpr double kLayoutAwareSlack = 0.02;  // what the policy's "layout-aware" allows
// The same for samples held on producer_gpu and the data-parallel ranks of `train`, with that slack.
std::vector<int64_t> layout_aware_ranks(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                        const std::vector<int64_t>& tokens, const std::vector<int64_t>& producer_gpu);
// The training data-parallel rank of each sample as the policy's balance_batch assigns them;
// producer_gpu (where each sample is) matters to the layout-aware assignment only.
std::vector<int64_t> sample_ranks(const input::ScenarioSpec& s, const input::TrainLayout& train,
                                  const std::vector<int64_t>& tokens, const std::vector<int64_t>& producer_gpu);
// Busiest rank's tokens over the mean rank's: what imbalance costs a synchronous pass.
double imbalance(const std::vector<int64_t>& tokens, const std::vector<int64_t>& rank, int64_t ranks);

// sum(L^2) / sum(L) of sequence lengths: the length causal attention's work goes with
// (model::TrainRequest::attention_len); 0 for no tokens.
double token_weighted_length(const std::vector<int64_t>& lengths);

// The layout of a forward-only pass (old or reference log-probs, critic values): the policy's own
// for it, else the training layout.
input::TrainLayout pass_layout(const input::TrainLayout& train, const std::optional<input::InferenceLayout>& pass);
// The layout as model `m` takes it: a dense model (a PPO critic beside a mixture-of-experts
// actor) has no experts to split, so its ranks are data-parallel only (Megatron carves the expert
// groups out of the data-parallel ranks: no GPU changes hands).
input::TrainLayout layout_of(const input::ModelSpec& m, input::TrainLayout l);
// The layout model `m` trains and scores in: layout_of it, and for the critic its own token budget
// where the layout gives one (critic_max_tokens_per_gpu).
input::TrainLayout model_layout_of(const input::ModelSpec& m, const input::TrainLayout& l, bool critic);
// Whether the training layout `train`, and the pass layouts the policy derives from it, take
// their models (the actor's, the critic's): "" or the first stage that does not, and why. A
// checked scenario's layouts always do; the planner asks this of its candidates.
std::string check_step_layouts(const input::ScenarioSpec& s, const input::TrainLayout& train);
// One such pass over `sequences` of mean length `mean_len`, before any imbalance between ranks.
// The layout must take the model (check_step_layouts).
double forward_pass_seconds(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& layout,
                            int64_t sequences, int64_t mean_len, bool value_head = false, int64_t attention_len = 0);
// Micro-batches built from the samples themselves. A micro-batch packs its sequences (no
// padding, as verl's remove-padding and Megatron's packed sequences run them): `tokens` is their
// sum and `squares` the sum of their squared lengths, which causal attention's work goes with.
struct MicroBatch {
  int64_t tokens = 0;
  double squares = 0;
  int64_t sequences = 0;
};
// A model's micro-batches as a trainer that does not remove padding computes them: every
// sequence at least `padded_length` tokens long (its tensors' width, prompt limit + response
// limit; a longer context keeps its own), the packing as the real tokens made it. 0: as they are.
void pad_micro_batches_to(std::vector<MicroBatch>& batches, int64_t padded_length);
// The most tokens any of the ranks' micro-batches holds (what a rank's activations take at once).
int64_t largest_micro_batch(const std::vector<std::vector<MicroBatch>>& batches_by_rank);
// The sequence length a model's memory is checked at (the memory estimates take one packed
// sequence of it under a token budget): its longest sequence, at least the padded width where the
// model computes padded tensors (padded > 0), and under a token budget its widest micro-batch
// (`widest`: the sequences a budget packs by their real tokens, each padded where it is).
int64_t memory_width(const input::TrainLayout& l, int64_t padded, int64_t longest, int64_t widest);
// The planner's estimate of that widest micro-batch, from the mean length: as many sequences as the
// budget packs, at most a rank's (`per_rank`), each at least the padded width. 0 without a budget.
// `most_packed` (> 0): the most sequences one micro-batch may take (most_packed), for a padded
// model, whose micro-batch is as wide as its count of sequences.
int64_t widest_micro_batch_estimate(const input::TrainLayout& l, int64_t padded, int64_t per_rank, int64_t mean_len,
                                    int64_t most_packed = 0);
// For a model that computes padded tensors (padded > 0) under a token budget, the most sequences
// one micro-batch built by their real tokens may hold: how many of the shortest of `lengths`
// (sorted longest first) the budget packs, at least 1. 0 otherwise.
int64_t most_packed(const input::TrainLayout& l, int64_t padded, const std::vector<int64_t>& lengths_longest_first);
// One data-parallel rank's sequences (lengths, in order) in micro-batches. With a token budget
// (dynamic batching) they go into ceil(tokens / budget) micro-batches, at least `at_least`,
// balanced longest first onto the lightest (verl's rearrange_micro_batches partitions them into
// that many balanced sets), or with the layout's fit packing first fit decreasing into bins of at
// most the budget (NeMo RL's and AReaL's packers; balanced as above when that makes fewer than
// `at_least`); otherwise `micro_batch` sequences each, in order.
std::vector<MicroBatch> rank_micro_batches(const std::vector<int64_t>& lengths, const input::TrainLayout& l,
                                           int64_t at_least = 1);
// The samples' lengths by data-parallel rank (`rank` gives each sample's), each rank's in the
// order given, keeping only mini-batch `part` of `parts`: a rank's samples split into `parts`
// consecutive, near-equal chunks, as each rank splits its share of the batch into mini-batches.
std::vector<std::vector<int64_t>> samples_by_rank(const std::vector<int64_t>& tokens, const std::vector<int64_t>& rank,
                                                  int64_t ranks, int64_t part, int64_t parts);
// Every rank's micro-batches (rank_micro_batches); under pipeline parallelism every rank runs as
// many as the busiest one needs, since the ranks' pipelines step together (Megatron's schedule
// takes one micro-batch count; verl gives every rank the largest), with virtual stages (vpp > 1)
// rounded up to a multiple of pp, as Megatron's interleaved schedule takes them; with
// pad_to_longest, each padded to the longest of its rank's. A model that computes padded tensors
// (padded_length > 0, WorkloadSpec::padded_length) has its sequences padded first.
std::vector<std::vector<MicroBatch>> micro_batches_of_ranks(const std::vector<std::vector<int64_t>>& by_rank,
                                                            const input::TrainLayout& l, int64_t padded_length = 0);
// A pipeline's time over micro-batches of unequal times (slots, each on the slowest stage): sum +
// fill_slots / chunks x the longest slot, the fill and drain in slots of the slowest stage
// (model::TrainBreakdown::fill_slots; p - 1 with equal stages, when this is a proportionate flow
// shop, whose makespan is exactly that; chunks = vpp shrinks the fill and drain as interleaving
// does). Equal slots give (m + fill / v) x slot, the estimate's pipeline.
double pipeline_seconds(const std::vector<double>& slots, double fill_slots, int64_t chunks = 1);
// One operation of a pipeline schedule: stage `stage`'s forward or backward of micro-batch `micro`
// through its model chunk `chunk` (0 without virtual stages).
struct PipelineOp {
  int64_t stage = 0, chunk = 0, micro = 0;
  bool forward = true;
  double start_s = 0, end_s = 0;
};
// Plays each stage's operations (`order` by stage; their times unset) out from `start_s`: chunk c
// of stage s is virtual stage c x stages + s; a forward waits for the previous virtual stage's
// forward of its micro-batch, a backward for the next one's backward (the last virtual stage's
// for its own forward), and a stage runs its operations one at a time, in its order.
// `seconds(stage, forward)` is an operation's time. Settled in rounds until every operation is
// placed (a deadlock-free schedule settles some each round); the operations come in the order
// they were settled, each after those it waits for.
std::vector<PipelineOp> play_orders(const std::vector<std::vector<PipelineOp>>& order, int64_t chunks,
                                    int64_t micro_batches, double start_s,
                                    const std::function<double(int64_t stage, bool forward)>& seconds);
// One stage's order in a one-forward-one-backward schedule of `total` operations each way: `warm`
// forwards, then a forward and a backward in turn, then the backwards left (none when
// forward_only). fwd(k) and bwd(k) append the k-th forward and backward.
template <typename Fwd, typename Bwd>
void one_forward_one_backward(int64_t total, int64_t warm, bool forward_only, Fwd&& fwd, Bwd&& bwd) {
  for (int64_t k = 0; k < warm; ++k) fwd(k);
  if (forward_only) return;
  for (int64_t i = 0; i < total - warm; ++i) {
    fwd(warm + i);
    bwd(i);
  }
  for (int64_t k = total - warm; k < total; ++k) bwd(k);
}
// The 1F1B schedule (Narayanan et al. 2021, sec. 2.2) of `micro_batches` through `stages` stages,
// played out from `start_s`, or the forwards alone: stage s runs min(p - s - 1, m) warm-up
// forwards, then one forward and one backward in turn, then drains its backwards; a forward waits
// for the previous stage's, a backward for the next stage's (the last stage's for its own
// forward). `seconds(stage, forward)` is an operation's time. The operations come in the order
// they were settled, each after those it waits for.
std::vector<PipelineOp> play_pipeline(int64_t stages, int64_t micro_batches, bool forward_only, double start_s,
                                      const std::function<double(int64_t stage, bool forward)>& seconds);
// How long data-parallel ranks take over their micro-batches (`slots` by rank: each one's pipeline
// slots). Ranks that shard their parameters (ZeRO-3, FSDP; pp = 1) gather them for every
// micro-batch in collectives of their shard group (groups of `shard_ranks` consecutive ranks), so
// they go through their micro-batches in step: each micro-batch index takes its slowest rank's
// slot, a rank without one waiting. Otherwise (gradients reduced once a step) the busiest rank's
// pipeline.
double ranks_seconds(const std::vector<std::vector<double>>& slots, const input::TrainLayout& l, double fill_slots);
// Whether ranks_seconds takes a layout's ranks in step (ZeRO-3 or FSDP, pp = 1, shard groups of
// more than one rank).
bool ranks_in_step(const input::TrainLayout& l);
// The time of one micro-batch of a model in a layout, on its slowest stage, from the cost model:
// forward only (a preparation pass's slot, its sends included) and forward + backward with the
// exposed sends (the training pipeline's slot). Repeated shapes are priced once.
class MicroBatchTimer {
 public:
  MicroBatchTimer(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l, bool value_head);
  double forward(const MicroBatch& b);
  double train(const MicroBatch& b);
  // The training request a micro-batch is priced as: one packed sequence per rank.
  model::TrainRequest request(const MicroBatch& b) const;
  // The pipeline's fill and drain in slots at that micro-batch's shape (0 without stages).
  double fill(const MicroBatch& b, bool forward_only) const;

 private:
  const input::ScenarioSpec& s_;
  const input::ModelSpec& m_;
  input::TrainLayout l_;
  bool value_head_;
  // Slot times by shape (sequence length and attention length in one key): tens of thousands of
  // distinct shapes at a million samples.
  core::IntMap<double> forward_, train_;
};

// A training request over `sequences` of length `seq_len`, rounded to what the layout takes (a
// whole number of micro-batches per data-parallel rank; the token budget sets micro-batches).
model::TrainRequest train_request(const input::TrainLayout& l, int64_t sequences, int64_t seq_len, const input::WorkloadSpec& w);
// The share of a training GPU's memory training may use: all of it, but what a resident colocated
// engine (sleep_level 0) keeps.
double training_memory_fraction(const input::ScenarioSpec& s);
// A training rank's memory at a mini-batch's longest sequence: what decides an OOM.
model::MemoryBreakdown train_memory_at(const input::ScenarioSpec& s, const input::TrainLayout& l, int64_t per_mini_batch,
                                       int64_t longest);
// The same for model `m`; value_head: a critic, whose last layer gives one value per token.
model::MemoryBreakdown train_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l,
                                       int64_t per_mini_batch, int64_t longest, bool value_head);
// A forward-only pass's rank at the step's longest sequence (one per micro-batch under dynamic
// batching): what decides an OOM of experience preparation.
model::MemoryBreakdown forward_memory_at(const input::ScenarioSpec& s, const input::ModelSpec& m, const input::TrainLayout& l,
                                         int64_t longest, bool value_head = false);
// One node's host memory while training runs in `train` (rollout in `rollout`): the training
// states its ranks offload (optimizer states, and parameters with offload_params; the critic's
// too when it trains), the reference weights kept there with the policy's pinned copy
// (reference_swap_bytes, twice), and the weights colocated engines keep there asleep at level 1. nullopt
// when the cluster does not give its host memory.
std::optional<model::MemoryBreakdown> host_memory_at(const input::ScenarioSpec& s, const input::RolloutLayout& rollout,
                                                     const input::TrainLayout& train);
// What a refit moves, as refit_seconds prices it and a runtime executes it: the method (the
// policy's, or the one `automatic` picks for the placement), each rollout GPU's bf16 shard, and
// for all-gather-swap the ranks each shard is gathered from.
//
// With a full-model gather (input::RefitGather::full_model) each training rank first makes every
// parameter whole, one all-gather along each dimension that shards it, innermost first: under
// ZeRO-3 its dense shard group and its experts' data-parallel group, then its tp group (the
// stage's dense part; the experts too where tp splits them, without ep: TrainLayout::expert_tp), its pipeline (the stages'
// owners broadcast their tensors, with the experts each holds: each rank receives what an
// all-gather would give it) and its ep group (every stage's experts). `gathers` lists them with
// each all-gather's output (what every member holds of that dimension after it), in the dtype the
// rank keeps its weights (bf16; the layout's shard_dtype under ZeRO-3); `engine_bytes` is then the
// whole model in bf16, which every rollout GPU receives from a broadcast (or takes its part of
// through CUDA IPC, colocated).
struct RefitGatherStep {
  enum class Dim : uint8_t { shard, expert_shard, tp, pp, ep } dim = Dim::tp;
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;  // members sharing a node, in Megatron's numbering
  double output_bytes = 0;
};
struct RefitShape {
  input::WeightSync method = input::WeightSync::broadcast;
  double rollout_shard_bytes = 0;
  int64_t gather_ranks = 0;
  bool full_model = false;               // input::RefitGather::full_model
  std::vector<RefitGatherStep> gathers;  // full-model gather only
  double engine_bytes = 0;               // what each rollout GPU receives: its shard, or the whole model
};
RefitShape refit_shape(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train);
// The training ranks' all-gathers of a full-model gather (shape.gathers), one after another (0
// without them).
double full_model_gather_seconds(const input::ScenarioSpec& s, const RefitShape& shape);
// Whether a node's host-memory breakdown (host_memory_at) is the rollout's, when a colocated
// swap has put the training state there, rather than training's.
bool host_memory_during_rollout(const model::MemoryBreakdown& b);
// A rank's training state as a swap finds it on the GPU: what the layout offloads (its optimizer,
// its weights) is in host memory already and is not moved again.
model::TrainingState state_on_gpu(const input::ScenarioSpec& s, const input::TrainLayout& train);
// With the training state swapped as PyTorch frameworks do it (input::StateSwap::to_cpu), what
// comes back from host memory after the rollout: the weights before the first forward pass, the
// optimizer's moments before the update (their way out is the refit's). Zero otherwise: a pinned
// swap's way back is part of the refit.
struct StateSwapIn {
  double weights_s = 0, optimizer_s = 0;
};
StateSwapIn state_swap_in(const input::ScenarioSpec& s, const input::TrainLayout& train);
// The reference model's weights swapped into the ranks of its pass, in layout `pass`
// (pass_layout(train, policy.ref_logprob); input::ReferenceWeights::swapped): each rank's weights
// as its model's state dict holds them (Megatron's bf16 copy; FSDP's fp32 shard under ZeRO-3) out
// to pinned host memory, the reference's in, and the policy's back after the pass, over each
// GPU's host link. 0 when the reference weights are resident, there is no reference pass, or the
// layout keeps its weights in host memory already (offload_params).
double reference_swap_bytes(const input::ScenarioSpec& s, const input::TrainLayout& pass);
double reference_swap_seconds(const input::ScenarioSpec& s, const input::TrainLayout& pass);
// Weight sync after training: the refit and, colocated, the engines' sleep and wake.
double weight_sync_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train);
// The refit: the new weights into the rollout engines by the policy's method (or the one
// `automatic` picks for the placement).
double refit_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r, const input::TrainLayout& train);
// Colocated engines at vLLM sleep level 1: every rollout GPU's shard of the weights to host
// memory after the rollout and back before the next (0 otherwise).
double engine_sleep_wake_seconds(const input::ScenarioSpec& s, const input::RolloutLayout& r);

// Called after each step with (steps done, steps to run).
using Progress = std::function<void(int64_t, int64_t)>;

RunResult simulate_run(const input::ScenarioSpec& s, const trace::Trace& t, const RunOptions& o,
                       const Progress& progress = {});
// When the trace samples a longer run (a generated trace's every k-th step, or gaps in a file's
// step numbers), the whole run's time, GPU-hours and cost, interpolated between the steps `r`
// simulated (simulate_run calls it): sets r's steps_total and projected figures.
void project_whole_run(const input::ScenarioSpec& s, const trace::Trace& t, RunResult& r);

}  // namespace arlsim::rl
