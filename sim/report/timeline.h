// timeline.json: the run's activities and counters in the Chrome Trace Event format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. See docs/formats.md, "Outputs of arlsim
// simulate", for the layout.
#pragma once

#include <cstdint>
#include <iosfwd>
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

// The run's activity records and counter samples as named tracks: engines on their nodes
// ("node N" / "engine E (GPU a-b)"), tool calls on the first free slot of their pool ("pool NAME" /
// "slot K"), the step graph's stages ("rollout" or "training" / "stages"), training's
// mini-batches and pipeline stages ("training" / "mini-batches", "pipeline stage S"), and the
// counters of each node. Zero-length stages are left out.
Timeline timeline_of(const rl::RunResult& r);

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
// timeline_of(r), written.
void write_timeline(const rl::RunResult& r, std::ostream& os);

}  // namespace arlsim::report
