#include "sim/report/outputs.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <system_error>
#include <unistd.h>

#include "sim/report/html_report.h"
#include "sim/report/summary.h"
#include "sim/report/timeline.h"

namespace arlsim::report {
namespace {

namespace fs = std::filesystem;

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// The reason an open or write failed: errno where the library set it, else a plain word.
std::string last_error() { return errno != 0 ? std::strerror(errno) : "write failed"; }

// Writes one file through `body`; the stream is checked after opening and again after closing,
// because a full disk shows only when the last buffer is flushed.
bool write_file(const fs::path& path, const std::function<void(std::ostream&)>& body, std::string& error) {
  errno = 0;
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  if (!os) {
    error = "cannot open " + quoted(path) + " for writing: " + last_error();
    return false;
  }
  body(os);
  os.close();
  if (!os) {
    error = "cannot write " + quoted(path) + ": " + last_error();
    return false;
  }
  return true;
}

bool make_directory(const fs::path& dir, std::string& error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && !fs::is_directory(dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) error = "cannot create directory " + quoted(dir) + ": " + ec.message();
  return !ec;
}

}  // namespace

namespace {

// summary.json, steps.csv, report.html and, with `timeline`, timeline.json.
bool write_run_files(const rl::RunResult& r, const std::string& dir, bool timeline, std::string& error) {
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  try {
    if (!make_directory(root, error)) return false;
    auto text = [](std::string s) { return [s = std::move(s)](std::ostream& os) { os << s; }; };
    return write_file(root / kSummaryFile, text(summary_json(r)), error) &&
           write_file(root / kStepsFile, text(steps_csv(r)), error) &&
           write_file(root / kReportFile, text(run_report_html(r)), error) &&
           (!timeline || write_file(root / kTimelineFile, [&r](std::ostream& os) { write_timeline(r, os); }, error));
  } catch (const std::bad_alloc&) {
    error = "out of memory while writing the outputs to " + quoted(root);
    return false;
  }
}

}  // namespace

bool write_outputs(const rl::RunResult& r, const std::string& dir, std::string& error) {
  return write_run_files(r, dir, true, error);
}

bool write_summary_outputs(const rl::RunResult& r, const std::string& dir, std::string& error) {
  return write_run_files(r, dir, false, error);
}

bool write_text_file(const std::string& dir, const std::string& name, const std::string& text, std::string& error) {
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  if (!make_directory(root, error)) return false;
  return write_file(root / name, [&text](std::ostream& os) { os << text; }, error);
}

bool prepare_output_dir(const std::string& dir, std::string& error) {
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  if (!make_directory(root, error)) return false;
  const fs::path probe = root / ".arlsim-write-check";
  if (!write_file(probe, [](std::ostream&) {}, error)) return false;
  std::error_code ec;
  fs::remove(probe, ec);
  return true;
}

bool prepare_output_files(const std::string& dir, const std::vector<std::string>& files, std::string& error) {
  if (!prepare_output_dir(dir, error)) return false;
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  for (const auto& name : files) {
    const fs::path path = root / name;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) continue;  // made when written
    if (!fs::is_regular_file(st)) {
      error = "cannot write " + quoted(path) + ": it is " + (fs::is_directory(st) ? "a folder" : "not a file");
      return false;
    }
    if (::access(path.c_str(), W_OK) != 0) {
      error = "cannot write " + quoted(path) + ": " + last_error();
      return false;
    }
  }
  return true;
}

std::unique_ptr<std::ofstream> open_timeline_file(const std::string& dir, std::string& error) {
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  if (!make_directory(root, error)) return nullptr;
  errno = 0;
  auto os = std::make_unique<std::ofstream>(root / kTimelineFile, std::ios::binary | std::ios::trunc);
  if (!*os) {
    error = "cannot open " + quoted(root / kTimelineFile) + " for writing: " + last_error();
    return nullptr;
  }
  return os;
}

bool close_timeline_file(std::ofstream& os, const std::string& dir, std::string& error) {
  const fs::path path = (dir.empty() ? fs::path(".") : fs::path(dir)) / kTimelineFile;
  const bool written = static_cast<bool>(os);
  errno = 0;
  os.close();
  if (!written || !os) {
    error = "cannot write " + quoted(path) + ": " + last_error();
    return false;
  }
  return true;
}

}  // namespace arlsim::report
