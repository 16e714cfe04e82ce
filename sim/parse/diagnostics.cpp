#include "sim/parse/diagnostics.h"

#include <algorithm>
#include <cctype>

namespace arlsim::parse {

void Diagnostics::add(Diagnostic d) {
  if (d.severity == Severity::error) ++errors_;
  items_.push_back(std::move(d));
}

const Value* user_written_inside(const Value& v) {
  if (v.file() && !v.file()->is_preset) return &v;
  if (v.is_object())
    for (const auto& m : v.members())
      if (const Value* found = m.value ? user_written_inside(*m.value) : nullptr) return found;
  if (v.is_array())
    for (const auto& e : v.items())
      if (const Value* found = user_written_inside(e)) return found;
  return nullptr;
}

namespace {

// Where to point: an object or array a preset holds, into which the user's own file or a --set
// wrote something, is reported where the user wrote it, since that is what made it wrong.
const Value& located(const Value& at) {
  if (!at.file() || !at.file()->is_preset || !(at.is_object() || at.is_array())) return at;
  const Value* user = user_written_inside(at);
  return user ? *user : at;
}

}  // namespace

void Diagnostics::error(const Value& value, std::string_view pointer, std::string message, std::string hint) {
  const Value& at = located(value);
  add({Severity::error, at.file() ? at.file()->display_name : std::string(), at.pos(), std::string(pointer),
       std::move(message), std::move(hint)});
}

void Diagnostics::warning(const Value& value, std::string_view pointer, std::string message, std::string hint) {
  const Value& at = located(value);
  add({Severity::warning, at.file() ? at.file()->display_name : std::string(), at.pos(), std::string(pointer),
       std::move(message), std::move(hint)});
}

void Diagnostics::error_in_file(const std::shared_ptr<const SourceFile>& file, SourcePos pos, std::string message,
                                std::string hint) {
  add({Severity::error, file ? file->display_name : std::string(), pos, {}, std::move(message), std::move(hint)});
}

void Diagnostics::note_on_presets(size_t first, const std::string& note) {
  for (size_t i = first; i < items_.size(); ++i)
    if (items_[i].file.starts_with("preset:")) items_[i].hint += (items_[i].hint.empty() ? "" : "; ") + note;
}

void Diagnostics::error_global(std::string message, std::string hint) {
  add({Severity::error, {}, {}, {}, std::move(message), std::move(hint)});
}

std::string format_diagnostic(const Diagnostic& d) {
  std::string out;
  if (!d.file.empty()) {
    out += d.file;
    // A column of 0 means "the whole line" (trace files report per line): FILE:LINE: only.
    if (d.pos.line > 0) out += ":" + std::to_string(d.pos.line);
    if (d.pos.line > 0 && d.pos.column > 0) out += ":" + std::to_string(d.pos.column);
    out += ": ";
  }
  if (d.severity == Severity::warning) out += "warning: ";
  if (!d.pointer.empty()) out += d.pointer + ": ";
  out += d.message;
  if (!d.hint.empty()) out += "; " + d.hint;
  return out;
}

std::string format_all(const Diagnostics& diag) {
  std::string out;
  for (const auto& d : diag.items()) out += format_diagnostic(d) + "\n";
  return out;
}

std::string format_errors(const Diagnostics& diag, std::string_view separator) {
  std::string out;
  for (const auto& d : diag.items())
    if (d.severity == Severity::error) out += (out.empty() ? "" : std::string(separator)) + format_diagnostic(d);
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // Close enough to be a typo: at most a third of the longer word, and at least one character kept.
  const size_t longest = std::max(word.size(), best.size());
  if (best.empty() || best_distance * 3 > longest + 1) {
    // A word that contains the candidate (or the other way round) is also a likely slip.
    for (const auto& c : candidates) {
      if (c.size() >= 3 && word.size() >= 3 &&
          (word.find(c) != std::string_view::npos || c.find(word) != std::string::npos))
        return c;
    }
    return {};
  }
  return best;
}

std::string join_quoted(const std::vector<std::string>& names, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? std::string(last_sep) : std::string(", ");
    out += "\"" + names[i] + "\"";
  }
  return out;
}

}  // namespace arlsim::parse
