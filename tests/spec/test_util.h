// Helpers shared by the spec tests.
#pragma once

#include <memory>
#include <string>

#include "sim/spec/diagnostics.h"
#include "sim/spec/json.h"

namespace arlsim::test {

inline std::shared_ptr<const spec::SourceFile> memory_file(const std::string& name = "mem.json") {
  auto f = std::make_shared<spec::SourceFile>();
  f->display_name = name;
  return f;
}

inline spec::Value parse(const std::string& text, spec::Diagnostics& diag, const std::string& name = "mem.json") {
  return spec::parse_json(text, memory_file(name), diag);
}

}  // namespace arlsim::test
