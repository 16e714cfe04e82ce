// The bad-input corpus of traces: every tests/bad_input_trace/NAME.jsonl is read and its
// diagnostics must equal NAME.expected to the letter. To add a case, write NAME.jsonl, run
// `arlsim trace stats tests/bad_input_trace/NAME.jsonl 2> tests/bad_input_trace/NAME.expected`
// from the repository root and read the result before committing it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/trace/reader.h"

namespace fs = std::filesystem;
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
  const fs::path dir = "tests/bad_input_trace";  // ctest runs from the repository root
  REQUIRE(fs::is_directory(dir));
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".jsonl") inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  CHECK(inputs.size() >= 25);
  for (const auto& input : inputs) {
    fs::path expected_path = input;
    expected_path.replace_extension(".expected");
    std::ifstream expected_file(expected_path);
    REQUIRE_MESSAGE(expected_file, "missing ", expected_path.string());
    std::stringstream expected;
    expected << expected_file.rdbuf();
    spec::Diagnostics diag;
    NullSink sink;
    const bool ok = trace::read_trace_file(input.string(), sink, diag);
    INFO(input.string());
    CHECK_FALSE(ok);
    CHECK(diag.has_errors());
    CHECK(spec::format_all(diag) == expected.str());
  }
}
