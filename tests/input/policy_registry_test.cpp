// The registered policies: the parser reads them through their registries, with the registry's
// names in its errors.
#include <doctest/doctest.h>

#include "sim/input/policy.h"
#include "sim/parse/reader.h"
#include "tests/parse/test_util.h"

using namespace arlsim;

TEST_CASE("policy registry: policies parse through their registries, with the registry's names in errors") {
  // Every registered routing name is accepted; the parser and the list read the same registry.
  for (const auto& c : input::routing_policies().choices()) {
    parse::Diagnostics diag;
    const auto v = test::parse("{\"routing\": \"" + std::string(c.name) + "\"}", diag);
    parse::ObjectReader r(v, "", diag);
    input::Routing out = input::Routing::round_robin;
    CHECK(r.read_choice("routing", out, parse::Presence::required, input::routing_policies()));
    CHECK(out == c.value);
  }
  parse::Diagnostics diag;
  const auto v = test::parse("{\"routing\": \"stiky\"}", diag);
  parse::ObjectReader r(v, "", diag);
  input::Routing out = input::Routing::round_robin;
  CHECK_FALSE(r.read_choice("routing", out, parse::Presence::required, input::routing_policies()));
  CHECK(parse::format_all(diag) ==
        "mem.json:1:13: /routing: unknown value \"stiky\"; expected one of \"round-robin\", \"least-loaded\", \"sticky\" "
        "or \"length-aware\"; did you mean \"sticky\"?\n");
  CHECK(input::dispatch_name(input::DispatchMode::transfer_dock) == "transfer-dock");
}
