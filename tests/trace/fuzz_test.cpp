// Robustness: thousands of randomly damaged traces, CSV summaries and rollout dumps must each end
// in a trace or at least one diagnostic — never a crash, hang or uncaught exception. Run under
// `make test-asan` this also checks memory safety.
#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <string_view>
#include <sstream>

#include "sim/trace/import_rollout.h"
#include "sim/trace/import_summary.h"
#include "sim/trace/reader.h"
#include "tests/lib/mutate.h"

using namespace arlsim;
using namespace arlsim::trace;
using namespace std::string_view_literals;

namespace {

// Bytes that matter to the parser (NUL included), drawn more often than the rest.
constexpr std::string_view kSpecial = "{}[]\",:\\0123456789-.eE \n\r\x00\xff\xc3nulltrue\t@K"sv;

std::string shipped(const std::string& name) {
  std::ifstream in("traces/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("fuzz: damaged traces give a trace or a diagnostic, never a crash") {
  std::string text = shipped("swe-agent.jsonl");
  REQUIRE(text.size() > 10000);
  text.resize(text.find('\n', 20000) + 1);  // a few trajectories are enough per case
  std::mt19937_64 rng(20261124);
  int valid = 0, rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    Trace t;
    TraceBuilder builder(t);
    parse::Diagnostics diag;
    ReadOptions options;
    options.allow_truncated_last_line = i % 2 == 0;
    const bool ok = read_trace_text(arlsim::test::mutate(text, kSpecial, rng), "f.jsonl", builder, diag, options);
    (ok ? valid : rejected) += 1;
    if (!ok) CHECK(diag.has_errors());
  }
  MESSAGE("valid ", valid, ", rejected ", rejected);
  CHECK(rejected > 0);
}

TEST_CASE("fuzz: damaged summaries and dumps give a trace or a diagnostic, never a crash") {
  const std::string csv =
      "step,response_length/mean,response_length/max,response_length/min,num_turns/mean,num_turns/max\n"
      "1,1000,4000,100,3,6\n2,1500,6000,120,3.5,8\n3,\"2400\",8192,90,4,9\n";
  const std::string dump =
      "{\"uid\":\"a\",\"prompt_length\":100,\"response_length\":50,\"num_turns\":3}\n"
      "{\"uid\":\"b\",\"tokens\":[1,2,3,4],\"response_length\":[1,2],\"status\":\"truncated\"}\n";
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1500; ++i) {
    SummaryImportOptions so;
    so.prompts_per_step = 2;
    so.group_size = 3;
    parse::Diagnostics d1;
    if (!import_summary_csv(arlsim::test::mutate(csv, kSpecial, rng), "f.csv", so, d1)) CHECK(d1.has_errors());
    RolloutImportOptions ro;
    ro.chars_per_token = i % 2 ? 3.5 : 0;
    parse::Diagnostics d2;
    if (!import_rollout_jsonl({{"9.jsonl", arlsim::test::mutate(dump, kSpecial, rng)}}, ro, d2)) CHECK(d2.has_errors());
  }
}
