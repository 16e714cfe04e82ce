// The streaming reader: checks across lines, tolerance of a cut-off last line when asked, the cap
// on reported problems, and inputs that are valid although unusual.
#include <doctest/doctest.h>

#include "sim/trace/reader.h"

using namespace arlsim;
using namespace arlsim::trace;

namespace {

const std::string kHeader = "{\"format\":\"arlsim-trace/1\",\"provenance\":{}}\n";

std::string line(int step, int prompt, int sample, const std::string& extra = "") {
  return "{\"step\":" + std::to_string(step) + ",\"prompt_id\":" + std::to_string(prompt) +
         ",\"sample\":" + std::to_string(sample) +
         ",\"turns\":[{\"prefill_tokens\":10,\"gen_tokens\":5,\"tool\":null,\"tool_latency_s\":0,\"obs_tokens\":0}]" +
         extra + "}\n";
}

struct Result {
  bool ok;
  std::string messages;
  Trace trace;
};

Result read(const std::string& text, ReadOptions options = {}) {
  Result r;
  TraceBuilder builder(r.trace);
  parse::Diagnostics diag;
  r.ok = read_trace_text(text, "t.jsonl", builder, diag, options);
  r.messages = parse::format_all(diag);
  return r;
}

}  // namespace

TEST_CASE("reader: the issue's example message, to the letter") {
  const std::string bad =
      "{\"step\":1,\"prompt_id\":0,\"sample\":1,\"turns\":[{\"prefill_tokens\":1,\"gen_tokens\":1},"
      "{\"prefill_tokens\":1,\"gen_tokens\":1},{\"prefill_tokens\":1,\"gen_tokens\":-5}]}\n";
  const Result r = read(kHeader + line(1, 0, 0) + bad);
  CHECK_FALSE(r.ok);
  CHECK(r.messages == "t.jsonl:3: /turns/2/gen_tokens: expected a non-negative integer, got -5\n");
}

TEST_CASE("reader: a header whose provenance mentions turns is still the header") {
  const Result r = read("{\"format\":\"arlsim-trace/1\",\"provenance\":{\"fields\":{\"turns\":\"num_turns\"}}}\n" +
                        line(1, 0, 0));
  INFO(r.messages);
  CHECK(r.ok);
  CHECK(r.trace.header.provenance_json == R"({"fields":{"turns":"num_turns"}})");
}

TEST_CASE("reader: optional keys take their defaults, keys may come in any order, whitespace is allowed") {
  const Result r = read(kHeader +
                        " { \"turns\" : [ { \"gen_tokens\" : 7 , \"prefill_tokens\" : 3 } ] , \"sample\" : 2 ,"
                        " \"prompt_id\" : 9 , \"step\" : 4 }\r\n");
  INFO(r.messages);
  REQUIRE(r.ok);
  const TrajectoryView t = r.trace.trajectory(0);
  CHECK(t.info == TrajectoryInfo{4, 2, 9, false});
  CHECK(t.turns.size() == 1);
  CHECK(t.turns[0] == Turn{3, 7, 0, kNoTool, SimTime::zero()});
}

TEST_CASE("reader: blank lines are skipped and a last line without a line break is fine") {
  const std::string last = line(1, 0, 1);
  const Result r = read(kHeader + "\n" + line(1, 0, 0) + "   \n" + last.substr(0, last.size() - 1));
  INFO(r.messages);
  CHECK(r.ok);
  CHECK(r.trace.size() == 2);
}

TEST_CASE("reader: a cut-off last line is an error unless allowed, then a warning") {
  const std::string cut = kHeader + line(1, 0, 0) + line(1, 0, 1).substr(0, 40);
  const Result strict = read(cut);
  CHECK_FALSE(strict.ok);
  CHECK(strict.messages ==
        "t.jsonl:3: the last line is incomplete: the file ends inside a trajectory; if the trace is still being "
        "written, `arlsim trace stats --allow-truncated` reads its complete lines\n");
  ReadOptions tolerant;
  tolerant.allow_truncated_last_line = true;
  const Result r = read(cut, tolerant);
  CHECK(r.ok);
  CHECK(r.trace.size() == 1);
  CHECK(r.messages ==
        "t.jsonl:3: warning: the last line is incomplete (the file ends inside a trajectory); it was ignored\n");
}

TEST_CASE("reader: a broken line that ends with a line break is not mistaken for a cut-off one") {
  ReadOptions tolerant;
  tolerant.allow_truncated_last_line = true;
  const Result r = read(kHeader + line(1, 0, 0) + "{\"step\":1,\"prompt_id\":0,\n", tolerant);
  CHECK_FALSE(r.ok);
  CHECK(r.messages == "t.jsonl:3:25: unexpected end of line inside an object; expected a key\n");
}

TEST_CASE("reader: steps must not decrease, and a step holds each prompt's sample once") {
  const Result r = read(kHeader + line(2, 0, 0) + line(1, 0, 0) + line(2, 0, 0) + line(3, 0, 0) + line(3, 1, 0));
  CHECK_FALSE(r.ok);
  CHECK(r.messages ==
        "t.jsonl:3: /step: step 1 comes after step 2 (line 2); steps must not decrease; sort the trajectories by "
        "step\n"
        "t.jsonl:4: /sample: step 2 already has prompt_id 0, sample 0 (line 2)\n");
}

TEST_CASE("reader: the same prompt and sample in another step is fine") {
  const Result r = read(kHeader + line(1, 0, 0) + line(2, 0, 0));
  CHECK(r.ok);
}

TEST_CASE("reader: every problem is reported, up to the cap, then counted") {
  std::string text = kHeader;
  for (int i = 0; i < 7; ++i) text += "{\"step\":-1,\"prompt_id\":0,\"sample\":" + std::to_string(i) + ",\"turns\":[]}\n";
  ReadOptions options;
  options.max_reported_problems = 3;
  const Result r = read(text, options);
  CHECK_FALSE(r.ok);
  CHECK(r.messages ==
        "t.jsonl:2: /step: expected a non-negative integer, got -1\n"
        "t.jsonl:2: /turns: expected at least one turn, got an empty array\n"
        "t.jsonl:3: /step: expected a non-negative integer, got -1\n"
        "t.jsonl: 11 more problems not shown (14 in all)\n");
}

TEST_CASE("reader: tool kinds are numbered in order of first use") {
  auto turn = [](const std::string& tool) {
    return "{\"prefill_tokens\":1,\"gen_tokens\":1,\"tool\":\"" + tool + "\",\"tool_latency_s\":0.25}";
  };
  const std::string text = kHeader + "{\"step\":0,\"prompt_id\":0,\"sample\":0,\"turns\":[" + turn("search") + "," +
                           turn("python") + "," + turn("search") + "]}\n";
  const Result r = read(text);
  REQUIRE(r.ok);
  CHECK(r.trace.tool_names() == std::vector<std::string>{"search", "python"});
  CHECK(r.trace.trajectory(0).turns[1].tool == 1);
  CHECK(r.trace.trajectory(0).turns[2].tool == 0);
  CHECK(r.trace.trajectory(0).tool_time() == SimTime::from_ns(750'000'000));
}

TEST_CASE("reader: escaped keys and strings are decoded") {
  const std::string text = kHeader +
                           "{\"st\\u0065p\":0,\"prompt_id\":0,\"sample\":0,\"turns\":[{\"prefill_tokens\":1,"
                           "\"gen_tokens\":1,\"tool\":\"caf\\u00e9\\ud83d\\ude00\",\"tool_latency_s\":1}]}\n";
  const Result r = read(text);
  INFO(r.messages);
  REQUIRE(r.ok);
  CHECK(r.trace.tool_names()[0] == "caf\xC3\xA9\xF0\x9F\x98\x80");
}

TEST_CASE("reader: derived totals of a trajectory") {
  const std::string text = kHeader +
                           "{\"step\":0,\"prompt_id\":0,\"sample\":0,\"turns\":[{\"prefill_tokens\":100,\"gen_tokens\":"
                           "50,\"tool\":\"t\",\"tool_latency_s\":2,\"obs_tokens\":30},{\"prefill_tokens\":5,"
                           "\"gen_tokens\":20}]}\n";
  const Result r = read(text);
  REQUIRE(r.ok);
  const TrajectoryView t = r.trace.trajectory(0);
  CHECK(t.prompt_tokens() == 100);
  CHECK(t.context_tokens() == 100 + 50 + 30 + 5 + 20);
  CHECK(t.response_tokens() == 50 + 30 + 5 + 20);
  CHECK(t.generated_tokens() == 70);
  CHECK(t.tool_calls() == 1);
}

TEST_CASE("reader: a missing file and a directory are reported, not crashed on") {
  Trace t;
  TraceBuilder builder(t);
  parse::Diagnostics diag;
  CHECK_FALSE(read_trace_file("tests/no-such-trace.jsonl", builder, diag));
  CHECK_FALSE(read_trace_file("tests", builder, diag));
  CHECK(parse::format_all(diag) ==
        "tests/no-such-trace.jsonl: no such file\n"
        "tests: is a directory, not a trace file\n");
}

TEST_CASE("reader: a last line cut anywhere is recognised as cut off") {
  ReadOptions tolerant;
  tolerant.allow_truncated_last_line = true;
  const std::string full = line(1, 0, 1, ",\"truncated\":true");
  for (size_t cut = 1; cut + 1 < full.size(); ++cut) {
    const Result r = read(kHeader + line(1, 0, 0) + full.substr(0, cut), tolerant);
    INFO("cut at ", cut, ": ", r.messages);
    CHECK(r.ok);
    CHECK(r.trace.size() == 1);
  }
}
