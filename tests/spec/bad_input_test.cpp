// The bad-input corpus: every tests/bad_input/NAME.json is checked and its diagnostics must equal
// NAME.expected to the letter. To add a case, write NAME.json and NAME.expected by hand (or run
// `arlsim check tests/bad_input/NAME.json 2> tests/bad_input/NAME.expected` from the repository
// root and read the result before committing it).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/spec/check.h"

namespace fs = std::filesystem;
using namespace arlsim::spec;

TEST_CASE("bad-input corpus: each file gives exactly its expected diagnostics") {
  const fs::path dir = "tests/bad_input";  // ctest runs from the repository root
  REQUIRE(fs::is_directory(dir));
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json") inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  CHECK(inputs.size() >= 40);
  for (const auto& input : inputs) {
    fs::path expected_path = input;
    expected_path.replace_extension(".expected");
    std::ifstream expected_file(expected_path);
    REQUIRE_MESSAGE(expected_file, "missing ", expected_path.string());
    std::stringstream expected;
    expected << expected_file.rdbuf();
    Diagnostics diag;
    auto doc = check_document(input.string(), std::nullopt, {}, diag);
    INFO(input.string());
    CHECK_FALSE(doc.has_value());
    CHECK(diag.has_errors());
    CHECK(format_all(diag) == expected.str());
  }
}
