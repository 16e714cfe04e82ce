// timeline.json: the run's activities and counters in the Chrome Trace Event format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. See docs/formats.md, "Outputs of arlsim
// simulate", for the layout.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "sim/rl/step_result.h"

namespace arlsim::report {

// One activity on the timeline: `process` is a node, an external pool or a side of the cluster,
// `thread` a GPU (or an engine, or a pool slot, or a track of stages).
struct TimelineEvent {
  std::string process;
  std::string thread;
  std::string name;
  SimTime start, end;
  int64_t step = 0;
  std::string stage;
  double flops = 0, bytes = 0;  // a stage's work; written as args when not 0
  const char* op = nullptr;     // what the cost model priced it as (graph::op_name); none for a tool call
};

// A sample of a counter track (memory in GiB, KV utilisation).
struct TimelineCounter {
  std::string process;
  std::string name;
  SimTime time;
  double value = 0;
};

struct Timeline {
  std::string scenario;
  int64_t gpus = 0;
  size_t steps = 0;
  std::vector<TimelineEvent> events;
  std::vector<TimelineCounter> counters;
  // Processes that get the first pids, in this order (list only processes that appear); the others
  // follow in order of first appearance.
  std::vector<std::string> process_order;
};

// What goes on a timeline. `detail`: `stages`, the step graph's stages and training's
// mini-batches with each node's GPU memory; `engines`, also each rollout engine's iterations and
// KV-cache use; `full`, also every tool call and (when the run recorded them) the pipeline stages'
// micro-batches. Steps outside [first_step, last_step] (-1: unbounded) are left out, with the
// counter samples outside the kept steps' span.
struct TimelineOptions {
  enum class Detail : uint8_t { stages, engines, full };
  Detail detail = Detail::full;
  int64_t first_step = -1, last_step = -1;
  bool pipeline = false;  // the pipeline stages' micro-batches below `full` too
  bool keeps_step(int64_t step) const {
    return (first_step < 0 || step >= first_step) && (last_step < 0 || step <= last_step);
  }
};
const char* detail_name(TimelineOptions::Detail d);
// "stages", "engines" or "full"; false for another word.
bool parse_detail(const std::string& text, TimelineOptions::Detail& d);

// The run's activity records and counter samples as named tracks: engines on their nodes
// ("node N" / "engine E (GPU a-b)"), tool calls on the first free slot of their pool ("pool NAME" /
// "slot K"), the step graph's stages ("rollout" or "training" / "stages"), training's
// mini-batches and pipeline stages ("training" / "mini-batches", "pipeline stage S"), and the
// counters of each node. Zero-length stages are left out.
Timeline timeline_of(const rl::RunResult& r, const TimelineOptions& o = {});

// Streams the timeline to `os` as JSON text, one event per line, without building a document
// tree (timelines may hold millions of events). Processes get pids 1, 2, ... in order of first
// appearance (events first, then counters); threads get tids that follow the last pid, in order
// of first appearance of their (process, thread) pair. tids are unique in the file and differ
// from every pid because Perfetto names threads by tid alone and puts process-level events (the
// counters, tid = pid) on a thread whose tid is the pid. Metadata comes first; then every event,
// sorted by (ts, pid, tid, longer first, input order) so that the file is byte-stable and nested
// activities follow their parents. Write errors are left in the stream's state for the caller.
// Throws InternalError when an event ends before it starts (a simulator bug).
void write_timeline(const Timeline& t, std::ostream& os);
// timeline_of(r, o), written.
void write_timeline(const rl::RunResult& r, std::ostream& os, const TimelineOptions& o = {});

// The timeline written while the run goes (rl::RunOptions::sink): each step's records, named as
// timeline_of names them, as the run places the step; nothing is kept but the track names and the
// pools' slots. Each step's part of the file is written as write_timeline writes a whole one:
// metadata of the tracks it adds first, then its events sorted; steps overlap in time where the
// run is asynchronous. Processes take pids in the order write_timeline gives them within the
// first step that has them; tids start above `max_processes` (the most processes the run can
// have: nodes, pools, tools and the two sides), so that they never meet a pid.
class TimelineStream final : public rl::RecordSink {
 public:
  TimelineStream(std::ostream& os, const TimelineOptions& o, int64_t max_processes);
  ~TimelineStream() override;
  void step_placed(const rl::RunResult& run, const std::vector<exec::ActivityRecord>& records,
                   const std::vector<rl::CounterSample>& counters) override;
  // Closes the file's JSON (otherData names the scenario, GPUs and the steps on the timeline).
  void finish(const rl::RunResult& run);
  size_t events_written() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace arlsim::report
