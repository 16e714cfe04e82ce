// Importing per-step summaries (CSV, as exported from a training dashboard): each row gives a
// step's mean response length and perhaps its min, max, standard deviation, clip ratio, prompt
// length and turn counts. Each step is expanded into prompts_per_step x group_size trajectories
// drawn from a distribution fitted to those figures (fit.h); the header records the columns used
// and, per step, the fitted spread and what it was fitted from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/parse/diagnostics.h"
#include "sim/trace/trace.h"
#include "sim/trace/turns.h"

namespace arlsim::trace {

struct SummaryImportOptions {
  int prompts_per_step = 0;
  int group_size = 0;
  uint64_t seed = 1;
  // ROLE=COLUMN choices (--column), for columns whose names are not among the known aliases.
  std::vector<std::pair<std::string, std::string>> columns;
  double default_sigma = 0.6;       // spread when a step gives neither std, max nor min
  double group_correlation = 0.5;   // of the lengths within a group
  double prompt_tokens = 512;       // mean prompt length when the CSV has none
  TurnShape shape;                  // tools and observations of multi-turn steps
};

struct SummaryRole {
  std::string_view name;  // the ROLE in --column ROLE=COLUMN
  std::string_view description;
  std::vector<std::string_view> aliases;  // column names recognised without --column
};

const std::vector<SummaryRole>& summary_roles();

// `display_name` names the source in messages and in the header.
std::optional<Trace> import_summary_csv(std::string_view text, const std::string& display_name,
                                        const SummaryImportOptions& options, parse::Diagnostics& diag);

}  // namespace arlsim::trace
