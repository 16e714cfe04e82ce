#include "sim/trace/writer.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include "sim/core/assert.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;

void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

}  // namespace

void append_header_line(std::string& out, const TraceHeader& header) {
  out += "{\"format\":";
  append_json_string(out, kTraceFormat);
  if (!header.description.empty()) {
    out += ",\"description\":";
    append_json_string(out, header.description);
  }
  out += ",\"provenance\":";
  out += header.provenance_json.empty() ? "{}" : header.provenance_json;
  out += "}\n";
}

void append_trajectory_line(std::string& out, const TrajectoryView& t, const std::vector<std::string>& tool_names) {
  out += "{\"step\":";
  append_int(out, t.info.step);
  out += ",\"prompt_id\":";
  append_int(out, t.info.prompt_id);
  out += ",\"sample\":";
  append_int(out, t.info.sample);
  out += ",\"turns\":[";
  bool first = true;
  for (const Turn& turn : t.turns) {
    out += first ? "{\"prefill_tokens\":" : ",{\"prefill_tokens\":";
    first = false;
    append_int(out, turn.prefill_tokens);
    out += ",\"gen_tokens\":";
    append_int(out, turn.gen_tokens);
    out += ",\"tool\":";
    if (turn.tool == kNoTool) {
      out += "null";
    } else {
      ARLSIM_ASSERT(turn.tool >= 0 && static_cast<size_t>(turn.tool) < tool_names.size());
      append_json_string(out, tool_names[static_cast<size_t>(turn.tool)]);
    }
    out += ",\"tool_latency_s\":";
    out += format_seconds(turn.tool_latency);
    out += ",\"obs_tokens\":";
    append_int(out, turn.obs_tokens);
    out += '}';
  }
  out += ']';
  if (t.info.truncated) out += ",\"truncated\":true";
  out += "}\n";
}

TraceWriter::~TraceWriter() {
  if (file_ && owns_file_) std::fclose(file_);
}

bool TraceWriter::open(const std::string& path, parse::Diagnostics& diag) {
  path_ = path;
  if (path == "-") {
    file_ = stdout;
    owns_file_ = false;
    return true;
  }
  file_ = std::fopen(path.c_str(), "wb");
  owns_file_ = true;
  if (!file_) {
    diag.error_global(path + ": cannot be written (" + std::string(std::strerror(errno)) + ")");
    return false;
  }
  buffer_.reserve(kFlushBytes + (64 << 10));
  return true;
}

void TraceWriter::flush_if_full() {
  if (buffer_.size() < kFlushBytes) return;
  if (file_ && !write_failed_ && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
    write_failed_ = true;
  buffer_.clear();
}

bool TraceWriter::close(parse::Diagnostics& diag) {
  if (!file_) return false;
  if (!write_failed_ && !buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
    write_failed_ = true;
  buffer_.clear();
  if (std::fflush(file_) != 0) write_failed_ = true;
  if (owns_file_ && std::fclose(file_) != 0) write_failed_ = true;
  file_ = nullptr;
  if (write_failed_) diag.error_global(path_ + ": write failed (" + std::string(std::strerror(errno)) + ")");
  return !write_failed_;
}

void TraceWriter::header(const TraceHeader& h) {
  append_header_line(buffer_, h);
  flush_if_full();
}

void TraceWriter::tool_kind(int16_t index, std::string_view name) {
  if (static_cast<size_t>(index) >= tool_names_.size()) tool_names_.resize(static_cast<size_t>(index) + 1);
  tool_names_[static_cast<size_t>(index)] = std::string(name);
}

void TraceWriter::trajectory(const TrajectoryView& t) {
  append_trajectory_line(buffer_, t, tool_names_);
  flush_if_full();
}

bool write_trace(const Trace& trace, const std::string& path, parse::Diagnostics& diag) {
  TraceWriter writer;
  if (!writer.open(path, diag)) return false;
  replay(trace, writer);
  return writer.close(diag);
}

std::string trace_to_text(const Trace& trace) {
  std::string out;
  append_header_line(out, trace.header);
  for (size_t i = 0; i < trace.size(); ++i) append_trajectory_line(out, trace.trajectory(i), trace.tool_names());
  return out;
}

}  // namespace arlsim::trace
