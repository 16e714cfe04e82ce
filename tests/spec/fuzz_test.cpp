// Robustness: thousands of randomly damaged versions of the shipped presets must each end in
// either a parsed spec or at least one diagnostic — never a crash, hang or uncaught exception.
// Run under `make test-asan` this also checks memory safety.
#include <doctest/doctest.h>

#include <random>

#include "sim/spec/check.h"
#include "sim/spec/presets.h"
#include "tests/spec/test_util.h"

using namespace arlsim::spec;

namespace {

std::string mutate(std::string text, std::mt19937_64& rng) {
  static const std::string kSpecial = "{}[]\",:\\/*0123456789-.eE \n\x00\xff\xc3nulltrue";
  std::uniform_int_distribution<int> op(0, 5);
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    const size_t at = rng() % text.size();
    switch (op(rng)) {
      case 0: text[at] = kSpecial[rng() % kSpecial.size()]; break;
      case 1: text.erase(at, 1 + rng() % 16); break;
      case 2: text.insert(at, 1, kSpecial[rng() % kSpecial.size()]); break;
      case 3: text.resize(at); break;  // truncation
      case 4: text.insert(at, text.substr(rng() % text.size(), rng() % 64)); break;  // duplication
      default: text[at] = static_cast<char>(rng() & 0xff); break;
    }
  }
  return text;
}

}  // namespace

TEST_CASE("fuzz: damaged presets give a spec or a diagnostic, never a crash") {
  std::mt19937_64 rng(20261123);
  int parsed = 0, rejected = 0;
  for (const auto& preset : presets()) {
    for (int i = 0; i < 300; ++i) {
      const std::string text = mutate(std::string(preset.text), rng);
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
