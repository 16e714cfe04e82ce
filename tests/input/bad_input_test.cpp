// The bad-input corpus: every tests/bad_input/NAME.json is checked and its diagnostics must equal
// NAME.expected to the letter. To add a case, write NAME.json and NAME.expected by hand (or run
// `arlsim check tests/bad_input/NAME.json 2> tests/bad_input/NAME.expected` from the repository
// root and read the result before committing it).
#include <doctest/doctest.h>

#include "sim/input/check.h"
#include "tests/lib/corpus.h"

using namespace arlsim::input;

TEST_CASE("bad-input corpus: each file gives exactly its expected diagnostics") {
  const auto cases = arlsim::test::corpus("tests/bad_input", ".json");
  CHECK(cases.size() >= 40);
  for (const auto& c : cases) {
    Diagnostics diag;
    auto doc = check_document(c.input.string(), std::nullopt, {}, diag);
    INFO(c.input.string());
    CHECK_FALSE(doc.has_value());
    CHECK(diag.has_errors());
    CHECK(format_all(diag) == c.expected);
  }
}
