// Robustness: thousands of randomly damaged versions of the shipped presets must each end in
// either a parsed spec or at least one diagnostic — never a crash, hang or uncaught exception.
// Run under `make test-asan` this also checks memory safety.
#include <doctest/doctest.h>

#include <random>
#include <string_view>

#include "sim/input/check.h"
#include "sim/input/presets.h"
#include "tests/lib/mutate.h"
#include "tests/parse/test_util.h"

using namespace arlsim::input;
using namespace std::string_view_literals;

namespace {

// Bytes that matter to the parser (NUL included), drawn more often than the rest.
constexpr std::string_view kSpecial = "{}[]\",:\\/*0123456789-.eE \n\x00\xff\xc3nulltrue"sv;

}  // namespace

TEST_CASE("fuzz: damaged presets give a spec or a diagnostic, never a crash") {
  std::mt19937_64 rng(20261123);
  int parsed = 0, rejected = 0;
  for (const auto& preset : presets()) {
    for (int i = 0; i < 300; ++i) {
      const std::string text = arlsim::test::mutate(std::string(preset.text), kSpecial, rng);
      Diagnostics diag;
      Value doc = parse_json(text, arlsim::test::memory_file(std::string(preset.name) + ".json"), diag);
      std::optional<AnySpec> spec;
      if (!doc.is_null()) {
        Loader loader(diag);
        if (auto kind = detect_kind(doc, diag)) {
          loader.resolve(doc, *kind, "");
          spec = parse_document(doc, *kind, diag);
        }
      }
      if (spec && !diag.has_errors()) ++parsed;
      else ++rejected;
      if (!spec) CHECK(diag.has_errors());
    }
  }
  MESSAGE("parsed ", parsed, ", rejected ", rejected);
  CHECK(rejected > 0);
}
