#include <doctest/doctest.h>

#include "sim/parse/units.h"

using arlsim::parse::Dimension;
using arlsim::parse::parse_quantity;

TEST_CASE("units: people's spellings normalise to SI base units") {
  CHECK(parse_quantity("200 Gbps", Dimension::bytes_per_s).value == doctest::Approx(25e9));
  CHECK(parse_quantity("3.35 TB/s", Dimension::bytes_per_s).value == doctest::Approx(3.35e12));
  CHECK(parse_quantity("80 GiB", Dimension::bytes).value == doctest::Approx(80.0 * 1024 * 1024 * 1024));
  CHECK(parse_quantity("80 GB", Dimension::bytes).value == doctest::Approx(80e9));
  CHECK(parse_quantity("512MiB", Dimension::bytes).value == doctest::Approx(512.0 * 1024 * 1024));
  CHECK(parse_quantity("1.5 ms", Dimension::seconds).value == doctest::Approx(1.5e-3));
  CHECK(parse_quantity("4 us", Dimension::seconds).value == doctest::Approx(4e-6));
  CHECK(parse_quantity("2 h", Dimension::seconds).value == doctest::Approx(7200));
  CHECK(parse_quantity("989 TFLOP/s", Dimension::flops_per_s).value == doctest::Approx(989e12));
  CHECK(parse_quantity("32K", Dimension::tokens).value == 32768);
  CHECK(parse_quantity("8k tokens", Dimension::tokens).value == 8192);
  CHECK(parse_quantity("100 Mbit/s", Dimension::bytes_per_s).value == doctest::Approx(12.5e6));
}

TEST_CASE("units: errors say what was wrong") {
  CHECK(parse_quantity("80", Dimension::bytes).error == "\"80\" has no unit");
  CHECK(parse_quantity("80 parsecs", Dimension::bytes).error == "unknown unit \"parsecs\" for a quantity in bytes");
  CHECK(parse_quantity("fast", Dimension::seconds).error == "expected a number followed by a unit, got \"fast\"");
  CHECK(parse_quantity("nan GB", Dimension::bytes).error == "expected a finite decimal number, got \"nan GB\"");
  CHECK(parse_quantity("0x10 GB", Dimension::bytes).error == "expected a finite decimal number, got \"0x10 GB\"");
  CHECK(parse_quantity("3 GB", Dimension::seconds).error == "unknown unit \"GB\" for a quantity in s");
}

TEST_CASE("units: formatting for tables") {
  CHECK(arlsim::parse::format_bytes(147456) == "144.00 KiB");
  CHECK(arlsim::parse::format_bytes(100) == "100 B");
  CHECK(arlsim::parse::format_count(7.615e9) == "7.62 B");
}
