// The runtime's training programs against hand-checked cases: a micro-batch's and an optimizer
// step's kernels, tensor and sequence parallelism's collectives, pipeline stages in the 1F1B
// order, ZeRO-3's gathers and hybrid sharding's groups, some of them run on thread-devices.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/pipeline.h"
#include "runtime/program.h"
#include "sim/model/memory.h"
#include "sim/model/transformer.h"
#include "tests/model/model_fixtures.h"
#include "tests/runtime/runtime_fixtures.h"

using namespace arlsim;
using runtime::Kernel;
using test::count;
using test::tiny_model;
using test::zero3;

namespace {

// A micro-batch of one 100-token sequence on ranks of no model parallelism, dp of them.
model::TrainRequest data_parallel(int64_t dp) {
  model::TrainRequest r;
  r.layout.tp = 1;
  r.layout.dp = dp;
  r.layout.micro_batch = 1;
  r.seq_len = 100;
  return r;
}

}  // namespace

TEST_CASE("a micro-batch and an optimizer step run the training model's kernels") {
  const auto m = tiny_model();
  const model::TrainRequest r = data_parallel(2);
  runtime::Program p;
  runtime::add_micro_batch(p, m, r, {0}, true);
  const auto forward_gemms = count(p.devices.at(0).second, Kernel::Kind::gemm);
  CHECK(forward_gemms == 4 * 2 + 1);
  runtime::Program t;
  runtime::add_micro_batch(t, m, r, {0}, false);
  // Backward: each GEMM's input and weight gradients.
  CHECK(count(t.devices.at(0).second, Kernel::Kind::gemm) == 3 * forward_gemms);
  CHECK(count(t.devices.at(0).second, Kernel::Kind::attention) == 2 * 2);
  // A weight gradient per forward GEMM, reducing over the tokens (its operands token-major);
  // the forward and the input gradients are no weight gradients.
  int gradients = 0;
  for (const Kernel& k : t.devices.at(0).second)
    if (k.kind == Kernel::Kind::gemm && k.weight_gradient) {
      ++gradients;
      CHECK(k.k == r.seq_len);
      CHECK(k.weight < 0);
    }
  CHECK(gradients == forward_gemms);
  for (const Kernel& k : p.devices.at(0).second) CHECK_FALSE(k.weight_gradient);
  runtime::Program o;
  input::TrainLayout l = r.layout;
  l.zero = 1;
  runtime::add_optimizer_step(o, m, l, {0, 1});
  const auto& ks = o.devices.at(1).second;
  REQUIRE(ks.size() == 3);
  CHECK(ks[0].op == model::CollectiveOp::reduce_scatter);
  CHECK(ks[2].op == model::CollectiveOp::all_gather);
  const double params = model::largest_stage_params(m, l).dense;
  CHECK(ks[0].bytes == doctest::Approx(2 * params));
  CHECK(ks[1].bytes == doctest::Approx(30 * params / 2));  // Adam over a ZeRO-1 shard
  // Offloaded optimizer states: the shard's gradients out and weights back over the host link.
  runtime::Program off;
  l.offload_optimizer = true;
  runtime::add_optimizer_step(off, m, l, {0, 1});
  const auto& oks = off.devices.at(0).second;
  REQUIRE(oks.size() == 3);
  CHECK(oks[1].kind == Kernel::Kind::copy);
  CHECK(oks[1].peer == -1);
  CHECK(oks[1].bytes == doctest::Approx(6 * params / 2));
  // A second model on the same device (a critic, with its value head) reads its own weights.
  runtime::Program c;
  runtime::add_micro_batch(c, m, r, {0}, true);
  const int32_t base = runtime::weights_after(m);
  CHECK(base == 4 * static_cast<int32_t>(m.num_layers) + 1);
  model::TrainRequest value = r;
  value.value_head = true;
  runtime::add_micro_batch(c, m, value, {0}, true, base);
  std::set<int32_t> first, second;
  const auto& all = c.devices.at(0).second;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].kind == Kernel::Kind::gemm && all[i].weight >= 0) (i < all.size() / 2 ? first : second).insert(all[i].weight);
  CHECK(first.size() == 4 * 2 + 1);
  CHECK(second.size() == 4 * 2 + 1);
  CHECK(*first.rbegin() < *second.begin());
  const auto head = std::find_if(all.rbegin(), all.rend(), [](const Kernel& k) { return k.kind == Kernel::Kind::gemm; });
  CHECK(head->n == 1);  // ... and its head gives one value per token
}

TEST_CASE("a micro-batch's element-wise kernels run as their kinds: norms, residual adds, activations, the loss's softmax") {
  const auto m = tiny_model();
  const model::TrainRequest r = data_parallel(1);
  runtime::Program p;
  runtime::add_micro_batch(p, m, r, {0}, false);
  // Each kind's bytes, against the training model's kernels of the same layers.
  std::map<model::ElementwiseKind, double> ran, priced;
  for (const Kernel& k : p.devices.at(0).second)
    if (k.kind == Kernel::Kind::memory) ran[k.elementwise] += k.bytes;
  const int64_t tokens = r.seq_len;
  for (bool backward : {false, true})
    for (const auto& e : model::layer_elementwise_kernels(m, r, tokens, m.ffn_hidden_size, backward))
      priced[e.kind] += e.bytes * static_cast<double>(m.num_layers);
  // Beyond the layers: the embedding lookup (a copy) and the loss forward and backward (a softmax).
  CHECK(ran[model::ElementwiseKind::copy] > 0);
  CHECK(ran[model::ElementwiseKind::add] == doctest::Approx(priced[model::ElementwiseKind::add]));
  CHECK(ran[model::ElementwiseKind::activation] == doctest::Approx(priced[model::ElementwiseKind::activation]));
  CHECK(ran[model::ElementwiseKind::norm] > priced[model::ElementwiseKind::norm]);  // and the loss's softmax
  CHECK(priced[model::ElementwiseKind::norm] > 0);
  // An add streams three arrays (two read, one written), the others two.
  Kernel add, copy;
  add.kind = copy.kind = Kernel::Kind::memory;
  add.bytes = copy.bytes = 1200;
  add.elementwise = model::ElementwiseKind::add;
  CHECK(runtime::memory_floats_per_launch(add) == 100);
  CHECK(runtime::memory_floats_per_launch(copy) == 150);
  copy.launches = 3;
  CHECK(runtime::memory_floats_per_launch(copy) == 50);
  // Each kind runs on a thread-device and takes time.
  runtime::Program each;
  each.devices.push_back({0, {}});
  for (auto kind : {model::ElementwiseKind::copy, model::ElementwiseKind::add, model::ElementwiseKind::norm,
                    model::ElementwiseKind::activation}) {
    Kernel k;
    k.kind = Kernel::Kind::memory;
    k.bytes = 64e6;
    k.elementwise = kind;
    each.devices[0].second.push_back(k);
  }
  runtime::CpuBackend cpu(1, 60);
  const auto stats = cpu.run(each, "elementwise");
  CHECK(stats.kernels.memory > 0);
}

TEST_CASE("tensor parallelism all-reduces each block's output; with sequence parallelism it gathers and scatters") {
  const auto m = tiny_model();  // two layers
  model::TrainRequest r;
  r.layout.tp = 2;
  r.layout.dp = 1;
  r.layout.micro_batch = 1;
  r.seq_len = 64;
  auto ops = [&](bool sp, bool forward_only) {
    r.layout.sequence_parallel = sp;
    runtime::Program p;
    runtime::add_micro_batch(p, m, r, {0, 1}, forward_only);
    std::map<model::CollectiveOp, int> n;
    for (const auto& k : p.devices.at(0).second)
      if (k.kind == Kernel::Kind::collective) {
        ++n[k.op];
        CHECK(k.bytes == doctest::Approx(64.0 * m.hidden_size * 2));  // the whole sequence's activations, as priced
      }
    return n;
  };
  // Two per layer forward, as many backward (no recompute).
  CHECK(ops(false, true)[model::CollectiveOp::all_reduce] == 2 * 2);
  CHECK(ops(false, false)[model::CollectiveOp::all_reduce] == 2 * 2 * 2);
  const auto sp_forward = ops(true, true);
  CHECK(sp_forward.count(model::CollectiveOp::all_reduce) == 0);
  CHECK(sp_forward.at(model::CollectiveOp::all_gather) == 2 * 2);
  CHECK(sp_forward.at(model::CollectiveOp::reduce_scatter) == 2 * 2);
  const auto sp_step = ops(true, false);
  CHECK(sp_step.at(model::CollectiveOp::all_gather) == 2 * 2 * 2);
  CHECK(sp_step.at(model::CollectiveOp::reduce_scatter) == 2 * 2 * 2);
}


TEST_CASE("a pipeline runs each stage's layers in the 1F1B order, meeting its neighbours' transfers in one order") {
  const auto m = tiny_model();  // two layers: one a stage
  input::TrainLayout l;
  l.pp = 2;
  model::TrainRequest r;
  r.layout = l;
  r.seq_len = 16;
  const std::vector<model::TrainRequest> micro(3, r);
  runtime::Program p;
  runtime::add_pipeline(p, m, micro, {{0}, {1}}, false);
  // Stage 0: F0 (warm-up), then F1 B0 F2 B1, then B2; stage 1: F0 B0 F1 B1 F2 B2. Each forward of
  // stage 0 sends, each of stage 1 receives; each backward of stage 1 sends its gradient back.
  auto sequence = [&](int64_t device) {
    std::string out;
    for (const auto& k : p.on(device)) {
      if (k.kind == Kernel::Kind::collective) {
        CHECK(k.op == model::CollectiveOp::broadcast);
        CHECK(k.bytes == doctest::Approx(16.0 * 64 * 2));  // the activations: tokens x hidden, bf16
        out += p.groups[static_cast<size_t>(k.group)].front() == device ? "s" : "r";
      } else if (k.kind == Kernel::Kind::memory && k.launches == 1 && k.bytes == 2.0 * 16 * 64) {
        out += "E";  // the embedding: stage 0 only
      } else if (k.kind == Kernel::Kind::gemm && k.weight == 8 && k.n == 256) {
        out += "H";  // the head's forward: the last stage only
      } else if (k.kind == Kernel::Kind::attention) {
        out += k.backward ? "b" : "f";
      }
    }
    return out;
  };
  // Played with a forward of 1 and a backward of 2: stage 0 runs F0 [0,1] F1 [1,2] B0 [4,6] F2 [6,7]
  // B1 [7,9] B2 [10,12], stage 1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7] F2 [7,8] B2 [8,10]; each transfer
  // when its receiver starts: act0 at 1, act1 and grad0 at 4, grad1 and act2 at 7, grad2 at 10. So on
  // the link both sides meet act0, act1, grad0, grad1, act2, grad2 in that order (s: send, r: receive).
  CHECK(sequence(0) == "Efs" "Ef" "sr" "b" "Ef" "rs" "b" "rb");
  CHECK(sequence(1) == "rfH" "b" "rs" "fH" "b" "sr" "fH" "b" "s");
  // Each stage runs its own layer's weights.
  for (int64_t device = 0; device < 2; ++device)
    for (const auto& k : p.on(device))
      if (k.kind == Kernel::Kind::gemm && k.weight >= 0 && k.weight < 8) CHECK(k.weight / 4 == device);
  // It runs on thread-devices without waiting forever, every transfer checked.
  runtime::CpuBackend cpu(2, 60);
  const auto stats = cpu.run(p, "pipeline");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified >= 6 * 16.0 * 64 * 2);  // three activations and three gradients
  // Forward only: the forwards in order, the activations sent on.
  runtime::Program forward;
  runtime::add_pipeline(forward, m, micro, {{0}, {1}}, true);
  int sends = 0;
  for (const auto& k : forward.on(0)) sends += k.kind == Kernel::Kind::collective ? 1 : 0;
  CHECK(sends == 3);
  CHECK(cpu.run(forward, "forward pipeline").checksum_failures == 0);
}

TEST_CASE("ZeRO-3 gathers each rank's parameters over its shard group before the forward and the backward") {
  const auto m = tiny_model();
  auto [l, r] = zero3(2, 2, 64);
  const auto shards = runtime::shard_groups(l, 0, 0);
  // Devices tp x dp: tp rank 0 on devices 0 and 2, tp rank 1 on 1 and 3.
  REQUIRE(shards.size() == 2);
  CHECK(shards[0] == runtime::DeviceGroup{0, 2});
  CHECK(shards[1] == runtime::DeviceGroup{1, 3});
  const double bytes = 2 * model::largest_stage_params(m, l).dense;
  auto gathers = [&](const runtime::Program& p, int64_t device) {
    std::vector<int32_t> groups;
    for (const auto& k : p.devices.at(static_cast<size_t>(device)).second)
      if (k.kind == Kernel::Kind::collective && k.op == model::CollectiveOp::all_gather) {
        CHECK(k.bytes == doctest::Approx(bytes));
        groups.push_back(k.group);
      }
    return groups;
  };
  runtime::Program forward;
  runtime::add_micro_batch(forward, m, r, {0, 1}, true, 0, {shards, {}, {}});
  REQUIRE(forward.devices.at(0).first == 0);
  CHECK(gathers(forward, 0).size() == 1);  // one before the forward
  REQUIRE(forward.devices.at(0).second.front().kind == Kernel::Kind::collective);
  runtime::Program step;
  runtime::add_micro_batch(step, m, r, {0, 1}, false, 0, {shards, {}, {}});
  const auto g0 = gathers(step, 0), g1 = gathers(step, 1);
  REQUIRE(g0.size() == 2);  // ... and one before the backward
  REQUIRE(g1.size() == 2);
  CHECK(step.groups[static_cast<size_t>(g0[0])] == shards[0]);
  CHECK(step.groups[static_cast<size_t>(g1[0])] == shards[1]);
  // A rank without a micro-batch still joins both gathers of one.
  runtime::Program pad;
  runtime::add_parameter_gathers(pad, m, l, {2, 3}, false, {shards, {}, {}});
  CHECK(pad.devices.size() == 2);
  CHECK(gathers(pad, 0).size() == 2);
  // Below ZeRO-3, or with one data-parallel rank, there is nothing to gather.
  l.zero = 1;
  CHECK(runtime::shard_groups(l, 0, 0).empty());
  l.zero = 3;
  l.dp = 1;
  CHECK(runtime::shard_groups(l, 0, 0).empty());
}

TEST_CASE("hybrid sharding: shard groups of consecutive ranks, each shard all-reduced across their replicas") {
  const auto m = tiny_model();
  auto [l, r] = zero3(1, 4, 32);
  l.shard_group = 2;  // ranks {0, 1} and {2, 3} each hold one copy of the state
  CHECK(runtime::shard_groups(l, 0, 0) == std::vector<runtime::DeviceGroup>{{0, 1}});
  CHECK(runtime::shard_groups(l, 0, 1) == std::vector<runtime::DeviceGroup>{{0, 1}});
  CHECK(runtime::shard_groups(l, 0, 3) == std::vector<runtime::DeviceGroup>{{2, 3}});
  CHECK(runtime::shard_of({0, 1, 2, 3}, 2, 3) == runtime::DeviceGroup{2, 3});
  CHECK(runtime::replicas_of({0, 1, 2, 3}, 2, 3) == runtime::DeviceGroup{1, 3});
  // The optimizer step, as train.cpp prices hybrid sharding (ZeRO-1 here): the gradients
  // reduce-scattered within the shard group, the half each rank holds all-reduced with its
  // replica in the other group, Adam over the half, the parameters gathered within the group.
  l.zero = 1;
  runtime::Program p;
  runtime::add_optimizer_step(p, m, l, {0, 1, 2, 3});
  const double grads = 2.0 * model::largest_stage_params(m, l).dense;
  for (const auto& [device, ks] : p.devices) {
    CAPTURE(device);
    REQUIRE(ks.size() == 4);
    CHECK(ks[0].op == model::CollectiveOp::reduce_scatter);
    CHECK(ks[0].bytes == doctest::Approx(grads));
    CHECK(p.groups[static_cast<size_t>(ks[0].group)] == runtime::shard_of({0, 1, 2, 3}, 2, device));
    CHECK(ks[1].op == model::CollectiveOp::all_reduce);
    CHECK(ks[1].bytes == doctest::Approx(grads / 2));
    CHECK(p.groups[static_cast<size_t>(ks[1].group)] == runtime::replicas_of({0, 1, 2, 3}, 2, device));
    CHECK(ks[2].kind == Kernel::Kind::memory);
    CHECK(ks[2].bytes == doctest::Approx(30.0 * model::largest_stage_params(m, l).dense / 2));
    CHECK(ks[3].op == model::CollectiveOp::all_gather);
  }
  // Shard groups of one rank: nothing to scatter or gather, the whole gradient all-reduced.
  l.shard_group = 1;
  runtime::Program single;
  runtime::add_optimizer_step(single, m, l, {0, 1});
  for (const auto& [device, ks] : single.devices) {
    REQUIRE(ks.size() == 2);
    CHECK(ks[0].op == model::CollectiveOp::all_reduce);
    CHECK(ks[0].bytes == doctest::Approx(grads));
  }
  runtime::CpuBackend cpu(2, 60);
  CHECK(cpu.run(single, "hybrid").checksum_failures == 0);
}

TEST_CASE("ZeRO-3 micro-batches run on thread-devices, a rank with fewer joining the others' gathers") {
  const auto m = tiny_model();
  const auto [l, r] = zero3(1, 2, 32);
  const auto shards = runtime::shard_groups(l, 0, 0);
  runtime::Program p;
  // Rank 0 has two micro-batches, rank 1 one and the gathers of the other.
  runtime::add_micro_batch(p, m, r, {0}, false, 0, {shards, {}, {}});
  runtime::add_micro_batch(p, m, r, {0}, false, 0, {shards, {}, {}});
  runtime::add_micro_batch(p, m, r, {1}, false, 0, {shards, {}, {}});
  runtime::add_parameter_gathers(p, m, l, {1}, false, {shards, {}, {}});
  runtime::add_optimizer_step(p, m, l, {0, 1});
  runtime::CpuBackend cpu(2, 60);
  const auto stats = cpu.run(p, "zero-3");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.kernels.collective > 0);
  // Each all-gather's chunks checked on both members.
  CHECK(stats.bytes_verified > 0);
}

TEST_CASE("Ulysses context parallelism: a cp rank's share of the tokens, all-to-alls around the attention") {
  const auto m = tiny_model();  // two layers, 4 heads of 16, 2 KV heads
  input::TrainLayout l;
  l.tp = 2;
  l.cp = 2;
  l.dp = 2;
  l.ulysses = true;
  // Megatron's numbering: tp fastest, then cp, then dp; a data rank is dp x cp + cp.
  CHECK(runtime::tp_group(l, 0, 1) == runtime::DeviceGroup{2, 3});
  CHECK(runtime::tp_group(l, 0, 2) == runtime::DeviceGroup{4, 5});
  CHECK(runtime::cp_groups(l, 0, 3) == std::vector<runtime::DeviceGroup>{{4, 6}, {5, 7}});
  CHECK(runtime::cp_groups(l, 0, 2) == runtime::cp_groups(l, 0, 3));
  CHECK(runtime::dp_group(l, 0, 1) == runtime::DeviceGroup{1, 3, 5, 7});  // gradients over dp x cp
  input::TrainLayout no_cp = l;
  no_cp.cp = 1;
  CHECK(runtime::cp_groups(no_cp, 0, 0).empty());

  model::TrainRequest r;
  r.layout = l;
  r.layout.micro_batch = 1;
  r.seq_len = 64;
  model::TrainRequest whole = r;
  whole.layout.cp = 1;
  auto program = [&](const model::TrainRequest& req, bool forward_only) {
    runtime::Program p;
    runtime::add_micro_batch(p, m, req, runtime::tp_group(req.layout, 0, 0), forward_only, 0,
                             runtime::rank_groups(req.layout, 0, 0));
    return p.devices.at(0).second;
  };
  const auto split = program(r, true), full = program(whole, true);
  // Each cp rank's GEMMs over its half of the tokens; its attention over the whole sequence for half the heads.
  const auto first_gemm = [](const std::vector<Kernel>& ks) {
    return *std::find_if(ks.begin(), ks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::gemm; });
  };
  CHECK(first_gemm(split).m == 32);
  CHECK(first_gemm(full).m == 64);
  const auto attention = [](const std::vector<Kernel>& ks) {
    return *std::find_if(ks.begin(), ks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::attention; });
  };
  CHECK(attention(full).heads == 2);  // the tp rank's two heads (rounded from the causal FLOPs)
  CHECK(attention(split).heads == 1);
  CHECK(attention(split).seq_len == attention(full).seq_len);  // the kernel's length: the whole sequence
  // Forward: q, k and v in, the output back, each layer; the training step moves their gradients too.
  std::vector<double> to_all;
  for (const auto& k : split)
    if (k.kind == Kernel::Kind::collective && k.op == model::CollectiveOp::all_to_all) to_all.push_back(k.bytes);
  REQUIRE(to_all.size() == 2 * 2);
  const double qkv = (4 + 2 * 2) * 16, out = 4 * 16;
  CHECK(to_all[0] == doctest::Approx(2.0 * 32 * qkv / 2));
  CHECK(to_all[1] == doctest::Approx(2.0 * 32 * out / 2));
  const auto step = program(r, false);
  CHECK(std::count_if(step.begin(), step.end(), [](const Kernel& k) {
          return k.kind == Kernel::Kind::collective && k.op == model::CollectiveOp::all_to_all;
        }) == 4 * 2);
  CHECK(std::none_of(full.begin(), full.end(), [](const Kernel& k) { return k.op == model::CollectiveOp::all_to_all; }));
}

TEST_CASE("Ulysses context parallelism runs on thread-devices, alone and in a pipeline") {
  const auto m = tiny_model();
  input::TrainLayout l;
  l.tp = 1;
  l.cp = 2;
  l.dp = 2;
  l.ulysses = true;
  model::TrainRequest r;
  r.layout = l;
  r.layout.micro_batch = 1;
  r.seq_len = 32;
  runtime::Program p;
  for (int64_t rank = 0; rank < l.dp * l.cp; ++rank)
    runtime::add_micro_batch(p, m, r, runtime::tp_group(l, 0, rank), false, 0, runtime::rank_groups(l, 0, rank));
  runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, 0));
  runtime::CpuBackend cpu(4, 60);
  const auto stats = cpu.run(p, "ulysses");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified > 0);

  // Two stages of one layer, each data rank's pipeline with its stage's cp groups.
  input::TrainLayout pl = l;
  pl.pp = 2;
  pl.dp = 1;
  model::TrainRequest pr = r;
  pr.layout = pl;
  pr.layout.micro_batch = 1;
  runtime::Program pipe;
  for (int64_t rank = 0; rank < pl.dp * pl.cp; ++rank) {
    const auto [stages, cps] = test::rank_pipeline(pl, rank);
    runtime::add_pipeline(pipe, m, {pr, pr, pr}, stages, false, 0, cps);
  }
  CHECK(runtime::tp_group(pl, 0, 1, 1) == runtime::DeviceGroup{3});
  runtime::CpuBackend cpu4(4, 60);
  CHECK(cpu4.run(pipe, "ulysses-pipeline").checksum_failures == 0);
}

TEST_CASE("a mixture-of-experts layer routes, permutes and runs its experts as grouped GEMMs on thread-devices") {
  const auto [m, l] = test::tiny_moe();  // two layers: both MoE
  model::TrainRequest r;
  r.layout = l;
  r.layout.micro_batch = 1;
  r.seq_len = 32;
  r.moe_imbalance = 1.5;
  const model::TrainExperts x = model::train_experts(m, r, 32);
  CHECK(x.local == 2);
  CHECK(x.rows_per_expert == 48);  // 32 tokens x 2 ep ranks x top-2 over 4 experts, x 1.5
  CHECK(runtime::ep_groups(l, 0, 1) == std::vector<runtime::DeviceGroup>{{0, 1}});
  runtime::Program p;
  // Ranks of equal micro-batches, as the ep all-to-alls need them.
  for (int64_t rank = 0; rank < 2; ++rank)
    runtime::add_micro_batch(p, m, r, runtime::tp_group(l, 0, rank), false, 0, runtime::rank_groups(l, 0, rank));
  const auto& ks = p.devices.at(0).second;
  int grouped = 0, routers = 0, to_all = 0;
  for (const auto& k : ks) {
    if (k.kind == Kernel::Kind::gemm && k.groups == 2) {
      ++grouped;
      CHECK((k.m == 48 || k.k == 48 || k.n == 48));
    }
    if (k.kind == Kernel::Kind::gemm && (k.n == 4 || k.k == 4) && k.groups == 1) ++routers;
    if (k.kind == Kernel::Kind::collective && k.op == model::CollectiveOp::all_to_all) {
      ++to_all;
      CHECK(k.bytes == doctest::Approx(32.0 * 2 * 64 * 2 * 1.5));  // the busiest rank's copies
    }
  }
  CHECK(grouped == 2 * (2 + 4));  // forward up and down, backward each one's two gradients, each layer
  CHECK(routers == 2 * 3);        // the router forward and its two gradients
  CHECK(to_all == 2 * 4);         // dispatch and combine, forward and backward
  // Expert gradients over their data-parallel group (tp x dp / ep = 1 rank here: nothing to reduce);
  // with ep = 1 every rank's.
  runtime::Program none;
  runtime::add_expert_reduction(none, m, l, 0, 0, runtime::ExpertPhase::gradients);
  CHECK(none.devices.empty());
  input::TrainLayout no_ep = l;
  no_ep.ep = 1;
  const size_t before = p.devices.at(1).second.size();
  runtime::add_expert_reduction(p, m, no_ep, 0, 0, runtime::ExpertPhase::gradients);
  const auto& reduced = p.devices.at(1).second[before];
  CHECK(reduced.kind == Kernel::Kind::collective);
  CHECK(reduced.op == model::CollectiveOp::reduce_scatter);  // ZeRO-1
  CHECK(reduced.bytes == doctest::Approx(2.0 * model::largest_stage_params(m, no_ep).experts));
  runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, 0));
  runtime::add_expert_reduction(p, m, no_ep, 0, 0, runtime::ExpertPhase::parameters);
  CHECK(p.devices.at(1).second.back().op == model::CollectiveOp::all_gather);
  runtime::CpuBackend cpu(2, 60);
  const auto stats = cpu.run(p, "moe");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified > 0);
  // Under tp 2 (sequence parallel, no ep) each device routes its half of the 32 tokens, as
  // model::routed_tokens prices it: the router's rows and the busiest expert's halve.
  input::TrainLayout tp2 = l;
  tp2.tp = 2;
  tp2.dp = 1;
  tp2.ep = 1;
  tp2.sequence_parallel = true;
  model::TrainRequest r2 = r;
  r2.layout = tp2;
  runtime::Program q;
  runtime::add_micro_batch(q, m, r2, runtime::tp_group(tp2, 0, 0), false, 0, runtime::rank_groups(tp2, 0, 0));
  const auto& kernels = q.devices.at(0).second;
  const auto router = std::find_if(kernels.begin(), kernels.end(),
                                   [](const Kernel& k) { return k.kind == Kernel::Kind::gemm && k.n == 4 && k.groups == 1; });
  REQUIRE(router != kernels.end());
  CHECK(router->m == 16);  // the forward router, the first of its kind
  CHECK(model::train_experts(m, r2, 32).rows_per_expert == 12);  // 16 x 1 ep rank x top-2 / 4, x 1.5
}

TEST_CASE("expert parallelism: ranks of unequal micro-batches exchange the largest member's tokens and join the rest") {
  const auto [m, l] = test::tiny_moe();  // two layers: both MoE
  const model::TrainRequest small = test::one_sequence(l, 16), large = test::one_sequence(l, 48);
  runtime::Program p;
  // Rank 0 runs a large and a small micro-batch, rank 1 one small one and joins the second's all-to-alls.
  auto g0 = runtime::rank_groups(l, 0, 0), g1 = runtime::rank_groups(l, 0, 1);
  g0.ep_tokens = g1.ep_tokens = 48;
  runtime::add_micro_batch(p, m, large, {0}, false, 0, g0);
  runtime::add_micro_batch(p, m, small, {1}, false, 0, g1);
  g0.ep_tokens = g1.ep_tokens = 16;
  runtime::add_micro_batch(p, m, small, {0}, false, 0, g0);
  const size_t own = p.devices.at(1).second.size();
  runtime::add_micro_batch_joins(p, m, small, {1}, false, 0, g1);
  const auto& joined = p.devices.at(1).second;
  REQUIRE(joined.size() == own + 2 * 4);  // four all-to-alls a layer, nothing else
  for (size_t i = own; i < joined.size(); ++i) CHECK(joined[i].op == model::CollectiveOp::all_to_all);
  // Every all-to-all of the first micro-batches moves the large one's copies, on both ranks.
  const auto& first = p.devices.at(0).second;
  const auto a2a = std::find_if(first.begin(), first.end(), [](const Kernel& k) { return k.op == model::CollectiveOp::all_to_all; });
  const auto b2b = std::find_if(joined.begin(), joined.end(), [](const Kernel& k) { return k.op == model::CollectiveOp::all_to_all; });
  CHECK(a2a->bytes == doctest::Approx(48.0 * 2 * 64 * 2));
  CHECK(b2b->bytes == a2a->bytes);
  runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, 0));
  runtime::CpuBackend cpu(2, 60);
  CHECK(cpu.run(p, "ep").checksum_failures == 0);
}

TEST_CASE("expert parallelism with pipeline stages: a rank with fewer micro-batches joins its peers' in the schedule") {
  auto [m, l] = test::tiny_moe();  // two layers: one a stage
  l.pp = 2;
  const model::TrainRequest small = test::one_sequence(l, 16), large = test::one_sequence(l, 48);
  runtime::Program p;
  // Data rank 0 runs three micro-batches; data rank 1 one, and joins the other two (the larger's).
  const std::vector<model::TrainRequest> mine[2] = {{large, small, large}, {small, large, large}};
  const size_t own[2] = {3, 1};
  for (int64_t rank = 0; rank < 2; ++rank) {
    const auto [stages, groups] = test::rank_pipeline(l, rank);
    runtime::PipelineJoins joins;
    joins.own = own[rank];
    joins.ep_tokens = {48, 16, 48};
    runtime::add_pipeline(p, m, mine[rank], stages, false, 0, groups, joins);
  }
  CHECK(runtime::ep_groups(l, 0, 1, 1) == std::vector<runtime::DeviceGroup>{{2, 3}});
  // Device 1 (rank 1's first stage): its own micro-batch whole, the two it joins as all-to-alls
  // alone: as many all-to-alls as its peer, device 0, and the transfers of its own micro-batch only.
  auto to_alls = [&](int64_t device) {
    return std::count_if(p.on(device).begin(), p.on(device).end(),
                         [](const Kernel& k) { return k.op == model::CollectiveOp::all_to_all; });
  };
  CHECK(to_alls(0) == to_alls(1));
  CHECK(to_alls(2) == to_alls(3));
  auto broadcasts = [&](int64_t device) {
    return std::count_if(p.on(device).begin(), p.on(device).end(),
                         [](const Kernel& k) { return k.op == model::CollectiveOp::broadcast; });
  };
  CHECK(broadcasts(0) == 3 * 2);  // activations out, gradients in, each micro-batch
  CHECK(broadcasts(1) == 1 * 2);
  for (int64_t stage = 0; stage < 2; ++stage)
    for (int64_t tp = 0; tp < 1; ++tp) runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, tp, stage));
  runtime::CpuBackend cpu(4, 60);
  CHECK(cpu.run(p, "ep-pipeline").checksum_failures == 0);
}

TEST_CASE("ZeRO-3 of a mixture-of-experts model gathers its experts over their own group, every rank as often") {
  auto [m, l] = test::tiny_moe();  // two layers: both MoE
  l.dp = 4;
  l.ep = 2;
  l.zero = 3;
  // The experts' data-parallel group: one place of every ep group (ranks {0, 1} and {2, 3}).
  CHECK(runtime::expert_group(l, 0, 0) == runtime::DeviceGroup{0, 2});
  CHECK(runtime::expert_group(l, 0, 3) == runtime::DeviceGroup{1, 3});
  CHECK(runtime::rank_groups(l, 0, 2).experts == std::vector<runtime::DeviceGroup>{{0, 2}});
  input::TrainLayout wide = l;  // without ep the experts split over tp: the dense data-parallel group
  wide.tp = 2;
  wide.dp = 2;
  wide.ep = 1;
  CHECK(runtime::expert_group(wide, 0, 1) == runtime::DeviceGroup{0, 2});
  CHECK(runtime::expert_group(wide, 0, 1, 0, 1) == runtime::DeviceGroup{1, 3});
  CHECK(runtime::rank_groups(wide, 0, 1).experts == std::vector<runtime::DeviceGroup>{{0, 2}, {1, 3}});
  input::TrainLayout below = l;
  below.zero = 1;
  CHECK(runtime::rank_groups(below, 0, 0).experts.empty());

  const model::StageParams params = model::largest_stage_params(m, l);
  REQUIRE(params.experts > 0);
  const model::TrainRequest r = test::one_sequence(l, 32);
  runtime::Program forward;
  runtime::add_micro_batch(forward, m, r, {0}, true, 0, runtime::rank_groups(l, 0, 0));
  const auto& ks = forward.devices.at(0).second;
  // Before the forward: the dense parameters over the shard group, then the experts over theirs.
  REQUIRE(ks.size() > 2);
  CHECK(ks[0].op == model::CollectiveOp::all_gather);
  CHECK(ks[0].bytes == doctest::Approx(2 * params.dense));
  CHECK(forward.groups[static_cast<size_t>(ks[0].group)] == runtime::DeviceGroup{0, 1, 2, 3});
  CHECK(ks[1].op == model::CollectiveOp::all_gather);
  CHECK(ks[1].bytes == doctest::Approx(2 * params.experts));
  CHECK(forward.groups[static_cast<size_t>(ks[1].group)] == runtime::DeviceGroup{0, 2});

  // Rank 0 runs two micro-batches; rank 1, its ep peer, one and joins the second's gathers and
  // all-to-alls; ranks 2 and 3 one each and then gather for the second alone (their expert groups
  // cross into rank 0's and 1's).
  runtime::Program p;
  std::vector<runtime::RankGroups> groups;
  for (int64_t rank = 0; rank < 4; ++rank) groups.push_back(runtime::rank_groups(l, 0, rank));
  runtime::add_micro_batch(p, m, r, {0}, false, 0, groups[0]);
  runtime::add_micro_batch(p, m, r, {0}, false, 0, groups[0]);
  runtime::add_micro_batch(p, m, r, {1}, false, 0, groups[1]);
  runtime::add_micro_batch_joins(p, m, r, {1}, false, 0, groups[1]);
  for (int64_t rank = 2; rank < 4; ++rank) {
    runtime::add_micro_batch(p, m, r, {rank}, false, 0, groups[static_cast<size_t>(rank)]);
    runtime::add_parameter_gathers(p, m, l, {rank}, false, groups[static_cast<size_t>(rank)]);
  }
  auto gathers = [&](int64_t device) {
    return std::count_if(p.on(device).begin(), p.on(device).end(),
                         [](const Kernel& k) { return k.op == model::CollectiveOp::all_gather; });
  };
  for (int64_t device = 0; device < 4; ++device) CHECK(gathers(device) == 2 * 2 * 2);  // two of each a pass
  runtime::add_expert_reduction(p, m, l, 0, 0, runtime::ExpertPhase::gradients);
  CHECK(p.on(3).back().op == model::CollectiveOp::reduce_scatter);
  runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, 0));
  const size_t after_step = p.on(3).size();
  runtime::add_expert_reduction(p, m, l, 0, 0, runtime::ExpertPhase::parameters);
  CHECK(p.on(3).size() == after_step);  // ZeRO-3 keeps them sharded: nothing gathered after the step
  runtime::CpuBackend cpu(4, 60);
  const auto stats = cpu.run(p, "moe-zero-3");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified > 0);
}

TEST_CASE("ZeRO-3 with pipeline stages: each stage gathers over its shard group, a rank short of micro-batches joining") {
  const auto m = tiny_model();  // two layers: one a stage
  auto [l, r] = zero3(1, 2, 32);
  l.pp = 2;
  r.layout = l;
  // Stage 1's shard group: the second stage's devices of both data ranks.
  CHECK(runtime::shard_groups(l, 0, 1, 1) == std::vector<runtime::DeviceGroup>{{2, 3}});
  runtime::Program p;
  // Data rank 0 runs two micro-batches; data rank 1 one, and joins the second for its gathers alone.
  const size_t own[2] = {2, 1};
  for (int64_t rank = 0; rank < 2; ++rank) {
    const auto [stages, groups] = test::rank_pipeline(l, rank);
    runtime::PipelineJoins joins;
    joins.own = joins.gathers_only = own[rank];
    runtime::add_pipeline(p, m, {r, r}, stages, false, 0, groups, joins);
  }
  auto count_op = [&](int64_t device, model::CollectiveOp op) {
    return std::count_if(p.on(device).begin(), p.on(device).end(), [&](const Kernel& k) { return k.op == op && k.kind == Kernel::Kind::collective; });
  };
  // Every device gathers before each pass of each micro-batch; only rank 0's stages send both.
  for (int64_t device = 0; device < 4; ++device) CHECK(count_op(device, model::CollectiveOp::all_gather) == 2 * 2);
  CHECK(count_op(0, model::CollectiveOp::broadcast) == 2 * 2);
  CHECK(count_op(1, model::CollectiveOp::broadcast) == 1 * 2);
  const double stage_params = model::largest_stage_params(m, l).dense;
  const auto gather = std::find_if(p.on(3).begin(), p.on(3).end(), [](const Kernel& k) { return k.op == model::CollectiveOp::all_gather; });
  CHECK(gather->bytes == doctest::Approx(2 * stage_params));
  for (int64_t stage = 0; stage < 2; ++stage) runtime::add_optimizer_step(p, m, l, runtime::dp_group(l, 0, 0, stage));
  runtime::CpuBackend cpu(4, 60);
  const auto stats = cpu.run(p, "zero-3-pipeline");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified > 0);
}

TEST_CASE("the interleaved schedule: Megatron's order, played out") {
  // Two stages of two chunks, four micro-batches: stage 0 warms up with (2 - 0 - 1) x 2 + 1 x 2 = 4
  // forwards, stage 1 with 2; the micro-batches go in groups of two through chunk 0, then chunk 1.
  const auto ops = runtime::play_interleaved(2, 2, 4, false);
  std::vector<std::string> stage0;
  for (const auto& op : ops)
    if (op.stage == 0) stage0.push_back((op.forward ? "F" : "B") + std::to_string(op.micro) + std::to_string(op.chunk));
  const std::vector<std::string> megatron = {"F00", "F10", "F01", "F11", "F20", "B01", "F30", "B11",
                                             "F21", "B00", "F31", "B10", "B21", "B31", "B20", "B30"};
  CHECK(stage0 == megatron);
  // Every operation is placed (the play asserts it) for any multiple of pp micro-batches, forward
  // and backward alike, and no stage runs two at once.
  for (int64_t p = 2; p <= 4; ++p)
    for (int64_t v = 2; v <= 3; ++v)
      for (int64_t m = p; m <= 4 * p; m += p)
        for (const bool forward_only : {false, true}) {
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          const auto played = runtime::play_interleaved(p, v, m, forward_only);
          CHECK(played.size() == static_cast<size_t>(p * v * m * (forward_only ? 1 : 2)));
          std::map<int64_t, double> busy_until;
          std::vector<runtime::ChunkOp> sorted = played;
          std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
          for (const auto& op : sorted) {
            CHECK(op.start_s >= busy_until[op.stage]);
            busy_until[op.stage] = op.start_s + (op.forward ? 1.0 : 2.0);
          }
        }
}

TEST_CASE("an interleaved pipeline: each stage its chunks' layers, transfers around the ring of virtual stages") {
  auto m = tiny_model();
  m.num_layers = 4;  // pp 2 x vpp 2: one layer a chunk
  input::TrainLayout l;
  l.pp = 2;
  l.vpp = 2;
  l.dp = 1;
  const model::TrainRequest r = test::one_sequence(l, 32);
  runtime::Program p;
  runtime::Program odd;  // Megatron takes micro-batches in multiples of pp
  CHECK_THROWS_AS(runtime::add_pipeline(odd, m, {r, r, r}, {{0}, {1}}, false), runtime::UnsupportedPlan);
  runtime::add_pipeline(p, m, {r, r, r, r}, {{0}, {1}}, false);
  // Stage 0 holds layers 0 and 2 (and the embedding), stage 1 layers 1 and 3 (and the head).
  auto layers = [&](int64_t device) {
    std::set<int64_t> seen;
    for (const auto& k : p.on(device))
      if (k.kind == Kernel::Kind::gemm && k.weight >= 0 && k.weight < 4 * 4) seen.insert(k.weight / 4);
    return seen;
  };
  CHECK(layers(0) == std::set<int64_t>{0, 2});
  CHECK(layers(1) == std::set<int64_t>{1, 3});
  CHECK(std::count_if(p.on(1).begin(), p.on(1).end(), [](const Kernel& k) { return k.weight == 4 * 4; }) > 0);  // the head
  // Three hops each way a micro-batch (virtual stages 0 -> 1 -> 2 -> 3), each between the two devices.
  for (int64_t device = 0; device < 2; ++device)
    CHECK(std::count_if(p.on(device).begin(), p.on(device).end(),
                        [](const Kernel& k) { return k.op == model::CollectiveOp::broadcast; }) == 3 * 2 * 4);
  runtime::CpuBackend cpu(2, 60);
  const auto stats = cpu.run(p, "interleaved");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.bytes_verified > 0);
}

TEST_CASE("ZeRO-3 of a mixture-of-experts model in a pipeline: an ep group short of micro-batches joins their gathers alone") {
  auto [m, l] = test::tiny_moe();  // two layers: one a stage
  l.dp = 4;
  l.ep = 2;
  l.pp = 2;
  l.zero = 3;
  const model::TrainRequest r = test::one_sequence(l, 32);
  runtime::Program p;
  // Ranks 0 and 1 (one ep group) run two micro-batches; ranks 2 and 3 (the other) one, then the
  // second's gathers alone: no all-to-all, since no peer of theirs runs it.
  for (int64_t rank = 0; rank < 4; ++rank) {
    const auto [stages, groups] = test::rank_pipeline(l, rank);
    runtime::PipelineJoins joins;
    joins.own = joins.gathers_only = rank < 2 ? 2 : 1;
    runtime::add_pipeline(p, m, {r, r}, stages, false, 0, groups, joins);
  }
  auto count_op = [&](int64_t device, model::CollectiveOp op) {
    return std::count_if(p.on(device).begin(), p.on(device).end(),
                         [&](const Kernel& k) { return k.kind == Kernel::Kind::collective && k.op == op; });
  };
  for (int64_t device = 0; device < 8; ++device) {
    CAPTURE(device);
    CHECK(count_op(device, model::CollectiveOp::all_gather) == 2 * 2 * 2);  // dense and experts, each pass
  }
  // Rank 2's first stage (device 2) exchanges tokens for its one micro-batch, rank 0's (device 0) for two.
  CHECK(count_op(2, model::CollectiveOp::all_to_all) > 0);
  CHECK(count_op(0, model::CollectiveOp::all_to_all) == 2 * count_op(2, model::CollectiveOp::all_to_all));
  runtime::CpuBackend cpu(8, 60);
  const auto stats = cpu.run(p, "moe-zero-3-pipeline");
  CHECK(stats.checksum_failures == 0);
}
