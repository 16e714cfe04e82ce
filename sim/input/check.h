// Loading and validating one input document of any kind: the library side of `arlsim check`,
// also used by every command that reads a scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/parse/diagnostics.h"
#include "sim/input/parse_names.h"
#include "sim/input/loader.h"
#include "sim/input/scenario.h"
#include "sim/input/stage.h"

namespace arlsim::input {

using AnySpec = std::variant<ModelSpec, GpuProfile, ClusterSpec, WorkloadSpec, PolicySpec, ScenarioSpec, StageSpec>;

struct CheckedDocument {
  SpecKind kind = SpecKind::scenario;
  AnySpec spec;
  Value document;  // as parsed: references resolved, overrides applied
};

// Parses an already loaded and resolved document as `kind`.
std::optional<AnySpec> parse_document(const Value& doc, SpecKind kind, Diagnostics& diag);

// Loads `path_or_name` (a file, or a preset name), applies `overrides` ("/pointer=value"),
// resolves references and parses it as `kind` (detected from the content when unset).
// Every problem goes to `diag`; the result is empty when any error was reported.
std::optional<CheckedDocument> check_document(std::string_view path_or_name, std::optional<SpecKind> kind,
                                              const std::vector<std::string>& overrides, Diagnostics& diag);

// The same for a scenario, the common case.
// A plan file (`arlsim plan`) loads as the scenario it carries. With `document`, also returns the
// resolved document (for writing it into a plan).
std::optional<ScenarioSpec> load_scenario(std::string_view path_or_name, const std::vector<std::string>& overrides,
                                          Diagnostics& diag, Value* document = nullptr);

}  // namespace arlsim::input
