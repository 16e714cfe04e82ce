// Diagnostics: every problem found in the inputs, collected (never just the first) and printed as
//   FILE:LINE:COL: /json/pointer: message; hint
// (FILE:LINE: when the problem concerns a whole line, as in line-oriented trace files: column 0).
// Nothing here exits or throws: callers decide what a failed check means (exit status 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/parse/json.h"

namespace arlsim::parse {

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  std::string file;     // display name; empty for problems not tied to a file
  SourcePos pos;        // line 0 when unknown
  std::string pointer;  // JSON pointer of the field; empty for the whole file
  std::string message;
  std::string hint;     // e.g. "did you mean \"num_layers\"?"
};

class Diagnostics {
 public:
  void add(Diagnostic d);
  // Reports at the position of `at` (its file and line:column) with the field's pointer.
  void error(const Value& at, std::string_view pointer, std::string message, std::string hint = {});
  void warning(const Value& at, std::string_view pointer, std::string message, std::string hint = {});
  void error_in_file(const std::shared_ptr<const SourceFile>& file, SourcePos pos, std::string message,
                     std::string hint = {});
  void error_global(std::string message, std::string hint = {});

  const std::vector<Diagnostic>& items() const { return items_; }
  size_t error_count() const { return errors_; }
  // Adds `note` to the hint of every item from `first` on that a preset holds (its file
  // "preset:..."): a preset the user changed (--set) is not where they can fix it.
  void note_on_presets(size_t first, const std::string& note);
  bool has_errors() const { return errors_ > 0; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<Diagnostic> items_;
  size_t errors_ = 0;
};

// The first value inside `v`, or `v` itself (depth first, in order), that the user wrote (a
// file of theirs, a --set) rather than a preset; nullptr when a preset gave all of it. Errors
// reported at an object a preset holds point there instead.
const Value* user_written_inside(const Value& v);

std::string format_diagnostic(const Diagnostic& d);
std::string format_all(const Diagnostics& diag);
// The errors alone, each as format_diagnostic gives it, joined by `separator`.
std::string format_errors(const Diagnostics& diag, std::string_view separator = "\n");

// Did-you-mean: the candidate closest to `word` by edit distance, or "" when none is close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
size_t edit_distance(std::string_view a, std::string_view b);
// "a", "b" or "c" — for "expected one of ..." messages.
std::string join_quoted(const std::vector<std::string>& names, std::string_view last_sep = " or ");

}  // namespace arlsim::parse
