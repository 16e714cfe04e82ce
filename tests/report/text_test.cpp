// Formatting helpers of the writers: JSON string escaping (always valid UTF-8), fixed decimals,
// microseconds from nanoseconds, shortest round-trip numbers.
#include <doctest/doctest.h>

#include <limits>

#include "sim/report/text.h"

using namespace arlsim;
using namespace arlsim::report;

namespace {
std::string quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}
}  // namespace

TEST_CASE("append_json_string escapes quotes, backslashes and control characters") {
  CHECK(quoted("plain") == "\"plain\"");
  CHECK(quoted("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quoted("\n\r\t\b\f") == "\"\\n\\r\\t\\b\\f\"");
  CHECK(quoted(std::string("\x00\x01\x1f", 3)) == "\"\\u0000\\u0001\\u001f\"");
  CHECK(quoted("\x7f") == "\"\x7f\"");  // DEL is allowed in JSON strings
}

TEST_CASE("append_json_string passes valid UTF-8 and replaces each invalid byte with U+FFFD") {
  CHECK(quoted("\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e") == "\"\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"");
  const std::string r = "\xEF\xBF\xBD";
  CHECK(quoted("\xff") == "\"" + r + "\"");
  CHECK(quoted("\xc0\xaf") == "\"" + r + r + "\"");                  // overlong '/'
  CHECK(quoted("\xed\xa0\x80") == "\"" + r + r + r + "\"");          // UTF-16 surrogate
  CHECK(quoted("\xf4\x90\x80\x80") == "\"" + r + r + r + r + "\"");  // above U+10FFFF
  CHECK(quoted("\xe2\x82") == "\"" + r + r + "\"");                  // cut short
  CHECK(quoted("\xe2\x82x") == "\"" + r + r + "x\"");
}

TEST_CASE("format_fixed: exact decimals, no minus zero, words for non-finite values") {
  CHECK(format_fixed(1.5, 6) == "1.500000");
  CHECK(format_fixed(2.0 / 3, 3) == "0.667");
  CHECK(format_fixed(-1e-9, 6) == "0.000000");
  CHECK(format_fixed(-0.0, 1) == "0.0");
  CHECK(format_fixed(-2.25, 1) == "-2.2");  // round half to even on the binary value 2.25
  CHECK(format_fixed(1e20, 0) == "100000000000000000000");
  CHECK(format_fixed(std::numeric_limits<double>::quiet_NaN(), 2) == "nan");
  CHECK(format_fixed(-std::numeric_limits<double>::infinity(), 2) == "-inf");
}

TEST_CASE("format_micros: nanoseconds as microseconds with three decimals") {
  CHECK(format_micros(SimTime::zero()) == "0.000");
  CHECK(format_micros(SimTime::from_ns(1)) == "0.001");
  CHECK(format_micros(SimTime::from_ns(1'234'567)) == "1234.567");
  CHECK(format_micros(SimTime::from_ns(-1'500)) == "-1.500");
  CHECK(format_micros(SimTime::max()) == "9223372036854775.807");
}

TEST_CASE("format_json_number: shortest round trip, null for non-finite values") {
  CHECK(format_json_number(0.1) == "0.1");
  CHECK(format_json_number(12.0) == "12");
  CHECK(format_json_number(0.75) == "0.75");
  CHECK(format_json_number(1e-7) == "1e-07");
  CHECK(format_json_number(std::numeric_limits<double>::infinity()) == "null");
}
