// StageSpec: one stage in isolation for `arlsim estimate` — a training iteration, an inference
// forward pass over a batch, or a collective — with the model, GPU and (optionally) cluster it
// runs on. Without a cluster, one is built from the GPU profile: nodes of 8 GPUs (or
// `gpus_per_node`), as many as the layout needs, one NIC per GPU at the profile's rate.
#pragma once

#include <cstdint>
#include <string>

#include "sim/input/cluster.h"
#include "sim/input/model.h"
#include "sim/input/policy.h"
#include "sim/input/workload.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {


enum class StageKind { train, inference, collective, rollout };

struct TrainStage {
  TrainLayout layout;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  double moe_imbalance = 1.0;
  bool unfused_attention = false;  // see WorkloadSpec::unfused_attention
};

struct InferenceStage {
  int64_t tp = 1, pp = 1, ep = 1;
  int64_t sequences = 1;
  int64_t prefill_tokens = 0;   // new tokens per sequence (0: a decode step)
  int64_t context_tokens = 0;   // tokens already cached per sequence
  double gpu_memory_utilization = 0.9;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
};

struct CollectiveStage {
  std::string op;  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv
  double bytes = 0;
  int64_t ranks = 2;
};

// Requests of a rollout stage: an explicit list, a distribution to draw from, or one step of a
// trace (whose trajectories may have several turns and tool calls).
struct RequestLengths {
  double mean = 0;
  double sigma = 0;  // of the log-normal; 0: every request has the mean
};

struct RolloutStage {
  int64_t tp = 1, pp = 1, ep = 1;
  EngineSpec engine;
  int64_t engines = 1;
  Routing routing = Routing::least_loaded;
  ToolPolicy tool_policy = ToolPolicy::static_binding;
  std::vector<std::pair<int64_t, int64_t>> requests;  // (input tokens, output tokens)
  int64_t count = 0;                                  // drawn requests
  RequestLengths input, output;
  std::string trace_path;  // resolved against the stage file's directory
  int64_t trace_step = -1;  // -1: the trace's first step
  double arrival_rate_per_s = 0;  // Poisson arrivals; 0: all at once
  uint64_t seed = 1;
};

struct StageSpec {
  std::string name;
  std::string description;
  StageKind kind = StageKind::train;
  bool has_model = false;
  ModelSpec model;
  ClusterSpec cluster;  // given, or built from the GPU profile
  Dtype dtype = Dtype::bf16;
  double usable_memory_fraction = 1.0;
  TrainStage train;
  InferenceStage inference;
  CollectiveStage collective;
  RolloutStage rollout;
};

// Expects "model", "gpu" and "cluster" already resolved (see loader.h).
bool parse_stage(const Value& v, Diagnostics& diag, StageSpec& out);

}  // namespace arlsim::input
