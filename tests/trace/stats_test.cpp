// Trace statistics: nearest-rank percentiles, per-step figures on a hand-made trace, and the
// JSON and SVG forms.
#include <doctest/doctest.h>

#include <cctype>

#include "sim/trace/stats_report.h"

using namespace arlsim;
using namespace arlsim::trace;

TEST_CASE("stats: percentiles are nearest-rank") {
  std::vector<int64_t> v{5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  const Distribution d = summarize(v);
  CHECK(d.mean == 5.5);
  CHECK(d.min == 1);
  CHECK(d.p50 == 5);   // rank ceil(0.5 * 10) = 5
  CHECK(d.p90 == 9);   // rank 9
  CHECK(d.p99 == 10);  // rank ceil(9.9) = 10
  CHECK(d.max == 10);
  std::vector<int64_t> one{42};
  CHECK(summarize(one).p50 == 42);
  std::vector<int64_t> none;
  CHECK(summarize(none).max == 0);
}

TEST_CASE("stats: per-step figures of a small trace") {
  Trace t;
  const int16_t tool = t.intern_tool("python");
  // Step 1: two single-turn trajectories of one prompt; step 2: one with a tool call.
  const Turn a[] = {{100, 300, 0, kNoTool, SimTime::zero()}};
  const Turn b[] = {{100, 900, 0, kNoTool, SimTime::zero()}};
  const Turn c[] = {{200, 400, 50, tool, SimTime::from_seconds(10)}, {5, 45, 0, kNoTool, SimTime::zero()}};
  t.add({1, 0, 0, false}, a);
  t.add({1, 1, 0, true}, b);
  t.add({2, 0, 1, false}, c);
  StatsCollector collector(40);
  replay(t, collector);
  const TraceStats s = collector.finish();
  REQUIRE(s.steps.size() == 2);
  const StepStats& one = s.steps[0];
  CHECK(one.trajectories == 2);
  CHECK(one.groups == 1);
  CHECK(one.response_tokens.mean == 600);
  CHECK(one.response_tokens.p50 == 300);
  CHECK(one.context_tokens.max == 1000);
  CHECK(one.truncated_fraction == 0.5);
  CHECK(one.tail_max_over_median == 3);
  const StepStats& two = s.steps[1];
  CHECK(two.response_tokens.mean == 400 + 50 + 5 + 45);
  CHECK(two.turns.mean == 2);
  CHECK(two.tool_calls_mean == 1);
  CHECK(two.tool_ms.mean == 10000);
  // 10 s of tools against 445 generated tokens at 40 tokens/s.
  CHECK(two.tool_time_share == doctest::Approx(10 / (10 + 445 / 40.0)));
  CHECK(s.tools.size() == 1);
  CHECK(s.tools[0].calls == 1);
  CHECK(s.trajectories == 3);
  CHECK(s.turns == 4);

  const std::string json = stats_json(s);
  CHECK(json.starts_with("[\n{\"step\":1,\"trajectories\":2,"));
  for (const char* key : {"\"response_tokens\":{\"mean\":600,\"min\":300,\"p50\":300,\"p90\":900,\"p99\":900,"
                          "\"max\":900}",
                          "\"context_tokens\":{", "\"turns\":{\"mean\":2,", "\"tail\":{\"p99_over_p50\":"})
    CHECK(json.find(key) != std::string::npos);
  CHECK(json.ends_with("}\n]\n"));

  const std::string table = stats_table(s, "t.jsonl");
  CHECK(table.starts_with("t.jsonl: 2 steps, 3 trajectories, 4 turns\n"));
  CHECK(table.find("growth: mean response 600 -> 500 tokens (x0.83)") != std::string::npos);
  CHECK(table.find("tool python: 1 calls, mean 10.000 s, max 10.000 s") != std::string::npos);
  // A cell wider than its column widens the column: every row's cells end where their heads end.
  TraceStats wide = s;
  wide.steps[0].trajectories = 12'345'678;
  const std::string wide_table = stats_table(wide, "t.jsonl");
  const size_t head = wide_table.find("  step");
  const size_t head_end = wide_table.find('\n', head);
  const std::string head_line = wide_table.substr(head, head_end - head);
  int rows = 0;
  for (size_t at = head_end + 1, end; (end = wide_table.find('\n', at)) != std::string::npos && end > at &&
                                        std::isdigit(static_cast<unsigned char>(wide_table[end - 1]));
       at = end + 1) {
    const std::string row = wide_table.substr(at, end - at);
    CAPTURE(row);
    CHECK(row.size() == head_line.size());
    ++rows;
  }
  CHECK(rows == 2);
  CHECK(head_line.find("     traj") != std::string::npos);  // widened to the 8 digits and a space

  const std::string svg = stats_svg(s, "t.jsonl <test>");
  CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(svg.find("t.jsonl &lt;test&gt;") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.ends_with("</svg>\n"));
}
