// Growth curves: exact endpoints, the shape of each model, step changes, and the text forms.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/trace/growth.h"

using namespace arlsim::trace;

namespace {

Growth parse(const std::string& text) {
  std::string error;
  auto g = Growth::parse(text, error);
  INFO(text, ": ", error);
  REQUIRE(g.has_value());
  return *g;
}

std::string parse_error(const std::string& text) {
  std::string error;
  CHECK_FALSE(Growth::parse(text, error).has_value());
  return error;
}

}  // namespace

TEST_CASE("growth: linear passes through both endpoints and is straight") {
  const Growth g = Growth::linear(1000, 5000);
  CHECK(g.at(1, 1, 101) == 1000);
  CHECK(g.at(101, 1, 101) == 5000);
  CHECK(g.at(51, 1, 101) == doctest::Approx(3000));  // start + (end - start) * 50 / 100
  CHECK(g.at(0, 1, 101) == 1000);                    // clamped outside the run
  CHECK(g.at(500, 1, 101) == 5000);
}

TEST_CASE("growth: logistic has exact endpoints, rises monotonically and is symmetric about its midpoint") {
  const Growth g = Growth::logistic(1000, 9000, 50, 8);
  CHECK(g.at(0, 0, 100) == doctest::Approx(1000));
  CHECK(g.at(100, 0, 100) == doctest::Approx(9000));
  CHECK(g.at(50, 0, 100) == doctest::Approx(5000));  // the midpoint of a symmetric run is half way
  for (int s = 1; s <= 100; ++s) CHECK(g.at(s, 0, 100) >= g.at(s - 1, 0, 100));
  for (int d = 1; d < 50; ++d)
    CHECK(g.at(50 + d, 0, 100) - 5000 == doctest::Approx(5000 - g.at(50 - d, 0, 100)));
  // Steepest at the midpoint: S-shaped, flat at both ends.
  CHECK(g.at(51, 0, 100) - g.at(50, 0, 100) > g.at(11, 0, 100) - g.at(10, 0, 100));
  CHECK(g.at(51, 0, 100) - g.at(50, 0, 100) > g.at(91, 0, 100) - g.at(90, 0, 100));
}

TEST_CASE("growth: saturating rises fast then levels off, with exact endpoints") {
  const Growth g = Growth::saturating(2000, 10000, 20);
  CHECK(g.at(1, 1, 201) == doctest::Approx(2000));
  CHECK(g.at(201, 1, 201) == doctest::Approx(10000));
  // value = start + (end - start) (1 - e^(-x/tau)) / (1 - e^(-span/tau))
  const double expected = 2000 + 8000 * (1 - std::exp(-20.0 / 20)) / (1 - std::exp(-200.0 / 20));
  CHECK(g.at(21, 1, 201) == doctest::Approx(expected));
  for (int s = 3; s <= 201; ++s)  // concave: each step adds less than the one before
    CHECK(g.at(s, 1, 201) - g.at(s - 1, 1, 201) <= g.at(s - 1, 1, 201) - g.at(s - 2, 1, 201) + 1e-9);
}

TEST_CASE("growth: step changes apply from their step on (a limit raised 8K -> 16K -> 24K)") {
  const Growth g = parse("8K,16K@100,24K@150");
  CHECK(g.kind() == GrowthKind::steps);
  CHECK(g.at(1, 1, 200) == 8192);
  CHECK(g.at(99, 1, 200) == 8192);
  CHECK(g.at(100, 1, 200) == 16384);
  CHECK(g.at(149, 1, 200) == 16384);
  CHECK(g.at(150, 1, 200) == 24576);
  CHECK(g.at(200, 1, 200) == 24576);
  CHECK(g.max_over(1, 200) == 24576);
}

TEST_CASE("growth: text forms parse and print back the same curve") {
  CHECK(parse("2K").at(5, 1, 10) == 2048);
  CHECK(parse("2K").kind() == GrowthKind::constant);
  CHECK(parse("1.5K").at(1, 1, 10) == 1536);
  CHECK(parse("linear 1K..4K").to_string() == "linear 1024..4096");
  CHECK(parse("logistic 1K..12K mid=100 width=20").to_string() == "logistic 1024..12288 mid=100 width=20");
  CHECK(parse("saturating 1K..12K tau=50").to_string() == "saturating 1024..12288 tau=50");
  CHECK(parse("steps 8K,16K@100").to_string() == "8192,16384@100");
  for (const char* text : {"linear 3..12", "logistic 1..9 mid=40", "saturating 0..7 tau=3", "100,200@5,300@9", "42"}) {
    const Growth g = parse(text);
    const Growth again = parse(g.to_string());
    for (int s = 1; s <= 60; ++s) CHECK(again.at(s, 1, 60) == g.at(s, 1, 60));
  }
}

TEST_CASE("growth: bad text is explained") {
  CHECK(parse_error("quadratic 1..2") ==
        "expected a value (\"2K\"), step changes (\"8K,16K@100\") or a curve (\"linear 1K..4K\", "
        "\"logistic 1K..12K\", \"saturating 1K..12K\"), got \"quadratic 1..2\"");
  CHECK(parse_error("linear 1K") == "expected START..END, got \"1K\"");
  CHECK(parse_error("logistic 1..2 middle=3") == "unknown option \"middle=3\"; expected mid=, width=");
  CHECK(parse_error("linear 1..2 tau=3") == "unexpected \"tau=3\" after the range");
  CHECK(parse_error("8K,16K@100,24K@50") == "steps must increase: 50 comes after 100");
  CHECK(parse_error("8K,16K") == "every value after the first needs its step, as in \"8K,16K@100\"");
  CHECK(parse_error("8K@5,16K@10") == "the first value applies from the start and takes no step: write \"8K,...\"");
  CHECK(parse_error("8K,16K@x") == "expected a step number after '@', got \"x\"");
  CHECK(parse_error("8Q") == "unknown unit \"Q\" for a quantity in tokens");
}
