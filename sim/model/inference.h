// One iteration of an inference engine (vLLM/SGLang-style continuous batching) on tp x pp (x ep)
// GPUs: P prefill tokens in chunks, each with the context it extends, and D decoding sequences
// whose KV lengths sum to K. Matmuls see P + D rows; prefill attention is compute-bound
// (FlashAttention curve); decode attention streams the KV cache (memory-bound); each layer
// all-reduces its output over tp; the LM head runs for the rows that sample a token.
//
// Between changes of the batch's composition only K moves, by D per iteration, and the cost is
// a + b K, so k iterations cost k a + b (k K + D k (k - 1) / 2): DecodeWindow lets the simulator
// jump over them (event skipping) and answers how many fit in a time budget.
#pragma once

#include <cstdint>
#include <vector>
#include <memory>

#include "sim/model/collective.h"
#include "sim/model/compute.h"
#include "sim/model/cost_model.h"
#include "sim/model/memory.h"
#include "sim/input/cluster.h"
#include "sim/input/model.h"

namespace arlsim::model {


struct EngineLayout {
  int64_t tp = 1, pp = 1, ep = 1;
};

struct PrefillChunk {
  int64_t tokens = 0;   // new tokens computed in this iteration
  int64_t context = 0;  // tokens already in the KV cache before them
  bool completes = true;  // the chunk ends the prompt, so the sequence samples a token
};

struct IterationBatch {
  std::vector<PrefillChunk> prefill;
  int64_t decode_seqs = 0;
  int64_t decode_kv_tokens = 0;  // sum of the decoding sequences' KV lengths
  int64_t decode_rows_per_seq = 1;  // k + 1 when verifying k speculative draft tokens
};

// Speculative decoding (RhymeRL's HistoSpec, suffix or n-gram drafts): each decode step verifies
// k draft tokens per sequence in one pass of k + 1 rows and accepts `mean_accepted` tokens on
// average (tau, counting the bonus token); drafting costs `draft_s` of host time per step.
struct Speculation {
  double mean_accepted = 0;  // 0: off
  int64_t draft_tokens = 0;
  double draft_s = 0;
  bool on() const { return mean_accepted > 0 && draft_tokens > 0; }
};

// How the engine launches its kernels. With CUDA graphs (vLLM's default) an iteration's kernels
// replay from a graph and each costs only its GPU-side launch gap; in eager mode
// (`enforce_eager`, which many RL recipes set) the host dispatches every kernel through the
// framework, and the GPU waits for it between the short kernels (norms, rotary, the KV-cache
// write, attention, activations, residual adds, all-reduces, sampling): each adds `dispatch_s`.
// GEMMs run long enough for the host to get ahead.
// The host's own work per iteration (scheduling, input tensors, sampling, detokenising) runs
// between the GPU's iterations: host_fixed_s plus host_per_sequence_s per sequence in the batch.
// The short kernels an engine iteration launches besides its GEMMs (norms, rotary, residual adds,
// the activation, the KV-cache write, an attention kernel per kind of work, tp's all-reduces;
// then softmax, sampling and the token's write-back): what eager mode dispatches one by one.
int64_t short_kernels_per_iteration(const input::ModelSpec& m, int64_t tp, bool prefill, bool decode);

// An engine iteration's element-wise work per row of the batch and layer, by kind: the two norms
// of the hidden state (reading and writing it, 4 h elements of bf16 a row), its two residual adds
// (6 h) and the MLP's activation on the rank's width (3 ffn / tp).
struct ElementwiseShare {
  double elements = 0;  // bf16 elements streamed per row and layer
  ElementwiseKind kind = ElementwiseKind::any;
};
std::vector<ElementwiseShare> inference_elementwise(const input::ModelSpec& m, int64_t tp);

// How an engine iteration of `rows` rows runs a mixture-of-experts layer: the experts one of its
// ranks expects to be active (each reads its weights once), the routed rows each of them takes,
// and the tp ranks each expert's matrices split over when ep does not spread the experts alone.
struct EngineExperts {
  int64_t active = 1, rows_per_expert = 1, expert_tp = 1;
};
EngineExperts engine_experts(const input::ModelSpec& m, const EngineLayout& layout, int64_t rows);

struct EngineExecution {
  bool eager = false;
  double dispatch_s = 0;  // host time to dispatch one kernel in eager mode
  double host_fixed_s = 0;
  double host_per_sequence_s = 0;
};

struct IterationCost {
  double seconds = 0;
  double gemm_s = 0, attention_prefill_s = 0, attention_decode_s = 0, elementwise_s = 0, comm_s = 0, overhead_s = 0;
  int64_t short_kernels = 0;  // launched in the iteration besides its GEMMs
  double eager_s = 0;         // eager mode: the GPU waiting for the host's dispatch of them
};

// Cost of decode-only iterations as a + b x K (K: KV tokens summed over the batch).
struct DecodeWindow {
  double a = 0;  // seconds per iteration independent of the context
  double b = 0;  // seconds per KV token read
  int64_t seqs = 0;
  // Total time of k iterations starting at K = kv_tokens (K grows by seqs each iteration).
  double sum(int64_t k, int64_t kv_tokens) const;
  // The most iterations, from kv_tokens on, that complete within `seconds`.
  int64_t iterations_within(double seconds, int64_t kv_tokens) const;
};

// Not thread-safe: decode windows are memoised per batch size, and the terms that depend only on
// the rows of a batch per row count.
class InferenceModel {
 public:
  InferenceModel(const input::ModelSpec& m, const input::ClusterSpec& c, EngineLayout layout, Speculation spec = {});
  // The same priced by another cost model than the analytic one of the cluster's profile.
  InferenceModel(const input::ModelSpec& m, const input::ClusterSpec& c, EngineLayout layout, Speculation spec,
                 std::shared_ptr<const CostModel> cost);
  void set_execution(EngineExecution e) {
    exec_ = e;
    windows_.clear();
  }
  // The kernels besides GEMMs one iteration launches: per layer the element-wise kernels, the
  // KV-cache write, the attention kernels (prefill, decode) and the tensor-parallel all-reduces;
  // then sampling.
  int64_t short_kernels_per_iteration(bool prefill, bool decode) const;

  IterationCost iteration(const IterationBatch& batch) const;
  // Decode-only iterations of `seqs` sequences, one token each. With speculation one token costs
  // a verification step divided by the mean accepted length: the expected time per token.
  DecodeWindow decode_window(int64_t seqs) const;

 private:
  // The terms of an iteration that depend only on its rows (prefill tokens plus decode rows):
  // memoised, as engines price a prefill iteration at nearly every turn.
  struct RowTerms {
    bool known = false;
    double gemm_s = 0, elementwise_s = 0, comm_s = 0;
  };
  RowTerms compute_row_terms(int64_t rows) const;
  RowTerms row_terms(int64_t rows) const;
  double gemm_seconds(int64_t rows) const;
  double sampled_rows_seconds(int64_t rows) const;

  const input::ModelSpec& m_;
  const input::ClusterSpec& c_;
  EngineLayout layout_;
  Speculation spec_;
  EngineExecution exec_;
  std::shared_ptr<const CostModel> cost_;
  mutable std::vector<DecodeWindow> windows_;  // by batch size; seqs == 0 marks "not yet computed"
  mutable std::vector<RowTerms> row_terms_;  // by rows
};

}  // namespace arlsim::model
