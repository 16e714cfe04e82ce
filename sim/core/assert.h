// Internal invariant checks. A failed check is a bug in arlsim, never a user error: it throws
// InternalError naming the source location, which the program reports with exit status 1.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace arlsim {

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void assertion_failed(const char* expression, const std::source_location& where);

}  // namespace arlsim

#define ARLSIM_ASSERT(expr) \
  ((expr) ? static_cast<void>(0) : ::arlsim::assertion_failed(#expr, std::source_location::current()))
