// The runtime's pieces against hand-checked cases: checksums, copies and gathers (bytes moved,
// a corrupted buffer caught), the ring collectives against a reference reduction, the attention
// backward alone against the whole pass, and the programs' kernels against the shapes the cost
// model prices.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

#include "calib/cpu/kernels.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/pattern.h"
#include "runtime/program.h"
#include "runtime/scale.h"
#include "runtime/validate.h"
#include "sim/input/check.h"
#include "sim/rl/step.h"
#include "sim/model/memory.h"
#include "sim/model/transformer.h"
#include "sim/model/inference.h"
#include "tests/model/model_fixtures.h"
#include "tests/runtime/runtime_fixtures.h"

using namespace arlsim;
using runtime::Kernel;
using test::count;
using test::tiny_model;

TEST_CASE("checksum: the CRC-32 check value") {
  const char* text = "123456789";
  CHECK(runtime::checksum(text, 9) == 0xCBF43926u);
  // Continued over pieces, as a long buffer is checked in blocks: the same value.
  CHECK(runtime::checksum_more(runtime::checksum(text, 4), text + 4, 5) == 0xCBF43926u);
  CHECK(runtime::checksum(text, 0) == 0u);
}

TEST_CASE("checksum: over threads, pieces joined, the same as on one; the pattern's checksum without its buffer") {
  // 3 Mi + 5 values: three pieces of 1 Mi and a remainder, over 1, 2, 3 and 8 threads.
  const size_t n = (size_t{3} << 20) + 5;
  const uint64_t seed = runtime::pattern_seed(7, 11);
  std::vector<float> values(n, -1.0f);
  runtime::fill_pattern_host(values.data(), n, seed, 3);
  CHECK(std::none_of(values.begin(), values.end(), [](float v) { return v < 0; }));  // every value written
  CHECK(values[n - 1] == runtime::pattern_value(n - 1, seed));
  const uint32_t one = runtime::checksum(values.data(), n * sizeof(float));
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    CAPTURE(threads);
    CHECK(runtime::checksum(values.data(), n * sizeof(float), threads) == one);
    CHECK(runtime::pattern_checksum(n, seed, threads) == one);
  }
  // A small buffer stays one piece; an empty one is CRC-32's 0.
  CHECK(runtime::pattern_checksum(3, seed, 8) == runtime::checksum(values.data(), 3 * sizeof(float)));
  CHECK(runtime::pattern_checksum(0, seed, 4) == 0u);
  // One value off is caught.
  values[n / 2] += 1.0f;
  CHECK(runtime::checksum(values.data(), n * sizeof(float), 2) != one);
}

TEST_CASE("hold: a wait lasts at least what it is asked, busy or not; a negative one none") {
  using Clock = std::chrono::steady_clock;
  for (const auto& [seconds, busy] : {std::pair{0.0003, true}, std::pair{0.003, false}, std::pair{0.0003, false}}) {
    CAPTURE(seconds);
    const auto t = Clock::now();
    runtime::hold(seconds, busy);
    CHECK(std::chrono::duration<double>(Clock::now() - t).count() >= seconds);
  }
  runtime::hold(-1.0, true);
}

TEST_CASE("copies move their bytes and a corrupted buffer is caught") {
  runtime::CpuBackend cpu(2, 60);
  runtime::Program p;
  Kernel c;
  c.kind = Kernel::Kind::copy;
  c.bytes = 1 << 20;
  c.peer = -1;
  p.on(0).push_back(c);
  c.peer = 1;
  p.on(1).push_back(c);
  const auto ok = cpu.run(p, "copies");
  CHECK(ok.bytes_verified == doctest::Approx(2.0 * (1 << 20)));
  CHECK(ok.checksum_failures == 0);
  CHECK(ok.kernels.copy > 0);
  cpu.corrupt_next_copy();
  const auto bad = cpu.run(p, "copies");
  CHECK(bad.checksum_failures == 1);
}

TEST_CASE("the CPU backend sizes its buffers before it runs: each at its largest, collectives per program") {
  runtime::CpuBackend cpu(2, 60);
  auto sizer = cpu.buffer_sizer();
  REQUIRE(sizer);
  runtime::Program first;
  Kernel g;
  g.kind = Kernel::Kind::gemm;
  g.m = 2, g.n = 3, g.k = 4;
  g.weight = 0;
  first.on(0).push_back(g);  // a: 2 x 4, weight 0: 4 x 3, c: 2 x 3 floats
  Kernel c;
  c.kind = Kernel::Kind::copy;
  c.bytes = 40;
  c.peer = -1;
  first.on(0).push_back(c);  // source and host: 10 floats each
  const int32_t group = first.group({0, 1});
  Kernel ar;
  ar.kind = Kernel::Kind::collective;
  ar.op = model::CollectiveOp::all_reduce;
  ar.bytes = 64;
  ar.group = group;
  for (int64_t d = 0; d < 2; ++d) first.on(d).push_back(ar);  // 16 floats a member, this program only
  sizer->add(first);
  CHECK(sizer->bytes() == doctest::Approx(4.0 * (8 + 12 + 6 + 10 + 10 + 2 * 16)));
  runtime::Program second;
  g.m = 4;  // a: 16 floats, c: 12; the same weight buffer
  second.on(0).push_back(g);
  g.weight = 1;  // another layer's weight: a buffer of its own
  second.on(1).push_back(g);
  sizer->add(second);
  const double device0 = 16 + 12 + 12 + 10 + 10, device1 = 16 + 12 + 12;
  CHECK(sizer->bytes() == doctest::Approx(4.0 * (device0 + device1 + 2 * 16)));
}

TEST_CASE("an all-gather's chunks arrive intact on every member") {
  runtime::CpuBackend cpu(3, 60);
  runtime::Program p;
  const int32_t g = p.group({0, 1, 2});
  Kernel k;
  k.kind = Kernel::Kind::collective;
  k.op = model::CollectiveOp::all_gather;
  k.bytes = 3 * 4096;
  k.group = g;
  for (int64_t d = 0; d < 3; ++d) p.on(d).push_back(k);
  const auto r = cpu.run(p, "gather");
  CHECK(r.checksum_failures == 0);
  CHECK(r.bytes_verified == doctest::Approx(3 * 2 * 4096.0));  // each member checks the 2 chunks it received
  CHECK(r.device_seconds.size() == 3);
}

TEST_CASE("ring collectives equal a reference reduction") {
  using model::CollectiveOp;
  const int64_t n = 3;
  const size_t e = 6;  // two elements per chunk
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                          CollectiveOp::broadcast, CollectiveOp::all_to_all, CollectiveOp::send_recv}) {
    CAPTURE(model::collective_name(op));
    std::vector<calib::cpu::Floats> in(n, calib::cpu::Floats(e)), out(n, calib::cpu::Floats(e, 0));
    for (int64_t r = 0; r < n; ++r)
      for (size_t i = 0; i < e; ++i) {
        in[r][i] = static_cast<float>(100 * r + i);
        out[r][i] = op == CollectiveOp::all_gather ? (i / 2 == static_cast<size_t>(r) ? static_cast<float>(100 * r + i) : 0)
                    : op == CollectiveOp::broadcast ? (r == 0 ? static_cast<float>(i) : 0)
                                                   : static_cast<float>(100 * r + i);
      }
    std::barrier<> step(n);
    std::vector<std::thread> threads;
    for (int64_t r = 0; r < n; ++r)
      threads.emplace_back([&, r] { calib::cpu::ring_collective(op, r, n, in, out, e, [&] { step.arrive_and_wait(); }); });
    for (auto& t : threads) t.join();
    for (int64_t r = 0; r < n; ++r)
      for (size_t i = 0; i < e; ++i) {
        const auto chunk = static_cast<int64_t>(i / 2);
        float want = 0;
        switch (op) {
          case CollectiveOp::all_reduce: want = static_cast<float>(300 + 3 * i); break;  // 0 + 100 + 200 + 3i
          case CollectiveOp::reduce_scatter:
            if (chunk != (r + 1) % n) continue;  // each rank owns one reduced chunk
            want = static_cast<float>(300 + 3 * i);
            break;
          case CollectiveOp::all_gather: want = static_cast<float>(100 * chunk + static_cast<int64_t>(i)); break;
          case CollectiveOp::broadcast: want = static_cast<float>(i); break;
          case CollectiveOp::all_to_all:  // chunk j of rank r: chunk r of rank j's input
            want = static_cast<float>(100 * chunk + 2 * r + static_cast<int64_t>(i % 2));
            break;
          case CollectiveOp::send_recv: want = static_cast<float>(100 * ((r + n - 1) % n) + static_cast<int64_t>(i)); break;
        }
        CHECK(out[r][i] == want);
      }
  }
}

TEST_CASE("ring collectives out of place leave their inputs and give the in-place results") {
  using model::CollectiveOp;
  const int64_t n = 3;
  const size_t e = 6;
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                          CollectiveOp::broadcast}) {
    CAPTURE(model::collective_name(op));
    // The same data in place (in `placed`) and out of place (in `in`, results in `out`).
    std::vector<calib::cpu::Floats> in(n, calib::cpu::Floats(e, 0)), out(n, calib::cpu::Floats(e, -1)), placed;
    for (int64_t r = 0; r < n; ++r)
      for (size_t i = 0; i < e; ++i) {
        const bool holds = op == CollectiveOp::all_gather ? i / 2 == static_cast<size_t>(r)
                           : op == CollectiveOp::broadcast ? r == 0
                                                           : true;
        in[r][i] = holds ? static_cast<float>(100 * r + i + 1) : 0;
      }
    placed = in;
    const auto inputs = in;
    std::vector<calib::cpu::Floats> none;
    for (const bool in_place : {true, false}) {
      std::barrier<> step(n);
      std::vector<std::thread> threads;
      for (int64_t r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          if (in_place)
            calib::cpu::ring_collective(op, r, n, none, placed, e, [&] { step.arrive_and_wait(); }, true);
          else
            calib::cpu::ring_collective(op, r, n, in, out, e, [&] { step.arrive_and_wait(); }, false);
        });
      for (auto& t : threads) t.join();
    }
    CHECK(in == inputs);  // the inputs are read, never written
    for (int64_t r = 0; r < n; ++r)
      for (size_t i = 0; i < e; ++i) {
        if (op == CollectiveOp::reduce_scatter && static_cast<int64_t>(i / 2) != (r + 1) % n) continue;
        CHECK(out[r][i] == placed[r][i]);
      }
  }
}

TEST_CASE("the attention's backward alone gives the gradients of the whole pass") {
  calib::cpu::Attention whole, split;
  whole.prepare(200, 16);
  split.q = whole.q;
  split.k = whole.k;
  split.v = whole.v;
  split.d_o = whole.d_o;
  split.o.resize(200, 16);
  split.scale = whole.scale;
  split.dq.setZero(200, 16);
  split.dk.setZero(200, 16);
  split.dv.setZero(200, 16);
  whole.run(true);
  split.run(false);
  split.run(false, true);
  CHECK((whole.dq - split.dq).cwiseAbs().maxCoeff() < 1e-5f);
  CHECK((whole.dk - split.dk).cwiseAbs().maxCoeff() < 1e-5f);
  CHECK((whole.dv - split.dv).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("an engine iteration's kernels are the shapes the inference model prices") {
  const auto m = tiny_model();
  runtime::Program p;
  model::IterationBatch b;
  b.prefill.push_back({10, 5, true});
  b.decode_seqs = 3;
  b.decode_kv_tokens = 30;
  runtime::add_engine_iteration(p, m, {0}, b, 2);
  const auto& ks = p.devices.at(0).second;
  // Per iteration: 4 GEMMs a layer and the LM head; one prefill attention and one decode
  // attention a layer; the graph-replayed element-wise work and the sampling.
  CHECK(count(ks, Kernel::Kind::gemm) == 2 * (4 * 2 + 1));
  CHECK(count(ks, Kernel::Kind::attention) == 2 * 2);
  CHECK(count(ks, Kernel::Kind::decode_attention) == 2 * 2);
  CHECK(count(ks, Kernel::Kind::collective) == 0);
  CHECK(ks.front().m == 13);                                   // 10 prefill rows + 3 decode rows
  CHECK(ks.front().n == (4 + 2 * 2) * 16);                     // q, k and v
  CHECK(ks.front().k == 64);
  // The second iteration's decode attention reads one more token per sequence.
  const double kv = model::kv_bytes_per_token_per_gpu(m, 1, 1);
  std::vector<double> decode;
  for (const auto& k : ks)
    if (k.kind == Kernel::Kind::decode_attention) decode.push_back(k.bytes);
  CHECK(decode.front() == doctest::Approx(kv * 30 / 2));
  CHECK(decode.back() == doctest::Approx(kv * 33 / 2));
  // Under tp 2: every layer all-reduces twice, on both devices of the engine.
  runtime::Program tp2;
  runtime::add_engine_iteration(tp2, m, {0, 1}, b, 1);
  CHECK(count(tp2.devices.at(1).second, Kernel::Kind::collective) == 2 * 2);
  CHECK(tp2.groups.size() == 1);
  // Without host work: no waits.
  CHECK(count(ks, Kernel::Kind::wait) == 0);
}

TEST_CASE("multi-head latent attention: full-width projections as the model prices them, decode over the latent cache") {
  auto m = tiny_model();  // 4 heads, 2 layers
  m.attention = input::AttentionKind::mla;
  m.mla.kv_lora_rank = 32;
  m.mla.qk_rope_head_dim = 8;
  m.mla.qk_nope_head_dim = 16;
  m.mla.v_head_dim = 16;
  const model::AttentionWidths w = model::attention_widths(m);
  CHECK(w.qk == 24);
  CHECK(w.qkv == 4 * (2 * 24 + 16));
  CHECK(w.out_in == 4 * 16);
  runtime::Program p;
  model::IterationBatch b;
  b.prefill.push_back({10, 5, true});
  b.decode_seqs = 3;
  b.decode_kv_tokens = 30;
  runtime::add_engine_iteration(p, m, {0, 1}, b, 1);
  const auto& ks = p.devices.at(1).second;
  CHECK(ks.front().n == w.qkv / 2);
  const auto decode = std::find_if(ks.begin(), ks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::decode_attention; });
  REQUIRE(decode != ks.end());
  // Every head of the rank on one latent vector a token (rank + rotary key), its first kv_lora_rank the value.
  CHECK(decode->kv_heads == 1);
  CHECK(decode->heads == 2);
  CHECK(decode->head_dim == 40);
  CHECK(decode->value_dim == 32);
  CHECK(decode->bytes == doctest::Approx(model::kv_bytes_per_token_per_gpu(m, 2, 1) * 30 / 2));
  // The prefill's attention at the query-key dimension, its FLOPs over qk + v.
  const auto prefill = std::find_if(ks.begin(), ks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::attention; });
  REQUIRE(prefill != ks.end());
  CHECK(prefill->head_dim == 24);
  // The latent kernel reads its cache once for keys and values, and runs.
  calib::cpu::DecodeAttention latent, separate;
  latent.prepare(3, 50, 2, 1, 40, 32);
  separate.prepare(3, 50, 2, 1, 40);
  CHECK(latent.kv_bytes() == doctest::Approx(separate.kv_bytes() / 2));
  latent.run();
  REQUIRE(latent.o.size() == 3);
  CHECK(latent.o[0].cols() == 32);
  CHECK(latent.o[0].allFinite());
  // Training runs its projections at the same widths.
  model::TrainRequest r;
  r.layout.dp = 2;
  r.layout.micro_batch = 1;
  r.seq_len = 32;
  runtime::Program t;
  runtime::add_micro_batch(t, m, r, {0}, false);
  const auto& tks = t.devices.at(0).second;
  CHECK(std::find_if(tks.begin(), tks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::gemm; })->n == w.qkv);
  runtime::CpuBackend cpu(2, 60);
  CHECK(cpu.run(p, "mla-engine").checksum_failures == 0);
  CHECK(cpu.run(t, "mla-train").kernels.attention > 0);
}

TEST_CASE("a speculative verification step: k + 1 rows a sequence, their queries reading each cache once") {
  const auto m = tiny_model();  // 4 heads on 2 KV heads
  model::IterationBatch b;
  b.decode_seqs = 3;
  b.decode_kv_tokens = 30;
  b.decode_rows_per_seq = 5;  // four draft tokens and the bonus
  runtime::Program p;
  runtime::add_engine_iteration(p, m, {0}, b, 1);
  const auto& ks = p.devices.at(0).second;
  CHECK(ks.front().m == 3 * 5);  // the projections over every row
  const auto decode = std::find_if(ks.begin(), ks.end(), [](const Kernel& k) { return k.kind == Kernel::Kind::decode_attention; });
  REQUIRE(decode != ks.end());
  CHECK(decode->seqs == 3);
  CHECK(decode->kv_heads == 2);
  CHECK(decode->heads == 4 * 5);  // each KV head's group of queries, for five rows
  CHECK(decode->bytes == doctest::Approx(model::kv_bytes_per_token_per_gpu(m, 1, 1) * 30 / 2));
  runtime::CpuBackend cpu(1, 60);
  CHECK(cpu.run(p, "verify").kernels.decode_attention > 0);
}

TEST_CASE("an engine iteration first waits, busy, for the host's work the inference model charges") {
  const auto m = tiny_model();  // two layers
  model::IterationBatch b;
  b.prefill.push_back({10, 5, true});
  b.decode_seqs = 3;
  b.decode_kv_tokens = 30;
  model::EngineExecution exec;
  exec.host_fixed_s = 1e-3;
  exec.host_per_sequence_s = 1e-4;
  runtime::Program p;
  runtime::add_engine_iteration(p, m, {0}, b, 2, 2, exec);
  std::vector<Kernel> waits;
  for (const auto& k : p.on(0))
    if (k.kind == Kernel::Kind::wait) waits.push_back(k);
  REQUIRE(waits.size() == 2);  // one an iteration, before its kernels
  CHECK(p.on(0).front().kind == Kernel::Kind::wait);
  CHECK(waits[0].busy);
  CHECK(waits[0].seconds == doctest::Approx(1e-3 + 4 * 1e-4));  // four sequences: a chunk and three decoding
  // Eager: each short kernel's dispatch too. A layer's norms, rotary, residual adds, activation and
  // KV write (7), a prefill and a decode attention kernel, no all-reduce at tp 1: 9 a layer, and
  // softmax, sampling and the write-back: 2 x 9 + 3 = 21.
  exec.eager = true;
  exec.dispatch_s = 1e-5;
  CHECK(model::short_kernels_per_iteration(m, 1, true, true) == 21);
  runtime::Program eager;
  runtime::add_engine_iteration(eager, m, {0}, b, 1, 2, exec);
  CHECK(eager.on(0).front().seconds == doctest::Approx(1e-3 + 4 * 1e-4 + 21 * 1e-5));
  // The same as the inference model's overhead and eager dispatch for the iteration.
  const auto model_m = test::preset_model("qwen3-8b");
  const auto cluster = test::preset_cluster("dgx-h100", 1);
  model::InferenceModel im(model_m, cluster, {1, 1, 1});
  im.set_execution(exec);
  const auto cost = im.iteration(b);
  runtime::Program real;
  runtime::add_engine_iteration(real, model_m, {0}, b, 1, 2, exec);
  CHECK(real.on(0).front().seconds == doctest::Approx(cost.overhead_s + cost.eager_s));
  // The host's work counts as the engine's busy time: one span with the kernels after it.
  runtime::CpuBackend cpu(1, 60);
  const auto stats = cpu.run(p, "host");
  REQUIRE(stats.busy.size() == 1);
  CHECK(stats.busy[0].second.size() == 1);
  CHECK(stats.kernels.wait >= 2 * (1e-3 + 4 * 1e-4));
}

TEST_CASE("validate refuses what the runtime cannot execute, naming the field") {
  input::Diagnostics diag;
  std::vector<std::string> overrides;
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  CHECK(runtime::unsupported_reason(*s).empty());
  // A training state swapped through pageable host memory is priced, not executed.
  auto to_cpu = *s;
  to_cpu.policy.weight_sync_state = input::StateSwap::to_cpu;
  CHECK(runtime::unsupported_reason(to_cpu).rfind("/policy/weight_sync/state", 0) == 0);
  // Pipeline stages run in the 1F1B schedule, interleaved too, and with ZeRO-3 (not both); context
  // parallelism runs as Ulysses and is refused as ring attention (which hides its exchanges).
  // Expert parallelism runs over data-parallel peers: with tp (or cp) above 1 the experts' groups
  // are consecutive devices, which the runtime does not build.
  auto ep = *s;
  ep.policy.train.ep = 2;
  ep.policy.train.dp = 2;
  ep.policy.train.tp = 2;
  CHECK(runtime::unsupported_reason(ep).rfind("/policy/train/ep: with tp or cp above 1", 0) == 0);
  auto ep_pass = *s;  // and a pass in its own layout keeps the training's ep
  ep_pass.policy.train.ep = 2;
  ep_pass.policy.train.dp = 2;
  ep_pass.policy.old_logprob = input::InferenceLayout{};
  ep_pass.policy.old_logprob->tp = 2;
  CHECK(runtime::unsupported_reason(ep_pass).rfind("/policy/old_logprob: the training's ep = 2", 0) == 0);
  auto pp = *s;
  pp.policy.train.pp = 2;
  pp.policy.train.dp = 1;
  CHECK(runtime::unsupported_reason(pp).empty());
  pp.policy.train.vpp = 2;  // runs, with the overlapped transfers interleaving defaults to switched off
  CHECK(runtime::unsupported_reason(pp).rfind("/policy/train/overlap", 0) == 0);
  pp.policy.train.overlap.p2p = false;
  CHECK(runtime::unsupported_reason(pp).empty());
  pp.policy.train.zero = 3;
  pp.policy.train.overlap.param_gather = pp.policy.train.overlap.grad_reduce = false;
  CHECK(runtime::unsupported_reason(pp).rfind("/policy/train/vpp: ZeRO-3", 0) == 0);
  pp.policy.train.overlap = {};
  pp.policy.train.zero = 1;
  pp.policy.train.vpp = 1;
  pp.policy.train.zero = 3;  // runs, with the overlap that ZeRO-3 defaults to switched off
  CHECK(runtime::unsupported_reason(pp).rfind("/policy/train/overlap", 0) == 0);
  pp.policy.train.overlap.param_gather = pp.policy.train.overlap.grad_reduce = false;
  CHECK(runtime::unsupported_reason(pp).empty());
  pp.policy.train.overlap = {};
  pp.policy.train.zero = 1;
  pp.policy.train.cp = 2;
  CHECK(runtime::unsupported_reason(pp).rfind("/policy/train/cp_kind: ring attention", 0) == 0);
  pp.policy.train.ulysses = true;
  CHECK(runtime::unsupported_reason(pp).empty());
  pp.policy.train.ep = 2;
  CHECK(runtime::unsupported_reason(pp).rfind("/policy/train/ep", 0) == 0);
  pp.policy.train.ep = 1;
  // Mixture-of-experts models run, with expert parallelism over data-parallel ranks (tp x dp here)
  // and with ZeRO-3 (its experts gathered over their own group); ZeRO-3 never with pipeline stages.
  auto moe = *s;
  moe.model.has_moe = true;
  moe.model.moe.num_experts = 4;
  moe.model.moe.experts_per_token = 2;
  moe.model.moe.expert_ffn_hidden_size = 256;
  CHECK(runtime::unsupported_reason(moe).empty());
  moe.policy.train.ep = 2;
  CHECK(runtime::unsupported_reason(moe).empty());
  moe.policy.train.zero = 3;
  CHECK(runtime::unsupported_reason(moe).rfind("/policy/train/overlap", 0) == 0);  // FSDP's default prefetch
  moe.policy.train.overlap.param_gather = moe.policy.train.overlap.grad_reduce = false;
  CHECK(runtime::unsupported_reason(moe).empty());
  // Asynchronous steps run: their activities one at a time, placed on the step graph as measured.
  auto async = *s;
  async.policy.sync = input::SyncMode::async;
  CHECK(runtime::unsupported_reason(async).empty());
  // Disaggregated plans run, their weights broadcast to the engines; the other methods are refused there.
  auto disaggregated = *s;
  disaggregated.policy.placement = input::Placement::disaggregated;
  CHECK(runtime::unsupported_reason(disaggregated).empty());
  disaggregated.policy.weight_sync = input::WeightSync::allgather_swap;
  CHECK(runtime::unsupported_reason(disaggregated).rfind("/policy/weight_sync/method", 0) == 0);
  auto broadcast = *s;
  broadcast.policy.weight_sync = input::WeightSync::broadcast;
  CHECK(runtime::unsupported_reason(broadcast).rfind("/policy/weight_sync/method", 0) == 0);
  // A critic and pass layouts of tp x dp x pp run; a pass layout with cp is refused.
  auto ppo = *s;
  ppo.workload.critic = s->model;
  ppo.policy.old_logprob = input::InferenceLayout{2, 1, 1, 1};
  CHECK(runtime::unsupported_reason(ppo).empty());
  ppo.policy.ref_logprob = input::InferenceLayout{1, 2, 1, 1};
  CHECK(runtime::unsupported_reason(ppo).empty());
  ppo.policy.ref_logprob = input::InferenceLayout{1, 1, 1, 2};
  CHECK(runtime::unsupported_reason(ppo).rfind("/policy/ref_logprob", 0) == 0);
  // Offloaded optimizer states run; offloaded weights (uploads behind the compute) are refused.
  auto offload = *s;
  offload.policy.train.offload_optimizer = true;
  CHECK(runtime::unsupported_reason(offload).empty());
  offload.policy.train.offload_params = true;
  CHECK(runtime::unsupported_reason(offload).rfind("/policy/train/offload_params", 0) == 0);
  // ZeRO-3 runs with its gathers and reductions not overlapped, sharded over all ranks or hybrid.
  auto zero3 = *s;
  zero3.policy.train.zero = 3;
  CHECK(runtime::unsupported_reason(zero3).rfind("/policy/train/overlap", 0) == 0);  // FSDP's default overlap
  zero3.policy.train.overlap.param_gather = false;
  zero3.policy.train.overlap.grad_reduce = false;
  CHECK(runtime::unsupported_reason(zero3).empty());
  zero3.policy.train.shard_group = 1;
  CHECK(runtime::unsupported_reason(zero3).empty());
  // A pass that keeps the training's shard group over more ranks shards in hybrid groups too.
  auto pass = *s;
  pass.policy.train.zero = 1;
  pass.policy.train.tp = 2;  // training tp 2 x dp 2; the old log-probs tp 1 x dp 4, shard groups of 2
  pass.policy.train.shard_group = 2;
  pass.policy.old_logprob = input::InferenceLayout{1, 1, 4, 1};
  CHECK(runtime::unsupported_reason(pass).empty());
  // Partial rollouts and layout switches run.
  auto partial = *s;
  partial.policy.partial_rollout = 0.5;
  CHECK(runtime::unsupported_reason(partial).empty());
  auto switched = *s;
  switched.policy.schedule.push_back({});
  CHECK(runtime::unsupported_reason(switched).empty());
  // ... and each scheduled layout is checked as the base ones are, named at its entry.
  input::TrainLayout scheduled = s->policy.train;
  scheduled.pp = 2;
  scheduled.dp = 1;
  switched.policy.schedule.push_back({2, -1, std::nullopt, scheduled});
  CHECK(runtime::unsupported_reason(switched).empty());
  switched.policy.schedule.back().train->vpp = 2;  // its transfers overlapped by default
  CHECK(runtime::unsupported_reason(switched).rfind("/policy/schedule/1/train/overlap", 0) == 0);
  switched.policy.schedule.back().train->vpp = 1;
  switched.policy.schedule.back().rollout = input::RolloutLayout{};
  switched.policy.schedule.back().rollout->pp = 2;
  CHECK(runtime::unsupported_reason(switched).rfind("/policy/schedule/1/rollout", 0) == 0);
  // Pipeline transfers overlapped with the compute are priced hidden: refused, as the runtime blocks on them.
  auto p2p = pp;
  p2p.policy.train.zero = 1;
  p2p.policy.train.cp = 1;
  p2p.policy.train.overlap.p2p = true;
  CHECK(runtime::unsupported_reason(p2p).rfind("/policy/train/overlap", 0) == 0);
}

TEST_CASE("--scale: fewer layers, shorter sequences, fewer prompts, limits that still hold") {
  input::Diagnostics diag;
  std::vector<std::string> overrides;
  auto s = input::load_scenario(std::string(ARLSIM_SOURCE_DIR) + "/scenarios/cpu-validate.json", overrides, diag);
  REQUIRE(s);
  input::ScenarioSpec spec = *s;
  spec.workload.prompts_per_step = 6;  // 6 x 4 = 24 trajectories in 2 mini-batches
  trace::Trace t;
  t.intern_tool("python");
  for (int32_t step = 1; step <= 2; ++step)
    for (int64_t prompt = 0; prompt < 6; ++prompt)
      for (int32_t sample = 0; sample < 4; ++sample) {
        trace::TrajectoryInfo info;
        info.step = step;
        info.sample = sample;
        info.prompt_id = 100 * step + prompt;
        std::vector<trace::Turn> turns(2);
        turns[0].prefill_tokens = 101;
        turns[0].gen_tokens = 3 + sample;
        turns[0].obs_tokens = 1;
        turns[0].tool = 0;
        turns[1].gen_tokens = 50;
        t.add(info, turns);
      }
  const auto note = runtime::scale_plan(spec, t, 0.25);
  CHECK(note.layers_from == 4);
  CHECK(spec.model.num_layers == 1);
  // round(6 x 0.25) = 2 prompts: 8 trajectories split into 2 mini-batches
  CHECK(spec.workload.prompts_per_step == 2);
  REQUIRE(t.size() == 2 * 2 * 4);
  CHECK(t.trajectory(0).info.prompt_id == 100);
  CHECK(t.trajectory(7).info.prompt_id == 101);
  CHECK(t.trajectory(8).info.prompt_id == 200);
  const auto v = t.trajectory(3);
  CHECK(v.turns[0].prefill_tokens == 26);  // ceil(101 / 4)
  CHECK(v.turns[0].gen_tokens == 2);       // ceil(6 / 4)
  CHECK(v.turns[0].obs_tokens == 1);       // a non-zero count stays non-zero
  CHECK(v.turns[1].prefill_tokens == 0);   // and a zero stays zero
  CHECK(v.turns[1].gen_tokens == 13);
  CHECK(spec.workload.max_prompt_tokens >= 26);
  CHECK(spec.workload.max_response_tokens >= v.response_tokens());
  CHECK(t.tool_names() == std::vector<std::string>{"python"});

  // Prompts rounded up until the trajectories split into the mini-batches and each over dp:
  // 3 x 4 = 12 into 8 no, 4 x 4 = 16 yes.
  input::ScenarioSpec odd = *s;
  odd.workload.prompts_per_step = 6;
  odd.workload.mini_batches = 4;
  odd.policy.train.dp = 2;
  trace::Trace empty;
  runtime::scale_plan(odd, empty, 0.5);
  CHECK(odd.workload.prompts_per_step == 4);

  // A trajectory the context limit cuts stays cut: the scaled limit does not grow to hold it.
  input::ScenarioSpec capped = *s;
  capped.workload.max_prompt_tokens = 100;
  capped.workload.max_response_tokens = 100;
  capped.workload.max_context_tokens = 200;
  trace::Trace long_one;
  trace::TrajectoryInfo info;
  info.step = 1;
  std::vector<trace::Turn> turns(1);
  turns[0].prefill_tokens = 100;
  turns[0].gen_tokens = 1000;  // cut at 200 by the limit
  long_one.add(info, turns);
  runtime::scale_plan(capped, long_one, 0.5);
  CHECK(capped.workload.max_context_tokens == 100);
  CHECK(capped.workload.max_prompt_tokens + capped.workload.max_response_tokens <= capped.workload.max_context_tokens);
}

TEST_CASE("activities the prediction overlaps on devices of their own run at once, in one merged program") {
  // Step 2's rollout (device 0) overlaps step 1's passes and training (device 1), which follow one
  // another; a weight sync on both devices and a timer overlap nothing they could run beside.
  auto record = [](graph::Stage stage, double start, double end) {
    exec::ActivityRecord a;
    a.stage = stage;
    a.start_s = start;
    a.end_s = end;
    return a;
  };
  const std::vector<exec::ActivityRecord> acts = {
      record(graph::Stage::old_logprob, 0, 2), record(graph::Stage::train, 2, 6), record(graph::Stage::rollout, 1, 5),
      record(graph::Stage::weight_sync, 6, 7), record(graph::Stage::reward, 5, 5.5)};
  const std::vector<std::set<int64_t>> devices = {{1}, {1}, {0}, {0, 1}, {}};
  const auto waves = runtime::concurrent_waves(acts, devices);
  // The rollout overlaps training most (3 s, the pass 1 s): they run at once; the pass alone (it
  // does not overlap training, whose device it shares); the timer and the sync alone.
  REQUIRE(waves.size() == 4);
  CHECK(waves[0] == std::vector<size_t>{0});
  CHECK(waves[1] == std::vector<size_t>{1, 2});
  CHECK(waves[2] == std::vector<size_t>{3});
  CHECK(waves[3] == std::vector<size_t>{4});
  // Merging renumbers the groups: each program's collectives keep their own devices.
  runtime::Program a, b;
  Kernel c;
  c.kind = Kernel::Kind::collective;
  c.op = model::CollectiveOp::all_reduce;
  c.bytes = 4096;
  c.group = a.group({0, 1});
  a.on(0).push_back(c);
  a.on(1).push_back(c);
  c.group = b.group({2, 3});
  b.on(2).push_back(c);
  b.on(3).push_back(c);
  runtime::merge_into(a, b);
  REQUIRE(a.groups.size() == 2);
  CHECK(a.groups[static_cast<size_t>(a.on(3).front().group)] == runtime::DeviceGroup{2, 3});
  CHECK(a.groups[static_cast<size_t>(a.on(0).front().group)] == runtime::DeviceGroup{0, 1});
  runtime::CpuBackend cpu(4, 60);
  const auto stats = cpu.run(a, "merged");
  CHECK(stats.checksum_failures == 0);
  CHECK(stats.device_seconds.size() == 4);
}
