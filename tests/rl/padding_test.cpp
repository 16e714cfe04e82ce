// Padded tensors (a workload's `padding`) and the critic's own token budget: what they cost a
// step's passes and training, and the memory they are checked at.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/rl/step.h"
#include "tests/rl/step_fixtures.h"

using namespace arlsim;

using test::scenario;
using test::small_trace;

namespace {


// One step of the default scenario with `base` and then `extra` overrides, which must not OOM.
rl::StageTimes one_step(const std::vector<std::string>& base, const std::vector<std::string>& extra) {
  std::vector<std::string> all = base;
  all.insert(all.end(), extra.begin(), extra.end());
  const auto s = scenario(all);
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() == 1);
  REQUIRE_FALSE(r.steps[0].oom);
  return r.steps[0].stages;
}

}  // namespace

TEST_CASE("step: a model that computes padded tensors prices every sequence at the limits' length, whatever it holds") {
  // Short samples in small limits, micro-batches by count: a padded pass depends on the samples'
  // number and the limits only.
  const std::vector<std::string> base{"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4",
                                      "/policy/train/max_tokens_per_gpu=null", "/policy/train/micro_batch=2",
                                      "/workload/max_prompt_tokens=512", "/workload/max_response_tokens=1536",
                                      "/workload/max_context_tokens=2048", "/workload/max_turns=1",
                                      "/trace/generate/prompts_per_step=8", "/trace/generate/group_size=8"};
  const auto step_of = [&](const std::vector<std::string>& extra) { return one_step(base, extra); };
  const auto packed = step_of({});
  const auto padded = step_of({"/workload/padding={\"policy\": \"limits\"}"});
  CHECK(padded.old_logprob > 1.5 * packed.old_logprob);
  CHECK(padded.train > 1.5 * packed.train);
  CHECK(padded.rollout == doctest::Approx(packed.rollout));  // the engines generate as before
  // Padded, other lengths in the same limits cost the same: the tensors are as wide.
  const auto shorter = step_of({"/workload/padding={\"policy\": \"limits\"}", "/trace/generate/options={\"response-mean\": 300}"});
  CHECK(step_of({"/trace/generate/options={\"response-mean\": 300}"}).old_logprob < 0.95 * packed.old_logprob);  // they are shorter
  CHECK(shorter.old_logprob == doctest::Approx(padded.old_logprob).epsilon(1e-9));
  CHECK(shorter.train == doctest::Approx(padded.train).epsilon(1e-9));
  // The critic's padding is the critic's: a GRPO step has none, and the policy's passes do not move.
  const auto critic_only = step_of({"/workload/padding={\"critic\": \"limits\"}"});
  CHECK(critic_only.old_logprob == doctest::Approx(packed.old_logprob));
  CHECK(critic_only.train == doctest::Approx(packed.train));
}

TEST_CASE("micro-batches: padded, each sequence is the padded length, the packing unchanged") {
  std::vector<rl::MicroBatch> b = {{1000, 6e5, 2}, {300, 9e4, 1}, {5000, 25e6, 1}};
  rl::pad_micro_batches_to(b, 2048);
  CHECK(b[0].tokens == 4096);
  CHECK(b[0].squares == doctest::Approx(2 * 2048.0 * 2048.0));
  CHECK(b[1].tokens == 2048);
  CHECK(b[1].sequences == 1);
  CHECK(b[2].tokens == 5000);  // a context longer than the padded width keeps its own
  CHECK(b[2].squares == doctest::Approx(25e6));
  rl::pad_micro_batches_to(b, 0);  // not padded: as they are
  CHECK(b[0].tokens == 4096);
  CHECK(rl::largest_micro_batch({b, {}}) == 5000);
}

TEST_CASE("step: the critic trains in its own token budget where the layout gives one") {
  const std::vector<std::string> base{"/steps=1", "/cluster/nodes=1", "/policy/train/dp=4", "/policy/train/zero=3",
                                      "/policy/train/max_tokens_per_gpu=4096", "/workload/algorithm=\"ppo\"",
                                      "/workload/critic=\"qwen3-4b\"", "/trace/generate/prompts_per_step=16",
                                      "/trace/generate/group_size=8"};
  const auto step_of = [&](const std::vector<std::string>& extra) { return one_step(base, extra); };
  const auto shared = step_of({});
  const auto same = step_of({"/policy/train/critic_max_tokens_per_gpu=4096"});
  CHECK(same.train == doctest::Approx(shared.train).epsilon(1e-12));  // the actor's budget: nothing changes
  CHECK(same.critic == doctest::Approx(shared.critic).epsilon(1e-12));
  // A larger budget: fewer micro-batches, fewer gathers of the ZeRO-3 shards for the critic alone.
  const auto own = step_of({"/policy/train/critic_max_tokens_per_gpu=32768"});
  CHECK(own.train < shared.train);
  CHECK(own.critic <= shared.critic);
  CHECK(own.old_logprob == doctest::Approx(shared.old_logprob).epsilon(1e-12));
}

TEST_CASE("step: padded micro-batches under a token budget are checked for memory at their padded width") {
  // 18,432-token tensors, a 16,384-token budget of real tokens: each micro-batch holds several.
  const auto s = scenario({"/steps=1", "/workload/padding={\"policy\": \"limits\"}"});
  const auto r = rl::simulate_run(s, small_trace(s), {});
  REQUIRE(r.steps.size() <= 1);
  REQUIRE_FALSE(r.oom_events.empty());
  CHECK(r.oom_events[0].stage == "train");
}
