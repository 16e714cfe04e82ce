// SimTime: the simulation clock, an integer count of nanoseconds (a strong type, so seconds held
// in a double can never be mixed into it by accident). Conversions to and from seconds happen at
// the input and output boundaries only.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace arlsim {

// A time past what the clock holds (about 292 years either way): inputs that make a run that
// long (a near-zero arrival rate, hours-long tools queueing for one sandbox) are refused, not
// wrapped around.
class SimTimeOutOfRange : public std::range_error {
 public:
  SimTimeOutOfRange() : std::range_error("the simulated time passes 292 years, the most the simulator's clock holds") {}
};

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns); }
  static constexpr SimTime zero() { return SimTime(0); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  // Rounds to the nearest nanosecond; throws SimTimeOutOfRange past the clock's range.
  static SimTime from_seconds(double s) {
    if (std::isnan(s)) throw std::logic_error("a simulated time is not a number");  // a fault, not an input
    if (!(std::fabs(s) < 9.2e9)) throw SimTimeOutOfRange();
    return SimTime(static_cast<int64_t>(std::llround(s * 1e9)));
  }

  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr SimTime operator+(SimTime o) const { return SimTime(checked(ns_, o.ns_, false)); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(checked(ns_, o.ns_, true)); }
  constexpr SimTime& operator+=(SimTime o) { ns_ = checked(ns_, o.ns_, false); return *this; }
  constexpr SimTime& operator-=(SimTime o) { ns_ = checked(ns_, o.ns_, true); return *this; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  static constexpr int64_t checked(int64_t a, int64_t b, bool minus) {
    int64_t r = 0;
    if (minus ? __builtin_sub_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r)) throw SimTimeOutOfRange();
    return r;
  }
  int64_t ns_ = 0;
};

}  // namespace arlsim
