// `arlsim validate SCENARIO --backend cpu|cuda`: predict the scenario's steps with the event
// simulator, execute every activity of the same step graph for real (runtime/), and compare them
// activity by activity. Without --profile the device is calibrated first (calibrate --quick), so
// that the prediction is for the machine the runtime runs on. The CUDA backend runs one process
// per GPU under mpirun (app/task_farm.h carries NCCL's bootstrap and the gathered figures).
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "app/commands.h"
#include "app/memory_limit.h"
#include "sim/parse/units.h"
#include "app/farm_transport.h"
#include "app/options.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/program.h"
#include "runtime/scale.h"
#include "runtime/validate.h"
#include "sim/input/check.h"
#include "sim/model/memory.h"
#include "sim/report/outputs.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

// Runs `calibrate` with its report on stderr: stdout carries validate's own (JSON with --json).
int calibrate_quietly(const Args& calibrate) {
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  const int rc = run_calibrate(calibrate);
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  return rc;
}

}  // namespace

int run_validate(const Args& args) {
  std::string scenario, backend, profile, steps, out;
  std::vector<std::string> overrides;
  double timeout_s = 600;
  double scale = 1;
  std::string max_memory;
  po::options_description opts(
      "arlsim validate SCENARIO --backend cpu|cuda [options]\n"
      "mpirun -n GPUS arlsim validate SCENARIO --backend cuda [options]\n\n"
      "Predicts the scenario's steps with the simulator, executes every activity of the same step graph\n"
      "for real on this machine (the kernels, collectives and copies the plan makes, with synthetic data\n"
      "and a checksum on every buffer moved) and compares them per stage and per kind of activity.\n"
      "cpu: CPU threads as devices. cuda: one process per GPU (under mpirun when the plan has more than\n"
      "one), cuBLAS kernels and NCCL collectives timed with CUDA events. Without --profile, the device is\n"
      "calibrated first (calibrate --quick).\n\nOptions");
  opts.add_options()("help,h", "this text")("backend", po::value(&backend), "cpu or cuda")(
      "profile", po::value(&profile), "the device profile to predict with (default: calibrate this machine now)")(
      "steps", po::value(&steps), "trace steps to run, A:B inclusive (default: the scenario's)")(
      "set", po::value(&overrides)->composing(), "/json/pointer=value override (repeatable)")(
      "out", po::value(&out), "write predicted/ and measured/ (summary.json, steps.csv, timeline.json, report.html), "
                              "profile.json, validation.json and kernels.csv (every kernel shape, predicted and measured) here")(
      "scale", po::value(&scale), "run the plan smaller, S in (0, 1]: layers x S, every sequence's tokens x S, prompts per "
                                  "step x S; predicted and executed alike (1)")(
      "timeout", po::value(&timeout_s), "seconds an activity may take before its devices count as hung (600)")(
      "max-memory", po::value(&max_memory),
      "refuse the run when its prediction's estimated peak memory is above this size (default: the memory available)")(
      "json", "print the comparison as JSON");
  po::variables_map vm;
  if (const int rc = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); rc >= 0) return rc;
  if (scenario.empty() || backend.empty()) {
    std::cerr << "arlsim validate: a scenario and --backend are required\n" << opts;
    return kExitBadInput;
  }
  if (backend != "cpu" && backend != "cuda") {
    std::cerr << "arlsim validate: --backend: unknown backend \"" << backend << "\"; expected cpu or cuda\n";
    return kExitBadInput;
  }
  const bool cuda = backend == "cuda";
  // Every GPU kernel loaded when CUDA starts, not at its first launch (CUDA's lazy loading, the
  // default since 12.2), as an engine's warm-up leaves them: a cuBLAS kernel first chosen mid-run
  // would charge its load to the activity it ran in. On an H200 the rollout of
  // scenarios/gpu-validate.json measured 15.3 s so against 15.7 s without (one run each;
  // docs/validation.md). A value the user set stands.
  if (cuda) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  if (!(scale > 0 && scale <= 1)) {
    std::cerr << "arlsim validate: --scale must be in (0, 1], not " << scale << "\n";
    return kExitBadInput;
  }
  if (!(timeout_s > 0 && timeout_s <= 86400)) {
    std::cerr << "arlsim validate: --timeout must be between 0 and 86400 seconds\n";
    return kExitBadInput;
  }
  std::optional<double> memory;
  if (std::string error; !memory_limit(max_memory, memory, error)) {
    std::cerr << "arlsim validate: " << error << "\n";
    return kExitBadInput;
  }
  // Processes: the CUDA backend runs one per GPU; the CPU backend runs in one. Rank 0 speaks for all.
  TaskFarm farm;
  const bool root = farm.rank() == 0;
  if (farm.distributed()) {
    // Every process decides on rank 0's reading of the memory available, so that all go on or none.
    std::string text = memory ? std::to_string(*memory) : std::string();
    farm.broadcast(text, 0);
    memory = text.empty() ? std::nullopt : std::optional<double>(std::stod(text));
  }
  rl::RunOptions o;
  if (!steps.empty() && !parse_step_range(steps, o.first_step, o.last_step)) {
    std::cerr << "arlsim validate: --steps: expected A:B, A: or A (step numbers), not \"" << steps << "\"\n";
    return kExitBadInput;
  }
  std::string error;
  if (!out.empty() && root && !report::prepare_output_dir(out, error)) {
    // The other processes must not wait for rank 0 in the steps below.
    if (farm.distributed()) farm.abort("arlsim validate: --out: " + error, kExitBadInput);
    std::cerr << "arlsim validate: --out: " << error << "\n";
    return kExitBadInput;
  }
  // The scenario, with the given profile as its device; without one, as written first (for its
  // devices and whether the runtime can execute it), then again with the profile measured now.
  const bool calibrate_first = profile.empty();
  if (!calibrate_first) overrides.push_back("/cluster/gpu=" + profile);
  input::Diagnostics diag;
  auto s = input::load_scenario(scenario, overrides, diag);
  if (root) std::cerr << input::format_all(diag);
  if (!s) return kExitBadInput;
  if (const std::string why = runtime::unsupported_reason(*s); !why.empty()) {
    if (root) std::cerr << scenario << ": " << why << "\n";
    return kExitBadInput;
  }
  const int64_t devices = s->cluster.total_gpus();
  if (cuda) {
    if (launched_by_mpirun() && !farm.distributed()) {
      if (root)
        std::cerr << "arlsim validate: --backend cuda under mpirun needs an arlsim built with MPI (this one was not): "
                     "its processes cannot reach each other\n";
      return kExitBadInput;
    }
    if (devices != farm.size()) {
      if (root)
        std::cerr << scenario << ": /cluster: the plan has " << devices << " GPU(s) and the CUDA backend runs one process per GPU: "
                  << (devices == 1 ? std::string("run it without mpirun") : "run it as mpirun -n " + std::to_string(devices) + " arlsim validate ...")
                  << " (this run has " << farm.size() << " process" << (farm.size() == 1 ? "" : "es") << ")\n";
      return kExitBadInput;
    }
    if (s->workload.dtype != input::Dtype::bf16) {
      if (root) std::cerr << scenario << ": /workload/dtype: the CUDA runtime executes bf16 models; set \"dtype\": \"bf16\"\n";
      return kExitBadInput;
    }
  } else {
    if (launched_by_mpirun()) {
      if (root) std::cerr << "arlsim validate: --backend cpu runs in one process (its devices are threads): run it without mpirun\n";
      return kExitBadInput;
    }
    const int64_t available = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
    if (devices > available) {
      std::cerr << scenario << ": /cluster: the plan needs " << devices << " devices and the CPU backend has " << available
                << " (one per hardware thread)\n";
      return kExitBadInput;
    }
  }
  if (calibrate_first) {
    // Rank 0 measures (calibration drives the machine's GPUs from one process) and hands the
    // profile to the others.
    profile = out.empty() ? (std::filesystem::temp_directory_path() / "arlsim-validate-profile.json").string()
                          : (std::filesystem::path(out) / "profile.json").string();
    std::string text;
    int rc = kExitOk;
    if (root) {
      std::cerr << "calibrating this machine first (no --profile given)\n";
      const int64_t ranks = cuda ? std::min(devices, s->cluster.gpus_per_node) : devices;
      Args calibrate = {"--backend", backend, "--quick", "--out", profile, "--name", backend};
      if (ranks >= 2) {
        calibrate.push_back("--ranks");
        calibrate.push_back(std::to_string(ranks));
      }
      rc = calibrate_quietly(calibrate);
      if (rc == kExitOk && farm.distributed()) {
        std::ifstream in(profile);
        std::stringstream content;
        content << in.rdbuf();
        text = content.str();
        if (!in || text.empty()) {
          std::cerr << "arlsim validate: " << profile << ": cannot read the profile just measured\n";
          rc = kExitInternal;
        }
      }
    }
    if (farm.distributed()) {
      std::string status = std::to_string(rc);
      farm.broadcast(status, 0);
      rc = std::stoi(status);
      if (rc == kExitOk) farm.broadcast(text, 0);
      if (rc == kExitOk && !root) {
        profile = (std::filesystem::temp_directory_path() / ("arlsim-validate-profile-" + std::to_string(farm.rank()) + ".json")).string();
        std::string why;
        if (!report::write_text_file(std::filesystem::temp_directory_path().string(), std::filesystem::path(profile).filename().string(),
                                     text, why)) {
          std::cerr << "arlsim validate: rank " << farm.rank() << ": " << why << "\n";
          farm.abort("arlsim validate: the measured profile could not be shared", kExitInternal);
        }
      }
    }
    if (rc != kExitOk) return rc;
    overrides.push_back("/cluster/gpu=" + profile);
    input::Diagnostics measured_diag;
    s = input::load_scenario(scenario, overrides, measured_diag);
    if (root) std::cerr << input::format_all(measured_diag);
    if (!s) return kExitBadInput;
  }
  input::Diagnostics trace_diag;
  if (const std::string problem = expected_memory_problem(*s, &o, memory, !max_memory.empty()); !problem.empty()) {
    if (root) std::cerr << "arlsim validate: " << problem << "\n";
    return kExitBadInput;
  }
  auto t = rl::load_scenario_trace(*s, "", trace_diag, &o);
  if (root) std::cerr << input::format_all(trace_diag);
  if (!t) return kExitBadInput;
  if (scale < 1) {
    const runtime::ScaleNote note = runtime::scale_plan(*s, *t, scale);
    if (root) std::cerr << scenario << ": " << note.text() << "\n";
  }
  // The prediction simulates the steps as `simulate` does: refused up front when it would not fit
  // (every process decides alike). The runtime's own buffers are the plan's devices' and are not
  // estimated here.
  if (const std::string problem = run_memory_problem(rl::run_memory(*s, *t, true), memory, !max_memory.empty());
      !problem.empty()) {
    if (root) std::cerr << "arlsim validate: " << problem << "\n";
    return kExitBadInput;
  }

  std::unique_ptr<runtime::Backend> device;
  FarmTransport transport(farm);
  if (cuda) {
    std::string problem;
    auto ops = runtime::make_cuda_ops(transport, problem);
    if (!ops) {
      const std::string message = "arlsim validate: --backend cuda: " + problem;
      if (farm.distributed()) farm.abort(message, kExitBadInput);
      std::cerr << message << "\n";
      return kExitBadInput;
    }
    device = std::make_unique<runtime::RankBackend>(std::move(ops), transport, timeout_s);
  } else {
    device = std::make_unique<runtime::CpuBackend>(devices, timeout_s);
  }
  bool line_open = false;  // a progress line awaits its times
  runtime::ValidationReport r;
  try {
    // CPU devices are threads of this process: their buffers all come out of the host's memory,
    // sized from the programs before any runs (the backend keeps each at its largest).
    const auto check = [&](const rl::RunResult&, double buffer_bytes) -> std::string {
      if (!memory || buffer_bytes <= *memory) return {};
      return "the " + std::to_string(devices) + " devices' buffers would take about " + parse::format_bytes(buffer_bytes) +
             " of this machine's memory together (each device's operands, weights, attention state, KV caches and "
             "transfer buffers at their largest: CPU devices share the host's), more than the " +
             parse::format_bytes(*memory) + limit_origin(!max_memory.empty()) +
             ": run it smaller (--scale) or on fewer devices";
    };
    // What runs now, on stderr (rank 0), a line an activity completed when it ends: a long or
    // stopped run shows where it is.
    const auto progress = [&](const runtime::ValidationProgress& p) {
      if (!root) return;
      line_open = !p.done;
      if (!p.done) {
        std::cerr << "arlsim validate: " << p.name << " (" << p.index + 1 << " of " << p.count << ") ..." << std::flush;
        return;
      }
      std::ostringstream line;
      line << std::fixed << std::setprecision(3) << " " << p.measured_s << " s measured, " << std::setprecision(1) << p.wall_s
           << " s of wall time\n";
      std::cerr << line.str() << std::flush;
    };
    r = runtime::validate(*s, *t, o, *device, check, progress);
    r.scale = scale;
  } catch (const std::exception& e) {
    // A device failed (a CUDA, cuBLAS or NCCL call, memory): the others must not wait for it.
    if (line_open) std::cerr << "\n";  // the activity's line, left open when it failed
    farm.abort("arlsim validate: device " + std::to_string(farm.rank()) + ": " + e.what(), kExitInternal);
  }
  if (!root) return r.checksum_failures > 0 ? kExitInternal : kExitOk;  // rank 0 reports for all
  if (!r.refused.empty()) {
    if (root) std::cerr << "arlsim validate: " << r.refused << "\n";
    return kExitBadInput;
  }
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
        !report::write_text_file(out, "validation.json", runtime::report_json(r), error) ||
        !report::write_text_file(out, "kernels.csv", runtime::kernels_csv(r.kernel_shapes), error)) {
      std::cerr << "arlsim validate: " << error << "\n";
      return kExitInternal;
    }
    if (!vm.count("json"))
      std::cout << "wrote " << out << "/predicted/, " << out << "/measured/ (summary.json, steps.csv, timeline.json, report.html), "
                << out << "/validation.json, " << out << "/kernels.csv\n";
  }
  return r.checksum_failures > 0 ? kExitInternal : kExitOk;
}

}  // namespace arlsim::app
