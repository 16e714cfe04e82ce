// Writing and reading traces: the exact line format, exact latencies, and round trips
// (generate -> write -> read gives the same trace, and writing it again the same bytes).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "sim/parse/diagnostics.h"
#include "sim/trace/gen_options.h"
#include "sim/trace/json_text.h"
#include "sim/trace/reader.h"
#include "sim/trace/writer.h"

using namespace arlsim;
using namespace arlsim::trace;

namespace {

Trace generated(uint64_t seed) {
  GenParams p = preset_params(*find_gen_preset("search-agent"));
  p.steps = 6;
  p.prompts_per_step = 3;
  p.group_size = 4;
  p.seed = seed;
  Trace t;
  TraceBuilder builder(t);
  generate(p, builder);
  return t;
}

Trace read_back(const std::string& text) {
  Trace t;
  TraceBuilder builder(t);
  parse::Diagnostics diag;
  const bool ok = read_trace_text(text, "t.jsonl", builder, diag);
  INFO(parse::format_all(diag));
  REQUIRE(ok);
  return t;
}

}  // namespace

TEST_CASE("io: a trajectory line has fixed keys in a fixed order") {
  Trace t;
  t.header.provenance_json = R"({"generator":"test"})";
  const int16_t py = t.intern_tool("python");
  const Turn turns[] = {{512, 100, 40, py, SimTime::from_ns(1'500'000'000)}, {0, 20, 0, kNoTool, SimTime::zero()}};
  t.add({3, 1, 7, true}, turns);
  CHECK(trace_to_text(t) ==
        "{\"format\":\"arlsim-trace/1\",\"provenance\":{\"generator\":\"test\"}}\n"
        "{\"step\":3,\"prompt_id\":7,\"sample\":1,\"turns\":[{\"prefill_tokens\":512,\"gen_tokens\":100,"
        "\"tool\":\"python\",\"tool_latency_s\":1.5,\"obs_tokens\":40},{\"prefill_tokens\":0,\"gen_tokens\":20,"
        "\"tool\":null,\"tool_latency_s\":0,\"obs_tokens\":0}],\"truncated\":true}\n");
}

TEST_CASE("io: latencies are written as exact decimal seconds and read back to the nanosecond") {
  CHECK(format_seconds(SimTime::zero()) == "0");
  CHECK(format_seconds(SimTime::from_ns(1)) == "0.000000001");
  CHECK(format_seconds(SimTime::from_ns(2'500'000'000)) == "2.5");
  CHECK(format_seconds(SimTime::from_ns(123'456'789'012)) == "123.456789012");
  for (int64_t ns : {int64_t{1}, int64_t{999'999'999}, int64_t{1'000'000'001}, int64_t{86'400'123'456'789}}) {
    Trace t;
    const int16_t tool = t.intern_tool("sandbox");
    const Turn turns[] = {{1, 1, 0, tool, SimTime::from_ns(ns)}};
    t.add({0, 0, 0, false}, turns);
    const Trace back = read_back(trace_to_text(t));
    CHECK(back.trajectory(0).turns[0].tool_latency.ns() == ns);
  }
}

TEST_CASE("io: exponents and long fractions in latencies are rounded to the nanosecond") {
  const std::string text =
      "{\"format\":\"arlsim-trace/1\",\"provenance\":{}}\n"
      "{\"step\":0,\"prompt_id\":0,\"sample\":0,\"turns\":[{\"prefill_tokens\":1,\"gen_tokens\":1,\"tool\":\"t\","
      "\"tool_latency_s\":1.5e-3}]}\n"
      "{\"step\":0,\"prompt_id\":0,\"sample\":1,\"turns\":[{\"prefill_tokens\":1,\"gen_tokens\":1,\"tool\":\"t\","
      "\"tool_latency_s\":0.0000000015}]}\n";
  const Trace t = read_back(text);
  CHECK(t.trajectory(0).turns[0].tool_latency.ns() == 1'500'000);
  CHECK(t.trajectory(1).turns[0].tool_latency.ns() == 2);  // 1.5 ns rounds half up
}

TEST_CASE("io: generate -> write -> read gives the identical trace, and writing it again the same bytes") {
  const Trace original = generated(7);
  REQUIRE(original.size() == 6 * 3 * 4);
  const std::string text = trace_to_text(original);
  const Trace back = read_back(text);
  CHECK(back == original);
  CHECK(back.tool_names() == original.tool_names());
  CHECK(trace_to_text(back) == text);
}

TEST_CASE("io: the round trip holds through a file too") {
  const Trace original = generated(11);
  const auto path = std::filesystem::temp_directory_path() / "arlsim_io_test.jsonl";
  parse::Diagnostics diag;
  REQUIRE(write_trace(original, path.string(), diag));
  auto back = load_trace(path.string(), diag);
  std::filesystem::remove(path);
  INFO(parse::format_all(diag));
  REQUIRE(back.has_value());
  CHECK(*back == original);
}

TEST_CASE("io: the streaming writer and trace_to_text write the same bytes") {
  const Trace original = generated(3);
  const auto path = std::filesystem::temp_directory_path() / "arlsim_io_stream.jsonl";
  parse::Diagnostics diag;
  {
    TraceWriter writer;
    REQUIRE(writer.open(path.string(), diag));
    replay(original, writer);
    REQUIRE(writer.close(diag));
  }
  std::ifstream in(path, std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  CHECK(written == trace_to_text(original));
}

TEST_CASE("io: the header keeps its description and provenance") {
  Trace t;
  t.header.description = "a \"quoted\" description\twith a tab";
  t.header.provenance_json = R"({"source":"run.csv","fit":{"steps":[1,2.5,null,true]}})";
  const Turn turns[] = {{1, 1, 0, kNoTool, SimTime::zero()}};
  t.add({0, 0, 0, false}, turns);
  const Trace back = read_back(trace_to_text(t));
  CHECK(back.header == t.header);
}

TEST_CASE("io: tool names with escapes and non-ASCII characters survive") {
  Trace t;
  const int16_t a = t.intern_tool("caf\xC3\xA9 \"tool\"\\");
  const Turn turns[] = {{1, 1, 0, a, SimTime::from_ns(1'000'000)}};
  t.add({0, 0, 0, false}, turns);
  const Trace back = read_back(trace_to_text(t));
  CHECK(back.tool_names() == t.tool_names());
}

TEST_CASE("io: a write error is reported") {
  parse::Diagnostics diag;
  TraceWriter writer;
  CHECK_FALSE(writer.open("/nonexistent-directory/x.jsonl", diag));
  CHECK(diag.has_errors());
}

TEST_CASE("diagnostics: a line without a column prints as FILE:LINE:") {
  parse::Diagnostic d{parse::Severity::error, "t.jsonl", {1834, 0}, "/turns/2/gen_tokens",
                     "expected a non-negative integer, got -5", ""};
  CHECK(parse::format_diagnostic(d) == "t.jsonl:1834: /turns/2/gen_tokens: expected a non-negative integer, got -5");
  d.pos.column = 7;
  CHECK(parse::format_diagnostic(d) == "t.jsonl:1834:7: /turns/2/gen_tokens: expected a non-negative integer, got -5");
}
