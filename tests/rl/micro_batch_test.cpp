// Training's micro-batches: how a rank's samples are packed, how ranks and pipelines take them,
// and the timer that prices them.
#include <doctest/doctest.h>

#include "sim/rl/step.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

input::ScenarioSpec scenario(const std::vector<std::string>& overrides) { return test::preset_scenario("default", overrides); }

}  // namespace

TEST_CASE("micro-batches: a token budget packs a rank's samples into ceil(tokens / budget) balanced micro-batches") {
  input::TrainLayout l;
  l.max_tokens_per_gpu = 8192;
  // 11,500 tokens: two micro-batches; longest first onto the lighter: {5000, 1000} and {3000, 2000, 500}.
  const auto b = rl::rank_micro_batches({5000, 3000, 2000, 1000, 500}, l);
  REQUIRE(b.size() == 2);
  CHECK(b[0].tokens == 6000);
  CHECK(b[0].squares == doctest::Approx(26e6));
  CHECK(b[1].tokens == 5500);
  CHECK(b[1].squares == doctest::Approx(13.25e6));
  // Asked for more (a pipeline's common count), never more than the samples.
  CHECK(rl::rank_micro_batches({5000, 3000, 2000, 1000, 500}, l, 4).size() == 4);
  CHECK(rl::rank_micro_batches({5000, 3000}, l, 4).size() == 2);
  // Context parallelism: the budget is per GPU, a rank's sequence spans cp of them.
  l.cp = 2;
  CHECK(rl::rank_micro_batches({5000, 3000, 2000, 1000, 500}, l).size() == 1);
  // Without a budget: micro_batch sequences each, in order.
  input::TrainLayout fixed;
  fixed.micro_batch = 2;
  const auto f = rl::rank_micro_batches({100, 200, 300}, fixed);
  REQUIRE(f.size() == 2);
  CHECK(f[0].tokens == 300);
  CHECK(f[1].tokens == 300);
  CHECK(f[1].squares == doctest::Approx(90000));
  CHECK(rl::rank_micro_batches({}, fixed).empty());
}

TEST_CASE("micro-batches: a pipeline over unequal slots is their sum and fill / v of the longest") {
  CHECK(rl::pipeline_seconds({1, 2, 3}, 3.0) == doctest::Approx(6 + 3 * 3));  // four equal stages: a fill of 3
  CHECK(rl::pipeline_seconds({2, 2}, 3.0, 2) == doctest::Approx((2 + 3.0 / 2) * 2));
  CHECK(rl::pipeline_seconds({2, 5}, 0.0) == doctest::Approx(7));
  CHECK(rl::pipeline_seconds({1, 2, 3}, 1.5) == doctest::Approx(6 + 1.5 * 3));  // unequal stages fill less
  CHECK(rl::pipeline_seconds({}, 3.0) == 0);
}

TEST_CASE("micro-batches: ZeRO-3 ranks go through their micro-batches in step; others end with the busiest") {
  input::TrainLayout l;
  l.dp = 4;
  // Rank 0: 3 + 1; rank 1: 1 + 3 + 2; ranks 2 and 3: 2 each, one micro-batch.
  const std::vector<std::vector<double>> slots = {{3, 1}, {1, 3, 2}, {2}, {2}};
  l.zero = 1;  // gradients reduced once: the busiest rank's sum
  CHECK(rl::ranks_seconds(slots, l, 0.0) == doctest::Approx(6));
  l.zero = 3;  // in step: max(3, 1, 2, 2) + max(1, 3) + 2
  CHECK(rl::ranks_seconds(slots, l, 0.0) == doctest::Approx(3 + 3 + 2));
  l.shard_group = 2;  // two shard groups in step each: {3 + 3 + 2} and {2}
  CHECK(rl::ranks_seconds(slots, l, 0.0) == doctest::Approx(8));
  l.cp = 2;  // groups of 4 GPUs: two data-parallel ranks of cp 2 each, as above
  l.shard_group = 4;
  CHECK(rl::ranks_seconds(slots, l, 0.0) == doctest::Approx(8));
  l.shard_group = 2;  // ... groups of 2: a rank apiece, none in step with another
  CHECK(rl::ranks_seconds(slots, l, 0.0) == doctest::Approx(6));
  l.dp = 3;  // groups of 3 GPUs split ranks of 2, chaining them all: every rank in step
  l.shard_group = 3;
  CHECK(rl::ranks_seconds({{3, 1}, {1, 3, 2}, {2}}, l, 0.0) == doctest::Approx(3 + 3 + 2));
  l.dp = 4;
  l.cp = 1;
  l.shard_group = 0;
  l.pp = 2;  // pipelined ranks keep their pipeline (one count already)
  CHECK(rl::ranks_seconds(slots, l, 1.0) == doctest::Approx(rl::pipeline_seconds({1, 3, 2}, 1.0)));
}

TEST_CASE("micro-batches: each rank splits its samples into mini-batches, and pipelined ranks run one count") {
  // Samples 0..5 on ranks 0, 1, 0, 1, 0, 0.
  const std::vector<int64_t> tokens{10, 20, 30, 40, 50, 60}, rank{0, 1, 0, 1, 0, 0};
  const auto all = rl::samples_by_rank(tokens, rank, 2, 0, 1);
  CHECK(all[0] == std::vector<int64_t>{10, 30, 50, 60});
  CHECK(all[1] == std::vector<int64_t>{20, 40});
  const auto second = rl::samples_by_rank(tokens, rank, 2, 1, 2);
  CHECK(second[0] == std::vector<int64_t>{50, 60});
  CHECK(second[1] == std::vector<int64_t>{40});
  input::TrainLayout l;
  l.max_tokens_per_gpu = 100;
  l.dp = 2;
  // Rank 0 holds 150 tokens (two micro-batches), rank 1 holds 60 (one).
  auto counts = [&](int64_t pp) {
    l.pp = pp;
    const auto b = rl::micro_batches_of_ranks(all, l);
    return std::make_pair(b[0].size(), b[1].size());
  };
  CHECK(counts(1) == std::make_pair(size_t{2}, size_t{1}));
  CHECK(counts(2) == std::make_pair(size_t{2}, size_t{2}));
}

TEST_CASE("micro-batches: padded to the rank's longest under pipeline parallelism when asked") {
  // Rank 0: 10, 30, 50, 60 over a 100-token budget -> two balanced micro-batches, {60, 10} = 70
  // and {50, 30} = 80. Rank 1: 20, 40 -> one of 60, split in two to match rank 0's count under pp:
  // {40} and {20}.
  const std::vector<std::vector<int64_t>> by_rank{{10, 30, 50, 60}, {20, 40}};
  input::TrainLayout l;
  l.max_tokens_per_gpu = 100;
  l.dp = 2;
  l.pp = 2;
  const auto plain = rl::micro_batches_of_ranks(by_rank, l);
  REQUIRE(plain[0].size() == 2);
  CHECK(plain[0][0].tokens + plain[0][1].tokens == 150);
  l.pad_to_longest = true;
  const auto padded = rl::micro_batches_of_ranks(by_rank, l);
  for (size_t r = 0; r < 2; ++r) {
    REQUIRE(padded[r].size() == plain[r].size());
    const int64_t longest = std::max(plain[r][0].tokens, plain[r][1].tokens);
    for (size_t i = 0; i < 2; ++i) {
      const int64_t pad = longest - plain[r][i].tokens;
      CHECK(padded[r][i].tokens == longest);
      // The padding attends as a sequence of its own.
      CHECK(padded[r][i].squares == doctest::Approx(plain[r][i].squares + static_cast<double>(pad * pad)));
    }
  }
  CHECK(padded[0][0].tokens == 80);
  CHECK(padded[1][0].tokens == 40);
  // Without stages nothing is padded: each micro-batch runs at its own length.
  l.pp = 1;
  const auto flat = rl::micro_batches_of_ranks(by_rank, l);
  CHECK(flat[0][0].tokens + flat[0][1].tokens == 150);
}

TEST_CASE("micro-batches: equal micro-batches through the timer give the estimate's pipeline") {
  const auto s = scenario({"/policy/train/pp=2", "/policy/train/dp=4", "/policy/train/vpp=2"});
  const auto& l = s.policy.train;
  rl::MicroBatchTimer timer(s, s.model, l, false);
  // Eight sequences of 2,048 tokens per rank, one per micro-batch.
  auto r = rl::train_request(l, 8 * l.dp, 2048, s.workload);
  r.layout.max_tokens_per_gpu = 0;
  r.layout.micro_batch = 1;
  r.global_batch = 8 * l.dp;
  const auto e = model::estimate_train(s.model, s.cluster, r);
  REQUIRE(e.micro_batches == 8);
  std::vector<double> slots(8, timer.train({2048, 2048.0 * 2048}));
  CHECK(rl::pipeline_seconds(slots, e.breakdown.fill_slots, l.vpp) == test::near(e.breakdown.pipeline_s));
  CHECK(e.breakdown.fill_slots == doctest::Approx(timer.fill({2048, 2048.0 * 2048}, false)));
  // Forward only: the pipeline filled once, (m + fill) forward slots.
  std::vector<double> forward(8, timer.forward({2048, 2048.0 * 2048}));
  auto fr = r;
  fr.layout.vpp = 1;
  rl::MicroBatchTimer plain(s, s.model, fr.layout, false);
  std::vector<double> plain_forward(8, plain.forward({2048, 2048.0 * 2048}));
  CHECK(rl::pipeline_seconds(plain_forward, plain.fill({2048, 2048.0 * 2048}, true)) ==
        test::near(model::estimate_forward_seconds(s.model, s.cluster, fr)));
  // A micro-batch of two sequences does the work of their tokens, its attention that of its
  // squares: less than one sequence of the same tokens, more than the linear part alone.
  const double packed = timer.train({4096, 2 * 2048.0 * 2048}), one = timer.train({4096, 4096.0 * 4096});
  CHECK(packed < one);
  CHECK(packed > 1.5 * timer.train({2048, 2048.0 * 2048}));
}

TEST_CASE("micro-batches: a batch whose long samples share one mini-batch trains slower than one that spreads them") {
  // The same samples twice: once in order (the long ones all land in the first mini-batch of every
  // rank), once interleaved. The mean length, and so the old estimate, is the same.
  const auto s = scenario({"/policy/train/dp=8", "/policy/balance_batch=false"});
  std::vector<int64_t> clumped, spread;
  for (int i = 0; i < 64; ++i) clumped.push_back(i % 16 < 4 ? 8000 : 1000);
  for (int i = 0; i < 64; ++i) spread.push_back(i % 4 == 0 ? 8000 : 1000);
  auto train_time = [&](const std::vector<int64_t>& tokens) {
    const auto rank = rl::assign_ranks(tokens, 8, false);
    rl::MicroBatchTimer timer(s, s.model, s.policy.train, false);
    double total = 0;
    for (int64_t j = 0; j < 4; ++j) {
      double busiest = 0;
      for (const auto& b : rl::micro_batches_of_ranks(rl::samples_by_rank(tokens, rank, 8, j, 4), s.policy.train)) {
        std::vector<double> slots;
        for (const auto& mb : b) slots.push_back(timer.train(mb));
        busiest = std::max(busiest, rl::pipeline_seconds(slots, 0.0));
      }
      total += busiest;
    }
    return total;
  };
  CHECK(train_time(clumped) > train_time(spread));
}

TEST_CASE("micro-batches: in order, an uneven batch splits into consecutive chunks one apart at most") {
  const std::vector<int64_t> ten(10, 100);
  CHECK(rl::assign_ranks(ten, 4, false) == std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3});
  // Fewer samples than ranks: one each, the last ranks idle; an even split is plain chunks.
  CHECK(rl::assign_ranks(std::vector<int64_t>(3, 100), 4, false) == std::vector<int64_t>{0, 1, 2});
  CHECK(rl::assign_ranks(std::vector<int64_t>(8, 100), 4, false) == std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3});
}

TEST_CASE("micro-batches: fit packing keeps every bin within the budget, balanced packing may pass it") {
  input::TrainLayout l;
  l.max_tokens_per_gpu = 4096;
  // 8,000 tokens: balanced packing makes ceil(8000 / 4096) = 2 sets, {3000, 2000} and {3000};
  // no two of these fit one 4,096-token bin, so fit packing makes three.
  const std::vector<int64_t> lengths{3000, 2000, 3000};
  const auto balanced = rl::rank_micro_batches(lengths, l);
  REQUIRE(balanced.size() == 2);
  CHECK(std::max(balanced[0].tokens, balanced[1].tokens) == 5000);
  l.fit_packing = true;
  const auto fit = rl::rank_micro_batches(lengths, l);
  REQUIRE(fit.size() == 3);
  for (const auto& b : fit) CHECK(b.tokens <= 4096);
  // First fit decreasing: 3000 and 3000 open two bins, 1,000 goes to the first with room (the
  // first), 900 and 100 to the second.
  const auto packed = rl::rank_micro_batches({900, 3000, 100, 1000, 3000}, l);
  REQUIRE(packed.size() == 2);
  CHECK(packed[0].tokens == 4000);
  CHECK(packed[1].tokens == 4000);
  CHECK(packed[1].squares == doctest::Approx(3000.0 * 3000 + 900.0 * 900 + 100.0 * 100));
  // Where first fit and best fit differ, the packing is first fit's (eight bins; best fit makes
  // seven): 97 | 96 | 85 14 | 73 22 | 70 21 | 52 44 | 41 36 18 | 12.
  l.max_tokens_per_gpu = 100;
  const auto ffd = rl::rank_micro_batches({97, 96, 85, 73, 70, 52, 44, 41, 36, 22, 21, 18, 14, 12}, l);
  std::vector<int64_t> sums;
  for (const auto& b : ffd) sums.push_back(b.tokens);
  CHECK(sums == std::vector<int64_t>{97, 96, 99, 95, 91, 96, 95, 12});
  l.max_tokens_per_gpu = 4096;
  // A pipeline asking for more micro-batches than bins gets them balanced.
  CHECK(rl::rank_micro_batches(lengths, l, 4).size() == 3);  // three sequences make at most three
  CHECK(rl::rank_micro_batches({1000, 1000, 1000, 1000}, l, 4).size() == 4);
}
