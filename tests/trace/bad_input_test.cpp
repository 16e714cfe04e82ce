// The bad-input corpus of traces: every tests/bad_input_trace/NAME.jsonl is read and its
// diagnostics must equal NAME.expected to the letter. To add a case, write NAME.jsonl, run
// `arlsim trace stats tests/bad_input_trace/NAME.jsonl 2> tests/bad_input_trace/NAME.expected`
// from the repository root and read the result before committing it.
#include <doctest/doctest.h>

#include "sim/trace/reader.h"
#include "tests/lib/corpus.h"

using namespace arlsim;

namespace {

class NullSink final : public trace::TraceSink {
 public:
  void header(const trace::TraceHeader&) override {}
  void tool_kind(int16_t, std::string_view) override {}
  void trajectory(const trace::TrajectoryView&) override {}
};

}  // namespace

TEST_CASE("bad-input corpus of traces: each file gives exactly its expected diagnostics") {
  const auto cases = test::corpus("tests/bad_input_trace", ".jsonl");
  CHECK(cases.size() >= 25);
  for (const auto& c : cases) {
    parse::Diagnostics diag;
    NullSink sink;
    const bool ok = trace::read_trace_file(c.input.string(), sink, diag);
    INFO(c.input.string());
    CHECK_FALSE(ok);
    CHECK(diag.has_errors());
    CHECK(parse::format_all(diag) == c.expected);
  }
}
