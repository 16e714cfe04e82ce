// `arlsim` with no arguments: the main job on the embedded default scenario — an agentic GRPO run
// of Qwen3-8B on two H100 nodes over a generated context-growth trace — printed as a table.
#include <iostream>

#include "app/commands.h"

namespace arlsim::app {

int run_default(const Args&) {
  std::cout << "arlsim: simulating the embedded default scenario (`arlsim check default` shows it; "
               "`arlsim simulate default --out DIR` writes the timeline)\n\n";
  return simulate_scenario("default", SimulateArgs{});
}

}  // namespace arlsim::app
