// summary.json and steps.csv of a hand-built run: every key of the public contract with its
// exact value, nearest-rank percentiles, stage shares, nulls for an unknown price, byte-stable
// text.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/model/error_band.h"
#include "sim/report/summary.h"
#include "tests/report/fixture.h"

using namespace arlsim;
using namespace arlsim::report;
using nlohmann::json;

TEST_CASE("summary.json holds the run, its steps and OOMs under the documented keys") {
  const rl::RunResult r = testing::sample_run();
  const json j = json::parse(summary_json(r));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"band_covered_share", "cost_usd", "gpu_hours", "gpus", "oom_events", "pools",
                                         "price_usd_per_gpu_hour", "projected", "reward_gpus", "scenario", "stats", "steps",
                                         "steps_simulated", "steps_total", "stopped", "total_time_s",
                                         "total_time_s_high", "total_time_s_low", "warnings"});  // json sorts keys
  CHECK(j["scenario"] == "demo");
  CHECK(j["gpus"] == 16);
  CHECK(j["total_time_s"] == 30.0);
  CHECK(j["gpu_hours"] == r.gpu_hours);  // 16 x 30 s / 3600
  CHECK(j["cost_usd"] == r.gpu_hours * 2.5);
  CHECK(j["price_usd_per_gpu_hour"] == 2.5);
  // The training passes (old and reference log-probs, train: 8.5 of the 30 s of stage time) carry
  // the training record's band, the engines' runs (rollout and reward: 20 s) the rollout record's;
  // dispatch and weight sync are at their point value.
  const auto training = model::validation_band("training");
  const auto rollout = model::validation_band("rollout");
  REQUIRE(training);
  REQUIRE(rollout);
  CHECK(j["band_covered_share"].get<double>() == doctest::Approx(28.5 / 30));
  CHECK(j["total_time_s_low"].get<double>() ==
        doctest::Approx(30 + 8.5 * (training->time_low(1) - 1) + 20 * (rollout->time_low(1) - 1)));
  CHECK(j["total_time_s_high"].get<double>() ==
        doctest::Approx(30 + 8.5 * (training->time_high(1) - 1) + 20 * (rollout->time_high(1) - 1)));
  CHECK(j["total_time_s_low"].get<double>() <= 30);
  CHECK(j["total_time_s_high"].get<double>() >= 30);

  REQUIRE(j["steps"].size() == 3);
  const json& s1 = j["steps"][1];
  CHECK(s1["step"] == 1);
  CHECK(s1["start_s"] == 10.0);
  CHECK(s1["end_s"] == 22.0);
  CHECK(s1["time_s"] == 12.0);
  CHECK(s1["stages"] == json{{"rollout", 7.5}, {"reward", 0.5}, {"old_logprob", 1.0}, {"ref_logprob", 0.5},
                             {"critic", 0.0}, {"dispatch", 0.25}, {"train", 2.0}, {"weight_sync", 0.25}});
  CHECK(s1["tokens"] == 24000);
  CHECK(s1["tokens_per_s"] == 2000.0);
  CHECK(s1["memory_peak_gib"] == json{{"rollout", 61.0}, {"train", 79.5}});
  CHECK(s1["oom"].is_null());

  const json oom{{"step", 2}, {"stage", "train"}, {"memory", "gpu"}, {"rank", 3}, {"needed_gib", 92.5}, {"available_gib", 80.0},
                 {"contributors_gib", {{"activations", 40.25}, {"weights", 30.0}, {"optimizer", 22.25}}}};
  CHECK(j["steps"][2]["oom"] == oom);
  CHECK(j["oom_events"] == json::array({oom}));
}

TEST_CASE("summary.json keeps the contract's key order") {
  const auto j = nlohmann::ordered_json::parse(summary_json(testing::sample_run()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"scenario", "gpus", "reward_gpus", "steps", "total_time_s", "total_time_s_low",
                                         "total_time_s_high", "band_covered_share", "gpu_hours", "cost_usd",
                                         "price_usd_per_gpu_hour", "stopped", "steps_simulated", "steps_total", "projected",
                                         "oom_events", "warnings", "pools", "stats"});
  keys.clear();
  for (const auto& [k, v] : j["steps"][0].items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"step", "start_s", "end_s", "time_s", "stages", "tokens", "tokens_per_s",
                                         "memory_peak_gib", "oom", "preemptions", "recomputed_tokens"});
  keys.clear();
  for (const auto& [k, v] : j["steps"][0]["stages"].items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"rollout", "reward", "old_logprob", "ref_logprob", "critic", "dispatch", "train",
                                         "weight_sync"});
  keys.clear();
  for (const auto& [k, v] : j["oom_events"][0]["contributors_gib"].items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"activations", "weights", "optimizer"});  // largest first, as given
}

TEST_CASE("summary statistics: nearest-rank step-time percentiles, stage shares, throughput") {
  const json stats = json::parse(summary_json(testing::sample_run()))["stats"];
  // Step times sorted: 8, 10, 12. Nearest rank of q over n = 3 is ceil(q n): p50 -> 2nd, p90 and
  // p99 -> 3rd.
  CHECK(stats["step_time_s"] == json{{"mean", 10.0}, {"p50", 10.0}, {"p90", 12.0}, {"p99", 12.0}, {"max", 12.0}});
  // Summed stage seconds: rollout 6 + 7.5 + 5 = 18.5, reward 1.5, old_logprob 3, ref_logprob 1.5,
  // critic 0, dispatch 0.75, train 1.5 + 2 + 0.5 = 4, weight_sync 0.75; total 30.
  const json& share = stats["stage_share"];
  CHECK(share["rollout"] == 18.5 / 30);
  CHECK(share["reward"] == 1.5 / 30);
  CHECK(share["old_logprob"] == 3.0 / 30);
  CHECK(share["critic"] == 0.0);
  CHECK(share["train"] == 4.0 / 30);
  CHECK(share["weight_sync"] == 0.75 / 30);
  CHECK(stats["tokens_per_s"] == 60000.0 / 30);
}

TEST_CASE("an unknown price gives null cost and price") {
  rl::RunResult r = testing::sample_run();
  r.price_usd_per_gpu_hour = 0;
  r.cost_usd = 0;
  const json j = json::parse(summary_json(r));
  CHECK(j["cost_usd"].is_null());
  CHECK(j["price_usd_per_gpu_hour"].is_null());
}

TEST_CASE("an empty run still gives a complete summary") {
  const json j = json::parse(summary_json(rl::RunResult{}));
  CHECK(j["steps"] == json::array());
  CHECK(j["oom_events"] == json::array());
  CHECK(j["stats"]["step_time_s"]["max"] == 0.0);
  CHECK(j["stats"]["stage_share"]["rollout"] == 0.0);
  CHECK(j["stats"]["tokens_per_s"] == 0.0);
}

TEST_CASE("summary.json is byte-stable and pretty-printed") {
  const std::string a = summary_json(testing::sample_run());
  CHECK(a == summary_json(testing::sample_run()));
  CHECK(a.rfind("{\n  \"scenario\": \"demo\",\n  \"gpus\": 16,\n", 0) == 0);
  CHECK(a.back() == '\n');
}

TEST_CASE("summary.json escapes names and replaces invalid UTF-8") {
  rl::RunResult r;
  r.scenario = std::string("a \"b\" \\ c\n\x01 \xff");
  const json j = json::parse(summary_json(r));
  CHECK(j["scenario"] == "a \"b\" \\ c\n\x01 \xEF\xBF\xBD");
}

TEST_CASE("steps.csv: one row per step with fixed decimals") {
  CHECK(steps_csv(testing::sample_run()) ==
        "step,start_s,end_s,time_s,rollout_s,reward_s,old_logprob_s,ref_logprob_s,critic_s,dispatch_s,train_s,"
        "weight_sync_s,tokens,tokens_per_s,oom_stage\n"
        "0,0.000000,10.000000,10.000000,6.000000,0.500000,1.000000,0.500000,0.000000,0.250000,1.500000,0.250000,"
        "20000,2000.000,\n"
        "1,10.000000,22.000000,12.000000,7.500000,0.500000,1.000000,0.500000,0.000000,0.250000,2.000000,0.250000,"
        "24000,2000.000,\n"
        "2,22.000000,30.000000,8.000000,5.000000,0.500000,1.000000,0.500000,0.000000,0.250000,0.500000,0.250000,"
        "16000,2000.000,train\n");
}

TEST_CASE("steps.csv rounds to its precision and quotes fields that need it") {
  rl::RunResult r;
  rl::StepRecord s;
  s.step = 7;
  s.start_s = 1.0 / 3;          // 0.333333
  s.time_s = 2.00000051;        // 2.000001
  s.stages.train = -1e-9;       // rounds to zero: no minus sign
  s.tokens_per_s = 1234.56789;  // 1234.568
  s.oom.emplace();
  s.oom->stage = "a,\"b\"";
  r.steps = {s};
  const std::string csv = steps_csv(r);
  CHECK(csv.substr(csv.find('\n') + 1) ==
        "7,0.333333,0.000000,2.000001,0.000000,0.000000,0.000000,0.000000,0.000000,0.000000,0.000000,0.000000,0,1234.568,"
        "\"a,\"\"b\"\"\"\n");
}
