// The registry of named choices: lookup both ways, the message for an unknown name and its
// "did you mean".
#include <doctest/doctest.h>

#include "sim/parse/registry.h"

using namespace arlsim;

TEST_CASE("registry: names, values, and what an unknown name gets") {
  enum class Fruit { apple, pear };
  const parse::Registry<Fruit> r{"fruit", {{"apple", "red or green", Fruit::apple}, {"pear", "soft", Fruit::pear}}};
  REQUIRE(r.find("pear") != nullptr);
  CHECK(r.find("pear")->value == Fruit::pear);
  CHECK(r.find("plum") == nullptr);
  CHECK(r.name(Fruit::apple) == "apple");
  CHECK(r.names() == std::vector<std::string>{"apple", "pear"});
  CHECK(r.unknown("aple") == "unknown fruit \"aple\"; expected one of \"apple\" or \"pear\"");
  CHECK(r.hint("aple") == "did you mean \"apple\"?");
  CHECK(r.hint("banana").empty());
}
