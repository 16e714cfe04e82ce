// Splitting a trajectory's totals into turns, and cutting it at a limit.
#include <doctest/doctest.h>

#include <limits>

#include "sim/trace/turns.h"

using namespace arlsim;
using namespace arlsim::trace;

namespace {

int64_t response_of(const std::vector<Turn>& turns) {
  int64_t total = 0;
  for (size_t i = 0; i < turns.size(); ++i)
    total += (i == 0 ? 0 : turns[i].prefill_tokens) + turns[i].gen_tokens + turns[i].obs_tokens;
  return total;
}

TurnShape one_tool(double obs_tokens) {
  std::string error;
  TurnShape shape;
  shape.tools = {*parse_tool_spec("python: dist=fixed mean=1s", error)};
  shape.obs_tokens = obs_tokens;
  shape.obs_sigma = 0.5;
  shape.turn_prefill_tokens = 4;
  return shape;
}

}  // namespace

TEST_CASE("turns: the parts add up to the totals exactly") {
  TurnBuilder builder(one_tool(200));
  Rng rng(3);
  std::vector<Turn> turns;
  for (int64_t response : {int64_t{1}, int64_t{50}, int64_t{999}, int64_t{12345}}) {
    for (int n : {1, 2, 7, 20}) {
      const bool cut = builder.build(rng, {300, response, n, std::numeric_limits<int64_t>::max()}, turns);
      INFO("response ", response, ", turns ", n);
      CHECK_FALSE(cut);
      CHECK(turns.size() == static_cast<size_t>(n));
      CHECK(turns[0].prefill_tokens == 300);
      // At least one generated token per turn; otherwise the response total is exact.
      CHECK(response_of(turns) == std::max<int64_t>(response, n + 4 * (n - 1)));
      for (size_t k = 0; k < turns.size(); ++k) {
        CHECK(turns[k].gen_tokens >= 1);
        CHECK((turns[k].tool == kNoTool) == (k + 1 == turns.size()));
      }
    }
  }
}

TEST_CASE("turns: a cap cuts the generation in progress and drops later turns") {
  TurnShape shape = one_tool(0);
  shape.turn_prefill_tokens = 0;
  TurnBuilder builder(shape);
  Rng rng(1);
  std::vector<Turn> turns;
  const bool cut = builder.build(rng, {100, 1000, 4, 300}, turns);
  CHECK(cut);
  CHECK(response_of(turns) == 300);
  CHECK(turns.back().tool == kNoTool);  // stopped while generating: no tool call
  CHECK(turns.back().obs_tokens == 0);
  const bool uncut = builder.build(rng, {100, 1000, 4, 1000}, turns);
  CHECK_FALSE(uncut);  // exactly at the cap is not cut
  CHECK(response_of(turns) == 1000);
}

TEST_CASE("turns: an observation that overflows the cap is cut and ends the trajectory") {
  TurnShape shape = one_tool(5000);
  shape.obs_sigma = 0;
  shape.turn_prefill_tokens = 0;
  TurnBuilder builder(shape);
  Rng rng(2);
  std::vector<Turn> turns;
  // 3 turns, 20000 response tokens: observations of 5000 each leave 10000 to generate.
  CHECK(builder.build(rng, {10, 20000, 3, 6000}, turns));
  CHECK(response_of(turns) == 6000);
  CHECK(turns.back().tool == 0);
  CHECK(turns.back().obs_tokens < 5000);
}

TEST_CASE("turns: observations larger than the response shrink to leave each turn a token") {
  TurnShape shape = one_tool(10000);
  shape.turn_prefill_tokens = 0;
  TurnBuilder builder(shape);
  Rng rng(4);
  std::vector<Turn> turns;
  builder.build(rng, {10, 100, 5, std::numeric_limits<int64_t>::max()}, turns);
  CHECK(response_of(turns) == 100);
  for (const Turn& t : turns) CHECK(t.gen_tokens >= 1);
}

TEST_CASE("turns: a single-turn response may be empty") {
  TurnBuilder builder(TurnShape{});
  Rng rng(1);
  std::vector<Turn> turns;
  builder.build(rng, {10, 0, 1, std::numeric_limits<int64_t>::max()}, turns);
  REQUIRE(turns.size() == 1);
  CHECK(turns[0].gen_tokens == 0);
}
