// timeline.json of a hand-built run: valid JSON in the Chrome Trace Event layout, pids and tids by
// first appearance, metadata first, events sorted, microseconds with three decimals, escaping.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>
#include <tuple>

#include "sim/core/assert.h"
#include "sim/report/timeline.h"
#include "tests/report/fixture.h"

using namespace arlsim;
using namespace arlsim::report;
using nlohmann::json;

namespace {

std::string timeline_text(const Timeline& r) {
  std::ostringstream os;
  write_timeline(r, os);
  return os.str();
}

// (ph, pid, tid, name) of an event, for comparing sequences.
using Row = std::tuple<std::string, int, int, std::string>;
Row row(const json& e) { return {e["ph"], e["pid"], e["tid"], e["name"]}; }

}  // namespace

TEST_CASE("timeline: top-level object and metadata naming processes and threads") {
  const json j = json::parse(timeline_text(testing::sample_timeline()));
  CHECK(j["displayTimeUnit"] == "ms");
  CHECK(j["otherData"] == json{{"generator", "arlsim"}, {"scenario", "demo"}, {"gpus", 16}, {"steps", 3}});
  const json& ev = j["traceEvents"];
  // Processes by first appearance: node0 (events), sandboxes (events), node1 (counters only) ->
  // pids 1, 2, 3. Threads follow the last pid, by first appearance: node0/gpu1, node0/gpu0,
  // sandboxes/slot0 -> tids 4, 5, 6. Each gets a name and a sort index.
  const std::vector<Row> metadata = {
      {"M", 1, 1, "process_name"}, {"M", 1, 1, "process_sort_index"}, {"M", 2, 2, "process_name"},
      {"M", 2, 2, "process_sort_index"}, {"M", 3, 3, "process_name"}, {"M", 3, 3, "process_sort_index"},
      {"M", 1, 4, "thread_name"}, {"M", 1, 4, "thread_sort_index"}, {"M", 1, 5, "thread_name"},
      {"M", 1, 5, "thread_sort_index"}, {"M", 2, 6, "thread_name"}, {"M", 2, 6, "thread_sort_index"}};
  REQUIRE(ev.size() == metadata.size() + 8);
  for (size_t i = 0; i < metadata.size(); ++i) CHECK(row(ev[i]) == metadata[i]);
  CHECK(ev[0]["args"] == json{{"name", "node0"}});
  CHECK(ev[1]["args"] == json{{"sort_index", 1}});
  CHECK(ev[2]["args"] == json{{"name", "sandboxes"}});
  CHECK(ev[4]["args"] == json{{"name", "node1"}});
  CHECK(ev[6]["args"] == json{{"name", "gpu1"}});
  CHECK(ev[7]["args"] == json{{"sort_index", 4}});
  CHECK(ev[8]["args"] == json{{"name", "gpu0"}});
  CHECK(ev[10]["args"] == json{{"name", "slot0"}});
}

TEST_CASE("timeline: activities and counters sorted by time, parents before children") {
  const json ev = json::parse(timeline_text(testing::sample_timeline()))["traceEvents"];
  std::vector<Row> rows;
  for (size_t i = 12; i < ev.size(); ++i) rows.push_back(row(ev[i]));
  // At ts 0: node0's counter (tid = pid 1), gpu1 (tid 4), then gpu0 (tid 5) with the 7 s
  // "rollout phase" before the 6 s "generate" it contains.
  CHECK(rows == std::vector<Row>{{"C", 1, 1, "memory_gib"},
                                 {"X", 1, 4, "generate"},
                                 {"X", 1, 5, "rollout phase"},
                                 {"X", 1, 5, "generate"},
                                 {"X", 2, 6, "tool \"search\"\n"},
                                 {"C", 3, 3, "kv_util"},
                                 {"C", 1, 1, "memory_gib"},
                                 {"X", 1, 5, "train"}});
  // Microseconds from nanoseconds: 1'000'000'500 ns -> 1000000.5 us, ending at 2.5 s.
  const json& tool = ev[12 + 4];
  CHECK(tool["ts"] == 1000000.5);
  CHECK(tool["dur"] == 1499999.5);
  CHECK(tool["cat"] == "rollout");
  CHECK(tool["args"] == json{{"step", 0}, {"stage", "rollout"}});
  const json& train = ev[12 + 7];
  CHECK(train["ts"] == 10000000.0);
  CHECK(train["dur"] == 1500000.0);
  CHECK(train["cat"] == "train");
  CHECK(ev[12]["ts"] == 0.0);
  CHECK(ev[12]["args"] == json{{"value", 12.5}});
  CHECK(ev[12 + 5]["ts"] == 3000000.0);
  CHECK(ev[12 + 5]["args"] == json{{"value", 0.75}});
}

TEST_CASE("timeline: exact text of an activity line, three decimals and escapes") {
  const std::string text = timeline_text(testing::sample_timeline());
  CHECK(text.find("\n{\"ph\":\"X\",\"pid\":2,\"tid\":6,\"ts\":1000000.500,\"dur\":1499999.500,"
                  "\"name\":\"tool \\\"search\\\"\\n\",\"cat\":\"rollout\","
                  "\"args\":{\"step\":0,\"stage\":\"rollout\"}},\n") != std::string::npos);
  CHECK(text.find("\n{\"ph\":\"C\",\"pid\":3,\"tid\":3,\"ts\":3000000.000,\"name\":\"kv_util\","
                  "\"args\":{\"value\":0.75}},\n") != std::string::npos);
  CHECK(text.rfind("{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"process_name\",", 0) == 0);
}

TEST_CASE("timeline: byte-stable") {
  CHECK(timeline_text(testing::sample_timeline()) == timeline_text(testing::sample_timeline()));
}

TEST_CASE("timeline: names with quotes, backslashes, control characters and bad UTF-8 stay valid JSON") {
  Timeline r;
  const std::string nasty = std::string("q\"b\\c\x01\x1f\t\x7f \xc3\xa9 \xff\xc0\xaf end");
  r.scenario = nasty;
  r.events = {{nasty, nasty, nasty, SimTime::zero(), SimTime::from_ns(1), 0, nasty}};
  r.counters = {{nasty, nasty, SimTime::zero(), 1}};
  const json j = json::parse(timeline_text(r));
  const std::string expected = "q\"b\\c\x01\x1f\t\x7f \xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end";
  CHECK(j["otherData"]["scenario"] == expected);
  CHECK(j["traceEvents"][0]["args"]["name"] == expected);
  CHECK(j["traceEvents"][4]["name"] == expected);
}

TEST_CASE("timeline: an empty run and a non-finite counter are still valid JSON") {
  const json empty = json::parse(timeline_text(timeline_of(rl::RunResult{})));
  CHECK(empty["traceEvents"] == json::array());
  Timeline r;
  r.counters = {{"p", "c", SimTime::zero(), std::numeric_limits<double>::quiet_NaN()}};
  CHECK(json::parse(timeline_text(r))["traceEvents"][2]["args"]["value"].is_null());
}

TEST_CASE("timeline: an activity that ends before it starts is an internal error") {
  Timeline r;
  r.events = {{"p", "t", "back", SimTime::from_ns(10), SimTime::from_ns(5), 0, "train"}};
  std::ostringstream os;
  CHECK_THROWS_AS(write_timeline(r, os), InternalError);
}

TEST_CASE("timeline: records become named tracks, and tool calls take the first free slot of their pool") {
  rl::RunResult r;
  r.gpus_per_node = 8;
  r.pool_names = {"python"};
  exec::ActivityRecord stage;
  stage.step = 3;
  stage.stage = graph::Stage::train;
  stage.side = graph::Side::training;
  stage.start_s = 10;
  stage.end_s = 12;
  exec::ActivityRecord empty = stage;  // a stage that took no time is left out
  empty.stage = graph::Stage::critic;
  empty.end_s = 10;
  exec::ActivityRecord span;
  span.kind = exec::RecordKind::engine_span;
  span.index = 2;
  span.a = 1;
  span.devices = {12, 4};
  span.start_s = 1;
  span.end_s = 2;
  exec::ActivityRecord call;
  call.kind = exec::RecordKind::tool_call;
  call.index = 0;
  call.start_s = 1;
  call.end_s = 3;
  exec::ActivityRecord overlapping = call, after = call, no_pool = call;
  overlapping.start_s = 2;
  after.start_s = 3.5;
  after.end_s = 4;
  no_pool.index = -1;
  exec::ActivityRecord micro = stage;
  micro.kind = exec::RecordKind::pipeline_op;
  micro.index = 1;
  micro.a = 4;
  micro.b = 0;
  r.activities = {stage, empty, span, call, overlapping, after, no_pool, micro};
  r.counters = {{rl::CounterSample::Kind::kv_used_percent, 1, 2, SimTime::from_seconds(1), 50},
                {rl::CounterSample::Kind::gpu_memory_gib, 0, -1, SimTime::from_seconds(1), 30}};
  const Timeline t = timeline_of(r);
  // Training (one optimizer step here) on the mini-batches track and, whole, on the stages track.
  REQUIRE(t.events.size() == 8);
  CHECK(t.events[0].process == "training");
  CHECK(t.events[0].thread == "mini-batches");
  CHECK(t.events[0].name == "epoch 0 mini-batch 0");
  CHECK(t.events[1].thread == "stages");
  CHECK(t.events[1].name == "train");
  CHECK(t.events[2].process == "node 1");
  CHECK(t.events[2].thread == "engine 2 (GPU 12-15)");
  CHECK(t.events[2].name == "prefill+decode");
  CHECK(t.events[3].process == "pool python");
  CHECK(t.events[3].thread == "slot 0");
  CHECK(t.events[4].thread == "slot 1");  // the first call still runs
  CHECK(t.events[5].thread == "slot 0");  // free again
  CHECK(t.events[6].process == "tools");
  CHECK(t.events[7].thread == "pipeline stage 1");
  CHECK(t.events[7].name == "B 4");
  // Processes are numbered nodes first in node order (node 0 has counters only), then pools, then
  // the sides' tracks.
  CHECK(t.process_order == std::vector<std::string>{"node 0", "node 1", "pool python", "tools", "training"});
  REQUIRE(t.counters.size() == 2);
  CHECK(t.counters[0].name == "KV cache used (%), engine 2");
  // The writer numbers them so.
  std::ostringstream os;
  write_timeline(t, os);
  const json j = json::parse(os.str());
  std::vector<std::string> processes;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") processes.push_back(e["args"]["name"]);
  CHECK(processes == t.process_order);
}

namespace {
// Two steps of records: each a rollout stage, an engine span, a tool call and a KV sample, the
// second step's engine on a node the first did not use.
rl::RunResult two_step_run() {
  rl::RunResult r;
  r.scenario = "two";
  r.gpus = 16;
  r.gpus_per_node = 8;
  r.pool_names = {"python"};
  for (int64_t step : {1, 2}) {
    exec::ActivityRecord stage;
    stage.step = step;
    stage.start_s = 10.0 * static_cast<double>(step - 1);
    stage.end_s = stage.start_s + 5;
    exec::ActivityRecord span = stage, call = stage;
    span.kind = exec::RecordKind::engine_span;
    span.index = step == 1 ? 0 : 1;
    span.devices = {step == 1 ? 0 : 8, 8};
    call.kind = exec::RecordKind::tool_call;
    call.index = 0;
    call.start_s += 1;
    call.end_s = stage.start_s + 3;
    r.activities.insert(r.activities.end(), {stage, span, call});
    r.counters.push_back({rl::CounterSample::Kind::kv_used_percent, step - 1, span.index,
                          SimTime::from_seconds(stage.start_s + 1), 10.0 * static_cast<double>(step)});
    rl::StepRecord rec;
    rec.step = step;
    rec.start_s = stage.start_s;
    rec.end_s = stage.end_s;
    r.steps.push_back(rec);
  }
  return r;
}

json streamed(const rl::RunResult& r, const TimelineOptions& o) {
  std::ostringstream os;
  TimelineStream stream(os, o, 5);
  for (int64_t step : {1, 2}) {
    std::vector<exec::ActivityRecord> records;
    for (const auto& a : r.activities)
      if (a.step == step) records.push_back(a);
    stream.step_placed(r, records, {r.counters[static_cast<size_t>(step - 1)]});
  }
  stream.finish(r);
  return json::parse(os.str());
}

size_t count(const json& ev, const std::string& ph) {
  size_t n = 0;
  for (const auto& e : ev) n += e["ph"] == ph;
  return n;
}
}  // namespace

TEST_CASE("timeline stream: each step's tracks named when they first appear, tids above every possible pid") {
  const rl::RunResult r = two_step_run();
  const json j = streamed(r, {});
  const json& ev = j["traceEvents"];
  CHECK(j["otherData"]["steps"] == 2);
  // Step 1: node 0, pool python, rollout (pids 1-3) and their threads (tids from 6: at most 5
  // processes); then step 2 adds node 1 (pid 4) and its engine.
  std::vector<std::string> processes;
  std::set<int> pids, tids;
  for (const auto& e : ev) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.push_back(e["args"]["name"]);
    if (e["ph"] == "M" && e["name"] == "process_name") pids.insert(e["pid"].get<int>());
    if (e["ph"] == "M" && e["name"] == "thread_name") tids.insert(e["tid"].get<int>());
  }
  CHECK(processes == std::vector<std::string>{"node 0", "pool python", "rollout", "node 1"});
  CHECK(pids == std::set<int>{1, 2, 3, 4});
  CHECK(*tids.begin() == 6);
  // node 1's metadata comes after step 1's events, before step 2's.
  size_t node1 = 0, first_step2 = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["ph"] == "M" && ev[i]["args"].value("name", "") == "node 1") node1 = i;
    if (ev[i]["ph"] == "X" && ev[i]["args"]["step"] == 2 && first_step2 == 0) first_step2 = i;
  }
  CHECK(node1 > 0);
  CHECK(node1 < first_step2);
  CHECK(count(ev, "X") == 6);
  CHECK(count(ev, "C") == 2);
}

TEST_CASE("timeline: detail levels and a step range choose what goes on it") {
  const rl::RunResult r = two_step_run();
  TimelineOptions o;
  o.detail = TimelineOptions::Detail::stages;
  CHECK(count(streamed(r, o)["traceEvents"], "X") == 2);  // the two rollout stages
  CHECK(count(streamed(r, o)["traceEvents"], "C") == 0);  // KV use is the engines' detail
  o.detail = TimelineOptions::Detail::engines;
  CHECK(count(streamed(r, o)["traceEvents"], "X") == 4);  // and the engines' spans
  CHECK(count(streamed(r, o)["traceEvents"], "C") == 2);
  o.detail = TimelineOptions::Detail::full;
  CHECK(count(streamed(r, o)["traceEvents"], "X") == 6);  // and the tool calls
  o.first_step = o.last_step = 2;
  const json two = streamed(r, o);
  CHECK(two["otherData"]["steps"] == 1);
  CHECK(count(two["traceEvents"], "X") == 3);
  for (const auto& e : two["traceEvents"])
    if (e["ph"] == "X") CHECK(e["args"]["step"] == 2);
  // The held writer gives the same choice (counters by the kept steps' span).
  std::ostringstream os;
  write_timeline(r, os, o);
  const json held = json::parse(os.str());
  CHECK(count(held["traceEvents"], "X") == 3);
  CHECK(count(held["traceEvents"], "C") == 1);
  CHECK(held["otherData"]["steps"] == 1);
  TimelineOptions::Detail d{};
  CHECK(parse_detail("engines", d));
  CHECK(d == TimelineOptions::Detail::engines);
  CHECK_FALSE(parse_detail("all", d));
}
