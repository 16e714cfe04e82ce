// Numbers as the harness writes and fits them, shared by its sweep (harness.cpp) and its profile
// writer (profile.cpp); not part of the harness's interface.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace arlsim::calib {
namespace {

inline double d(int64_t v) { return static_cast<double>(v); }

inline std::string fixed(double v, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

// Quantities as the profile parser reads them.
inline std::string flops_text(double v) { return fixed(v / 1e9, 5) + " GFLOP/s"; }
inline std::string bandwidth_text(double v) { return fixed(v / 1e9, 5) + " GB/s"; }
inline std::string bytes_text(double v) { return fixed(v / (1024.0 * 1024 * 1024), 5) + " GiB"; }
inline std::string micros_text(double v) { return fixed(v * 1e6, 4) + " us"; }

inline double gemm_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * d(m) * d(n) * d(k); }

inline std::string pass_name(bool backward) { return backward ? "fwd_bwd" : "fwd"; }

inline std::vector<int64_t> geometric(int64_t from, int64_t to, int64_t factor) {
  std::vector<int64_t> v;
  for (int64_t x = from; x <= to; x *= factor) v.push_back(x);
  return v;
}

// The least-squares line y = slope x + intercept through the points, as (slope, intercept);
// nothing with fewer than two points or when their x are all alike.
inline std::optional<std::pair<double, double>> least_squares(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 2) return std::nullopt;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = d(static_cast<int64_t>(xy.size())), denominator = n * sxx - sx * sx;
  if (!(denominator > 1e-12 * n * sxx)) return std::nullopt;
  const double slope = (n * sxy - sx * sy) / denominator;
  return std::make_pair(slope, (sy - slope * sx) / n);
}

}  // namespace
}  // namespace arlsim::calib
