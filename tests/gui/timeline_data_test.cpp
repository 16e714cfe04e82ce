// The viewer's timeline data: reading Chrome Trace Event files into depth-sorted tracks, the
// queries a frame and a selection make, and the messages for files it cannot read.
#include <doctest/doctest.h>

#include <string>

#include "gui/timeline_data.h"

using namespace arlsim::view;

namespace {
const char* kSmall = R"json({"traceEvents": [
{"ph": "M", "pid": 1, "tid": 1, "name": "process_name", "args": {"name": "training"}},
{"ph": "M", "pid": 1, "tid": 1, "name": "process_sort_index", "args": {"sort_index": 2}},
{"ph": "M", "pid": 2, "tid": 2, "name": "process_name", "args": {"name": "node 0"}},
{"ph": "M", "pid": 2, "tid": 2, "name": "process_sort_index", "args": {"sort_index": 1}},
{"ph": "M", "pid": 1, "tid": 3, "name": "thread_name", "args": {"name": "stages"}},
{"ph": "X", "pid": 1, "tid": 3, "ts": 0, "dur": 100, "name": "train", "cat": "train", "args": {"step": 1, "stage": "train", "flops": 5e12}},
{"ph": "X", "pid": 1, "tid": 3, "ts": 100, "dur": 50, "name": "weight_sync", "cat": "weight_sync", "args": {"step": 1, "bytes": 1024}},
{"ph": "X", "pid": 2, "tid": 4, "ts": 10, "dur": 80, "name": "outer", "cat": "rollout", "args": {"step": 2}},
{"ph": "X", "pid": 2, "tid": 4, "ts": 20, "dur": 10, "name": "inner", "cat": "rollout"},
{"ph": "X", "pid": 2, "tid": 4, "ts": 40, "dur": 10, "name": "inner", "cat": "rollout"},
{"ph": "B", "pid": 2, "tid": 5, "ts": 5, "name": "begun", "cat": "x"},
{"ph": "E", "pid": 2, "tid": 5, "ts": 25},
{"ph": "C", "pid": 2, "tid": 2, "ts": 0, "name": "GPU memory (GiB)", "args": {"value": 10}},
{"ph": "C", "pid": 2, "tid": 2, "ts": 50, "name": "GPU memory (GiB)", "args": {"value": 30}},
{"ph": "C", "pid": 2, "tid": 2, "ts": 60, "name": "GPU memory (GiB)", "args": {"value": null}},
{"ph": "i", "pid": 2, "tid": 4, "ts": 70, "name": "instant"}
], "displayTimeUnit": "ms"})json";

std::string error_of(const std::string& text) {
  try {
    parse_timeline(text, "t.json");
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("processes and tracks by sort index, nested slices on their depths, B/E pairs and counters") {
  const Timeline tl = parse_timeline(kSmall, "t.json");
  REQUIRE(tl.processes.size() == 2);
  CHECK(tl.processes[0].name == "node 0");  // sort index 1 before 2
  CHECK(tl.processes[1].name == "training");
  const Process& node = tl.processes[0];
  REQUIRE(node.tracks.size() == 2);
  const Track& engine = tl.tracks[node.tracks[0]];
  CHECK(engine.tid == 4);
  CHECK(engine.name == "thread 4");  // no thread_name: named by its tid
  REQUIRE(engine.depths.size() == 2);
  CHECK(engine.depths[0].size() == 1);
  CHECK(engine.depths[1].size() == 2);  // the two inner slices inside "outer"
  CHECK(tl.str(engine.depths[1][0].name) == "inner");
  const Track& begun = tl.tracks[node.tracks[1]];
  REQUIRE(begun.slice_count() == 1);
  CHECK(begun.depths[0][0].start_us == 5);
  CHECK(begun.depths[0][0].end_us == 25);
  REQUIRE(node.counters.size() == 1);
  CHECK(node.counters[0].points.size() == 2);  // the null sample is left out
  CHECK(node.counters[0].max_value == 30);
  CHECK(tl.start_us == 0);
  CHECK(tl.end_us == 150);
  CHECK(tl.events == 10);  // 5 "X", a "B", an "E" and 3 counter samples; metadata and instants not
  const Track& stages = tl.tracks[tl.processes[1].tracks[0]];
  CHECK(stages.depths[0][0].flops == 5e12);
  CHECK(stages.depths[0][1].bytes == 1024);
}

TEST_CASE("steps span their slices; stage totals come from the stages track") {
  const Timeline tl = parse_timeline(kSmall, "t.json");
  REQUIRE(tl.steps.size() == 2);
  CHECK(tl.step(1)->start_us == 0);
  CHECK(tl.step(1)->end_us == 150);
  CHECK(tl.step(2)->start_us == 10);
  CHECK(tl.step(2)->end_us == 90);
  CHECK(tl.step(3) == nullptr);
  const auto totals = tl.stage_totals_us();
  REQUIRE(totals.size() == 2);
  CHECK(totals.at("train") == 100);
  CHECK(totals.at("weight_sync") == 50);
}

TEST_CASE("range statistics clip slices to the range") {
  const Timeline tl = parse_timeline(kSmall, "t.json");
  // [25, 45]: train 20, outer 20, inner (20..30) 5 and (40..50) 5, begun (5..25) 0 long but touching is excluded.
  const auto stats = tl.range_stats(25, 45);
  REQUIRE(stats.size() == 3);
  CHECK(stats[0].total_us == doctest::Approx(20));
  const auto find = [&](const std::string& n) {
    for (const auto& s : stats)
      if (s.name == n) return s;
    return NameStats{};
  };
  CHECK(find("inner").count == 2);
  CHECK(find("inner").total_us == doctest::Approx(10));
  CHECK(find("inner").mean_us() == doctest::Approx(5));
  CHECK(find("outer").total_us == doctest::Approx(20));
  CHECK(find("begun").count == 0);
}

TEST_CASE("first_ending_after is a binary search over a depth's ends") {
  std::vector<Slice> d(4);
  for (int i = 0; i < 4; ++i) d[static_cast<size_t>(i)].start_us = 10.0 * i, d[static_cast<size_t>(i)].end_us = 10.0 * i + 5;
  CHECK(first_ending_after(d, -1) == 0);
  CHECK(first_ending_after(d, 5) == 1);  // slice 0 ends at 5: not after it
  CHECK(first_ending_after(d, 14.9) == 1);
  CHECK(first_ending_after(d, 35) == 4);
}

TEST_CASE("begin and end events pair by time, not by file order; a begin never ended lasts to the end") {
  const Timeline tl = parse_timeline(R"([{"ph":"E","pid":1,"tid":2,"ts":9},{"ph":"B","pid":1,"tid":2,"ts":4,"name":"a"},
{"ph":"B","pid":1,"tid":2,"ts":12,"name":"open"},{"ph":"X","pid":1,"tid":3,"ts":0,"dur":20,"name":"x"}])", "t.json");
  const Track& t = tl.tracks[0];
  REQUIRE(t.slice_count() == 2);
  CHECK(t.depths[0][0].start_us == 4);
  CHECK(t.depths[0][0].end_us == 9);
  CHECK(t.depths[0][1].start_us == 12);
  CHECK(t.depths[0][1].end_us == 20);  // the file's last time
}

TEST_CASE("objects after the trace events (metadata, stack frames) are not events") {
  const Timeline tl = parse_timeline(R"({"traceEvents":[{"ph":"X","pid":1,"tid":2,"ts":0,"dur":1,"name":"a"}],
"metadata":{"x":{"y":1}},"stackFrames":{"1":{"name":"f"}},"samples":[{"ts":1}]})", "t.json");
  CHECK(tl.events == 1);
}

TEST_CASE("a slice ending before its neighbour's end keeps each depth's ends sorted") {
  // A [0,10], B [9.9998, 9.9998], C [10,20]: B may not share A's depth, or A's end would follow B's.
  const Timeline tl = parse_timeline(R"([{"ph":"X","pid":1,"tid":2,"ts":0,"dur":10,"name":"A"},
{"ph":"X","pid":1,"tid":2,"ts":9.9998,"dur":0,"name":"B"},{"ph":"X","pid":1,"tid":2,"ts":10,"dur":10,"name":"C"}])", "t.json");
  for (const auto& d : tl.tracks[0].depths)
    for (size_t i = 1; i < d.size(); ++i) CHECK(d[i - 1].end_us <= d[i].end_us);
  const auto stats = tl.range_stats(9.99985, 30);
  bool a = false;
  for (const auto& st : stats) a = a || st.name == "A";
  CHECK(a);
}

TEST_CASE("a slice that overlaps its neighbour by the files' nanosecond rounding stays on its depth") {
  const Timeline tl = parse_timeline(R"([{"ph":"X","pid":1,"tid":2,"ts":0,"dur":1.0004,"name":"a"},
{"ph":"X","pid":1,"tid":2,"ts":1.000,"dur":1,"name":"b"}])", "t.json");
  CHECK(tl.tracks[0].depths.size() == 1);
}

TEST_CASE("files the viewer cannot read are named with the problem") {
  CHECK(error_of("") == "t.json: the file is empty");
  CHECK(error_of("{\"traceEvents\": [\n{\"ph\": \"X\",}\n]}") .rfind("t.json:2:", 0) == 0);
  CHECK(error_of("{\"traceEvents\": [\n{\"ph\": \"X\",}\n]}").find("not valid JSON") != std::string::npos);
  CHECK(error_of("{\"other\": 1}") ==
        "t.json: no trace events: expected an object with \"traceEvents\" or an array of events");
  CHECK(error_of(R"([{"ph":"X","pid":1,"tid":1,"ts":0,"name":"a"}])") ==
        "t.json: event 1 of the trace events: a complete event (\"ph\": \"X\") needs \"dur\"");
  CHECK(error_of(R"([{"ph":"M","pid":1,"tid":1,"name":"x"},{"ph":"X","pid":1,"tid":1,"ts":0,"dur":-1,"name":"a"}])") ==
        "t.json: event 2 of the trace events: \"dur\" must be a number of microseconds from 0 to 1e16");
  // Times whose end would not be finite (or whose axis could not be scaled) are refused.
  CHECK(error_of(R"([{"ph":"X","pid":1,"tid":1,"ts":1e308,"dur":1e308,"name":"a"}])") ==
        "t.json: event 1 of the trace events: \"ts\" must be a finite number of microseconds within 1e16 either way");
  CHECK(error_of(R"([{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1e17,"name":"a"}])") ==
        "t.json: event 1 of the trace events: \"dur\" must be a number of microseconds from 0 to 1e16");
  CHECK(error_of(R"([{"pid":1}])") == "t.json: event 1 of the trace events: it has no \"ph\" (the event type)");
  CHECK(error_of(R"([{"ph":"E","pid":1,"tid":1,"ts":3}])") ==
        "t.json: an end (\"ph\": \"E\") at 3.000000 us without a begin before it on thread 1 of process 1");
  CHECK(error_of(R"([{"ph":"X","pid":1.5,"tid":1,"ts":0,"dur":1,"name":"a"}])") ==
        "t.json: event 1 of the trace events: \"pid\" must be an integer");
  CHECK(error_of(R"([{"ph":"X","pid":1,"tid":1,"dur":1,"name":"a"}])") ==
        "t.json: event 1 of the trace events: \"ph\": \"X\" needs \"ts\"");
  CHECK(error_of(R"([{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"p"}}])") ==
        "t.json: no slices or counters to show (the file has 1 events, none of them \"X\", \"B\"/\"E\" or \"C\")");
  try {
    load_timeline("/nonexistent/timeline.json");
    FAIL("no error");
  } catch (const LoadError& e) {
    CHECK(std::string(e.what()).rfind("/nonexistent/timeline.json: cannot be opened", 0) == 0);
  }
}
