// A timeline as the viewer holds it: the Chrome Trace Event file that `arlsim simulate --out`
// writes (docs/formats.md), or any file in that format, read into flat, time-sorted arrays.
//
// Slices of one track are split by nesting depth, so that each depth's slices never overlap and
// are sorted by both start and end: finding the first slice at a time is a binary search, and a
// frame draws at most one slice per pixel per depth by jumping past the pixel it just filled (as
// profilers' timelines decimate). No Qt here: the data and its queries are tested without a screen.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace arlsim::view {

// A file the viewer cannot read, with the file and the problem in the message.
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Slice {
  double start_us = 0, end_us = 0;
  uint32_t name = 0, cat = 0;  // into Timeline::strings
  uint32_t op = kNone;         // args.op (what the cost model priced it as), into strings
  static constexpr uint32_t kNone = 0xffffffffu;
  int32_t step = -1;           // -1: none
  double flops = 0, bytes = 0;
};

struct Track {
  int64_t pid = 0, tid = 0;
  std::string name;
  int64_t sort = 0;
  std::vector<std::vector<Slice>> depths;  // depths[d]: slices nested d deep, sorted by start
  size_t slice_count() const;
};

struct CounterSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (ts_us, value), sorted by time
  double max_value = 0;
};

struct Process {
  int64_t pid = 0;
  std::string name;
  int64_t sort = 0;
  std::vector<size_t> tracks;  // into Timeline::tracks, by sort index
  std::vector<CounterSeries> counters;
};

struct StepSpan {
  int32_t step = 0;
  double start_us = 0, end_us = 0;
};

// Statistics of one slice name over a time range: what a range selection shows.
struct NameStats {
  std::string name;
  int64_t count = 0;
  double total_us = 0;
  double mean_us() const { return count > 0 ? total_us / static_cast<double>(count) : 0; }
};

struct Timeline {
  std::string path;
  std::vector<std::string> strings;
  std::vector<Track> tracks;
  std::vector<Process> processes;  // by sort index
  std::vector<StepSpan> steps;     // by step
  double start_us = 0, end_us = 0;  // of everything in the file
  size_t events = 0;               // slices and counter samples read

  const std::string& str(uint32_t id) const { return strings[id]; }
  // Seconds per stage over the steps: the slices of the tracks named "stages" (arlsim's), or
  // else every outermost slice, summed by name.
  std::map<std::string, double> stage_totals_us() const;
  // Per name: count and time of the slices that overlap [t0, t1], clipped to it, by total time.
  std::vector<NameStats> range_stats(double t0_us, double t1_us) const;
  const StepSpan* step(int32_t s) const;
};

// Reads a timeline; throws LoadError naming the file and what is wrong (not JSON, with its line
// and column; no events; an event without its fields, with its index; a negative duration).
Timeline load_timeline(const std::string& path);
// The same from text, `path` naming it in messages.
Timeline parse_timeline(const std::string& text, const std::string& path);

// The index of the first slice of a depth-sorted list that ends after t (slices.size(): none).
size_t first_ending_after(const std::vector<Slice>& slices, double t_us);

}  // namespace arlsim::view
