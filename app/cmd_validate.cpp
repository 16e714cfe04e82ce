// `arlsim validate SCENARIO --backend cpu`: predict the scenario's steps with the event simulator,
// execute every activity of the same step graph for real (runtime/), and compare them activity by
// activity. Without --profile the device is calibrated first (calibrate --quick), so that the
// prediction is for the machine the runtime runs on.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "app/commands.h"
#include "app/options.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/program.h"
#include "runtime/validate.h"
#include "sim/input/check.h"
#include "sim/report/outputs.h"

namespace arlsim::app {
namespace po = boost::program_options;

int run_validate(const Args& args) {
  std::string scenario, backend, profile, steps, out;
  std::vector<std::string> overrides;
  double timeout_s = 600;
  po::options_description opts(
      "arlsim validate SCENARIO --backend cpu [options]\n\n"
      "Predicts the scenario's steps with the simulator, executes every activity of the same step graph\n"
      "for real on this machine (CPU threads as devices: the kernels, collectives and copies the plan\n"
      "makes, with synthetic data and a checksum on every buffer moved) and compares them per stage and\n"
      "per kind of activity. Without --profile, the CPU is calibrated first (calibrate --quick).\n\nOptions");
  opts.add_options()("help,h", "this text")("backend", po::value(&backend), "cpu (the CUDA runtime is not built yet)")(
      "profile", po::value(&profile), "the device profile to predict with (default: calibrate this machine now)")(
      "steps", po::value(&steps), "trace steps to run, A:B inclusive (default: the scenario's)")(
      "set", po::value(&overrides)->composing(), "/json/pointer=value override (repeatable)")(
      "out", po::value(&out), "write predicted/ and measured/ (summary.json, steps.csv, timeline.json, report.html), "
                              "profile.json and validation.json here")(
      "timeout", po::value(&timeout_s), "seconds an activity may take before its devices count as hung (600)")(
      "json", "print the comparison as JSON");
  po::variables_map vm;
  if (const int rc = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); rc >= 0) return rc;
  if (scenario.empty() || backend.empty()) {
    std::cerr << "arlsim validate: a scenario and --backend are required\n" << opts;
    return kExitBadInput;
  }
  if (backend == "cuda") {
    std::cerr << "arlsim validate: --backend cuda: this build has no CUDA runtime (only runtime/cpu exists); "
                 "use --backend cpu\n";
    return kExitBadInput;
  }
  if (backend != "cpu") {
    std::cerr << "arlsim validate: --backend: unknown backend \"" << backend << "\"; expected cpu\n";
    return kExitBadInput;
  }
  if (!(timeout_s > 0 && timeout_s <= 86400)) {
    std::cerr << "arlsim validate: --timeout must be between 0 and 86400 seconds\n";
    return kExitBadInput;
  }
  rl::RunOptions o;
  if (!steps.empty() && !parse_step_range(steps, o.first_step, o.last_step)) {
    std::cerr << "arlsim validate: --steps: expected A:B, A: or A (step numbers), not \"" << steps << "\"\n";
    return kExitBadInput;
  }
  std::string error;
  if (!out.empty() && !report::prepare_output_dir(out, error)) {
    std::cerr << "arlsim validate: --out: " << error << "\n";
    return kExitBadInput;
  }
  // The scenario, with the given profile as its device; without one, as written first (for its
  // devices and whether the runtime can execute it), then again with the profile measured now.
  const bool calibrate_first = profile.empty();
  if (!calibrate_first) overrides.push_back("/cluster/gpu=" + profile);
  input::Diagnostics diag;
  auto s = input::load_scenario(scenario, overrides, diag);
  std::cerr << input::format_all(diag);
  if (!s) return kExitBadInput;
  if (const std::string why = runtime::unsupported_reason(*s); !why.empty()) {
    std::cerr << scenario << ": " << why << "\n";
    return kExitBadInput;
  }
  const int64_t devices = s->cluster.total_gpus();
  const int64_t available = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  if (devices > available) {
    std::cerr << scenario << ": /cluster: the plan needs " << devices << " devices and the CPU backend has " << available
              << " (one per hardware thread)\n";
    return kExitBadInput;
  }
  if (calibrate_first) {
    profile = out.empty() ? (std::filesystem::temp_directory_path() / "arlsim-validate-profile.json").string()
                          : (std::filesystem::path(out) / "profile.json").string();
    std::cerr << "calibrating this machine first (no --profile given)\n";
    Args calibrate = {"--backend", "cpu", "--quick", "--out", profile, "--name", "cpu"};
    if (devices >= 2) {
      calibrate.push_back("--ranks");
      calibrate.push_back(std::to_string(devices));
    }
    // Its report goes to stderr: stdout carries validate's own (JSON with --json).
    std::fflush(stdout);
    const int saved = dup(STDOUT_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    const int rc = run_calibrate(calibrate);
    std::fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    if (rc != kExitOk) return rc;
    overrides.push_back("/cluster/gpu=" + profile);
    input::Diagnostics measured_diag;
    s = input::load_scenario(scenario, overrides, measured_diag);
    std::cerr << input::format_all(measured_diag);
    if (!s) return kExitBadInput;
  }
  input::Diagnostics trace_diag;
  auto t = rl::load_scenario_trace(*s, "", trace_diag, &o);
  std::cerr << input::format_all(trace_diag);
  if (!t) return kExitBadInput;

  runtime::CpuBackend cpu(devices, timeout_s);
  const runtime::ValidationReport r = runtime::validate(*s, *t, o, cpu);
  if (r.predicted.steps.empty()) {
    std::cerr << scenario << ": the trace has no step in the requested range\n";
    return kExitBadInput;
  }
  if (!r.predicted.oom_events.empty()) {
    std::cerr << scenario << ": the plan runs out of memory in step " << r.predicted.oom_events.front().step << " ("
              << r.predicted.oom_events.front().stage << "): nothing to execute there\n";
    return kExitBadInput;
  }
  std::cout << (vm.count("json") ? runtime::report_json(r) : runtime::report_table(r));
  if (!out.empty()) {
    const std::filesystem::path dir(out);
    if (!report::write_outputs(r.predicted, (dir / "predicted").string(), error) ||
        !report::write_outputs(r.measured, (dir / "measured").string(), error) ||
        !report::write_text_file(out, "validation.json", runtime::report_json(r), error)) {
      std::cerr << "arlsim validate: " << error << "\n";
      return kExitInternal;
    }
    if (!vm.count("json"))
      std::cout << "wrote " << out << "/predicted/, " << out << "/measured/ (summary.json, steps.csv, timeline.json, report.html), "
                << out << "/validation.json\n";
  }
  return r.checksum_failures > 0 ? kExitInternal : kExitOk;
}

}  // namespace arlsim::app
