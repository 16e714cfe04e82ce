// Text formatting shared by the output writers. Everything here is locale-independent (printf's
// %f follows LC_NUMERIC and could write "1,5"), so the same run gives the same bytes on every
// machine, and JSON strings are always valid UTF-8 because trace viewers refuse files that are not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/core/time.h"

namespace arlsim::report {

// Appends `s` as a JSON string literal (quotes included): `"` and `\` escaped, control characters
// as \n, \t, ... or \u00XX, and each byte that is not part of valid UTF-8 replaced by U+FFFD.
void append_json_string(std::string& out, std::string_view s);

// `value` with exactly `decimals` digits after the point ("1.500000"); a value that rounds to
// zero prints without a minus sign, and non-finite values print as "nan", "inf" or "-inf".
std::string format_fixed(double value, int decimals);

// Nanoseconds as microseconds with three decimals ("1234.567"), exact for every count: the
// Chrome trace format counts in microseconds, the simulation clock in nanoseconds.
std::string format_micros(SimTime t);

// The shortest text that reads back as the same double ("0.1", "12.5", "1e-07"); "null" for
// non-finite values, which JSON cannot hold.
std::string format_json_number(double value);

}  // namespace arlsim::report
