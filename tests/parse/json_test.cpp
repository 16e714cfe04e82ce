#include <doctest/doctest.h>

#include "tests/parse/test_util.h"

using arlsim::parse::Diagnostics;
using arlsim::parse::format_all;
using arlsim::test::parse;

TEST_CASE("json: values keep their line and column") {
  Diagnostics diag;
  auto v = parse("{\n  \"a\": [1, 2.5, \"x\"],\n  \"b\": {\"c\": null}\n}", diag);
  REQUIRE(diag.empty());
  REQUIRE(v.is_object());
  const auto* a = v.find("a");
  REQUIRE(a);
  CHECK(a->pos().line == 2);
  CHECK(a->pos().column == 8);
  CHECK(a->items()[1].pos().column == 12);
  CHECK(a->items()[1].as_double() == 2.5);
  CHECK(v.find("b")->find("c")->is_null());
  CHECK(v.find_member("b")->key_pos.line == 3);
}

TEST_CASE("json: comments are allowed") {
  Diagnostics diag;
  auto v = parse("// leading\n{ /* inline */ \"a\": 1 // trailing\n}", diag);
  CHECK(diag.empty());
  CHECK(v.find("a")->as_int64() == 1);
}

TEST_CASE("json: integers beyond 64 bits are kept as literals and flagged") {
  Diagnostics diag;
  auto v = parse("{\"big\": 18446744073709551616, \"max\": 9223372036854775807}", diag);
  CHECK(diag.empty());
  CHECK(v.find("big")->is_integer_literal());
  CHECK_FALSE(v.find("big")->is_int64());
  CHECK(v.find("big")->literal() == "18446744073709551616");
  CHECK(v.find("max")->as_int64() == 9223372036854775807LL);
}

TEST_CASE("json: syntax errors name the exact position") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"", "mem.json:1:1: the file is empty; expected a JSON object\n"},
      {"{\"a\": 1,}", "mem.json:1:9: trailing comma before '}'; remove the last comma\n"},
      {"{\"a\": NaN}", "mem.json:1:7: NaN and Infinity are not valid JSON numbers; write a finite number\n"},
      {"{\"a\": -Infinity}", "mem.json:1:8: NaN and Infinity are not valid JSON numbers; write a finite number\n"},
      {"{\"a\": 1e400}", "mem.json:1:7: number 1e400 is out of range\n"},
      {"{\"a\": 1, \"a\": 2}", "mem.json:1:10: duplicate key \"a\" (first defined at line 1)\n"},
      {"{\"a\": \"x\n\"}", "mem.json:1:7: unterminated string (a line break before the closing quote)\n"},
      {"{\"a\": 01}", "mem.json:1:7: invalid number: leading zeros are not allowed\n"},
      {"{\"a\" 1}", "mem.json:1:6: expected ':' after the key \"a\", found character '1'\n"},
      {"{} {}", "mem.json:1:4: unexpected character '{' after the end of the JSON document\n"},
      {"\x01\x02", "mem.json:1:1: unexpected byte 0x01; expected a value\n"},
      {"{\"a\": \"\xff\"}", "mem.json:1:8: invalid UTF-8 byte 0xff inside a string\n"},
      {"{'a': 1}", "mem.json:1:2: unexpected character '''; expected a key in double quotes\n"},
      {"/* open", "mem.json:1:1: unterminated /* comment\n"},
  };
  for (const auto& c : cases) {
    Diagnostics diag;
    parse(c.text, diag);
    CHECK_MESSAGE(format_all(diag) == c.expected, "input: ", c.text);
  }
}

TEST_CASE("json: deep nesting is an error, not a stack overflow") {
  Diagnostics diag;
  const std::string deep(100000, '[');
  auto v = parse(deep, diag);
  CHECK(v.is_null());
  CHECK(format_all(diag) == "mem.json:1:258: nesting deeper than 256 levels\n");
}

TEST_CASE("json: unicode escapes and surrogate pairs decode to UTF-8") {
  Diagnostics diag;
  auto v = parse(R"({"s": "\u00e9\ud83d\ude00\n"})", diag);
  REQUIRE(diag.empty());
  CHECK(v.find("s")->as_string() == "\xc3\xa9\xf0\x9f\x98\x80\n");
}

TEST_CASE("json: pointers escape ~ and /") {
  using arlsim::parse::pointer_append;
  CHECK(pointer_append("/a", "b/c~d") == "/a/b~1c~0d");
  std::vector<std::string> tokens;
  REQUIRE(arlsim::parse::pointer_split("/a/b~1c~0d/0", tokens));
  CHECK(tokens == std::vector<std::string>{"a", "b/c~d", "0"});
  CHECK_FALSE(arlsim::parse::pointer_split("a/b", tokens));
}
