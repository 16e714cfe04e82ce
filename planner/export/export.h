// Plans out to the frameworks that run clusters: a scenario (or the plan.json that carries one,
// with the adopted policy) written as the framework's own launch form. What the framework cannot
// express is listed in the output's header and returned as notes, with the closest setting taken;
// what cannot be launched at all (GPUs that do not fill the framework's worker grid, batches that
// do not split into its mini-batches) is an error. docs/export.md lists every key and its source.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/input/scenario.h"
#include "sim/parse/json.h"

namespace arlsim::planner {

enum class ExportFormat { json, verl, slurm, openrlhf, slime, areal };
std::optional<ExportFormat> find_export_format(std::string_view name);
std::string_view export_format_list();  // "json, verl, slurm, openrlhf, slime, areal"

struct ExportRequest {
  ExportFormat format = ExportFormat::verl;
  std::string source;                         // the plan or scenario as named on the command line
  const input::Value* document = nullptr;     // its resolved document (for json)
  std::string framework_version;              // OpenRLHF: before 0.10.2 its flags are flat; "" = current
  ExportFormat framework = ExportFormat::verl;  // slurm: the framework its Ray cluster runs (verl, openrlhf, slime)
};

struct ExportResult {
  std::string text;                // the launch form
  std::vector<std::string> notes;  // what the framework cannot express, and what was taken instead
  std::string error;               // non-empty: nothing can be launched, and why
};

ExportResult export_plan(const input::ScenarioSpec& s, const ExportRequest& r);

}  // namespace arlsim::planner
