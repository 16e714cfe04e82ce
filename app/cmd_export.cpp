// `arlsim export PLAN|SCENARIO --format json|verl|slurm [--out FILE]`: a plan (or a scenario) as
// the launch form of the framework that runs the cluster.
#include <cctype>
#include <boost/program_options.hpp>
#include <iostream>

#include "app/commands.h"
#include "app/options.h"
#include "calib/harness/harness.h"
#include "planner/export/export.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;

int run_export(const Args& args) {
  std::string source, format_name, out, version, framework = "verl";
  std::vector<std::string> overrides;
  po::options_description opts(
      "arlsim export PLAN.json|SCENARIO --format json|verl|slurm|openrlhf|slime|areal [--framework-version V]\n"
      "              [--out FILE]\n\n"
      "Writes a plan (the plan.json of `arlsim plan`, or a scenario as it stands) as the launch form of\n"
      "the framework that runs the cluster: verl's `python3 -m verl.trainer.main_ppo` with its Hydra\n"
      "overrides, an sbatch script that starts Ray on the allocation and runs it (slurm), OpenRLHF's\n"
      "`openrlhf.cli.train_ppo_ray` submitted to Ray (openrlhf), slime's train.py or train_async.py,\n"
      "AReaL's YAML configuration (areal), or the plan itself, normalised (json). What the framework\n"
      "cannot express is listed at the top of the output and on stderr. docs/export.md lists every key.\n\n"
      "Options");
  opts.add_options()("help,h", "this text")("format", po::value(&format_name), "json, verl, slurm, openrlhf, slime or areal")(
      "framework", po::value(&framework), "slurm: the framework its Ray cluster runs (verl, openrlhf or slime)")(
      "framework-version", po::value(&version), "the framework's version where its options changed (OpenRLHF: flat before 0.10.2)")(
      "out", po::value(&out), "write here instead of stdout")(
      "set", po::value(&overrides)->composing(), "override a field of the plan's scenario: /json/pointer=value");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"plan", 1, po::value(&source)}, vm); status >= 0) return status;
  if (source.empty() || format_name.empty()) {
    std::cerr << "arlsim export: a plan (or scenario) and --format are required\n" << opts;
    return kExitBadInput;
  }
  const auto format = planner::find_export_format(format_name);
  if (!format) {
    std::cerr << "arlsim export: --format: unknown format \"" << format_name << "\"; valid: "
              << planner::export_format_list() << "\n";
    return kExitBadInput;
  }
  // Options for another format would change nothing: refused rather than ignored.
  if (vm.count("framework") && *format != planner::ExportFormat::slurm) {
    std::cerr << "arlsim export: --framework chooses what a Slurm script (--format slurm) launches; --format " << format_name
              << " is that framework's own launch\n";
    return kExitBadInput;
  }
  if (vm.count("framework-version") && *format != planner::ExportFormat::openrlhf &&
      !(*format == planner::ExportFormat::slurm && framework == "openrlhf")) {
    std::cerr << "arlsim export: --framework-version applies to OpenRLHF's launch (its options changed at 0.10.2), not to "
              << format_name << "\n";
    return kExitBadInput;
  }
  // A release number (0.10.2, v0.9): one a typo made would silently pick the older options.
  if (vm.count("framework-version")) {
    const std::string digits = version.starts_with('v') ? version.substr(1) : version;
    const bool release = !digits.empty() && std::isdigit(static_cast<unsigned char>(digits.front())) &&
                         std::isdigit(static_cast<unsigned char>(digits.back())) &&
                         digits.find_first_not_of("0123456789.") == std::string::npos && digits.find("..") == std::string::npos;
    if (!release) {
      std::cerr << "arlsim export: --framework-version: expected a release number such as 0.10.2, got \"" << version << "\"\n";
      return kExitBadInput;
    }
  }
  input::Diagnostics diag;
  input::Value document;
  const auto scenario = input::load_scenario(source, overrides, diag, &document);
  std::cerr << input::format_all(diag);
  if (!scenario) return kExitBadInput;
  planner::ExportRequest request;
  request.format = *format;
  request.source = source;
  request.document = &document;
  request.framework_version = version;
  if (framework == "verl" || framework == "openrlhf" || framework == "slime") {
    request.framework = *planner::find_export_format(framework);
  } else {
    std::cerr << "arlsim export: --framework: expected verl, openrlhf or slime, not \"" << framework << "\"\n";
    return kExitBadInput;
  }
  const auto result = planner::export_plan(*scenario, request);
  if (!result.error.empty()) {
    std::cerr << "arlsim export: " << source << ": " << result.error << "\n";
    return kExitBadInput;
  }
  for (const auto& n : result.notes) std::cerr << "note: not expressible in " << format_name << ": " << n << "\n";
  if (out.empty()) {
    std::cout << result.text;
    return kExitOk;
  }
  if (const std::string problem = calib::write_atomically(out, result.text); !problem.empty()) {
    std::cerr << "arlsim export: " << problem << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace arlsim::app
