// The subcommands of the `arlsim` program. Each takes its own arguments (after the command name)
// and returns the process exit status: 0 success, 1 internal failure, 2 bad input or usage.
#pragma once

#include <string>
#include <vector>

namespace arlsim::app {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

using Args = std::vector<std::string>;

int run_check(const Args& args);
int run_list(const Args& args);
int run_estimate(const Args& args);
int run_default(const Args& args);
int run_trace(const Args& args);

}  // namespace arlsim::app
