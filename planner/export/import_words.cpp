// A launch's words and values (import_launch.h): a shell script split into commands of words, and
// the numbers and booleans its settings hold.
#include <cctype>
#include <cmath>
#include <string>

#include "planner/export/import_launch.h"
#include "sim/parse/diagnostics.h"

namespace arlsim::planner::import_detail {

// The shell words of a script: backslash-newline joins lines, `#` starts a comment at a word's
// start, single and double quotes group (their text kept, the quotes dropped). Enough for launch
// scripts; no expansion is done ($VAR stays as written).
std::vector<std::vector<Word>> shell_commands(const std::string& raw, int& unclosed_quote_line) {
  // Carriage returns (a script saved with CRLF line ends) are not part of any word.
  std::string text;
  text.reserve(raw.size());
  for (char c : raw)
    if (c != '\r') text += c;
  std::vector<std::vector<Word>> commands(1);
  Word word;
  bool in_word = false;
  char quote = 0;
  int line = 1, quote_line = 0;
  bool redirect_target = false;  // the word after a redirection (`> log`) is a file, not an argument
  auto end_word = [&] {
    if (in_word) {
      // Redirections (`2>&1`, `>`, `> log`, `<in`) are the shell's, not the program's.
      const std::string& t = word.text;
      const bool redirect = !t.empty() && (t.find_first_of("<>") != std::string::npos) &&
                            t.find('=') == std::string::npos;
      if (redirect_target) redirect_target = false;
      else if (redirect) redirect_target = t.back() == '>' || t.back() == '<';
      else commands.back().push_back(word);
    }
    word = Word{};
    in_word = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (quote == '"' && c == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word.text += text[++i];
      } else {
        word.text += c;
      }
      if (c == '\n') ++line;
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') {  // a continuation
        ++i;
        ++line;
        end_word();
        continue;
      }
      if (!in_word) {  // an escaped character starts a word
        in_word = true;
        word.line = line;
      }
      word.text += text[++i];
      continue;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|') {
      end_word();
      if (!commands.back().empty()) commands.emplace_back();
      if (c == '\n') ++line;
      continue;
    }
    if (c == ' ' || c == '\t') {
      end_word();
      continue;
    }
    if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
      --i;
      continue;
    }
    if (!in_word) {
      in_word = true;
      word.line = line;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      quote_line = line;
    } else {
      word.text += c;
    }
  }
  end_word();
  unclosed_quote_line = quote ? quote_line : 0;
  return commands;
}

std::optional<double> real(const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;  // "nan" and "inf" parse, but are no setting
  } catch (...) {
  }
  return std::nullopt;
}
std::optional<bool> boolean(const std::string& s) {
  std::string t;
  for (char c : s) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  return std::nullopt;
}

std::string slip_of(const std::string& key, const std::vector<std::string>& known) {
  std::string closest;
  size_t best = 3;  // a slip: two edits at most
  for (const auto& name : known)
    if (const size_t d = parse::edit_distance(key, name); d > 0 && d < best) {
      best = d;
      closest = name;
    }
  return closest;
}

void note_at(ImportResult& out, const std::string& file, const Word& w, const std::string& key, const std::string& how) {
  out.notes.push_back(file + ":" + std::to_string(w.line) + ": " + key + ": " + how);
}

}  // namespace arlsim::planner::import_detail
