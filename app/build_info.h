// Version and build configuration, for `arlsim --version` and output provenance.
#pragma once

#include <string>

namespace arlsim::app {

std::string version_text();

}  // namespace arlsim::app
