// A CSV reader for the summaries users export from training dashboards (W&B, TensorBoard, MLflow):
// RFC 4180 quoting ("a, b", "say ""hi"""), CRLF or LF line ends, an optional UTF-8 byte-order
// mark, and a header row naming the columns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/parse/diagnostics.h"

namespace arlsim::trace {

struct CsvRow {
  uint32_t line = 0;  // where the row starts in the file
  std::vector<std::string> cells;
};

struct CsvTable {
  std::vector<std::string> columns;
  std::vector<CsvRow> rows;
};

// Parses `text`; reports rows with the wrong number of cells and unterminated quotes (with the
// line) and returns false when there was any problem.
bool parse_csv(std::string_view text, const std::string& display_name, CsvTable& out, parse::Diagnostics& diag);

}  // namespace arlsim::trace
