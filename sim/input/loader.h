// Loader: turns what a user names (a path or a preset name) into one resolved document tree.
//
// A reference is a string naming a preset or a file (relative to the file that holds it); a path
// that exists always wins over a preset of the same name. An object may say "extends": <reference>
// to start from another document of its kind and override fields (RFC 7386 merge patch: a null
// deletes a field). References are followed recursively, cycles are reported with their chain,
// and every value keeps the file and line:column it came from, so diagnostics about a merged
// document still point at the right file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/parse/diagnostics.h"
#include "sim/parse/json.h"
#include "sim/input/parse_names.h"

namespace arlsim::input {

enum class SpecKind { model, gpu, cluster, workload, policy, scenario, stage };

const char* kind_name(SpecKind k);
std::optional<SpecKind> kind_from_name(std::string_view name);
std::vector<std::string> kind_names();

// The kind a document declares ("format": "arlsim-<kind>/1") or, failing that, the kind its keys
// suggest. Reports when it cannot tell.
std::optional<SpecKind> detect_kind(const Value& doc, Diagnostics& diag);

class Loader {
 public:
  explicit Loader(Diagnostics& diag) : diag_(diag) {}

  // Loads a document named on the command line: a file path, or a preset name (of `kind`, or of
  // any kind when unset). Returns the document with its references resolved.
  std::optional<Value> load(std::string_view path_or_name, std::optional<SpecKind> kind, SpecKind* detected = nullptr);
  // Resolves the references of an already parsed document of `kind`.
  void resolve(Value& doc, SpecKind kind, const std::string& pointer);

 private:
  std::optional<Value> load_reference(const Value& ref, SpecKind kind, const std::string& pointer);
  std::optional<Value> read_file(const std::string& path, const std::string& display, Diagnostics& diag);
  void resolve_extends(Value& doc, SpecKind kind, const std::string& pointer);
  // detect_kind(), but a document that only extends another takes the other's kind.
  std::optional<SpecKind> detect_following_extends(const Value& doc);

  Diagnostics& diag_;
  std::vector<std::string> stack_;  // identities of the documents being loaded, for cycle detection
  std::vector<std::string> chain_;  // their display names
};

// A plan ("format": "arlsim-plan/1") becomes the scenario it carries; other documents are left
// as they are. False (with a diagnostic) for a plan of another version or without a scenario.
bool unwrap_plan(Value& doc, Diagnostics& diag);

// RFC 7386 JSON merge patch: `patch` applied onto `target`.
void merge_patch(Value& target, const Value& patch);

// Applies "--set /json/pointer=value": the value is JSON when it parses as JSON, else a string.
// Missing objects on the way are not created; a missing last key is added.
bool apply_override(Value& root, std::string_view assignment, Diagnostics& diag);

}  // namespace arlsim::input
