// SimTime: the simulation clock, an integer count of nanoseconds (a strong type, so seconds held
// in a double can never be mixed into it by accident). Conversions to and from seconds happen at
// the input and output boundaries only.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace arlsim {

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns); }
  static constexpr SimTime zero() { return SimTime(0); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  // Rounds to the nearest nanosecond; callers check the range at the input boundary.
  static SimTime from_seconds(double s) { return SimTime(static_cast<int64_t>(std::llround(s * 1e9))); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr SimTime operator+(SimTime o) const { return SimTime(ns_ + o.ns_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ns_ - o.ns_); }
  constexpr SimTime& operator+=(SimTime o) { ns_ += o.ns_; return *this; }
  constexpr SimTime& operator-=(SimTime o) { ns_ -= o.ns_; return *this; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

}  // namespace arlsim
