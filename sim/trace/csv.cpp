#include "sim/trace/csv.h"

namespace arlsim::trace {
namespace {

// Reads one record starting at `pos`; returns false at the end of the text.
bool read_record(std::string_view text, size_t& pos, uint32_t& line, std::vector<std::string>& cells,
                 bool& unterminated) {
  cells.clear();
  unterminated = false;
  if (pos >= text.size()) return false;
  std::string cell;
  bool quoted = false;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"' && pos < text.size() && text[pos] == '"') {
        cell += '"';
        ++pos;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"' && cell.empty()) {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      cell += c;
    }
  }
  unterminated = quoted;
  cells.push_back(std::move(cell));
  return true;
}

bool is_blank(const std::vector<std::string>& cells) { return cells.size() == 1 && cells[0].empty(); }

}  // namespace

bool parse_csv(std::string_view text, const std::string& display_name, CsvTable& out, parse::Diagnostics& diag) {
  const size_t errors_before = diag.error_count();
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t pos = 0;
  uint32_t line = 1;
  std::vector<std::string> cells;
  bool unterminated = false;
  auto error = [&](uint32_t at, std::string message) {
    diag.add({parse::Severity::error, display_name, {at, 0}, "", std::move(message), ""});
  };
  while (true) {
    const uint32_t start = line;
    if (!read_record(text, pos, line, cells, unterminated)) break;
    if (unterminated) {
      error(start, "unterminated quoted field");
      break;
    }
    if (is_blank(cells)) continue;
    if (out.columns.empty()) {
      out.columns = cells;
      continue;
    }
    if (cells.size() != out.columns.size()) {
      error(start, "expected " + std::to_string(out.columns.size()) + " fields (as in the header), got " +
                       std::to_string(cells.size()));
      continue;
    }
    out.rows.push_back({start, cells});
  }
  if (out.columns.empty())
    diag.add({parse::Severity::error, display_name, {}, "", "the file is empty; expected a header row", ""});
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::trace
