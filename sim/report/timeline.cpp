#include "sim/report/timeline.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "sim/core/assert.h"
#include "sim/report/text.h"

namespace arlsim::report {
namespace {

// Text is handed to the stream in chunks of about this size.
constexpr size_t kFlushBytes = size_t{1} << 20;

// Which pid and tid each event and counter goes to, and the names behind them. Views point into
// the RunResult, which outlives the writing.
struct Tracks {
  std::vector<std::string_view> processes;                        // pid - 1
  std::vector<std::pair<uint32_t, std::string_view>> threads;     // tid - first_tid(): (pid, name)
  std::vector<uint32_t> event_pid, event_thread;                  // per event; thread as tid - first_tid()
  std::vector<uint32_t> counter_pid;                              // per counter
  uint32_t first_tid() const { return static_cast<uint32_t>(processes.size()) + 1; }
};

uint32_t intern(std::unordered_map<std::string_view, uint32_t>& ids, std::string_view name, uint32_t next) {
  return ids.try_emplace(name, next).first->second;
}

Tracks assign_tracks(const Timeline& r) {
  Tracks t;
  std::unordered_map<std::string_view, uint32_t> pids;
  auto pid_of = [&](std::string_view name) {
    const uint32_t pid = intern(pids, name, static_cast<uint32_t>(t.processes.size()) + 1);
    if (pid > t.processes.size()) t.processes.push_back(name);
    return pid;
  };
  for (const auto& name : r.process_order) pid_of(name);
  std::vector<std::unordered_map<std::string_view, uint32_t>> threads_of;  // per pid - 1
  t.event_pid.reserve(r.events.size());
  t.event_thread.reserve(r.events.size());
  for (const auto& e : r.events) {
    const uint32_t pid = pid_of(e.process);
    if (threads_of.size() < pid) threads_of.resize(pid);
    const uint32_t thread = intern(threads_of[pid - 1], e.thread, static_cast<uint32_t>(t.threads.size()));
    if (thread == t.threads.size()) t.threads.emplace_back(pid, e.thread);
    t.event_pid.push_back(pid);
    t.event_thread.push_back(thread);
  }
  t.counter_pid.reserve(r.counters.size());
  for (const auto& c : r.counters) t.counter_pid.push_back(pid_of(c.process));
  return t;
}

// One line of the output; counters sort as if they were zero-length activities on tid = pid.
struct Entry {
  int64_t ts_ns;
  uint32_t pid, tid;
  int64_t neg_end_ns;  // longer activities first at the same start, so parents precede children
  size_t index;        // events first, then counters at events.size() + i
  auto key() const { return std::tie(ts_ns, pid, tid, neg_end_ns, index); }
};

std::vector<Entry> sorted_entries(const Timeline& r, const Tracks& t) {
  std::vector<Entry> entries;
  entries.reserve(r.events.size() + r.counters.size());
  for (size_t i = 0; i < r.events.size(); ++i) {
    const auto& e = r.events[i];
    ARLSIM_ASSERT(e.end >= e.start);
    entries.push_back({e.start.ns(), t.event_pid[i], t.first_tid() + t.event_thread[i], -e.end.ns(), i});
  }
  for (size_t i = 0; i < r.counters.size(); ++i) {
    const auto& c = r.counters[i];
    entries.push_back({c.time.ns(), t.counter_pid[i], t.counter_pid[i], -c.time.ns(), r.events.size() + i});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key() < b.key(); });
  return entries;
}

class TraceText {
 public:
  explicit TraceText(std::ostream& os) : os_(os) { text_.reserve(kFlushBytes + 4096); }

  // Starts the next element of traceEvents.
  void begin_event() {
    text_ += first_ ? "\n" : ",\n";
    first_ = false;
    maybe_flush();
  }
  std::string& text() { return text_; }
  void flush() {
    os_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }

 private:
  void maybe_flush() {
    if (text_.size() >= kFlushBytes) flush();
  }
  std::ostream& os_;
  std::string text_;
  bool first_ = true;
};

void append_pid_tid(std::string& out, uint32_t pid, uint32_t tid) {
  out += "\"pid\":";
  out += std::to_string(pid);
  out += ",\"tid\":";
  out += std::to_string(tid);
}

// A process's or thread's name and sort index (`kind` is "process" or "thread"); the sort index
// keeps the order of first appearance where a viewer would sort names alphabetically (gpu10
// before gpu2).
void append_metadata(TraceText& w, std::string_view kind, uint32_t pid, uint32_t tid, std::string_view name) {
  std::string& out = w.text();
  w.begin_event();
  out += "{\"ph\":\"M\",";
  append_pid_tid(out, pid, tid);
  out += ",\"name\":\"";
  out += kind;
  out += "_name\",\"args\":{\"name\":";
  append_json_string(out, name);
  out += "}}";
  w.begin_event();
  out += "{\"ph\":\"M\",";
  append_pid_tid(out, pid, tid);
  out += ",\"name\":\"";
  out += kind;
  out += "_sort_index\",\"args\":{\"sort_index\":";
  out += std::to_string(kind == "process" ? pid : tid);
  out += "}}";
}

// Appends are piecewise: this runs once per event, and temporaries from `a + b` would allocate.
void append_activity(std::string& out, const TimelineEvent& e, uint32_t pid, uint32_t tid) {
  out += "{\"ph\":\"X\",";
  append_pid_tid(out, pid, tid);
  out += ",\"ts\":";
  out += format_micros(e.start);
  out += ",\"dur\":";
  out += format_micros(e.end - e.start);
  out += ",\"name\":";
  append_json_string(out, e.name);
  out += ",\"cat\":";
  append_json_string(out, e.stage);
  out += ",\"args\":{\"step\":";
  out += std::to_string(e.step);
  out += ",\"stage\":";
  append_json_string(out, e.stage);
  if (e.flops > 0) out += ",\"flops\":" + format_json_number(e.flops);
  if (e.bytes > 0) out += ",\"bytes\":" + format_json_number(e.bytes);
  out += "}}";
}

void append_counter(std::string& out, const TimelineCounter& c, uint32_t pid) {
  out += "{\"ph\":\"C\",";
  append_pid_tid(out, pid, pid);
  out += ",\"ts\":";
  out += format_micros(c.time);
  out += ",\"name\":";
  append_json_string(out, c.name);
  out += ",\"args\":{\"value\":";
  out += format_json_number(c.value);
  out += "}}";
}

void append_other_data(std::string& out, const Timeline& r) {
  out += "\"otherData\":{\"generator\":\"arlsim\",\"scenario\":";
  append_json_string(out, r.scenario);
  out += ",\"gpus\":" + std::to_string(r.gpus) + ",\"steps\":" + std::to_string(r.steps) + "}";
}

}  // namespace

Timeline timeline_of(const rl::RunResult& r) {
  Timeline t;
  t.scenario = r.scenario;
  t.gpus = r.gpus;
  t.steps = r.steps.size();
  const auto node = [&](int64_t gpu) { return "node " + std::to_string(gpu / std::max<int64_t>(1, r.gpus_per_node)); };
  // Tool calls go to the first free slot of their pool, so that a slot's calls never overlap.
  std::map<int64_t, std::vector<SimTime>> slots;
  struct Whole {
    SimTime start, end;
    double flops = 0, bytes = 0;
  };
  std::map<int64_t, Whole> train;  // per step: its training as a whole
  for (const auto& a : r.activities) {
    const SimTime start = SimTime::from_seconds(a.start_s), end = SimTime::from_seconds(a.end_s);
    const std::string stage(graph::stage_name(a.stage));
    switch (a.kind) {
      case exec::RecordKind::stage:
        if (a.stage == graph::Stage::train) {
          // Training is one activity per optimizer step: each on the mini-batches track, and the
          // stage whole on the stages track, from its first to its last.
          if (end > start)
            t.events.push_back({"training", "mini-batches", "epoch " + std::to_string(a.a) + " mini-batch " + std::to_string(a.b),
                                start, end, a.step, stage});
          auto& whole = train[a.step];
          if (a.part == 0) whole = {start, end, a.flops, a.bytes};
          else {
            whole.end = end;
            whole.flops += a.flops;
            whole.bytes += a.bytes;
          }
          if (a.part + 1 == a.parts && whole.end > whole.start)
            t.events.push_back({"training", "stages", stage, whole.start, whole.end, a.step, stage, whole.flops, whole.bytes});
          break;
        }
        if (end > start)
          t.events.push_back({a.side == graph::Side::rollout ? "rollout" : "training", "stages", stage, start, end, a.step, stage,
                              a.flops, a.bytes});
        break;
      case exec::RecordKind::engine_span: {
        const int64_t gpu = a.devices.first;
        const std::string thread = "engine " + std::to_string(a.index) + " (GPU " + std::to_string(gpu) +
                                   (a.devices.count > 1 ? "-" + std::to_string(gpu + a.devices.count - 1) : "") + ")";
        t.events.push_back({node(gpu), thread, a.a ? "prefill+decode" : "decode", start, end, a.step, stage});
        break;
      }
      case exec::RecordKind::tool_call: {
        const bool pooled = a.index >= 0 && static_cast<size_t>(a.index) < r.pool_names.size();
        auto& free_at = slots[a.index];
        size_t slot = 0;
        while (slot < free_at.size() && free_at[slot] > start) ++slot;
        if (slot == free_at.size()) free_at.push_back(end);
        else free_at[slot] = end;
        t.events.push_back({pooled ? "pool " + r.pool_names[static_cast<size_t>(a.index)] : "tools",
                            "slot " + std::to_string(slot), "tool call", start, end, a.step, stage});
        break;
      }
      case exec::RecordKind::pipeline_op:
        t.events.push_back({"training", "pipeline stage " + std::to_string(a.index),
                            (a.b ? "F " : "B ") + std::to_string(a.a), start, end, a.step, stage});
        break;
    }
  }
  for (const auto& c : r.counters) {
    if (c.kind == rl::CounterSample::Kind::gpu_memory_gib)
      t.counters.push_back({"node " + std::to_string(c.node), "GPU memory (GiB)", c.time, c.value});
    else
      t.counters.push_back({"node " + std::to_string(c.node), "KV cache used (%), engine " + std::to_string(c.engine), c.time,
                            c.value});
  }
  // Processes are numbered nodes first in node order, then pools, then the sides' stage tracks:
  // the order a reader scans them in.
  std::set<std::string> names;
  for (const auto& e : t.events) names.insert(e.process);
  for (const auto& c : t.counters) names.insert(c.process);
  std::vector<std::pair<std::pair<int, int64_t>, std::string>> ranked;
  for (const auto& name : names) {
    std::pair<int, int64_t> rank{1, 0};
    if (name.rfind("node ", 0) == 0) rank = {0, std::stoll(name.substr(5))};
    else if (name == "rollout") rank = {2, 0};
    else if (name == "training") rank = {3, 0};
    ranked.push_back({rank, name});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rank, name] : ranked) t.process_order.push_back(std::move(name));
  return t;
}

void write_timeline(const rl::RunResult& r, std::ostream& os) { write_timeline(timeline_of(r), os); }

void write_timeline(const Timeline& r, std::ostream& os) {
  const Tracks tracks = assign_tracks(r);
  const std::vector<Entry> entries = sorted_entries(r, tracks);
  TraceText w(os);
  w.text() += "{\"traceEvents\":[";
  for (uint32_t p = 0; p < tracks.processes.size(); ++p)
    append_metadata(w, "process", p + 1, p + 1, tracks.processes[p]);
  for (uint32_t i = 0; i < tracks.threads.size(); ++i)
    append_metadata(w, "thread", tracks.threads[i].first, tracks.first_tid() + i, tracks.threads[i].second);
  for (const Entry& e : entries) {
    w.begin_event();
    if (e.index < r.events.size()) append_activity(w.text(), r.events[e.index], e.pid, e.tid);
    else append_counter(w.text(), r.counters[e.index - r.events.size()], e.pid);
  }
  w.text() += "\n],\"displayTimeUnit\":\"ms\",";
  append_other_data(w.text(), r);
  w.text() += "}\n";
  w.flush();
}

}  // namespace arlsim::report
