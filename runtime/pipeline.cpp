#include "runtime/pipeline.h"

#include <algorithm>
#include <string>

#include "sim/core/assert.h"
#include "sim/rl/step.h"

namespace arlsim::runtime {

namespace {
double d(int64_t v) { return static_cast<double>(v); }
}  // namespace

std::vector<ChunkOp> play_interleaved(int64_t stages, int64_t chunks, int64_t micro_batches, bool forward_only) {
  const int64_t p = stages, v = chunks, m = micro_batches, total = m * v;
  if (m <= 0) return {};
  // Megatron-Core's schedule table: micro-batches in groups of p, each group through chunk 0, then
  // chunk 1, ...; a backward takes the same entries with the chunks in reverse.
  std::vector<std::pair<int64_t, int64_t>> table;  // (micro-batch, chunk)
  for (int64_t first = 0; first < m; first += p)
    for (int64_t c = 0; c < v; ++c)
      for (int64_t mb = first; mb < std::min(m, first + p); ++mb) table.emplace_back(mb, c);
  std::vector<std::vector<ChunkOp>> order(static_cast<size_t>(p));
  for (int64_t r = 0; r < p; ++r) {
    auto& ops = order[static_cast<size_t>(r)];
    const auto fwd = [&](int64_t k) { ops.push_back({r, table[static_cast<size_t>(k)].second, table[static_cast<size_t>(k)].first, true}); };
    const auto bwd = [&](int64_t k) {
      ops.push_back({r, v - 1 - table[static_cast<size_t>(k)].second, table[static_cast<size_t>(k)].first, false});
    };
    // Warm-up forwards: all of them forward only or when there are exactly p micro-batches.
    const int64_t warm = forward_only || m == p ? total : std::min(total, (p - r - 1) * 2 + (v - 1) * p);
    rl::one_forward_one_backward(total, warm, forward_only, fwd, bwd);
  }
  // Played out with a forward of 1 and a backward of 2.
  std::vector<ChunkOp> played = rl::play_orders(order, v, m, 0, [](int64_t, bool forward) { return forward ? 1.0 : 2.0; });
  ARLSIM_ASSERT(played.size() == static_cast<size_t>(p) * static_cast<size_t>(total) * (forward_only ? 1 : 2));
  return played;
}

void add_pipeline(Program& p, const input::ModelSpec& m, const std::vector<model::TrainRequest>& micro_batches,
                  const std::vector<DeviceGroup>& stages, bool forward_only, int32_t weight_base,
                  const std::vector<RankGroups>& groups, const PipelineJoins& joins) {
  const auto n = static_cast<int64_t>(stages.size()), count = static_cast<int64_t>(micro_batches.size());
  if (count == 0) return;
  const input::TrainLayout& l = micro_batches.front().layout;
  const int64_t v = std::max<int64_t>(1, l.vpp), virtual_stages = n * v;
  // The transfers between stages are rendezvous (a two-member broadcast: both sides wait), so
  // each pair of neighbours must meet them in one order, as Megatron's combined send-and-receive
  // calls make them. The schedule (1F1B as the simulator draws it, rl::play_pipeline, or with
  // virtual stages Megatron's interleaved one, play_interleaved) is played once with a forward of
  // 1 and a backward of 2 units, a transfer taking place when its receiver starts the operation
  // that needs it; every device then runs its operations and transfers in the order of that play
  // (a transfer before an operation starting at the same moment), which is deadlock-free, being
  // one feasible order.
  std::vector<ChunkOp> ops;
  if (v > 1) {
    if (count % n != 0)
      throw UnsupportedPlan("/policy/train/vpp: Megatron's interleaved schedule takes micro-batches in multiples of pp = " +
                            std::to_string(n) + "; a data rank has " + std::to_string(count) +
                            " (a token budget, /policy/train/max_tokens_per_gpu, makes them a multiple)");
    ops = play_interleaved(n, v, count, forward_only);
  } else {
    ops = rl::play_pipeline(n, count, forward_only, 0, [](int64_t, bool f) { return f ? 1.0 : 2.0; });
  }
  struct Event {
    double time;
    int rank;  // 0: a transfer, 1: an operation
    int64_t stage, to, chunk, micro;  // a transfer from `stage` to `to`
    bool forward;
  };
  std::vector<Event> events;
  for (const ChunkOp& op : ops) {
    const int64_t vs = op.chunk * n + op.stage;
    const int64_t from = op.forward ? vs - 1 : vs + 1;
    if (from >= 0 && from < virtual_stages) events.push_back({op.start_s, 0, from % n, op.stage, op.chunk, op.micro, op.forward});
    events.push_back({op.start_s, 1, op.stage, op.stage, op.chunk, op.micro, op.forward});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time != b.time ? a.time < b.time : a.rank < b.rank; });
  for (const Event& e : events) {
    const model::TrainRequest& r = micro_batches[static_cast<size_t>(e.micro)];
    // A micro-batch of the rank's own, or one it only joins (expert parallelism: its ep peers have
    // more), whose all-to-alls it meets and whose transfers between stages it has none of.
    const bool joined = static_cast<size_t>(e.micro) >= joins.own;
    if (e.rank == 1) {
      // A stage's layers, or with virtual stages chunk c's: layers / (pp x vpp) of them at virtual
      // stage c x pp + stage (Megatron's interleaved assignment).
      const int64_t vs = e.chunk * n + e.stage, per = m.num_layers / virtual_stages;
      const int64_t first = v > 1 ? vs * per : l.stage_first_layer(m.num_layers, e.stage);
      const int64_t layers = v > 1 ? per : l.stage_layers(m.num_layers, e.stage);
      RankGroups g = groups.empty() ? RankGroups{} : groups[static_cast<size_t>(e.stage)];
      if (static_cast<size_t>(e.micro) < joins.ep_tokens.size()) g.ep_tokens = joins.ep_tokens[static_cast<size_t>(e.micro)];
      const DeviceGroup& stage_group = stages[static_cast<size_t>(e.stage)];
      const PassPart part{e.forward, !e.forward, first, layers, vs == 0, vs + 1 == virtual_stages};
      if (static_cast<size_t>(e.micro) >= joins.gathers_only)
        add_parameter_gathers(p, m, l, stage_group, true, g);  // no ep peer runs it either: this pass's gathers
      else if (joined)
        add_part_joins(p, m, r, stage_group, part, weight_base, g);
      else
        add_micro_batch_part(p, m, r, stage_group, part, weight_base, g);
      continue;
    }
    if (joined) continue;
    // Activations forward, their gradients backward: each tp rank's tensor (its sequence part under
    // sequence parallelism) to the same tp rank of the receiving stage, as train.cpp prices the sends.
    const double bytes =
        d(l.micro_batch * r.seq_len / l.cp) * d(m.hidden_size) * 2 / (l.sequence_parallel ? d(l.tp) : 1.0);
    const DeviceGroup& from_group = stages[static_cast<size_t>(e.stage)];
    const DeviceGroup& to_group = stages[static_cast<size_t>(e.to)];
    for (size_t j = 0; j < from_group.size(); ++j) {
      const int32_t group = p.group({from_group[j], to_group[j]});  // the sender first: the root
      const Kernel send = collective(model::CollectiveOp::broadcast, bytes, group);
      p.on(from_group[j]).push_back(send);
      p.on(to_group[j]).push_back(send);
    }
  }
}

}  // namespace arlsim::runtime
