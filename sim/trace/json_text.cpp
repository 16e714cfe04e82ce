#include "sim/trace/json_text.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace arlsim::trace {
namespace {

void append_value(std::string& out, const parse::Value& v) {
  switch (v.kind()) {
    case parse::Value::Kind::null: out += "null"; return;
    case parse::Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case parse::Value::Kind::number: out += v.literal(); return;
    case parse::Value::Kind::string: append_json_string(out, v.as_string()); return;
    case parse::Value::Kind::array: {
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ',';
        append_value(out, v.items()[i]);
      }
      out += ']';
      return;
    }
    case parse::Value::Kind::object: {
      out += '{';
      bool first = true;
      for (const auto& m : v.members()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, m.key);
        out += ':';
        append_value(out, *m.value);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

std::string to_json(const parse::Value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string format_seconds(SimTime t) {
  const int64_t ns = t.ns();
  if (ns < 0) return "-" + format_seconds(SimTime::from_ns(-ns));
  char buf[40];
  const int64_t whole = ns / 1'000'000'000, frac = ns % 1'000'000'000;
  if (frac == 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64, whole);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64, whole, frac);
  std::string s(buf);
  while (s.back() == '0') s.pop_back();
  return s;
}

std::string format_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace arlsim::trace
