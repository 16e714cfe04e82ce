// Helpers shared by the tests of JSON inputs.
#pragma once

#include <memory>
#include <string>

#include "sim/parse/diagnostics.h"
#include "sim/parse/json.h"

namespace arlsim::test {

inline std::shared_ptr<const parse::SourceFile> memory_file(const std::string& name = "mem.json") {
  auto f = std::make_shared<parse::SourceFile>();
  f->display_name = name;
  return f;
}

inline parse::Value parse(const std::string& text, parse::Diagnostics& diag, const std::string& name = "mem.json") {
  return parse::parse_json(text, memory_file(name), diag);
}

}  // namespace arlsim::test
