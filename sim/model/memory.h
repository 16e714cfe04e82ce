// Memory per rank: training (weights, gradients and optimizer states under ZeRO/FSDP sharding and
// offload, activations under each recompute mode, pipeline in-flight micro-batches, logits) and
// inference (weights, activation workspace, KV-cache capacity).
//
// Mixed-precision Adam keeps bf16 weights (2 bytes), fp32 gradients (4; Megatron's main_grad)
// and fp32 master weights plus two moments (12): 18 bytes per parameter, of which ZeRO stage 1
// shards the 12 over data parallelism, stage 2 also the 4, stage 3 (FSDP) also the 2
// (Rajbhandari et al. 2020, "ZeRO", sec. 5; Megatron-LM docs, distributed optimizer).
// Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", sec. 4), generalised to GQA, gated MLPs and MoE, with FlashAttention (no
// s^2 score matrix is stored) and no dropout, as RL fine-tuning runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/input/hardware.h"
#include "sim/input/model.h"
#include "sim/input/policy.h"

namespace arlsim::model {

struct MemoryBreakdown {
  std::vector<std::pair<std::string, double>> items;  // name -> bytes, in a fixed order
  double capacity_bytes = 0;                          // usable bytes of the GPU
  double total() const;
  bool fits() const { return total() <= capacity_bytes; }
  double get(const std::string& name) const;
};

// Parameters held by one rank of the first and of the last pipeline stage.
struct StageParams {
  double dense = 0;    // replicated over data parallelism (attention, dense MLPs, norms, embeddings)
  double experts = 0;  // expert weights, sharded over expert parallelism
  double total() const { return dense + experts; }
};
StageParams params_per_rank(const input::ModelSpec& m, const input::TrainLayout& l, bool first_stage, bool last_stage);
// Parameters held by one rank of pipeline stage `stage` (0 .. pp - 1), its experts split
// `expert_shards` ways (training's: ep x TrainLayout::expert_tp).
StageParams params_of_stage(const input::ModelSpec& m, const input::TrainLayout& l, int64_t stage);
StageParams params_of_stage(const input::ModelSpec& m, const input::TrainLayout& l, int64_t stage, int64_t expert_shards);
// The stage whose ranks hold the most parameters (they set gradient buckets, optimizer steps and
// data-parallel traffic: every stage's ranks run theirs at once).
StageParams largest_stage_params(const input::ModelSpec& m, const input::TrainLayout& l);
// The devices a stage's expert weights are replicated over, their own data-parallel group:
// tp x dp x cp / (ep x expert tp) of them (at least 1).
double expert_data_parallel_ranks(const input::TrainLayout& l);
// A rank's share of p where its states are sharded: the dense parameters over sharding_ranks(),
// the experts over their data-parallel group.
double sharded_params(const StageParams& p, const input::TrainLayout& l);

// The training state of one rank: weights, gradients and optimizer states under the layout's ZeRO
// sharding, wherever they live (offloaded parts count: they still move when the state moves).
// Adam in mixed precision: weights in the working dtype (2 bytes; fp8 training keeps bf16
// weights), fp32 gradients (4), fp32 master weights (4, none when the working dtype is already
// fp32) and two fp32 moments (8) — Megatron-LM's distributed optimizer, ZeRO sec. 5. The only
// formula of these bytes: memory, reshards and weight sync all call it.
struct TrainingState {
  double weights = 0, gradients = 0, optimizer = 0;
  // Of the optimizer's bytes, Adam's two fp32 moments (the rest, in bf16 training, its fp32
  // master weights).
  double moments = 0;
  double total() const { return weights + gradients + optimizer; }
};
TrainingState training_state(const input::ModelSpec& m, const input::TrainLayout& l, input::Dtype dtype, bool first_stage,
                             bool last_stage);
// The larger of the first and the last pipeline stage's.
TrainingState training_state(const input::ModelSpec& m, const input::TrainLayout& l, input::Dtype dtype);

// Activation bytes one layer keeps for backward, per micro-batch of `tokens` tokens on a rank.
double layer_activation_bytes(const input::ModelSpec& m, const input::TrainLayout& l, int64_t tokens, bool moe_layer);

struct TrainShape {
  int64_t micro_batch = 1;  // sequences
  int64_t seq_len = 0;
  int64_t micro_batches = 1;  // per data-parallel rank per iteration
  double usable_fraction = 1.0;
  bool value_head = false;  // a critic: one output per token on the last stage instead of logits
  input::Dtype dtype = input::Dtype::bf16;  // the working dtype (see TrainingState)
  bool unfused_attention = false;  // the s x s attention probabilities are kept (2 bytes each)
};

// The worse of the first and the last pipeline stage.
MemoryBreakdown train_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const input::TrainLayout& l,
                             const TrainShape& shape);

// A forward-only pass (log-probs, values) over micro-batches of `shape`: the weights (sharded
// under ZeRO-3, none when offloaded), the widest layer's activations (a forward keeps nothing for a
// backward, so one layer's working set at a time), the last stage's logits and the reserve. The
// worse of the first and the last pipeline stage.
MemoryBreakdown forward_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const input::TrainLayout& l,
                               const TrainShape& shape);

struct InferenceMemory {
  MemoryBreakdown breakdown;       // weights, workspace, reserved, kv_cache
  double kv_bytes_per_token_gpu = 0;
  int64_t kv_capacity_tokens = 0;  // tokens of KV cache the engine can hold
};

struct EngineMemoryOptions {
  int64_t tp = 1, pp = 1, ep = 1;
  double gpu_memory_utilization = 0.9;
  int64_t max_batched_tokens = 8192;  // one iteration's tokens: the activation workspace
  int64_t max_seqs = 256;             // rows that sample a token: the logits
};

// One engine of tp x pp GPUs (ep over its tp ranks for MoE), vLLM-style: the KV cache gets what
// gpu_memory_utilization leaves after weights, the peak activation workspace of one iteration,
// and the reserved memory.
InferenceMemory inference_memory(const input::ModelSpec& m, const input::GpuProfile& gpu, const EngineMemoryOptions& o);

// The element type engines serve in: bf16, or fp32 on a device with no bf16 peak (a CPU measured
// by `arlsim calibrate --backend cpu`); and its size in bytes (weights, activations, KV cache).
input::Dtype serving_dtype(const input::GpuProfile& gpu);
double serving_element_bytes(const input::GpuProfile& gpu);

// KV-cache bytes per token on one GPU of a tp x pp engine: key-value heads are split over tp
// (replicated when tp exceeds them); MLA's latent is replicated on every tp rank. Elements of
// `element_bytes` (2: bf16).
double kv_bytes_per_token_per_gpu(const input::ModelSpec& m, int64_t tp, int64_t pp, double element_bytes = 2);

}  // namespace arlsim::model
