// The generator: determinism for a seed, the counts it promises, growth of the mean along the
// chosen curve, limits that truncate, within-group correlation, turn bounds and tool kinds; and
// the shipped presets' headline facts.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "sim/trace/gen_options.h"
#include "sim/trace/stats.h"
#include "sim/trace/writer.h"

using namespace arlsim;
using namespace arlsim::trace;

namespace {

Trace run(const GenParams& p) {
  REQUIRE(check_gen_params(p).empty());
  Trace t;
  TraceBuilder builder(t);
  generate(p, builder);
  return t;
}

TraceStats stats_of(const Trace& t) {
  StatsCollector collector(40);
  replay(t, collector);
  return collector.finish();
}

GenParams small() {
  GenParams p;
  p.steps = 20;
  p.prompts_per_step = 16;
  p.group_size = 8;
  return p;
}

}  // namespace

TEST_CASE("generator: a step's trajectories are the same whichever other steps are generated") {
  GenParams p = small();
  p.every = 3;  // steps 1, 4, 7, ...
  const Trace all = run(p);
  Trace some;
  TraceBuilder builder(some);
  std::vector<int> asked;
  generate(p, builder, [&](int step) {
    asked.push_back(step);
    return step == 7 || step == 13;
  });
  CHECK(asked == std::vector<int>{1, 4, 7, 10, 13, 16, 19});
  REQUIRE(some.size() == 2u * 16 * 8);
  size_t j = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const TrajectoryView a = all.trajectory(i);
    if (a.info.step != 7 && a.info.step != 13) continue;
    const TrajectoryView b = some.trajectory(j++);
    CHECK(a.info == b.info);
    REQUIRE(a.turns.size() == b.turns.size());
    for (size_t k = 0; k < a.turns.size(); ++k) {
      CHECK(a.turns[k].prefill_tokens == b.turns[k].prefill_tokens);
      CHECK(a.turns[k].gen_tokens == b.turns[k].gen_tokens);
      CHECK(a.turns[k].obs_tokens == b.turns[k].obs_tokens);
      CHECK(a.turns[k].tool_latency == b.turns[k].tool_latency);
      auto name = [](const Trace& t, int16_t tool) { return tool == kNoTool ? std::string() : t.tool_names()[tool]; };
      CHECK(name(all, a.turns[k].tool) == name(some, b.turns[k].tool));
    }
  }
  CHECK(j == some.size());
}

TEST_CASE("generator: a seed gives byte-identical output, another seed does not") {
  GenParams p = preset_params(*find_gen_preset("swe-agent"));
  p.steps = 5;
  p.prompts_per_step = 2;
  const std::string a = trace_to_text(run(p));
  CHECK(a == trace_to_text(run(p)));
  p.seed = 2;
  CHECK(a != trace_to_text(run(p)));
}

TEST_CASE("generator: steps x prompts x group trajectories, numbered as promised") {
  GenParams p = small();
  p.first_step = 10;
  p.every = 5;
  const Trace t = run(p);
  CHECK(t.size() == 4 * 16 * 8);  // steps 10, 15, 20, 25 of 10..29
  std::map<int, int> per_step;
  for (size_t i = 0; i < t.size(); ++i) ++per_step[t.trajectory(i).info.step];
  CHECK(per_step == std::map<int, int>{{10, 128}, {15, 128}, {20, 128}, {25, 128}});
  const TrajectoryView last = t.trajectory(t.size() - 1);
  CHECK(last.info.sample == 7);
  CHECK(last.info.prompt_id == 3 * 16 + 15);  // prompt ids do not repeat across steps
}

TEST_CASE("generator: the per-step mean follows the growth curve while no limit is near") {
  GenParams p = small();
  p.prompts_per_step = 128;
  p.response_mean = Growth::linear(1000, 4000);
  p.response_limit = Growth::constant(1 << 20);
  const TraceStats s = stats_of(run(p));
  for (const StepStats& step : s.steps) {
    const double want = p.response_mean.at(step.step, 1, 20);
    CHECK(step.response_tokens.mean == doctest::Approx(want).epsilon(0.15));
  }
  CHECK(s.steps.back().response_tokens.mean / s.steps.front().response_tokens.mean == doctest::Approx(4).epsilon(0.2));
}

TEST_CASE("generator: limits truncate, and raising a limit at a step lets lengths grow past it") {
  GenParams p = small();
  p.response_mean = Growth::linear(6000, 20000);
  p.response_limit = Growth::steps({{0, 8192}, {11, 32768}});
  p.context_limit = Growth::constant(0);
  const Trace t = run(p);
  bool truncated_before = false, longer_after = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const TrajectoryView v = t.trajectory(i);
    const int64_t limit = v.info.step < 11 ? 8192 : 32768;
    CHECK(v.response_tokens() <= limit);
    if (v.info.truncated) CHECK(v.response_tokens() == limit);
    truncated_before |= v.info.step < 11 && v.info.truncated;
    longer_after |= v.response_tokens() > 8192;
  }
  CHECK(truncated_before);
  CHECK(longer_after);
}

TEST_CASE("generator: a context limit bounds prompt plus response") {
  GenParams p = preset_params(*find_gen_preset("earl-game"));
  p.prompts_per_step = 8;
  const Trace t = run(p);
  for (size_t i = 0; i < t.size(); ++i) {
    const TrajectoryView v = t.trajectory(i);
    CHECK(v.context_tokens() <= (v.info.step < 16 ? 8192 : 32768));
  }
}

TEST_CASE("generator: samples of one prompt are correlated as asked") {
  auto within_share = [](double correlation) {
    GenParams p = small();
    p.steps = 1;
    p.prompts_per_step = 400;
    p.response_mean = Growth::constant(4000);
    p.response_limit = Growth::constant(1 << 22);
    p.shape.tail_weight = 0;
    p.group_correlation = correlation;
    const Trace t = run(p);
    // Share of the variance of log-lengths that lies between groups: the correlation.
    std::vector<double> logs(t.size());
    for (size_t i = 0; i < t.size(); ++i) logs[i] = std::log(double(t.trajectory(i).response_tokens()));
    double mean = 0, total = 0, within = 0;
    for (double x : logs) mean += x / double(logs.size());
    for (double x : logs) total += (x - mean) * (x - mean);
    for (size_t g = 0; g < logs.size(); g += 8) {
      double gm = 0;
      for (size_t k = 0; k < 8; ++k) gm += logs[g + k] / 8;
      for (size_t k = 0; k < 8; ++k) within += (logs[g + k] - gm) * (logs[g + k] - gm);
    }
    return 1 - within / total * 8.0 / 7.0;  // unbiased within-group variance
  };
  CHECK(within_share(0.0) == doctest::Approx(0.0).scale(1).epsilon(0.06));
  CHECK(within_share(0.7) == doctest::Approx(0.7).epsilon(0.1));
}

TEST_CASE("generator: turns stay within bounds and tool kinds are numbered in order of first use") {
  GenParams p = preset_params(*find_gen_preset("code-tool"));
  p.steps = 4;
  p.prompts_per_step = 4;
  const Trace t = run(p);
  for (size_t i = 0; i < t.size(); ++i) {
    const TrajectoryView v = t.trajectory(i);
    CHECK(v.turns.size() <= 16);
    if (!v.info.truncated) {
      CHECK(v.turns.size() >= 8);
      CHECK(v.turns.back().tool == kNoTool);  // the last turn answers
    }
    for (size_t k = 0; k + 1 < v.turns.size(); ++k) CHECK(v.turns[k].tool == 0);
    for (const Turn& turn : v.turns) CHECK(turn.tool_latency.seconds() <= 120.0);  // the timeout
  }
  CHECK(t.tool_names() == std::vector<std::string>{"python"});
}

TEST_CASE("generator: cold starts lengthen a trajectory's first call of a tool") {
  GenParams p = small();
  p.turns_mean = Growth::constant(6);
  p.turns_min = p.turns_max = 6;
  std::string error;
  p.tools = {*parse_tool_spec("sandbox: dist=fixed mean=1s cold_start=30s cold_start_prob=1", error)};
  const Trace t = run(p);
  for (size_t i = 0; i < t.size(); ++i) {
    const TrajectoryView v = t.trajectory(i);
    if (v.info.truncated) continue;
    CHECK(v.turns[0].tool_latency == SimTime::from_seconds(31));
    for (size_t k = 1; k + 1 < v.turns.size(); ++k) CHECK(v.turns[k].tool_latency == SimTime::from_seconds(1));
  }
}

TEST_CASE("generator: parameter problems are reported per flag") {
  GenParams p = small();
  p.turns_min = 5;
  p.turns_max = 2;
  p.context_limit = Growth::constant(1000);
  const auto problems = check_gen_params(p);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "--turns-min: 5 is more than --turns-max 2");
  CHECK(problems[1] == "--context-limit: 1000 tokens at step 1 leaves no room for a response after a prompt of up "
                       "to 2048 tokens (--prompt-limit)");
}

TEST_CASE("generator: options parse their values and explain bad ones") {
  GenParams p;
  CHECK(find_gen_option("response-limit")->set(p, "8K,16K@100").empty());
  CHECK(p.response_limit.at(100, 1, 200) == 16384);
  CHECK(find_gen_option("steps")->set(p, "0") == "expected an integer between 1 and 1000000, got 0");
  CHECK(find_gen_option("tail-alpha")->set(p, "1") == "expected a number between 1.05 and 100, got 1");
  CHECK(find_gen_option("turns-dist")->set(p, "poisson") ==
        "unknown turns distribution \"poisson\"; expected one of \"fixed\", \"lognormal\" or \"uniform\"");
  CHECK(find_gen_option("prompt-tokens")->set(p, "1.5K").empty());
  CHECK(p.prompt_tokens == 1536);
}

TEST_CASE("generator: the header records the generator, the preset and every parameter") {
  GenParams p = preset_params(*find_gen_preset("dapo-math"));
  const TraceHeader h = gen_header(p);
  CHECK(h.provenance_json.starts_with(
      R"({"generator":"arlsim trace gen","preset":"dapo-math","parameters":{"seed":1,"steps":200,)"));
  CHECK(h.provenance_json.find(R"("response-limit":20480)") != std::string::npos);
  CHECK(h.provenance_json.find(R"("response-mean":"saturating 2048..9216 tau=70")") != std::string::npos);
  for (const auto& o : gen_options()) CHECK(h.provenance_json.find("\"" + std::string(o.name) + "\":") != std::string::npos);
}

TEST_CASE("generator presets: the headline facts they mimic") {
  SUBCASE("dapo-math: 512 x 16, responses up to 20K, growing") {
    GenParams p = preset_params(*find_gen_preset("dapo-math"));
    CHECK(p.prompts_per_step * p.group_size == 8192);
    p.prompts_per_step = 32;
    p.every = 199;
    const TraceStats s = stats_of(run(p));
    CHECK(s.steps.back().response_tokens.max <= 20480);
    CHECK(s.steps.back().response_tokens.mean > 2.5 * s.steps.front().response_tokens.mean);
  }
  SUBCASE("swe-agent: up to 50 turns, contexts up to 64K") {
    GenParams p = preset_params(*find_gen_preset("swe-agent"));
    p.prompts_per_step = 8;
    p.every = 33;
    const TraceStats s = stats_of(run(p));
    for (const auto& step : s.steps) {
      CHECK(step.turns.max <= 50);
      CHECK(step.context_tokens.max <= 65536);
    }
    CHECK(s.steps.back().turns.max >= 40);
  }
  SUBCASE("search-agent: 2 to 40 tool calls") {
    GenParams p = preset_params(*find_gen_preset("search-agent"));
    p.prompts_per_step = 16;
    p.every = 99;
    const Trace t = run(p);
    int most = 0, fewest = 1000;
    for (size_t i = 0; i < t.size(); ++i) {
      const int calls = t.trajectory(i).tool_calls();
      if (!t.trajectory(i).info.truncated) fewest = std::min(fewest, calls);
      most = std::max(most, calls);
    }
    CHECK(fewest >= 2);
    CHECK(most <= 40);
    CHECK(most >= 30);
  }
  SUBCASE("earl-game: contexts reach the 8K limit around step 13, then grow towards 32K") {
    GenParams p = preset_params(*find_gen_preset("earl-game"));
    const TraceStats s = stats_of(run(p));
    const StepStats& step13 = s.steps[12];
    CHECK(step13.step == 13);
    CHECK(step13.context_tokens.p50 > 6000);
    CHECK(step13.truncated_fraction > 0.2);
    CHECK(s.steps[2].truncated_fraction < 0.1);
    CHECK(s.steps.back().context_tokens.mean > 24000);
    CHECK(s.steps.back().context_tokens.max == 32768);
  }
}

TEST_CASE("generator: a mean after the limits is the mean of the responses as written") {
  GenParams p;
  p.steps = 1;
  p.prompts_per_step = 1024;
  p.group_size = 4;
  p.group_correlation = 0;  // independent samples: the batch mean stays close to the distribution's
  p.prompt_tokens = 150;
  p.prompt_limit = 512;
  p.response_mean = Growth::constant(3056);
  p.response_limit = Growth::constant(3584);
  p.context_limit = Growth::constant(4096);
  const auto mean_response = [](const Trace& t) {
    double sum = 0;
    int64_t truncated = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      const TrajectoryView v = t.trajectory(i);
      for (const auto& turn : v.turns) sum += turn.gen_tokens;
      truncated += v.info.truncated ? 1 : 0;
    }
    return std::pair{sum / static_cast<double>(t.size()), static_cast<double>(truncated) / static_cast<double>(t.size())};
  };
  // Before the limits (the default) the cap at 3,584 tokens takes about a fifth off the mean.
  const auto [before, cut_before] = mean_response(run(p));
  CHECK(before < 0.85 * 3056);
  p.response_mean_after_limits = true;
  const std::optional<double> scale = mean_before_limits(p, 3056, 3584, 4096);
  REQUIRE(scale.has_value());
  CHECK(*scale > 3056);
  const auto [after, cut_after] = mean_response(run(p));
  CHECK(after == doctest::Approx(3056).epsilon(0.02));
  CHECK(cut_after > cut_before);  // the same mean under the same cap: more responses reach it
  // Limits far away: the two means coincide.
  CHECK(*mean_before_limits(p, 1000, 1e9, 0) == doctest::Approx(1000).epsilon(1e-6));
  // The prompt's share of the context limit counts: a tighter context limit needs a larger draw.
  CHECK(*mean_before_limits(p, 1000, 3584, 1300) > *mean_before_limits(p, 1000, 3584, 0));
}

TEST_CASE("generator: a mean after the limits that the limits cannot give is an error") {
  GenParams p = small();
  p.response_mean_after_limits = true;
  p.response_mean = Growth::constant(4000);
  p.response_limit = Growth::constant(4096);
  p.context_limit = Growth::constant(0);
  CHECK(check_gen_params(p).empty());  // below the limit: many responses at it, but reachable
  p.response_mean = Growth::constant(4096);
  const auto problems = check_gen_params(p);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "--response-mean: 4096 tokens after the limits (--response-mean-is after-limits) at step 1 is not "
                       "below what the limits allow: responses all cut at their cap average 4096 tokens "
                       "(--response-limit, --context-limit less the prompt)");
  CHECK(find_gen_option("response-mean-is")->set(p, "observed") ==
        "expected \"before-limits\" or \"after-limits\", got \"observed\"");
  CHECK(find_gen_option("response-mean-is")->set(p, "before-limits").empty());
  CHECK(!p.response_mean_after_limits);
}

TEST_CASE("generator: tells its sink, before the first trajectory, how many trajectories the steps drawn hold") {
  struct Counting final : TraceSink {
    size_t expected = 0, expected_turns = 0, trajectories = 0, turns = 0;
    bool early = false;  // the hint came before any trajectory
    void header(const TraceHeader&) override {}
    void tool_kind(int16_t, std::string_view) override {}
    void expect(size_t n, size_t t) override {
      early = trajectories == 0;
      expected += n;
      expected_turns += t;
    }
    void trajectory(const TrajectoryView& v) override {
      ++trajectories;
      turns += v.turns.size();
    }
  } sink;
  GenParams p = small();
  p.every = 3;
  generate(p, sink, [](int step) { return step == 7 || step == 13 || step == 19; });
  CHECK(sink.early);
  CHECK(sink.trajectories == 3u * 16 * 8);
  CHECK(sink.expected == sink.trajectories);
  CHECK(sink.expected_turns == sink.turns);  // one turn each, as the hint says
  // Four turns each (fewer where a limit cuts one short), above the three the mean alone would
  // suggest: the hint takes the bound.
  p.turns_min = p.turns_max = 4;
  Counting fixed;
  generate(p, fixed, [](int step) { return step == 7; });
  CHECK(fixed.turns > 3u * 16 * 8);
  CHECK(fixed.expected_turns == 4u * 16 * 8);
  CHECK(fixed.expected_turns >= fixed.turns);
}
