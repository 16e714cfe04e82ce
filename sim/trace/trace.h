// Context-growth traces: what one RL step's trajectories look like, step after step. One
// trajectory is a list of turns (prefill new text, generate, call a tool, wait, read its
// observation); traces carry how their number, lengths and tails grow over training into the
// simulator. The file format (arlsim-trace/1, JSONL) is documented in traces/README.md.
//
// Storage is flat (one vector of trajectories, one of turns) so that a 13 M-turn trace costs
// 24 bytes per turn and no allocation per trajectory. Producers (reader, generators, importers)
// push trajectories into a TraceSink, so consumers that need one step at a time (stats, writer)
// never hold the whole trace.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/time.h"

namespace arlsim::trace {

constexpr std::string_view kTraceFormat = "arlsim-trace/1";
constexpr int16_t kNoTool = -1;
// The longest tool call a trace may hold (about 116 days): readers refuse more, generators cap at it.
constexpr int64_t kMaxToolLatencySeconds = 10'000'000;
// Tool kinds are stored as int16 indices into the trace's table of names.
constexpr size_t kMaxToolKinds = 32767;

struct Turn {
  int32_t prefill_tokens = 0;  // new tokens put into the context before this turn's generation
  int32_t gen_tokens = 0;      // tokens the policy generated in this turn
  int32_t obs_tokens = 0;      // tokens of the tool's observation appended after the call
  int16_t tool = kNoTool;      // index into the tool-kind table, or kNoTool
  SimTime tool_latency;        // wall time of the tool call (zero without a tool)

  bool operator==(const Turn&) const = default;
};

// The fields of a trajectory apart from its turns.
struct TrajectoryInfo {
  int32_t step = 0;
  int32_t sample = 0;      // index in its group (the samples of one prompt)
  int64_t prompt_id = 0;   // the group: same prompt, same step
  bool truncated = false;  // generation stopped at a length limit

  bool operator==(const TrajectoryInfo&) const = default;
};

struct TrajectoryView {
  TrajectoryInfo info;
  std::span<const Turn> turns;

  // The first turn's prefill is the prompt.
  int64_t prompt_tokens() const { return turns.empty() ? 0 : turns.front().prefill_tokens; }
  // Every token of the final context: prompt, generations, observations, later prefills.
  int64_t context_tokens() const;
  // The context after the prompt (what RL frameworks call the response: generated tokens plus
  // tool observations and any text added between turns).
  int64_t response_tokens() const { return context_tokens() - prompt_tokens(); }
  int64_t generated_tokens() const;
  SimTime tool_time() const;
  int tool_calls() const;
};

// The header line: format version and provenance (which generator with which parameters, or
// which source was imported and what was fitted). The provenance is kept as compact JSON text.
struct TraceHeader {
  std::string provenance_json = "{}";
  std::string description;

  bool operator==(const TraceHeader&) const = default;
};

// Receives a trace as it is read or produced: the header first, each tool kind the first time it
// is used (indices 0, 1, 2, ... in order), then trajectories with non-decreasing steps.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void header(const TraceHeader& h) = 0;
  virtual void tool_kind(int16_t index, std::string_view name) = 0;
  virtual void trajectory(const TrajectoryView& t) = 0;
  // A hint, before the trajectories: about how many trajectories and turns will follow (a sink
  // that keeps them sizes its storage once instead of copying it as it grows).
  virtual void expect(size_t /*trajectories*/, size_t /*turns*/) {}
};

// A whole trace in memory.
class Trace {
 public:
  TraceHeader header;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  size_t turn_count() const { return turns_.size(); }
  TrajectoryView trajectory(size_t i) const;
  const std::vector<std::string>& tool_names() const { return tool_names_; }

  // Returns the index of a tool kind, adding it when new (kNoTool when the table is full).
  int16_t intern_tool(std::string_view name);
  // Appends a trajectory; its turns' tool indices refer to this trace's table.
  void add(const TrajectoryInfo& info, std::span<const Turn> turns);
  void reserve(size_t trajectories, size_t turns);
  // Bytes of trajectory and turn records (for benchmarks and memory reports).
  size_t storage_bytes() const { return entries_.size() * sizeof(Entry) + turns_.size() * sizeof(Turn); }
  // What storage_bytes() would be for so many trajectories and turns.
  static double bytes_for(double trajectories, double turns) {
    return trajectories * static_cast<double>(sizeof(Entry)) + turns * static_cast<double>(sizeof(Turn));
  }

  bool operator==(const Trace& other) const;

 private:
  struct Entry {
    TrajectoryInfo info;
    uint64_t first_turn = 0;
    uint32_t turn_count = 0;
  };
  std::vector<Entry> entries_;
  std::vector<Turn> turns_;
  std::vector<std::string> tool_names_;
};

// A sink that stores everything it receives in a Trace.
class TraceBuilder final : public TraceSink {
 public:
  explicit TraceBuilder(Trace& trace) : trace_(trace) {}
  void header(const TraceHeader& h) override { trace_.header = h; }
  void tool_kind(int16_t index, std::string_view name) override;
  void trajectory(const TrajectoryView& t) override { trace_.add(t.info, t.turns); }
  void expect(size_t trajectories, size_t turns) override {
    trace_.reserve(trace_.size() + trajectories, trace_.turn_count() + turns);
  }

 private:
  Trace& trace_;
};

// Feeds a trace held in memory to a sink, in order.
void replay(const Trace& trace, TraceSink& sink);

}  // namespace arlsim::trace
