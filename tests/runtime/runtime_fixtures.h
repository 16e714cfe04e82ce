// Small models and layouts the runtime's tests build programs for.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/program.h"
#include "sim/input/model.h"
#include "sim/model/train.h"

namespace arlsim::test {

inline input::ModelSpec tiny_model() {
  input::ModelSpec m;
  m.hidden_size = 64;
  m.ffn_hidden_size = 128;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 16;
  m.num_layers = 2;
  m.vocab_size = 256;
  m.mlp = input::MlpKind::gated;
  return m;
}

inline int count(const std::vector<runtime::Kernel>& ks, runtime::Kernel::Kind kind) {
  int n = 0;
  for (const auto& k : ks) n += k.kind == kind ? 1 : 0;
  return n;
}

// tiny_model with every layer a mixture of 4 experts of 32, top-2, and a layout of tp 1 x dp 2 x
// ep 2 for it.
inline std::pair<input::ModelSpec, input::TrainLayout> tiny_moe() {
  auto m = tiny_model();
  m.has_moe = true;
  m.moe.num_experts = 4;
  m.moe.experts_per_token = 2;
  m.moe.expert_ffn_hidden_size = 32;
  input::TrainLayout l;
  l.tp = 1;
  l.dp = 2;
  l.ep = 2;
  return {m, l};
}

// Data rank `rank`'s pipeline in layout l: each stage's tp group and its other groups, as
// add_pipeline takes them.
struct RankPipeline {
  std::vector<runtime::DeviceGroup> stages;
  std::vector<runtime::RankGroups> groups;
};
inline RankPipeline rank_pipeline(const input::TrainLayout& l, int64_t rank) {
  RankPipeline p;
  for (int64_t stage = 0; stage < l.pp; ++stage) {
    p.stages.push_back(runtime::tp_group(l, 0, rank, stage));
    p.groups.push_back(runtime::rank_groups(l, 0, rank, stage));
  }
  return p;
}

// A micro-batch of one sequence of `seq_len` tokens in layout l.
inline model::TrainRequest one_sequence(const input::TrainLayout& l, int64_t seq_len) {
  model::TrainRequest r;
  r.layout = l;
  r.layout.micro_batch = 1;
  r.seq_len = seq_len;
  return r;
}

// A ZeRO-3 layout of tp x dp, and a request of one micro-batch of `seq_len` tokens in it.
inline std::pair<input::TrainLayout, model::TrainRequest> zero3(int64_t tp, int64_t dp, int64_t seq_len) {
  input::TrainLayout l;
  l.tp = tp;
  l.dp = dp;
  l.zero = 3;
  model::TrainRequest r;
  r.layout = l;
  r.layout.micro_batch = 1;
  r.seq_len = seq_len;
  return {l, r};
}

}  // namespace arlsim::test
