// The subcommands of the `arlsim` program. Each takes its own arguments (after the command name)
// and returns the process exit status: 0 success, 1 internal failure, 2 bad input or usage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arlsim::app {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
// What follows a SimTimeOutOfRange's message: which inputs make a run that long.
inline constexpr const char* kClockAdvice =
    ": the inputs make a run longer than that (check arrival_rate_per_s, tool latencies and the pools' sizes)";
constexpr int kExitOom = 3;  // simulate --fail-on-oom: the run ran out of memory

using Args = std::vector<std::string>;

struct SimulateArgs {
  std::string trace;
  std::string out;
  std::vector<std::string> overrides;
  int64_t first_step = -1, last_step = -1;
  int64_t seed = -1;
  bool stop_on_oom = true;
  bool per_iteration = false;
  bool detail_pipeline = false;
  std::string timeline_detail = "engines";           // stages, engines or full
  int64_t timeline_first = -1, timeline_last = -1;   // steps on the timeline (-1: unbounded)
  bool json = false;
  bool fail_on_oom = false;  // exit kExitOom when any step ran out of memory
  std::string max_memory;    // --max-memory: the size the run may take ("" = what is available)
};
// Runs `arlsim simulate` on a scenario (file or preset name).
int simulate_scenario(const std::string& scenario, const SimulateArgs& a);

// "A:B", "A:" or "A" (inclusive step numbers; B = -1 for "to the end"); false when malformed.
bool parse_step_range(const std::string& text, int64_t& first, int64_t& last);

int run_check(const Args& args);
int run_simulate(const Args& args);
int run_whatif(const Args& args);
int run_plan(const Args& args);
int run_capacity(const Args& args);
int run_list(const Args& args);
int run_estimate(const Args& args);
int run_default(const Args& args);
int run_trace(const Args& args);
int run_calibrate(const Args& args);
int run_validate(const Args& args);
int run_export(const Args& args);
int run_import_launch(const Args& args);

}  // namespace arlsim::app
