// Reading trace files (arlsim-trace/1 JSONL): a streaming reader that checks every line and
// reports each problem as FILE:LINE: /json/pointer: message (FILE:LINE:COL for syntax errors).
// Checks beyond one line: the header comes first, steps never decrease, and a (step, prompt_id,
// sample) appears once. A last line cut off in the middle of a write is an error unless the caller
// allows it, in which case it is dropped with a warning.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sim/parse/diagnostics.h"
#include "sim/trace/trace.h"

namespace arlsim::trace {

struct ReadOptions {
  bool allow_truncated_last_line = false;
  // Problems reported one by one; beyond that they are counted in one closing message, so that a
  // file of a million bad lines does not print a million messages.
  size_t max_reported_problems = 100;
};

struct ReadCounts {
  size_t lines = 0;
  size_t trajectories = 0;
  size_t turns = 0;
};

// Streams the trace file at `path` into `sink`. Returns true when the whole file is valid. With
// errors the sink may have seen part of the trace; callers discard what it built.
bool read_trace_file(const std::string& path, TraceSink& sink, parse::Diagnostics& diag,
                     const ReadOptions& options = {}, ReadCounts* counts = nullptr);
// The same for a trace held in memory; `display_name` names it in messages.
bool read_trace_text(std::string_view text, const std::string& display_name, TraceSink& sink,
                     parse::Diagnostics& diag, const ReadOptions& options = {}, ReadCounts* counts = nullptr);

// Reads a whole trace into memory, or only the trajectories `keep` accepts (called for each in
// order; every line is still checked); nullopt (with diagnostics) when it is not valid.
using KeepTrajectory = std::function<bool(const TrajectoryInfo&)>;
std::optional<Trace> load_trace(const std::string& path, parse::Diagnostics& diag, const ReadOptions& options = {},
                                const KeepTrajectory& keep = {});

}  // namespace arlsim::trace
