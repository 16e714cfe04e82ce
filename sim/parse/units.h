// Quantities with units, as people write them in input files ("200 Gbps", "80 GiB",
// "3.35 TB/s", "1.5 ms", "989 TFLOP/s"), normalised once at the input boundary to SI base units:
// bytes, bytes per second, seconds, FLOP per second. Decimal prefixes (k, M, G, T, P) are powers
// of 1000 and binary ones (Ki, Mi, Gi, Ti) powers of 1024; "b"/"bit" is a bit, "B" a byte.
// Token counts follow the LLM convention of binary thousands: "32K" is 32768 tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace arlsim::parse {

enum class Dimension { bytes, bytes_per_s, seconds, flops_per_s, flops, tokens };

struct ParsedQuantity {
  double value = 0;  // in the SI base unit of the dimension
  std::string error; // non-empty when the text could not be read
};

// Parses "<number> <unit>" for the given dimension. A bare number is rejected (the caller decides
// what a plain JSON number means for a field).
ParsedQuantity parse_quantity(std::string_view text, Dimension dim);

// The base unit's name for messages ("bytes", "bytes/s", "s", "FLOP/s").
std::string_view base_unit_name(Dimension dim);
// Examples for hints: "\"80 GiB\" or a number of bytes".
std::string_view unit_examples(Dimension dim);

// Human-readable formatting for tables: 80 GiB, 3.35 TB/s, 1.50 ms.
std::string format_bytes(double bytes);
std::string format_count(double n);  // 7.62 B, 151.9 M

}  // namespace arlsim::parse
