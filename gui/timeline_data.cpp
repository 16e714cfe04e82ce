#include "gui/timeline_data.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

namespace arlsim::view {

size_t Track::slice_count() const {
  size_t n = 0;
  for (const auto& d : depths) n += d.size();
  return n;
}

namespace {

// One event's fields as the reader meets them.
struct RawEvent {
  std::string ph, name, cat, arg_name, arg_stage, arg_op;
  double pid = 0, tid = 0, ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, has_pid = false;
  double step = -1, flops = 0, bytes = 0, sort_index = 0;
  std::vector<std::pair<std::string, double>> numeric_args;
};

// Builds the timeline from a SAX walk over the file: no document tree, so a file of a million
// events costs its slices and not a DOM of ten times its size.
class Reader {
 public:
  using json = nlohmann::json;
  explicit Reader(const std::string& text, std::string path) : text_(text), path_(std::move(path)) {}

  bool null() { return scalar(std::numeric_limits<double>::quiet_NaN(), nullptr); }
  bool boolean(bool b) { return scalar(b ? 1 : 0, nullptr); }
  bool number_integer(json::number_integer_t v) { return scalar(static_cast<double>(v), nullptr); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(static_cast<double>(v), nullptr); }
  bool number_float(json::number_float_t v, const json::string_t&) { return scalar(v, nullptr); }
  bool string(json::string_t& s) { return scalar(0, &s); }
  bool binary(json::binary_t&) { return true; }
  bool key(json::string_t& k) {
    if (!keys_.empty()) keys_.back() = k;
    return true;
  }
  bool start_object(size_t) {
    open('o');
    if (collecting() && depth() == events_depth_ + 1) {
      ev_ = RawEvent{};
      ++index_;
    }
    return true;
  }
  bool end_object() {
    if (collecting() && depth() == events_depth_ + 1) finish_event();
    close();
    return true;
  }
  bool start_array(size_t) {
    // The events: the root array, or the root object's "traceEvents".
    if (events_depth_ < 0 && ((depth() == 0) || (depth() == 1 && kinds_[0] == 'o' && keys_[0] == "traceEvents")))
      events_depth_ = depth() + 1, saw_events_ = true;
    open('a');
    return true;
  }
  bool end_array() {
    if (events_depth_ >= 0 && depth() == events_depth_) events_done_ = true;  // what follows is not an event
    close();
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    std::string what = ex.what();
    const auto colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw LoadError(path_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": not valid JSON: " + what);
  }

  Timeline finish();

 private:
  int depth() const { return static_cast<int>(kinds_.size()); }
  bool collecting() const { return events_depth_ >= 0 && !events_done_; }
  void open(char kind) {
    kinds_.push_back(kind);
    keys_.emplace_back();
  }
  void close() {
    kinds_.pop_back();
    keys_.pop_back();
  }
  bool scalar(double v, json::string_t* s) {
    if (!collecting()) return true;
    if (depth() == events_depth_ + 1 && kinds_.back() == 'o') {
      const std::string& k = keys_.back();
      if (s) {
        if (k == "ph") ev_.ph = *s;
        else if (k == "name") ev_.name = *s;
        else if (k == "cat") ev_.cat = *s;
        return true;
      }
      if (k == "pid") ev_.pid = v, ev_.has_pid = true;
      else if (k == "tid") ev_.tid = v;
      else if (k == "ts") ev_.ts = v, ev_.has_ts = true;
      else if (k == "dur") ev_.dur = v, ev_.has_dur = true;
    } else if (depth() == events_depth_ + 2 && kinds_.back() == 'o' && keys_[keys_.size() - 2] == "args") {
      const std::string& k = keys_.back();
      if (s) {
        if (k == "name") ev_.arg_name = *s;
        else if (k == "stage") ev_.arg_stage = *s;
        else if (k == "op") ev_.arg_op = *s;
        return true;
      }
      if (k == "step") ev_.step = v;
      else if (k == "flops") ev_.flops = v;
      else if (k == "bytes") ev_.bytes = v;
      else if (k == "sort_index") ev_.sort_index = v;
      ev_.numeric_args.emplace_back(k, v);
    }
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw LoadError(path_ + ": event " + std::to_string(index_) + " of the trace events: " + what);
  }
  uint32_t intern(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }
  struct RawTrack {
    int64_t pid = 0, tid = 0;
    std::string name;
    int64_t sort = 0;
    bool named = false, sorted = false;
    std::vector<Slice> slices;
    // "B" and "E" events (an "E" has end_us = 1), paired in time order when the file is read.
    std::vector<std::pair<Slice, bool>> begin_end;
  };
  RawTrack& track(int64_t pid, int64_t tid) {
    auto [it, added] = track_index_.try_emplace({pid, tid}, tracks_.size());
    if (added) {
      tracks_.emplace_back();
      tracks_.back().pid = pid;
      tracks_.back().tid = tid;
      process(pid);
    }
    return tracks_[it->second];
  }
  Process& process(int64_t pid) {
    auto [it, added] = process_index_.try_emplace(pid, processes_.size());
    if (added) {
      processes_.emplace_back();
      processes_.back().pid = pid;
      processes_.back().name = "process " + std::to_string(pid);
      processes_.back().sort = std::numeric_limits<int64_t>::max();
    }
    return processes_[it->second];
  }
  void finish_event();

  const std::string& text_;
  std::string path_;
  std::vector<char> kinds_;
  std::vector<std::string> keys_;
  int events_depth_ = -1;
  bool saw_events_ = false, events_done_ = false;
  size_t index_ = 0, events_ = 0;
  RawEvent ev_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<RawTrack> tracks_;
  std::map<std::pair<int64_t, int64_t>, size_t> track_index_;
  std::vector<Process> processes_;
  std::map<int64_t, size_t> process_index_;
  std::map<std::pair<int64_t, std::string>, std::vector<std::pair<double, double>>> counters_;
};

void Reader::finish_event() {
  const RawEvent& e = ev_;
  if (e.ph.empty()) fail("it has no \"ph\" (the event type)");
  // pid and tid are integers in the format; anything else is refused rather than cast.
  const auto whole = [&](double v, const char* key) {
    if (!(std::isfinite(v) && std::abs(v) < 9e15 && v == std::floor(v))) fail(std::string("\"") + key + "\" must be an integer");
    return static_cast<int64_t>(v);
  };
  const int64_t pid = whole(e.pid, "pid"), tid = whole(e.tid, "tid");
  if (e.ph == "M") {
    if (e.name == "process_name") process(pid).name = e.arg_name;
    else if (e.name == "process_sort_index") process(pid).sort = whole(e.sort_index, "sort_index");
    else if (e.name == "thread_name") {
      auto& t = track(pid, tid);
      t.name = e.arg_name;
      t.named = true;
    } else if (e.name == "thread_sort_index") {
      auto& t = track(pid, tid);
      t.sort = whole(e.sort_index, "sort_index");
      t.sorted = true;
    }
    return;
  }
  if (e.ph != "X" && e.ph != "B" && e.ph != "E" && e.ph != "C") return;  // instants, flows: not drawn
  if (!e.has_ts) fail("\"ph\": \"" + e.ph + "\" needs \"ts\"");
  // Times within 10^16 microseconds (about 317 years, past the simulator's clock): their sums and
  // the axis' scale stay finite.
  constexpr double kMaxUs = 1e16;
  if (!(std::abs(e.ts) <= kMaxUs)) fail("\"ts\" must be a finite number of microseconds within 1e16 either way");
  ++events_;
  if (e.ph == "C") {
    for (const auto& [k, v] : e.numeric_args) {
      if (!std::isfinite(v)) continue;  // a sample the writer could not give (null)
      const std::string series = k == "value" ? e.name : e.name + " " + k;
      counters_[{pid, series}].emplace_back(e.ts, v);
    }
    process(pid);
    return;
  }
  Slice s;
  s.start_us = e.ts;
  s.name = intern(e.name);
  s.cat = intern(e.cat.empty() ? e.arg_stage : e.cat);
  if (!e.arg_op.empty()) s.op = intern(e.arg_op);
  s.step = e.step >= 0 && e.step < 2e9 ? static_cast<int32_t>(e.step) : -1;
  s.flops = std::isfinite(e.flops) ? e.flops : 0;
  s.bytes = std::isfinite(e.bytes) ? e.bytes : 0;
  auto& t = track(pid, tid);
  if (e.ph == "X") {
    if (!e.has_dur) fail("a complete event (\"ph\": \"X\") needs \"dur\"");
    if (!(e.dur >= 0 && e.dur <= kMaxUs)) fail("\"dur\" must be a number of microseconds from 0 to 1e16");
    s.end_us = e.ts + e.dur;
    t.slices.push_back(s);
  } else {
    t.begin_end.emplace_back(s, e.ph == "B");
  }
}

Timeline Reader::finish() {
  if (!saw_events_)
    throw LoadError(path_ + ": no trace events: expected an object with \"traceEvents\" or an array of events");
  Timeline tl;
  tl.path = path_;
  tl.events = events_;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::map<int32_t, StepSpan> steps;
  // Begins and ends pair by time on their thread, as Chrome's and Perfetto's readers pair them
  // (ends first at equal times); a begin never ended lasts to the end of the file.
  double last_ts = -std::numeric_limits<double>::infinity();
  for (const auto& rt : tracks_) {
    for (const auto& sl : rt.slices) last_ts = std::max(last_ts, sl.end_us);
    for (const auto& be : rt.begin_end) last_ts = std::max(last_ts, be.first.start_us);
  }
  for (const auto& [key, points] : counters_)
    for (const auto& p : points) last_ts = std::max(last_ts, p.first);
  for (auto& rt : tracks_) {
    std::stable_sort(rt.begin_end.begin(), rt.begin_end.end(), [](const auto& a, const auto& b) {
      return a.first.start_us != b.first.start_us ? a.first.start_us < b.first.start_us : !a.second && b.second;
    });
    std::vector<Slice> open;
    for (auto& [slice, begins] : rt.begin_end) {
      if (begins) {
        open.push_back(slice);
        continue;
      }
      if (open.empty())
        throw LoadError(path_ + ": an end (\"ph\": \"E\") at " + std::to_string(slice.start_us) +
                        " us without a begin before it on thread " + std::to_string(rt.tid) + " of process " +
                        std::to_string(rt.pid));
      Slice b = open.back();
      open.pop_back();
      b.end_us = slice.start_us;
      rt.slices.push_back(b);
    }
    for (auto& b : open) {
      b.end_us = last_ts;
      rt.slices.push_back(b);
    }
    rt.begin_end.clear();
  }
  for (auto& rt : tracks_) {
    auto& sl = rt.slices;
    std::stable_sort(sl.begin(), sl.end(), [](const Slice& a, const Slice& b) {
      return a.start_us != b.start_us ? a.start_us < b.start_us : a.end_us > b.end_us;
    });
    Track t;
    t.pid = rt.pid;
    t.tid = rt.tid;
    t.name = rt.named ? rt.name : "thread " + std::to_string(rt.tid);
    t.sort = rt.sorted ? rt.sort : rt.tid;
    // First fit: each slice on the shallowest depth whose last slice has ended (half a
    // nanosecond of overlap is the files' rounding of ts and dur to 1 ns, not nesting).
    std::vector<double> last_end;
    for (const Slice& s : sl) {
      size_t d = 0;
      // (only for a slice that also ends no earlier, so that each depth's ends stay sorted).
      while (d < last_end.size() && (last_end[d] > s.start_us + 5e-4 || (last_end[d] > s.start_us && s.end_us < last_end[d]))) ++d;
      if (d == last_end.size()) {
        last_end.push_back(s.end_us);
        t.depths.emplace_back();
      }
      last_end[d] = s.end_us;
      t.depths[d].push_back(s);
      lo = std::min(lo, s.start_us);
      hi = std::max(hi, s.end_us);
      if (s.step >= 0) {
        auto [it, added] = steps.try_emplace(s.step, StepSpan{s.step, s.start_us, s.end_us});
        if (!added) {
          it->second.start_us = std::min(it->second.start_us, s.start_us);
          it->second.end_us = std::max(it->second.end_us, s.end_us);
        }
      }
    }
    const size_t index = tl.tracks.size();
    tl.tracks.push_back(std::move(t));
    processes_[process_index_.at(rt.pid)].tracks.push_back(index);
  }
  for (auto& [key, points] : counters_) {
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    CounterSeries c;
    c.name = key.second;
    c.points = std::move(points);
    for (const auto& p : c.points) {
      c.max_value = std::max(c.max_value, p.second);
      lo = std::min(lo, p.first);
      hi = std::max(hi, p.first);
    }
    processes_[process_index_.at(key.first)].counters.push_back(std::move(c));
  }
  if (!(lo <= hi)) throw LoadError(path_ + ": no slices or counters to show (the file has " + std::to_string(index_) + " events, none of them \"X\", \"B\"/\"E\" or \"C\")");
  tl.start_us = lo;
  tl.end_us = hi;
  for (auto& p : processes_) {
    std::stable_sort(p.tracks.begin(), p.tracks.end(), [&](size_t a, size_t b) {
      const Track &x = tl.tracks[a], &y = tl.tracks[b];
      return x.sort != y.sort ? x.sort < y.sort : x.tid < y.tid;
    });
    if (p.sort == std::numeric_limits<int64_t>::max()) p.sort = p.pid;
  }
  std::stable_sort(processes_.begin(), processes_.end(), [](const Process& a, const Process& b) {
    return a.sort != b.sort ? a.sort < b.sort : a.pid < b.pid;
  });
  tl.processes = std::move(processes_);
  tl.strings = std::move(strings_);
  for (const auto& [s, span] : steps) tl.steps.push_back(span);
  return tl;
}

}  // namespace

std::map<std::string, double> Timeline::stage_totals_us() const {
  std::map<std::string, double> out;
  bool arlsim = false;
  for (const auto& t : tracks)
    if (t.name == "stages") {
      arlsim = true;
      for (const auto& d : t.depths)
        for (const auto& s : d) out[str(s.name)] += s.end_us - s.start_us;
    }
  if (arlsim) return out;
  for (const auto& t : tracks)
    if (!t.depths.empty())
      for (const auto& s : t.depths[0]) out[str(s.name)] += s.end_us - s.start_us;
  return out;
}

std::vector<NameStats> Timeline::range_stats(double t0_us, double t1_us) const {
  std::map<uint32_t, NameStats> by;
  for (const auto& t : tracks)
    for (const auto& d : t.depths)
      for (size_t i = first_ending_after(d, t0_us); i < d.size() && d[i].start_us < t1_us; ++i) {
        const Slice& s = d[i];
        auto& st = by[s.name];
        ++st.count;
        st.total_us += std::min(s.end_us, t1_us) - std::max(s.start_us, t0_us);
      }
  std::vector<NameStats> out;
  for (auto& [id, st] : by) {
    st.name = str(id);
    out.push_back(st);
  }
  std::stable_sort(out.begin(), out.end(), [](const NameStats& a, const NameStats& b) { return a.total_us > b.total_us; });
  return out;
}

const StepSpan* Timeline::step(int32_t s) const {
  auto it = std::lower_bound(steps.begin(), steps.end(), s, [](const StepSpan& x, int32_t v) { return x.step < v; });
  return it != steps.end() && it->step == s ? &*it : nullptr;
}

size_t first_ending_after(const std::vector<Slice>& slices, double t_us) {
  // Within a depth slices do not overlap, so their ends rise with their starts.
  auto it = std::upper_bound(slices.begin(), slices.end(), t_us, [](double t, const Slice& s) { return t < s.end_us; });
  return static_cast<size_t>(it - slices.begin());
}

Timeline parse_timeline(const std::string& text, const std::string& path) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw LoadError(path + ": the file is empty");
  Reader r(text, path);
  nlohmann::json::sax_parse(text, &r);
  return r.finish();
}

Timeline load_timeline(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw LoadError(path + ": is a directory, not a timeline file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path + ": cannot be opened (" + std::strerror(errno) + ")");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw LoadError(path + ": cannot be read");
  return parse_timeline(buf.str(), path);
}

}  // namespace arlsim::view
