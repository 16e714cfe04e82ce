#include <doctest/doctest.h>

#include "sim/parse/diagnostics.h"

using namespace arlsim::parse;

TEST_CASE("diagnostics: edit distance counts transpositions as one edit") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("num_layres", "num_layers") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("TP", "tp") == 0);
}

TEST_CASE("diagnostics: closest match suggests only plausible slips") {
  const std::vector<std::string> keys{"hidden_size", "num_layers", "num_heads", "vocab_size"};
  CHECK(closest_match("num_layer", keys) == "num_layers");
  CHECK(closest_match("hiden_size", keys) == "hidden_size");
  CHECK(closest_match("Hidden_Size", keys) == "hidden_size");
  CHECK(closest_match("zzz", keys).empty());
  CHECK(closest_match("num_attention_heads_total", keys).empty());
}

TEST_CASE("diagnostics: format is FILE:LINE:COL: /pointer: message, hint") {
  Diagnostic d{Severity::error, "a.json", {3, 5}, "/train/tp", "bad", "did you mean \"x\"?"};
  CHECK(format_diagnostic(d) == "a.json:3:5: /train/tp: bad; did you mean \"x\"?");
  Diagnostic no_pos{Severity::error, "a.json", {}, "", "no such file", ""};
  CHECK(format_diagnostic(no_pos) == "a.json: no such file");
  Diagnostic warn{Severity::warning, "", {}, "", "note", ""};
  CHECK(format_diagnostic(warn) == "warning: note");
}

TEST_CASE("diagnostics: counts errors, not warnings") {
  Diagnostics diag;
  diag.add({Severity::warning, "", {}, "", "w", ""});
  CHECK_FALSE(diag.has_errors());
  diag.error_global("e");
  CHECK(diag.error_count() == 1);
  CHECK(diag.items().size() == 2);
}
