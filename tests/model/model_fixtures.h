// Presets for the tests, failing the test with the diagnostics when one does not load.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/input/check.h"

namespace arlsim::test {

inline input::ModelSpec preset_model(const std::string& name) {
  input::Diagnostics diag;
  auto doc = input::check_document(name, input::SpecKind::model, {}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::ModelSpec>(doc->spec);
}

inline input::ClusterSpec preset_cluster(const std::string& name, int64_t nodes) {
  input::Diagnostics diag;
  auto doc = input::check_document(name, input::SpecKind::cluster, {"/nodes=" + std::to_string(nodes)}, diag);
  REQUIRE_MESSAGE(doc, input::format_all(diag));
  return std::get<input::ClusterSpec>(doc->spec);
}

inline input::ScenarioSpec preset_scenario(const std::string& name, const std::vector<std::string>& overrides) {
  input::Diagnostics diag;
  auto s = input::load_scenario(name, overrides, diag);
  REQUIRE_MESSAGE(s, input::format_all(diag));
  return *s;
}

}  // namespace arlsim::test
