// `arlsim` with no arguments: the main job on the embedded presets. It checks every shipped
// scenario (printing what each one sets up) and prints the derived figures of every preset model.
#include <iostream>

#include "app/commands.h"
#include "app/summaries.h"
#include "sim/spec/presets.h"

namespace arlsim::app {

int run_default(const Args&) {
  constexpr int64_t kContext = 4096;
  bool all_ok = true;
  std::cout << "Shipped scenarios\n";
  for (auto name : spec::preset_names("scenario")) {
    auto doc = check_preset("scenario", name);
    all_ok &= doc.has_value();
    std::cout << "  " << (doc ? "ok       " : "INVALID  ") << (doc ? describe(*doc) : std::string(name)) << "\n";
  }
  std::cout << "\nPreset models (derived figures; GFLOP/token is the forward pass of one token at a "
            << kContext << "-token context)\n";
  std::cout << model_table(kContext);
  return all_ok ? kExitOk : kExitBadInput;
}

}  // namespace arlsim::app
