// One training iteration of a TP x PP x DP x CP (x EP) layout: forward and backward of every
// micro-batch through the pipeline, tensor/context/expert-parallel communication per layer,
// data-parallel gradient reduction (exposed or overlapped), ZeRO-3 parameter gathers and the
// optimizer step. Per-layer costs are typed operations priced by a CostModel (cost_model.h).
//
// Pipeline: 1F1B runs m micro-batches in (m + p - 1) slots of one micro-batch's forward plus
// backward on a stage; interleaving with v virtual stages shrinks the bubble to (p - 1) / v slots
// (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", sec. 2.2). Backward costs twice the forward GEMMs (input and weight gradients);
// recompute adds the forward part it recomputes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/collective.h"
#include "sim/model/memory.h"
#include "sim/input/cluster.h"
#include "sim/input/model.h"
#include "sim/input/policy.h"

namespace arlsim::model {

// The experts' data-parallel group of a training layout (expert_data_parallel_ranks ranks) and how
// many of its members share a node, in Megatron's numbering.
CollectiveGroup expert_group_of(const input::ClusterSpec& c, const input::TrainLayout& l);

class CostModel;

struct TrainRequest {
  input::TrainLayout layout;
  int64_t seq_len = 4096;  // mean sequence length: what tokens and linear layers scale with
  // The token-weighted mean length, sum(L^2) / sum(L), of sequences of unequal lengths: a causal
  // attention's query-key pairs per sequence are L (L + 1) / 2, so their mean is
  // seq_len x (attention_len + 1) / 2. 0: all sequences are seq_len long.
  int64_t attention_len = 0;
  bool unfused_attention = false;  // see WorkloadSpec::unfused_attention
  int64_t global_batch = 1;  // sequences per iteration (one optimizer step)
  input::Dtype dtype = input::Dtype::bf16;
  double moe_imbalance = 1.0;  // tokens of the busiest expert / the mean
  double usable_memory_fraction = 1.0;
  // A critic: its last layer maps each token to one value instead of the vocabulary's logits.
  bool value_head = false;
};

struct TrainBreakdown {
  double forward_s = 0;   // per micro-batch on the slowest stage
  double backward_s = 0;  // including recompute
  double pipeline_s = 0;  // all micro-batches through the pipeline, bubble included
  double bubble_fraction = 0;  // bubble time / ideal time: fill_slots / (v m)
  // The pipeline's fill and drain in slots of its slowest stage: the other stages' slots over the
  // slowest's (p - 1 when the stages are equal; less when the head or the embedding makes one
  // stage the slowest, since the fill and drain pass the others at their own pace).
  double fill_slots = 0;
  double tp_comm_s = 0;   // per micro-batch, forward and backward
  double tp_comm_exposed_s = 0;  // the part of it inside forward_s + backward_s (all without overlap)
  double cp_comm_exposed_s = 0;
  double ep_comm_s = 0;
  double pp_comm_s = 0;  // per micro-batch: every chunk's sends forward and backward
  double pp_comm_exposed_s = 0;  // the part not under the next chunk's compute
  double dp_comm_s = 0;  // gradient reduction and the gather of updated parameters
  double dp_comm_exposed_s = 0;  // the part not hidden by the last backward or the first forward,
                                 // and fetches beyond the pipeline (ZeRO-3 gathers, offloaded
                                 // weights' uploads)
  double optimizer_s = 0;  // on the GPU, or the host link's transfers when offloaded
};

struct TrainEstimate {
  double iteration_s = 0;
  double tokens_per_s = 0;
  double model_flops_per_token = 0;  // forward + backward, no recompute (6N + attention)
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  int64_t micro_batches = 0;  // per data-parallel rank
  TrainBreakdown breakdown;
  MemoryBreakdown memory;
};

// How a training rank runs a mixture-of-experts layer on `tokens` tokens: its local experts (the
// model's over ep), the tokens the busiest of them takes (its share of the ep ranks' routed
// copies, times the request's imbalance), which set every expert's pace, and the width the
// element-wise kernels after the experts see per token.
struct TrainExperts {
  int64_t local = 1, rows_per_expert = 1, elementwise_width = 1;
};
TrainExperts train_experts(const input::ModelSpec& m, const TrainRequest& r, int64_t tokens);
// The tokens a rank routes to the experts of a micro-batch of `tokens`: its tp share (the MoE
// layer's input is split over the tp ranks by sequence parallelism, and with the experts' tensor
// parallelism 1, Megatron's parallel folding, each rank dispatches its share over the ep group).
int64_t routed_tokens(const TrainRequest& r, int64_t tokens);

using input::ElementwiseKind;

// One element-wise (memory-bound) kernel of a transformer layer and the HBM bytes it moves.
struct ElementwiseKernel {
  const char* name;
  double bytes;
  ElementwiseKind kind = ElementwiseKind::any;  // which calibrated rate prices it, and what the runtime runs
};

// The element-wise kernels of one layer's forward (or backward) on a rank's `tokens` tokens, with
// `ffn_width` columns of the MLP's activation on the rank (ffn / tp, or the busiest expert's). Each
// is one kernel launch; biases are fused into the GEMMs' epilogues or into these kernels, as
// Megatron's bias-GeLU and bias-dropout-add fusions do. Sequence parallelism runs the norms and
// residual adds on the rank's 1 / tp of the sequence.
std::vector<ElementwiseKernel> layer_elementwise_kernels(const input::ModelSpec& m, const TrainRequest& r,
                                                         int64_t tokens, int64_t ffn_width, bool backward);

// The layout's problems with this model, request and cluster ("" when it can run), for callers
// that did not validate it already.
std::string check_train_request(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r);

TrainEstimate estimate_train(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r);
// The same with another cost model than the analytic one of the cluster's profile.
TrainEstimate estimate_train(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r,
                             const CostModel& cost);

// Forward passes only (old and reference log-probs, critic values) over the request's batch: the
// pipeline filled once, no backward, gradient reduction or optimizer step.
double estimate_forward_seconds(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r);
double estimate_forward_seconds(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r,
                                const CostModel& cost);
// A forward-only pipeline's fill in slots of its slowest stage's forward (as
// TrainBreakdown::fill_slots for training; 0 without pipeline stages).
double forward_fill_slots(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r);
// Each pipeline stage's forward and backward per micro-batch over the slowest stage's (its slot's
// share; 1 for the slowest): how the timeline draws the stages' operations.
std::vector<double> pipeline_stage_shares(const input::ModelSpec& m, const input::ClusterSpec& c, const TrainRequest& r);

}  // namespace arlsim::model
