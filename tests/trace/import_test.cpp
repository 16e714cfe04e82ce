// Importers: a per-step summary CSV expanded into trajectories that reproduce its moments and
// bounds exactly, column aliases and choices, bad rows; and rollout dumps with their field forms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "sim/trace/fit.h"
#include "sim/trace/import_rollout.h"
#include "sim/trace/import_summary.h"
#include "sim/trace/stats.h"

using namespace arlsim;
using namespace arlsim::trace;

namespace {

TraceStats stats_of(const Trace& t) {
  StatsCollector collector(40);
  replay(t, collector);
  return collector.finish();
}

std::optional<Trace> import_csv(const std::string& text, SummaryImportOptions o, std::string& messages) {
  parse::Diagnostics diag;
  auto t = import_summary_csv(text, "run.csv", o, diag);
  messages = parse::format_all(diag);
  return t;
}

SummaryImportOptions options(int prompts, int group) {
  SummaryImportOptions o;
  o.prompts_per_step = prompts;
  o.group_size = group;
  return o;
}

}  // namespace

TEST_CASE("fit: sigma from the std, the max or the min, as documented") {
  Moments m;
  m.mean = 1000;
  m.std = 500;
  CHECK(fit_lognormal(m, 100, 0.6).sigma == doctest::Approx(std::sqrt(std::log(1 + 0.25))));
  CHECK(fit_lognormal(m, 100, 0.6).basis == "std");
  m.std.reset();
  m.max = 4000;
  // ln(max/mean) = sigma z - sigma^2 / 2 with z the latent of the largest of n = 100 draws.
  const LognormalFit f = fit_lognormal(m, 100, 0.6);
  const double z = normal_quantile(100.0 / 101.0);
  CHECK(f.basis == "max");
  CHECK(f.sigma * z - f.sigma * f.sigma / 2 == doctest::Approx(std::log(4.0)));
  CHECK(f.mu == doctest::Approx(std::log(1000.0) - f.sigma * f.sigma / 2));
  m.max.reset();
  m.min = 100;
  const LognormalFit g = fit_lognormal(m, 100, 0.6);
  CHECK(g.basis == "min");
  CHECK(-g.sigma * z - g.sigma * g.sigma / 2 == doctest::Approx(std::log(0.1)));
  m.min.reset();
  CHECK(fit_lognormal(m, 100, 0.6).basis == "default");
}

TEST_CASE("import: a summary CSV with known moments expands to batches with exactly those moments") {
  const std::string csv =
      "step,response_length/mean,response_length/max,response_length/min,prompt_length/mean,num_turns/mean\n"
      "1,1000,4000,100,300,1\n"
      "2,1500.5,6000,120,310,1\n"
      "3,2400,8192,90,290,1\n";
  std::string messages;
  auto t = import_csv(csv, options(8, 16), messages);
  INFO(messages);
  REQUIRE(t.has_value());
  CHECK(messages.empty());
  const TraceStats s = stats_of(*t);
  REQUIRE(s.steps.size() == 3);
  const double means[] = {1000, 1500.5, 2400}, maxes[] = {4000, 6000, 8192}, mins[] = {100, 120, 90};
  const double prompts[] = {300, 310, 290};
  for (size_t i = 0; i < 3; ++i) {
    const StepStats& step = s.steps[i];
    CHECK(step.step == static_cast<int>(i + 1));
    CHECK(step.trajectories == 128);
    CHECK(step.groups == 8);
    // The batch total is the reported mean times n, rounded: the mean is exact to 1/(2n).
    CHECK(std::fabs(step.response_tokens.mean - means[i]) <= 0.5 / 128 + 1e-12);
    CHECK(step.response_tokens.max == maxes[i]);
    CHECK(step.response_tokens.min == mins[i]);
    CHECK(std::fabs(step.prompt_tokens.mean - prompts[i]) <= 0.5 / 8 + 1e-12);
    CHECK(step.turns.max == 1);
  }
  CHECK(t->header.provenance_json.find(R"("columns":{"step":"step","response_mean":"response_length/mean")") !=
        std::string::npos);
  CHECK(t->header.provenance_json.find(R"("from":"max")") != std::string::npos);
}

TEST_CASE("import: a clip ratio puts that share of the batch at the limit, marked truncated") {
  const std::string csv =
      "step,response_length/mean,response_length/max,response_length/clip_ratio\n"
      "5,9000,20480,0.125\n";
  std::string messages;
  auto t = import_csv(csv, options(4, 8), messages);
  REQUIRE(t.has_value());
  int at_limit = 0, truncated = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    at_limit += t->trajectory(i).response_tokens() == 20480;
    truncated += t->trajectory(i).info.truncated;
  }
  CHECK(truncated == 4);  // 0.125 x 32
  CHECK(at_limit >= 4);
  CHECK(stats_of(*t).steps[0].response_tokens.mean == doctest::Approx(9000).epsilon(1e-4));
}

TEST_CASE("import: W&B exports, framework prefixes and multi-turn steps") {
  const std::string csv =
      "Step,my-run - train/response_length/mean,my-run - train/response_length/mean__MIN,"
      "my-run - train/response_length/mean__MAX,my-run - num_turns/mean,my-run - num_turns/max\n"
      "10,6000,5000,7000,4.5,9\n"
      "20,,,,,\n"
      "30,9000,8000,9500,6,12\n";
  SummaryImportOptions o = options(4, 4);
  std::string error;
  o.shape.tools = {*parse_tool_spec("search: dist=fixed mean=2s obs_tokens=300", error)};
  std::string messages;
  auto t = import_csv(csv, o, messages);
  REQUIRE(t.has_value());
  CHECK(messages == "run.csv:3: warning: 1 row(s) without a response length were skipped\n");
  const TraceStats s = stats_of(*t);
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].turns.mean == doctest::Approx(4.5).epsilon(0.04));
  CHECK(s.steps[0].turns.max == 9);
  CHECK(s.steps[1].turns.max == 12);
  CHECK(s.steps[1].response_tokens.mean == doctest::Approx(9000).epsilon(1e-3));
  CHECK(t->tool_names() == std::vector<std::string>{"search"});
}

TEST_CASE("import: --column names a column the aliases do not know") {
  const std::string csv = "iter,avg_len\n1,500\n2,700\n";
  SummaryImportOptions o = options(2, 2);
  std::string messages;
  CHECK_FALSE(import_csv(csv, o, messages).has_value());
  CHECK(messages ==
        "run.csv:1: no column for step (looked for step, _step, global_step, training/global_step, "
        "trainer/global_step, rollout_id, iteration); name it with --column step=COLUMN\n"
        "run.csv:1: no column for response_mean (looked for response_length/mean, response_len/mean, "
        "response_length_mean, mean_response_length); name it with --column response_mean=COLUMN\n");
  o.columns = {{"step", "iter"}, {"response_mean", "avg_len"}};
  auto t = import_csv(csv, o, messages);
  REQUIRE(t.has_value());
  CHECK(t->size() == 8);
  o.columns = {{"stepp", "iter"}, {"response_mean", "avg_lenn"}};
  CHECK_FALSE(import_csv(csv, o, messages).has_value());
  CHECK(messages.starts_with("--column: unknown role \"stepp\""));
  CHECK(messages.find("--column: run.csv has no column \"avg_lenn\"; did you mean \"avg_len\"?") != std::string::npos);
}

TEST_CASE("import: bad rows are all reported with their lines") {
  const std::string csv =
      "step,response_length/mean,response_length/max,response_length/min\n"
      "1,abc,10,1\n"
      "2,500,400,100\n"
      "3.5,500,600,100\n"
      "4,500,600\n"
      "5,500,600,100\n"
      "5,510,600,100\n";
  std::string messages;
  CHECK_FALSE(import_csv(csv, options(2, 2), messages).has_value());
  CHECK(messages ==
        "run.csv:5: expected 4 fields (as in the header), got 3\n"
        "run.csv:2: column \"response_length/mean\": expected a non-negative number, got \"abc\"\n"
        "run.csv:3: response length mean 500 lies outside its min/max\n"
        "run.csv:4: the step must be a whole number, got 3.500000\n"
        "run.csv:7: step 5 appears twice (also on line 6)\n");
}

TEST_CASE("import: the same CSV and seed give the same trace") {
  const std::string csv = "step,response_length/mean\n1,800\n2,900\n";
  std::string m1, m2;
  auto a = import_csv(csv, options(4, 4), m1);
  auto b = import_csv(csv, options(4, 4), m2);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a == *b);
}

TEST_CASE("import: rollout dumps with counts, token ids and text") {
  RolloutImportOptions o;
  o.chars_per_token = 4;
  const std::vector<NamedText> files{
      {"dump/7.jsonl",
       "{\"uid\":\"a\",\"prompt_length\":100,\"response_length\":50}\n"
       "{\"uid\":\"b\",\"prompt_length\":80,\"response_length\":[1,2,3]}\n"
       "{\"uid\":\"a\",\"prompt_length\":100,\"response_length\":70,\"truncated\":true}\n"},
      {"dump/3.jsonl", "{\"uid\":\"a\",\"input\":\"12345678\",\"output\":\"abcdefghij\",\"num_turns\":2}\n"},
  };
  parse::Diagnostics diag;
  auto t = import_rollout_jsonl(files, o, diag);
  INFO(parse::format_all(diag));
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 4);
  const TrajectoryView first = t->trajectory(0);  // step 3 comes first
  CHECK(first.info.step == 3);
  CHECK(first.prompt_tokens() == 2);    // 8 characters / 4
  CHECK(first.response_tokens() == 3);  // ceil(10 / 4)
  CHECK(first.turns.size() == 2);
  CHECK(t->trajectory(1).info == TrajectoryInfo{7, 0, 0, false});
  CHECK(t->trajectory(2).info == TrajectoryInfo{7, 1, 0, true});
  CHECK(t->trajectory(2).response_tokens() == 70);
  CHECK(t->trajectory(3).info.prompt_id == 1);
  CHECK(t->trajectory(3).response_tokens() == 3);
  CHECK(t->header.provenance_json.find(R"("response_tokens":"output, response_length")") != std::string::npos);
}

TEST_CASE("import: rollout dump problems name the line and the field") {
  RolloutImportOptions o;
  const std::vector<NamedText> files{
      {"d.jsonl",
       "{\"step\":1,\"prompt_id\":0,\"prompt_tokens\":10,\"response_tokens\":-3}\n"
       "{\"step\":1,\"prompt_id\":0,\"prompt_tokens\":10,\"output\":\"text\"}\n"
       "{\"step\":1,\"prompt_tokens\":10,\"response_tokens\":5}\n"
       "not json\n"},
  };
  parse::Diagnostics diag;
  CHECK_FALSE(import_rollout_jsonl(files, o, diag).has_value());
  CHECK(parse::format_all(diag) ==
        "d.jsonl:1:62: /response_tokens: expected a token count (a non-negative integer or an array of token ids), "
        "got the number -3\n"
        "d.jsonl:2:53: /output: expected a token count (a non-negative integer or an array of token ids), got the "
        "string \"text\"; for text, give --chars-per-token to estimate its tokens\n"
        "d.jsonl:3: no prompt id (looked for prompt_id, uid, group_index, prompt_index, input, prompt); name it "
        "with --field prompt_id=FIELD, or give --group-size N if a prompt's samples are consecutive\n"
        "d.jsonl:4:1: unexpected character 'n'; expected a value\n");
}

TEST_CASE("import: --field reaches nested fields, --group-size groups consecutive samples") {
  RolloutImportOptions o;
  o.fields = {{"response_tokens", "/meta/len"}, {"prompt_tokens", "plen"}};
  o.group_size = 2;
  const std::vector<NamedText> files{{"s.jsonl",
                                      "{\"step\":2,\"plen\":5,\"meta\":{\"len\":11}}\n"
                                      "{\"step\":2,\"plen\":5,\"meta\":{\"len\":12}}\n"
                                      "{\"step\":2,\"plen\":6,\"meta\":{\"len\":13}}\n"}};
  parse::Diagnostics diag;
  auto t = import_rollout_jsonl(files, o, diag);
  INFO(parse::format_all(diag));
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 3);
  CHECK(t->trajectory(1).info == TrajectoryInfo{2, 1, 0, false});
  CHECK(t->trajectory(2).info == TrajectoryInfo{2, 0, 1, false});
  CHECK(t->trajectory(2).response_tokens() == 13);
}

TEST_CASE("import: slime-like samples: all tokens minus the response, and a status") {
  RolloutImportOptions o;
  const std::vector<NamedText> files{{"rollout_4.jsonl",
                                      "{\"group_index\":0,\"prompt\":\"solve\",\"tokens\":[1,2,3,4,5,6,7,8,9,10],"
                                      "\"response_length\":4,\"status\":\"truncated\"}\n"
                                      "{\"group_index\":0,\"prompt\":\"solve\",\"tokens\":[1,2,3,4,5,6,7,8],"
                                      "\"response_length\":2,\"status\":\"completed\"}\n"
                                      "{\"group_index\":1,\"tokens\":[1],\"response_length\":2}\n"}};
  parse::Diagnostics diag;
  CHECK_FALSE(import_rollout_jsonl(files, o, diag).has_value());
  CHECK(parse::format_all(diag) == "rollout_4.jsonl:3:27: /tokens: holds 1 tokens, fewer than the response's 2\n");
  const std::vector<NamedText> good{{files[0].name, files[0].text.substr(0, files[0].text.rfind("{\"group_index\":1"))}};
  parse::Diagnostics diag2;
  auto t = import_rollout_jsonl(good, o, diag2);
  INFO(parse::format_all(diag2));
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 2);
  CHECK(t->trajectory(0).info == TrajectoryInfo{4, 0, 0, true});
  CHECK(t->trajectory(0).prompt_tokens() == 6);
  CHECK(t->trajectory(0).response_tokens() == 4);
  CHECK(t->trajectory(1).info == TrajectoryInfo{4, 1, 0, false});
  CHECK(t->trajectory(1).prompt_tokens() == 6);
}
