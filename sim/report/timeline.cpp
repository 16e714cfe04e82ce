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
  if (e.op) {
    out += ",\"op\":\"";
    out += e.op;
    out += '"';
  }
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

// Writes timelines part by part: each part's new processes and threads get their numbers and
// metadata, then its events go out sorted by (ts, pid, tid, longer first, input order), counters
// as zero-length activities on tid = pid. Processes are numbered 1, 2, ... (a part's
// process_order first, then by first appearance: events, then counters), threads from first_tid
// on by first appearance of their (process, thread) pair.
class PartWriter {
 public:
  // first_tid 0: the first part's process count + 1 (a whole timeline in one part).
  PartWriter(std::ostream& os, uint32_t first_tid) : w_(os), first_tid_(first_tid) { w_.text() += "{\"traceEvents\":["; }

  void part(const Timeline& t) {
    const size_t old_processes = processes_.size(), old_threads = threads_.size();
    for (const auto& name : t.process_order) pid_of(name);
    std::vector<uint32_t> event_pid(t.events.size()), counter_pid(t.counters.size());
    for (size_t i = 0; i < t.events.size(); ++i) event_pid[i] = pid_of(t.events[i].process);
    for (size_t i = 0; i < t.counters.size(); ++i) counter_pid[i] = pid_of(t.counters[i].process);
    if (first_tid_ == 0) first_tid_ = static_cast<uint32_t>(processes_.size()) + 1;
    ARLSIM_ASSERT(processes_.size() < first_tid_);  // a pid never reaches the tids
    struct Entry {
      int64_t ts_ns;
      uint32_t pid, tid;
      int64_t neg_end_ns;  // longer activities first at the same start, so parents precede children
      size_t index;        // events first, then counters at events.size() + i
      auto key() const { return std::tie(ts_ns, pid, tid, neg_end_ns, index); }
    };
    std::vector<Entry> entries;
    entries.reserve(t.events.size() + t.counters.size());
    for (size_t i = 0; i < t.events.size(); ++i) {
      const auto& e = t.events[i];
      ARLSIM_ASSERT(e.end >= e.start);
      entries.push_back({e.start.ns(), event_pid[i], tid_of(event_pid[i], e.thread), -e.end.ns(), i});
    }
    for (size_t i = 0; i < t.counters.size(); ++i) {
      const auto& c = t.counters[i];
      entries.push_back({c.time.ns(), counter_pid[i], counter_pid[i], -c.time.ns(), t.events.size() + i});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key() < b.key(); });
    for (size_t p = old_processes; p < processes_.size(); ++p)
      append_metadata(w_, "process", static_cast<uint32_t>(p) + 1, static_cast<uint32_t>(p) + 1, processes_[p]);
    for (size_t i = old_threads; i < threads_.size(); ++i)
      append_metadata(w_, "thread", threads_[i].first, first_tid_ + static_cast<uint32_t>(i), threads_[i].second);
    for (const Entry& e : entries) {
      w_.begin_event();
      if (e.index < t.events.size()) append_activity(w_.text(), t.events[e.index], e.pid, e.tid);
      else append_counter(w_.text(), t.counters[e.index - t.events.size()], e.pid);
    }
    events_ += entries.size();
  }

  void finish(const Timeline& header) {
    w_.text() += "\n],\"displayTimeUnit\":\"ms\",";
    append_other_data(w_.text(), header);
    w_.text() += "}\n";
    w_.flush();
  }
  size_t events() const { return events_; }

 private:
  uint32_t pid_of(const std::string& name) {
    auto [it, added] = pids_.try_emplace(name, static_cast<uint32_t>(processes_.size()) + 1);
    if (added) processes_.push_back(name);
    return it->second;
  }
  // Threads are numbered after every pid is known (first_tid_ set).
  uint32_t tid_of(uint32_t pid, const std::string& thread) {
    if (threads_of_.size() < pid) threads_of_.resize(pid);
    auto [it, added] = threads_of_[pid - 1].try_emplace(thread, static_cast<uint32_t>(threads_.size()));
    if (added) threads_.emplace_back(pid, thread);
    return first_tid_ + it->second;
  }

  TraceText w_;
  uint32_t first_tid_;
  std::unordered_map<std::string, uint32_t> pids_;
  std::vector<std::string> processes_;  // pid - 1
  std::vector<std::unordered_map<std::string, uint32_t>> threads_of_;  // per pid - 1: thread -> index
  std::vector<std::pair<uint32_t, std::string>> threads_;  // index: (pid, name)
  size_t events_ = 0;
};

}  // namespace

namespace {

bool keeps(const TimelineOptions& o, const exec::ActivityRecord& a) {
  if (!o.keeps_step(a.step)) return false;
  using D = TimelineOptions::Detail;
  switch (a.kind) {
    case exec::RecordKind::stage: return true;
    case exec::RecordKind::engine_span: return o.detail != D::stages;
    case exec::RecordKind::tool_call: return o.detail == D::full;
    case exec::RecordKind::pipeline_op: return o.detail == D::full || o.pipeline;
  }
  return true;
}

bool keeps(const TimelineOptions& o, const rl::CounterSample& c) {
  return c.kind == rl::CounterSample::Kind::gpu_memory_gib || o.detail != TimelineOptions::Detail::stages;
}

// Names records as tracks; keeps what must last across a run's steps (each pool's slots).
class Namer {
 public:
  explicit Namer(const TimelineOptions& o) : o_(o) {}
  void name(const rl::RunResult& r, const std::vector<exec::ActivityRecord>& records,
            const std::vector<rl::CounterSample>& counters, Timeline& t);

 private:
  TimelineOptions o_;
  std::map<int64_t, std::vector<SimTime>> slots_;  // per pool: when each slot is free
};

void Namer::name(const rl::RunResult& r, const std::vector<exec::ActivityRecord>& records,
                 const std::vector<rl::CounterSample>& counters, Timeline& t) {
  const auto node = [&](int64_t gpu) { return "node " + std::to_string(gpu / std::max<int64_t>(1, r.gpus_per_node)); };
  struct Whole {
    SimTime start, end;
    double flops = 0, bytes = 0;
  };
  std::map<int64_t, Whole> train;  // per step: its training as a whole
  for (const auto& a : records) {
    if (!keeps(o_, a)) continue;
    const SimTime start = SimTime::from_seconds(a.start_s), end = SimTime::from_seconds(a.end_s);
    const std::string stage(graph::stage_name(a.stage));
    const char* op = graph::op_name(a.op);
    switch (a.kind) {
      case exec::RecordKind::stage:
        if (a.stage == graph::Stage::train) {
          // Training is one activity per optimizer step: each on the mini-batches track, and the
          // stage whole on the stages track, from its first to its last.
          if (end > start)
            t.events.push_back({"training", "mini-batches", "epoch " + std::to_string(a.a) + " mini-batch " + std::to_string(a.b),
                                start, end, a.step, stage, 0, 0, op});
          auto& whole = train[a.step];
          if (a.part == 0) whole = {start, end, a.flops, a.bytes};
          else {
            whole.end = end;
            whole.flops += a.flops;
            whole.bytes += a.bytes;
          }
          if (a.part + 1 == a.parts && whole.end > whole.start)
            t.events.push_back({"training", "stages", stage, whole.start, whole.end, a.step, stage, whole.flops, whole.bytes, op});
          break;
        }
        if (end > start)
          t.events.push_back({a.side == graph::Side::rollout ? "rollout" : "training", "stages", stage, start, end, a.step, stage,
                              a.flops, a.bytes, op});
        break;
      case exec::RecordKind::engine_span: {
        const int64_t gpu = a.devices.first;
        const std::string thread = "engine " + std::to_string(a.index) + " (GPU " + std::to_string(gpu) +
                                   (a.devices.count > 1 ? "-" + std::to_string(gpu + a.devices.count - 1) : "") + ")";
        t.events.push_back({node(gpu), thread, a.a ? "prefill+decode" : "decode", start, end, a.step, stage, 0, 0, op});
        break;
      }
      case exec::RecordKind::tool_call: {
        // Tool calls go to the first free slot of their pool, so that a slot's calls never overlap.
        const bool pooled = a.index >= 0 && static_cast<size_t>(a.index) < r.pool_names.size();
        auto& free_at = slots_[a.index];
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
                            (a.b ? "F " : "B ") + std::to_string(a.a), start, end, a.step, stage, 0, 0, op});
        break;
    }
  }
  for (const auto& c : counters) {
    if (!keeps(o_, c)) continue;
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
  for (const auto& n : names) {
    std::pair<int, int64_t> rank{1, 0};
    if (n.rfind("node ", 0) == 0) rank = {0, std::stoll(n.substr(5))};
    else if (n == "rollout") rank = {2, 0};
    else if (n == "training") rank = {3, 0};
    ranked.push_back({rank, n});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [rank, n] : ranked) t.process_order.push_back(std::move(n));
}

}  // namespace

const char* detail_name(TimelineOptions::Detail d) {
  switch (d) {
    case TimelineOptions::Detail::stages: return "stages";
    case TimelineOptions::Detail::engines: return "engines";
    case TimelineOptions::Detail::full: return "full";
  }
  return "full";
}

bool parse_detail(const std::string& text, TimelineOptions::Detail& d) {
  for (auto v : {TimelineOptions::Detail::stages, TimelineOptions::Detail::engines, TimelineOptions::Detail::full})
    if (text == detail_name(v)) {
      d = v;
      return true;
    }
  return false;
}

Timeline timeline_of(const rl::RunResult& r, const TimelineOptions& o) {
  Timeline t;
  t.scenario = r.scenario;
  t.gpus = r.gpus;
  // Counter samples within the kept steps' span (all of them without a step range).
  const bool ranged = o.first_step >= 0 || o.last_step >= 0;
  double from = ranged ? 1e300 : -1e300, to = ranged ? -1e300 : 1e300;
  t.steps = 0;
  for (const auto& rec : r.steps)
    if (o.keeps_step(rec.step)) {
      ++t.steps;
      if (ranged) from = std::min(from, rec.start_s), to = std::max(to, rec.end_s);
    }
  std::vector<rl::CounterSample> counters;
  for (const auto& c : r.counters)
    if (c.time.seconds() >= from && c.time.seconds() <= to) counters.push_back(c);
  Namer(o).name(r, r.activities, counters, t);
  return t;
}

void write_timeline(const rl::RunResult& r, std::ostream& os, const TimelineOptions& o) {
  write_timeline(timeline_of(r, o), os);
}

struct TimelineStream::State {
  State(std::ostream& os, const TimelineOptions& o, int64_t max_processes)
      : writer(os, static_cast<uint32_t>(std::max<int64_t>(1, max_processes)) + 1), options(o), namer(o) {}
  PartWriter writer;
  TimelineOptions options;
  Namer namer;
  size_t steps = 0;
};

TimelineStream::TimelineStream(std::ostream& os, const TimelineOptions& o, int64_t max_processes)
    : state_(std::make_unique<State>(os, o, max_processes)) {}
TimelineStream::~TimelineStream() = default;

void TimelineStream::step_placed(const rl::RunResult& run, const std::vector<exec::ActivityRecord>& records,
                                 const std::vector<rl::CounterSample>& counters) {
  // A step's records all carry its number; its counters go with it.
  if (records.empty() || !state_->options.keeps_step(records.front().step)) return;
  Timeline part;
  state_->namer.name(run, records, counters, part);
  state_->writer.part(part);
  ++state_->steps;
}

void TimelineStream::finish(const rl::RunResult& run) {
  Timeline header;
  header.scenario = run.scenario;
  header.gpus = run.gpus;
  header.steps = state_->steps;
  state_->writer.finish(header);
}

size_t TimelineStream::events_written() const { return state_->writer.events(); }

void write_timeline(const Timeline& r, std::ostream& os) {
  PartWriter w(os, 0);
  w.part(r);
  w.finish(r);
}

}  // namespace arlsim::report
