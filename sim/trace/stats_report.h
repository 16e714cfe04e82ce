// Presenting trace statistics: a table for people, JSON for programs (a list of steps), and a
// self-contained SVG chart of the growth curves (response tokens and turns per step).
#pragma once

#include <string>

#include "sim/trace/stats.h"

namespace arlsim::trace {

// The per-step table followed by the growth, tail and tool summaries.
std::string stats_table(const TraceStats& stats, const std::string& source);
// A JSON array with one object per step (one per line).
std::string stats_json(const TraceStats& stats);
// An SVG document (two panels: tokens per step, turns per step).
std::string stats_svg(const TraceStats& stats, const std::string& title);

}  // namespace arlsim::trace
