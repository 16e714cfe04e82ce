// Small JSON text helpers for traces: compact serialisation of a parse::Value (the header's
// provenance), string escaping, and exact decimal seconds. Trajectory lines are formatted by hand
// in writer.cpp for speed; nlohmann::json stays out of the library's headers.
#pragma once

#include <string>
#include <string_view>

#include "sim/core/time.h"
#include "sim/parse/json.h"

namespace arlsim::trace {

// Appends `s` as a JSON string literal (quotes included); UTF-8 passes through unchanged.
void append_json_string(std::string& out, std::string_view s);
// Compact JSON (no spaces) of a value; numbers keep their literal text, so a parsed document
// written back reads the same.
std::string to_json(const parse::Value& v);
// Seconds with up to nine decimals and no trailing zeros ("0", "1.5", "0.000000001"): exact for
// every nanosecond count, so a trace written and read back holds the same latencies.
std::string format_seconds(SimTime t);
// A number as a person writes it in an option or a description: integers in full ("16384"),
// others with up to ten significant digits ("0.8", "1e-12").
std::string format_number(double v);

}  // namespace arlsim::trace
