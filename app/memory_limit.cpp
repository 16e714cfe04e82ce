#include "app/memory_limit.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <sys/resource.h>
#include <unistd.h>

#include "app/task_farm.h"
#include "sim/parse/units.h"

namespace arlsim::app {

namespace {

std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    size_t used = 0;
    const double v = std::stod(word, &used);
    if (used != word.size() || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    double kib = 0;
    if (fields >> key >> kib >> unit && key == "MemAvailable:" && unit == "kB") return kib * 1024;
  }
  return std::nullopt;
}

// The process's own control group (cgroup v2: the "0::/path" line of /proc/self/cgroup) and each
// above it, as folders under /sys/fs/cgroup, innermost first: a limit may sit on any of them.
std::vector<std::string> cgroup_folders() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  std::vector<std::string> out;
  for (;;) {
    out.push_back("/sys/fs/cgroup" + (path == "/" ? std::string() : path));
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return out;
}

// Page cache the kernel reclaims before it fails an allocation: a group's inactive file pages.
double reclaimable(const std::string& folder) {
  std::ifstream in(folder + "/memory.stat");
  std::string key;
  double value = 0;
  while (in >> key >> value)
    if (key == "inactive_file") return value;
  return 0;
}

}  // namespace

std::optional<double> available_memory_bytes() {
  std::optional<double> available = mem_available();
  auto bound = [&](double room) { available = available ? std::min(*available, room) : room; };
  // Each control group's limit less what it uses, its reclaimable page cache not counted.
  for (const auto& folder : cgroup_folders()) {
    const auto max = read_number(folder + "/memory.max");
    const auto current = read_number(folder + "/memory.current");
    if (max && current) bound(std::max(0.0, *max - std::max(0.0, *current - reclaimable(folder))));
  }
  // Processes launched together on one machine (mpirun -n N) share what it has: each its part.
  // (An address-space limit, below, is each process's own.)
  if (available) *available /= processes_on_this_machine();
  // An address-space limit (ulimit -v) less what the process has mapped already.
  if (rlimit r{}; getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    std::ifstream statm("/proc/self/statm");
    double pages = 0;
    statm >> pages;
    bound(std::max(0.0, static_cast<double>(r.rlim_cur) - pages * static_cast<double>(sysconf(_SC_PAGESIZE))));
  }
  return available;
}

bool memory_limit(const std::string& option, std::optional<double>& limit, std::string& error) {
  if (option.empty()) {
    limit = available_memory_bytes();
    return true;
  }
  // A bare count is bytes, as the hint below says.
  const bool bare = option.find_first_not_of("0123456789") == std::string::npos && option.size() <= 18;
  const auto q = parse::parse_quantity(bare ? option + " B" : option, parse::Dimension::bytes);
  if (!q.error.empty() || !(q.value > 0)) {
    error = "--max-memory: " + (q.error.empty() ? std::string("must be more than 0") : q.error) + " (" +
            std::string(parse::unit_examples(parse::Dimension::bytes)) + ")";
    return false;
  }
  limit = q.value;
  return true;
}

std::string limit_origin(bool from_option) {
  if (from_option) return " of --max-memory";
  const int shared = processes_on_this_machine();
  return shared > 1 ? " available to each of the " + std::to_string(shared) + " processes on this machine"
                    : " this machine has available";
}

std::string expected_memory_problem(const input::ScenarioSpec& s, const rl::RunOptions* run, std::optional<double> limit,
                                    bool from_option) {
  if (!limit) return "";
  const std::optional<rl::RunMemory> m = rl::expected_run_memory(s, run);
  if (!m || m->trace_bytes <= *limit) return "";
  std::ostringstream out;
  out << "the generated trace alone needs about " << parse::format_bytes(m->trace_bytes) << " of memory (step " << m->step
      << ", the largest, " << parse::format_count(static_cast<double>(m->trajectories)) << " trajectories), more than the "
      << parse::format_bytes(*limit) << limit_origin(from_option)
      << ": simulate fewer steps at once (--steps A:B) or fewer trajectories a step (/workload/prompts_per_step)"
      << (from_option ? ", or raise --max-memory" : ", or pass --max-memory to run anyway");
  return out.str();
}

std::string run_memory_problem(const rl::RunMemory& m, std::optional<double> limit, bool from_option) {
  if (!limit || m.bytes <= *limit) return "";
  std::ostringstream out;
  out << "the run needs about " << parse::format_bytes(m.bytes) << " of memory at its peak (the trace "
      << parse::format_bytes(m.trace_bytes) << "; step " << m.step << ", the largest, "
      << parse::format_count(static_cast<double>(m.trajectories)) << " trajectories and "
      << parse::format_count(static_cast<double>(m.turns)) << " turns), more than the "
      << parse::format_bytes(*limit) << limit_origin(from_option)
      << ": simulate fewer steps at once (--steps A:B) or fewer trajectories a step (/workload/prompts_per_step)"
      << (from_option ? ", or raise --max-memory" : ", or pass --max-memory to run anyway");
  return out.str();
}

}  // namespace arlsim::app
