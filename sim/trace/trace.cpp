#include "sim/trace/trace.h"

#include "sim/core/assert.h"

namespace arlsim::trace {

int64_t TrajectoryView::context_tokens() const {
  int64_t total = 0;
  for (const Turn& t : turns) total += int64_t{t.prefill_tokens} + t.gen_tokens + t.obs_tokens;
  return total;
}

int64_t TrajectoryView::generated_tokens() const {
  int64_t total = 0;
  for (const Turn& t : turns) total += t.gen_tokens;
  return total;
}

SimTime TrajectoryView::tool_time() const {
  SimTime total;
  for (const Turn& t : turns) total += t.tool_latency;
  return total;
}

int TrajectoryView::tool_calls() const {
  int calls = 0;
  for (const Turn& t : turns) calls += t.tool != kNoTool ? 1 : 0;
  return calls;
}

TrajectoryView Trace::trajectory(size_t i) const {
  ARLSIM_ASSERT(i < entries_.size());
  const Entry& e = entries_[i];
  return {e.info, std::span<const Turn>(turns_.data() + e.first_turn, e.turn_count)};
}

int16_t Trace::intern_tool(std::string_view name) {
  for (size_t i = 0; i < tool_names_.size(); ++i)
    if (tool_names_[i] == name) return static_cast<int16_t>(i);
  if (tool_names_.size() >= kMaxToolKinds) return kNoTool;
  tool_names_.emplace_back(name);
  return static_cast<int16_t>(tool_names_.size() - 1);
}

void Trace::add(const TrajectoryInfo& info, std::span<const Turn> turns) {
  ARLSIM_ASSERT(turns.size() <= UINT32_MAX);
  entries_.push_back({info, turns_.size(), static_cast<uint32_t>(turns.size())});
  turns_.insert(turns_.end(), turns.begin(), turns.end());
}

void Trace::reserve(size_t trajectories, size_t turns) {
  entries_.reserve(trajectories);
  turns_.reserve(turns);
}

bool Trace::operator==(const Trace& other) const {
  if (header != other.header || tool_names_ != other.tool_names_ || entries_.size() != other.entries_.size() ||
      turns_ != other.turns_)
    return false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& a = entries_[i];
    const Entry& b = other.entries_[i];
    if (a.info != b.info || a.first_turn != b.first_turn || a.turn_count != b.turn_count) return false;
  }
  return true;
}

void TraceBuilder::tool_kind(int16_t index, std::string_view name) {
  // Producers announce kinds in order, so the trace's table gets the same indices.
  const int16_t mine = trace_.intern_tool(name);
  ARLSIM_ASSERT(mine == index);
}

void replay(const Trace& trace, TraceSink& sink) {
  sink.header(trace.header);
  for (size_t i = 0; i < trace.tool_names().size(); ++i)
    sink.tool_kind(static_cast<int16_t>(i), trace.tool_names()[i]);
  for (size_t i = 0; i < trace.size(); ++i) sink.trajectory(trace.trajectory(i));
}

}  // namespace arlsim::trace
