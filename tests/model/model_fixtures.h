// Presets for the tests, failing the test with the diagnostics when one does not load.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/spec/check.h"

namespace arlsim::test {

inline spec::ModelSpec preset_model(const std::string& name) {
  spec::Diagnostics diag;
  auto doc = spec::check_document(name, spec::SpecKind::model, {}, diag);
  REQUIRE_MESSAGE(doc, spec::format_all(diag));
  return std::get<spec::ModelSpec>(doc->spec);
}

inline spec::ClusterSpec preset_cluster(const std::string& name, int64_t nodes) {
  spec::Diagnostics diag;
  auto doc = spec::check_document(name, spec::SpecKind::cluster, {"/nodes=" + std::to_string(nodes)}, diag);
  REQUIRE_MESSAGE(doc, spec::format_all(diag));
  return std::get<spec::ClusterSpec>(doc->spec);
}

inline spec::ScenarioSpec preset_scenario(const std::string& name, const std::vector<std::string>& overrides) {
  spec::Diagnostics diag;
  auto s = spec::load_scenario(name, overrides, diag);
  REQUIRE_MESSAGE(s, spec::format_all(diag));
  return *s;
}

}  // namespace arlsim::test
