// Writing traces as arlsim-trace/1 JSONL: the header line, then one line per trajectory with the
// keys in a fixed order and latencies as exact decimal seconds, so that writing is deterministic
// and a written trace reads back identical.
#pragma once

#include <cstdio>
#include <string>

#include "sim/parse/diagnostics.h"
#include "sim/trace/trace.h"

namespace arlsim::trace {

// Appends the header line (with its line break).
void append_header_line(std::string& out, const TraceHeader& header);
// Appends one trajectory line (with its line break); `tool_names` resolves the turns' tool indices.
void append_trajectory_line(std::string& out, const TrajectoryView& t, const std::vector<std::string>& tool_names);

// A sink that writes what it receives to a file ("-" is standard output), buffered.
class TraceWriter final : public TraceSink {
 public:
  TraceWriter() = default;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter() override;

  // Opens `path` for writing; reports and returns false when it cannot.
  bool open(const std::string& path, parse::Diagnostics& diag);
  // Flushes and closes; reports and returns false on a write error (a full disk).
  bool close(parse::Diagnostics& diag);

  void header(const TraceHeader& h) override;
  void tool_kind(int16_t index, std::string_view name) override;
  void trajectory(const TrajectoryView& t) override;

 private:
  void flush_if_full();

  std::string path_;
  std::FILE* file_ = nullptr;
  bool owns_file_ = false;
  bool write_failed_ = false;
  std::string buffer_;
  std::vector<std::string> tool_names_;
};

// Writes a whole trace to `path`.
bool write_trace(const Trace& trace, const std::string& path, parse::Diagnostics& diag);
// The whole trace as text (for tests and small outputs).
std::string trace_to_text(const Trace& trace);

}  // namespace arlsim::trace
