// timeline.json: the run's activities and counters in the Chrome Trace Event format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. See docs/formats.md, "Outputs of arlsim
// simulate", for the layout.
#pragma once

#include <iosfwd>

#include "sim/rl/step_result.h"

namespace arlsim::report {

// Streams the timeline to `os` as JSON text, one event per line, without building a document
// tree (timelines may hold millions of events). Processes get pids 1, 2, ... in order of first
// appearance (events first, then counters); threads get tids that follow the last pid, in order
// of first appearance of their (process, thread) pair. tids are unique in the file and differ
// from every pid because Perfetto names threads by tid alone and puts process-level events (the
// counters, tid = pid) on a thread whose tid is the pid. Metadata comes first; then every event,
// sorted by (ts, pid, tid, longer first, input order) so that the file is byte-stable and nested
// activities follow their parents. Write errors are left in the stream's state for the caller.
// Throws InternalError when an event ends before it starts (a simulator bug).
void write_timeline(const rl::RunResult& r, std::ostream& os);

}  // namespace arlsim::report
