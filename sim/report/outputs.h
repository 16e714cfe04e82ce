// Writes a run's output files into a directory: summary.json, steps.csv and timeline.json (what
// `arlsim simulate --out DIR` produces; formats in docs/formats.md).
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "sim/rl/step_result.h"

namespace arlsim::report {

inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kStepsFile = "steps.csv";
inline constexpr const char* kTimelineFile = "timeline.json";
inline constexpr const char* kReportFile = "report.html";

// Creates `dir` (and its parents) when missing and writes the three files and report.html, replacing files of the
// same names. On failure returns false with `error` naming the path and the reason
// ("cannot create directory 'out/run': Not a directory"); files written before the failure stay.
// I/O problems never throw; an InternalError from a broken invariant (see write_timeline) does.
bool write_outputs(const rl::RunResult& r, const std::string& dir, std::string& error);
// The same without timeline.json: a run that streamed it (open_timeline_file) writes the rest so.
// write_text_file: one file of text into `dir` (created when missing), as the others are written.
bool write_text_file(const std::string& dir, const std::string& name, const std::string& text, std::string& error);
bool write_summary_outputs(const rl::RunResult& r, const std::string& dir, std::string& error);
// Creates `dir` when missing and checks that a file can be written in it (a command checks its
// --out before a long run, not after).
bool prepare_output_dir(const std::string& dir, std::string& error);
// The same, and that each of `files` in it can be written: not a folder or other non-file in
// the way, nor a file that cannot be written over.
bool prepare_output_files(const std::string& dir, const std::vector<std::string>& files, std::string& error);
// Creates `dir` when missing and opens DIR/timeline.json for a run to stream into (see
// TimelineStream); null with `error` naming the path and the reason when it cannot.
std::unique_ptr<std::ofstream> open_timeline_file(const std::string& dir, std::string& error);
// Closes it, and says whether every write reached the file.
bool close_timeline_file(std::ofstream& os, const std::string& dir, std::string& error);

}  // namespace arlsim::report
