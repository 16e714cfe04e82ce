// arlsim: command-line entry. Thin: parses the command name and hands the rest to the command.
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <string_view>

#include "app/build_info.h"
#include "app/commands.h"
#include "app/huge_pages.h"
#include "app/task_farm.h"
#include "sim/core/time.h"

namespace {

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const arlsim::app::Args&);
};

constexpr Command kCommands[] = {
    {"simulate", "simulate RL steps of a scenario over its trace: stage times, memory, OOMs, timeline",
     arlsim::app::run_simulate},
    {"check", "validate input files (any kind) and print every diagnostic; --json prints derived figures",
     arlsim::app::run_check},
    {"whatif", "a scenario under variations of its fields, simulated side by side", arlsim::app::run_whatif},
    {"plan", "choose per-stage layouts and a switch schedule over the trace; write plan.json", arlsim::app::run_plan},
    {"capacity", "GPU types x node counts x placements: time, cost, the Pareto frontier", arlsim::app::run_capacity},
    {"estimate", "one stage in isolation (train iteration, inference pass, collective, rollout): time, throughput, memory",
     arlsim::app::run_estimate},
    {"list", "list presets: models, gpus, clusters, scenarios, workloads, policies (with the planner's selectors), and the step's stages", arlsim::app::run_list},
    {"trace", "context-growth traces: gen (synthetic), import (CSV summary, rollout dump), stats",
     arlsim::app::run_trace},
    {"export", "a plan (or scenario) as a framework's launch: verl's command, an sbatch script, or JSON",
     arlsim::app::run_export},
    {"import", "a framework's launch (verl, OpenRLHF, slime, AReaL) read back into a scenario", arlsim::app::run_import_launch},
    {"calibrate", "measure this machine's device (microbenchmarks) into a profile; compare two profiles",
     arlsim::app::run_calibrate},
    {"validate", "execute a scenario's steps for real on this machine (CPU threads) and compare with the prediction",
     arlsim::app::run_validate},
};

void print_usage(std::ostream& out) {
  out << "usage: arlsim [COMMAND] [ARGS...]\n\n"
         "With no command, simulates the embedded default scenario and prints its summary.\n\n"
         "Commands:\n";
  for (const auto& c : kCommands) {
    std::string name(c.name);
    name.resize(10, ' ');
    out << "  " << name << c.summary << "\n";
  }
  out << "\nOptions:\n  --help     this text (`arlsim COMMAND --help` for a command's options)\n"
         "  --version  version and the optional parts this build has\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace arlsim::app;
  use_huge_pages(argv);  // returns only when already done, opted out, or not possible
  // Under mpirun every process reads the same input and would say the same about it: rank 0
  // speaks for all. A process that must stop the others still writes why (TaskFarm::abort), and
  // an error that ends this process alone is written below.
  std::streambuf* const speaking = std::cerr.rdbuf();
  std::ostream quiet(nullptr);
  if (rank_from_environment() > 0) std::cerr.rdbuf(quiet.rdbuf());
  try {
    Args args(argv + 1, argv + argc);
    if (args.empty()) return run_default(args);
    const std::string& first = args.front();
    if (first == "--help" || first == "-h" || first == "help") {
      print_usage(std::cout);
      return kExitOk;
    }
    if (first == "--version") {
      std::cout << arlsim::app::version_text();
      return kExitOk;
    }
    for (const auto& c : kCommands)
      if (c.name == first) return c.run(Args(args.begin() + 1, args.end()));
    std::cerr << "arlsim: unknown command '" << first << "'\n\n";
    print_usage(std::cerr);
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr.rdbuf(speaking);
    // Where the estimate up front (simulate's --max-memory) did not foresee it, or a command
    // without one: a request too large for this machine, not a fault.
    std::cerr << "arlsim: out of memory: an allocation failed; ask for less at once (fewer steps, trajectories or "
                 "candidates)\n";
    return kExitBadInput;
  } catch (const arlsim::SimTimeOutOfRange& e) {
    std::cerr.rdbuf(speaking);
    std::cerr << "arlsim: " << e.what() << kClockAdvice << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr.rdbuf(speaking);
    std::cerr << "arlsim: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
