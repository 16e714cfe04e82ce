#include "sim/parse/units.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace arlsim::parse {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Prefix multiplier at the start of `unit`; advances past it. Binary prefixes first.
double take_prefix(std::string_view& unit) {
  static const std::array<std::pair<std::string_view, double>, 10> prefixes{{
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
  }};
  for (const auto& [p, mult] : prefixes) {
    if (unit.size() > p.size() && unit.substr(0, p.size()) == p) {
      unit.remove_prefix(p.size());
      return mult;
    }
  }
  if (unit.size() > 1 && unit[0] == 'P') {
    unit.remove_prefix(1);
    return 1e15;
  }
  return 1.0;
}

std::optional<double> bytes_unit(std::string_view u) {
  if (u == "B" || u == "byte" || u == "bytes") return 1.0;
  if (u == "b" || u == "bit" || u == "bits") return 0.125;
  return std::nullopt;
}

std::optional<double> scale_for(std::string_view unit, Dimension dim) {
  switch (dim) {
    case Dimension::seconds: {
      static const std::array<std::pair<std::string_view, double>, 13> units{{
          {"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"sec", 1.0}, {"min", 60.0},
          {"m", 60.0}, {"h", 3600.0}, {"hr", 3600.0}, {"hour", 3600.0}, {"hours", 3600.0}, {"d", 86400.0},
      }};
      for (const auto& [name, mult] : units)
        if (unit == name) return mult;
      return std::nullopt;
    }
    case Dimension::bytes: {
      std::string_view u = unit;
      const double p = take_prefix(u);
      if (auto b = bytes_unit(u)) return p * *b;
      if (auto b = bytes_unit(unit)) return *b;
      return std::nullopt;
    }
    case Dimension::bytes_per_s: {
      std::string_view u = unit;
      const double p = take_prefix(u);
      if (u == "bps" || u == "bit/s" || u == "b/s") return p / 8.0;
      if (u == "B/s" || u == "Bps") return p;
      return std::nullopt;
    }
    case Dimension::flops_per_s: {
      std::string_view u = unit;
      const double p = take_prefix(u);
      if (u == "FLOP/s" || u == "FLOPS" || u == "flop/s" || u == "flops") return p;
      return std::nullopt;
    }
    case Dimension::flops: {
      std::string_view u = unit;
      const double p = take_prefix(u);
      if (u == "FLOP" || u == "flop") return p;
      return std::nullopt;
    }
    case Dimension::tokens: {
      // Context lengths are quoted in binary thousands: "32K" is 32768 tokens.
      std::string_view u = unit;
      double p = 1.0;
      if (!u.empty() && (u[0] == 'K' || u[0] == 'k')) p = 1024.0;
      else if (!u.empty() && u[0] == 'M') p = 1048576.0;
      if (p > 1.0) u.remove_prefix(1);
      if (u.empty() || u == "tokens" || u == "token" || u == " tokens") return p;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view base_unit_name(Dimension dim) {
  switch (dim) {
    case Dimension::bytes: return "bytes";
    case Dimension::bytes_per_s: return "bytes/s";
    case Dimension::seconds: return "s";
    case Dimension::flops_per_s: return "FLOP/s";
    case Dimension::flops: return "FLOP";
    case Dimension::tokens: return "tokens";
  }
  return "";
}

std::string_view unit_examples(Dimension dim) {
  switch (dim) {
    case Dimension::bytes: return "write e.g. \"80 GiB\", \"512 MB\" or a number of bytes";
    case Dimension::bytes_per_s: return "write e.g. \"3.35 TB/s\", \"400 Gbps\" or a number of bytes/s";
    case Dimension::seconds: return "write e.g. \"1.5 ms\", \"30 s\", \"2 h\" or a number of seconds";
    case Dimension::flops_per_s: return "write e.g. \"989 TFLOP/s\" or a number of FLOP/s";
    case Dimension::flops: return "write e.g. \"1.2 TFLOP\" or a number of FLOP";
    case Dimension::tokens: return "write e.g. \"32K\" or a number of tokens";
  }
  return "";
}

ParsedQuantity parse_quantity(std::string_view text, Dimension dim) {
  ParsedQuantity out;
  const std::string_view s = trim(text);
  const std::string buf(s);
  char* end = nullptr;
  const double number = std::strtod(buf.c_str(), &end);
  const size_t used = static_cast<size_t>(end - buf.c_str());
  if (used == 0) {
    out.error = "expected a number followed by a unit, got " + std::string(s.empty() ? "an empty string" : "\"" + buf + "\"");
    return out;
  }
  const std::string_view lead = s.substr(0, used);
  if (lead.find_first_of("xXnNiI") != std::string_view::npos || !std::isfinite(number)) {
    out.error = "expected a finite decimal number, got \"" + buf + "\"";
    return out;
  }
  const std::string_view unit = trim(s.substr(used));
  if (unit.empty()) {
    if (dim == Dimension::tokens) {
      out.value = number;
      return out;
    }
    out.error = "\"" + buf + "\" has no unit";
    return out;
  }
  const auto scale = scale_for(unit, dim);
  if (!scale) {
    out.error = "unknown unit \"" + std::string(unit) + "\" for a quantity in " + std::string(base_unit_name(dim));
    return out;
  }
  out.value = number * *scale;
  return out;
}

std::string format_bytes(double bytes) {
  static const std::array<const char*, 6> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i + 1 < names.size()) {
    v /= 1024.0;
    ++i;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", v, names[i]);
  return buf;
}

std::string format_count(double n) {
  static const std::array<std::pair<double, const char*>, 4> scales{{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}};
  char buf[48];
  for (const auto& [scale, name] : scales) {
    if (std::fabs(n) >= scale) {
      std::snprintf(buf, sizeof buf, "%.2f %s", n / scale, name);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

}  // namespace arlsim::parse
