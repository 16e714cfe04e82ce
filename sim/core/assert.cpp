#include "sim/core/assert.h"

namespace arlsim {

void assertion_failed(const char* expression, const std::source_location& where) {
  throw InternalError(std::string(where.file_name()) + ":" + std::to_string(where.line()) +
                      ": internal check failed: " + expression + " (in " + where.function_name() +
                      ")");
}

}  // namespace arlsim
