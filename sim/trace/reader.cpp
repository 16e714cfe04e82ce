#include "sim/trace/reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/parse/reader.h"
#include "sim/trace/json_text.h"
#include "sim/trace/line_parser.h"

namespace arlsim::trace {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;
constexpr size_t kMaxLineBytes = size_t{64} << 20;
const std::string kHeaderExample = "{\"format\": \"arlsim-trace/1\", \"provenance\": {...}}";

struct GroupKey {
  int64_t prompt_id;
  int32_t sample;
  bool operator==(const GroupKey&) const = default;
};
struct GroupKeyHash {
  size_t operator()(const GroupKey& k) const {
    // Unsigned: any prompt id may be multiplied without overflow.
    return std::hash<uint64_t>()(static_cast<uint64_t>(k.prompt_id) * 1'000'003u + static_cast<uint32_t>(k.sample));
  }
};

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

// Characters (not bytes) before `offset`, plus one: the column of a syntax error.
uint32_t column_of(std::string_view line, size_t offset) {
  uint32_t col = 1;
  for (size_t i = 0; i < offset && i < line.size(); ++i)
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++col;
  return col;
}

// Checks lines one after another and hands the valid trajectories to the sink.
class StreamChecker {
 public:
  StreamChecker(const std::string& display, TraceSink& sink, parse::Diagnostics& diag, const ReadOptions& options)
      : file_(std::make_shared<parse::SourceFile>(parse::SourceFile{display, {}, false})),
        sink_(sink),
        diag_(diag),
        options_(options),
        parser_(tools_) {
    seen_.reserve(1 << 14);
  }

  void line(std::string_view text, bool unterminated);
  void line_too_long();
  bool finish();
  const ReadCounts& counts() const { return counts_; }

 private:
  void add(parse::Diagnostic d);
  void error_at_line(std::string pointer, std::string message, std::string hint = {});
  // `doc` is the first line as parsed, with the parse's diagnostics.
  void header_line(const parse::Value& doc, parse::Diagnostics& header_diag);
  void trajectory_line(std::string_view text, bool unterminated);
  bool check_order();
  void deliver();

  std::shared_ptr<const parse::SourceFile> file_;
  TraceSink& sink_;
  parse::Diagnostics& diag_;
  const ReadOptions& options_;
  ToolTable tools_;
  LineParser parser_;
  size_t announced_tools_ = 0;
  uint32_t line_no_ = 0;
  bool header_done_ = false;
  size_t errors_ = 0;
  size_t reported_ = 0;
  TrajectoryInfo info_;
  std::vector<Turn> turns_;
  std::vector<LineProblem> problems_;
  int64_t last_step_ = -1;
  uint32_t last_step_line_ = 0;
  std::unordered_map<GroupKey, uint32_t, GroupKeyHash> seen_;  // this step's trajectories -> line
  ReadCounts counts_;
};

void StreamChecker::add(parse::Diagnostic d) {
  if (d.severity == parse::Severity::error) ++errors_;
  if (reported_ >= options_.max_reported_problems) return;
  ++reported_;
  diag_.add(std::move(d));
}

void StreamChecker::error_at_line(std::string pointer, std::string message, std::string hint) {
  add({parse::Severity::error, file_->display_name, {line_no_, 0}, std::move(pointer), std::move(message),
       std::move(hint)});
}

void StreamChecker::line(std::string_view text, bool unterminated) {
  ++line_no_;
  ++counts_.lines;
  if (is_blank(text)) return;
  if (!header_done_) {
    header_done_ = true;
    parse::Diagnostics header_diag;
    const parse::Value doc = parse::parse_json(text, file_, header_diag);
    // A first object with turns but no format is a trajectory: the header is missing.
    if (doc.is_object() && !doc.find("format") && doc.find("turns")) {
      error_at_line("", "the first line must be the trace header " + kHeaderExample);
      trajectory_line(text, unterminated);
      return;
    }
    header_line(doc, header_diag);
    return;
  }
  trajectory_line(text, unterminated);
}

void StreamChecker::line_too_long() {
  ++line_no_;
  ++counts_.lines;
  header_done_ = true;
  error_at_line("", "the line is longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB",
                "a trace holds one trajectory per line");
}

void StreamChecker::header_line(const parse::Value& doc, parse::Diagnostics& header_diag) {
  if (!header_diag.has_errors()) {
    parse::ObjectReader r(doc, "", header_diag);
    std::string format;
    TraceHeader header;
    if (r.read("format", format, parse::Presence::required) && format != kTraceFormat) {
      r.error("format", "unsupported trace format " + parse::quote(format) + "; this arlsim reads " +
                            parse::quote(kTraceFormat));
    }
    if (const parse::Value* prov = r.usable("provenance", parse::Presence::required)) {
      if (prov->is_object()) header.provenance_json = to_json(*prov);
      else r.error("provenance", "expected an object, got " + prov->describe());
    }
    r.read("description", header.description, parse::Presence::optional);
    r.finish();
    if (!header_diag.has_errors()) sink_.header(header);
  }
  for (const auto& d : header_diag.items()) add(d);
}

bool StreamChecker::check_order() {
  if (info_.step < last_step_) {
    error_at_line("/step", "step " + std::to_string(info_.step) + " comes after step " + std::to_string(last_step_) +
                               " (line " + std::to_string(last_step_line_) + "); steps must not decrease",
                  "sort the trajectories by step");
    return false;
  }
  if (info_.step != last_step_) {
    last_step_ = info_.step;
    seen_.clear();
  }
  last_step_line_ = line_no_;
  const auto [it, inserted] = seen_.try_emplace(GroupKey{info_.prompt_id, info_.sample}, line_no_);
  if (!inserted) {
    error_at_line("/sample", "step " + std::to_string(info_.step) + " already has prompt_id " +
                                 std::to_string(info_.prompt_id) + ", sample " + std::to_string(info_.sample) +
                                 " (line " + std::to_string(it->second) + ")");
    return false;
  }
  return true;
}

void StreamChecker::deliver() {
  for (; announced_tools_ < tools_.names().size(); ++announced_tools_)
    sink_.tool_kind(static_cast<int16_t>(announced_tools_), tools_.names()[announced_tools_]);
  sink_.trajectory({info_, turns_});
  ++counts_.trajectories;
  counts_.turns += turns_.size();
}

void StreamChecker::trajectory_line(std::string_view text, bool unterminated) {
  problems_.clear();
  if (parser_.parse(text, info_, turns_, problems_)) {
    if (check_order()) deliver();
    return;
  }
  if (unterminated && parser_.ended_early()) {
    if (options_.allow_truncated_last_line) {
      add({parse::Severity::warning, file_->display_name, {line_no_, 0}, "",
           "the last line is incomplete (the file ends inside a trajectory); it was ignored", ""});
    } else {
      error_at_line("", "the last line is incomplete: the file ends inside a trajectory",
                    "if the trace is still being written, `arlsim trace stats --allow-truncated` reads its complete lines");
    }
    return;
  }
  for (auto& p : problems_) {
    const uint32_t column = p.syntax ? column_of(text, p.offset) : 0;
    add({parse::Severity::error, file_->display_name, {line_no_, column}, std::move(p.pointer),
         std::move(p.message), std::move(p.hint)});
  }
}

bool StreamChecker::finish() {
  if (!header_done_) {
    add({parse::Severity::error, file_->display_name, {}, "",
         "the file is empty; expected the header line " + kHeaderExample, ""});
  } else if (counts_.trajectories == 0 && errors_ == 0) {
    add({parse::Severity::error, file_->display_name, {}, "", "the trace has no trajectories", ""});
  }
  if (errors_ > reported_) {
    const size_t hidden = errors_ - reported_;
    diag_.add({parse::Severity::error, file_->display_name, {}, "",
               std::to_string(hidden) + " more problem" + (hidden == 1 ? "" : "s") + " not shown (" +
                   std::to_string(errors_) + " in all)",
               ""});
  }
  return errors_ == 0;
}

// Splits `text` into lines and feeds them to the checker; returns the bytes not yet consumed
// (a partial last line) unless `at_eof`.
size_t feed_lines(StreamChecker& checker, std::string_view text, bool at_eof) {
  size_t pos = 0;
  while (pos < text.size()) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    if (!nl) break;
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - text.data());
    checker.line(text.substr(pos, end - pos), false);
    pos = end + 1;
  }
  if (at_eof && pos < text.size()) {
    checker.line(text.substr(pos), true);
    pos = text.size();
  }
  return pos;
}

}  // namespace

bool read_trace_text(std::string_view text, const std::string& display_name, TraceSink& sink, parse::Diagnostics& diag,
                     const ReadOptions& options, ReadCounts* counts) {
  StreamChecker checker(display_name, sink, diag, options);
  feed_lines(checker, text, true);
  const bool ok = checker.finish();
  if (counts) *counts = checker.counts();
  return ok;
}

bool read_trace_file(const std::string& path, TraceSink& sink, parse::Diagnostics& diag, const ReadOptions& options,
                     ReadCounts* counts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    diag.error_global(path + ": is a directory, not a trace file");
    return false;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    diag.error_global(path + (errno == ENOENT ? ": no such file"
                                              : ": cannot be read (" + std::string(std::strerror(errno)) + ")"));
    return false;
  }
  StreamChecker checker(path, sink, diag, options);
  std::vector<char> buf(kChunkBytes);
  size_t have = 0;
  bool skipping_long_line = false;  // inside a line already reported as too long
  while (true) {
    const size_t got = std::fread(buf.data() + have, 1, buf.size() - have, f.get());
    if (got == 0 && std::ferror(f.get())) {
      diag.error_global(path + ": read error (" + std::string(std::strerror(errno)) + ")");
      return false;
    }
    have += got;
    const bool eof = got == 0;
    size_t start = 0;
    if (skipping_long_line) {
      const void* nl = std::memchr(buf.data(), '\n', have);
      if (!nl && !eof) {
        have = 0;
        continue;
      }
      start = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1 : have;
      skipping_long_line = false;
    }
    const size_t used = start + feed_lines(checker, std::string_view(buf.data() + start, have - start), eof);
    if (eof) break;
    std::memmove(buf.data(), buf.data() + used, have - used);
    have -= used;
    if (have == buf.size()) {  // one line fills the buffer
      if (buf.size() >= kMaxLineBytes) {
        checker.line_too_long();
        skipping_long_line = true;
        have = 0;
      } else {
        buf.resize(buf.size() * 2);
      }
    }
  }
  const bool ok = checker.finish();
  if (counts) *counts = checker.counts();
  return ok;
}

namespace {

// A TraceBuilder for the trajectories a predicate keeps.
class KeepingBuilder final : public TraceSink {
 public:
  KeepingBuilder(Trace& trace, const KeepTrajectory& keep) : builder_(trace), keep_(keep) {}
  void header(const TraceHeader& h) override { builder_.header(h); }
  void tool_kind(int16_t index, std::string_view name) override { builder_.tool_kind(index, name); }
  void trajectory(const TrajectoryView& t) override {
    if (keep_(t.info)) builder_.trajectory(t);
  }

 private:
  TraceBuilder builder_;
  const KeepTrajectory& keep_;
};

}  // namespace

std::optional<Trace> load_trace(const std::string& path, parse::Diagnostics& diag, const ReadOptions& options,
                                const KeepTrajectory& keep) {
  Trace trace;
  // A turn takes at least 35 bytes of JSON and a trajectory line at least 70, so this never
  // reallocates; pages of the reservation that are never written cost no memory.
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec) trace.reserve(bytes / 70 + 1, bytes / 35 + 1);
  TraceBuilder builder(trace);
  KeepingBuilder keeping(trace, keep);
  if (!read_trace_file(path, keep ? static_cast<TraceSink&>(keeping) : builder, diag, options)) return std::nullopt;
  return trace;
}

}  // namespace arlsim::trace
