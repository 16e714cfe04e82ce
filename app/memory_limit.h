// Refusing a run that would not fit in memory before it starts, instead of letting the kernel
// kill it (or an allocation fail) halfway through: simulate, whatif's variants and plan's
// simulations.
#pragma once

#include <optional>
#include <string>

#include "sim/rl/step.h"

namespace arlsim::app {

// The memory this process may still take, in bytes: the kernel's MemAvailable (/proc/meminfo),
// bounded by the limit of its control group and of each above it less their usage, reclaimable
// page cache not counted (cgroup v2: memory.max, memory.current, memory.stat's inactive_file),
// and by an address-space limit (ulimit -v) less what is mapped, where those are set; nullopt
// when none can be read. Processes mpirun starts on one machine each get their part of the
// machine's and the control groups' room (the address-space limit is each one's own).
std::optional<double> available_memory_bytes();

// The limit a command runs under: --max-memory when given (false with `error` set when it cannot
// be read as a size), else what is available.
bool memory_limit(const std::string& option, std::optional<double>& limit, std::string& error);

// Where a limit came from, for messages: " of --max-memory", " this machine has available", or " available to each
// of the N processes on this machine".
std::string limit_origin(bool from_option);

// "" when the run fits in `limit` (or there is no limit), else why not, naming what to change.
std::string run_memory_problem(const rl::RunMemory& m, std::optional<double> limit, bool from_option);
// The same for a generated trace before it is drawn, the trace alone (the storage the generator
// lays out, rl::expected_run_memory; the run's whole figure is checked once the trace is read):
// "" when it fits, when there is no limit, or when the trace is a file.
std::string expected_memory_problem(const input::ScenarioSpec& s, const rl::RunOptions* run, std::optional<double> limit,
                                    bool from_option);

}  // namespace arlsim::app
