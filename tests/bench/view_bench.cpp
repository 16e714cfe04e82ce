// Frame times of arlsim-view's timeline at a million events and beyond: writes a synthetic
// timeline (engines' iterations, tool calls and counters over nodes, in arlsim's format), reads it
// as the viewer does, and renders frames offscreen at zoom levels from the whole run down to
// microseconds. Prints the load time, peak memory and per-zoom median and worst frame.
// Usage: view_bench [EVENTS] [WIDTHxHEIGHT]   (default 1000000, 1600x1000)
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gui/timeline_data.h"
#include "gui/timeline_view.h"

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// 8 nodes x 8 engines of back-to-back iterations, 64 tool slots, KV counters: `events` in all.
void write_timeline(const std::string& path, long events) {
  std::ofstream out(path);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> iter(20, 400), tool(1000, 2e6);
  out << "{\"traceEvents\": [\n";
  bool first = true;
  auto line = [&](const std::string& s) {
    out << (first ? "" : ",\n") << s;
    first = false;
  };
  for (int n = 0; n < 8; ++n) {
    line("{\"ph\": \"M\", \"pid\": " + std::to_string(n + 1) + ", \"tid\": " + std::to_string(n + 1) +
         ", \"name\": \"process_name\", \"args\": {\"name\": \"node " + std::to_string(n) + "\"}}");
    for (int e = 0; e < 8; ++e)
      line("{\"ph\": \"M\", \"pid\": " + std::to_string(n + 1) + ", \"tid\": " + std::to_string(100 + n * 8 + e) +
           ", \"name\": \"thread_name\", \"args\": {\"name\": \"engine " + std::to_string(n * 8 + e) + "\"}}");
  }
  const long counters = events / 50, tools = events / 10, iterations = events - counters - tools;
  std::vector<double> clock(64, 0), slot(64, 0);
  char buf[256];
  for (long i = 0; i < iterations; ++i) {
    const int e = static_cast<int>(i % 64);
    const double d = iter(rng);
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"name\": \"%s\", \"cat\": "
                  "\"rollout\", \"args\": {\"step\": %ld, \"stage\": \"rollout\"}}",
                  e / 8 + 1, 100 + e, clock[e], d, i % 7 ? "decode" : "prefill+decode", 1 + i * 10 / iterations);
    line(buf);
    clock[e] += d;
  }
  for (long i = 0; i < tools; ++i) {
    const int s = static_cast<int>(i % 64);
    const double d = tool(rng) / 100;
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"X\", \"pid\": 9, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"name\": \"tool call\", \"cat\": "
                  "\"rollout\", \"args\": {\"step\": 1, \"stage\": \"rollout\"}}",
                  200 + s, slot[s], d);
    line(buf);
    slot[s] += d * 1.1;
  }
  const double end = *std::max_element(clock.begin(), clock.end());
  for (long i = 0; i < counters; ++i) {
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"C\", \"pid\": %ld, \"tid\": %ld, \"ts\": %.3f, \"name\": \"KV cache used (%%), engine %ld\", "
                  "\"args\": {\"value\": %.1f}}",
                  i % 8 + 1, i % 8 + 1, end * static_cast<double>(i / 8) / static_cast<double>(counters / 8 + 1), i % 8,
                  50.0 + 40.0 * std::sin(static_cast<double>(i) / 1000.0));
    line(buf);
  }
  out << "\n], \"displayTimeUnit\": \"ms\"}\n";
}
}  // namespace

int main(int argc, char** argv) {
  const long events = argc > 1 ? std::stol(argv[1]) : 1000000;
  int w = 1600, h = 1000;
  if (argc > 2) std::sscanf(argv[2], "%dx%d", &w, &h);
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  int qt_argc = 1;
  QApplication app(qt_argc, argv);
  const std::string path = "view_bench_timeline.json";
  auto t = Clock::now();
  write_timeline(path, events);
  std::printf("wrote %ld events in %.0f ms\n", events, ms_since(t));
  t = Clock::now();
  const arlsim::view::Timeline tl = arlsim::view::load_timeline(path);
  std::remove(path.c_str());
  std::printf("loaded %zu events in %.0f ms; peak memory %.0f MiB\n", tl.events, ms_since(t), peak_rss_kib() / 1024.0);

  arlsim::view::TimelineView view(tl);
  view.resize(w, h);
  QImage img(w, h, QImage::Format_ARGB32_Premultiplied);
  const double span = tl.end_us - tl.start_us;
  std::printf("%-14s %8s %10s %10s %12s\n", "view", "frames", "median ms", "worst ms", "slices/frame");
  double worst_all = 0;
  for (double zoom : {1.0, 0.1, 0.01, 1e-3, 1e-5}) {
    std::vector<double> times;
    int64_t slices = 0;
    for (int f = 0; f < 20; ++f) {
      const double a0 = tl.start_us + (span - span * zoom) * f / 19.0;
      view.set_range(a0, a0 + span * zoom);
      QPainter p(&img);
      const auto ft = Clock::now();
      view.render(&p);
      times.push_back(ms_since(ft));
      slices = std::max(slices, view.last_frame_slices());
    }
    std::sort(times.begin(), times.end());
    worst_all = std::max(worst_all, times.back());
    char label[32];
    std::snprintf(label, sizeof label, "1/%g of run", 1 / zoom);
    std::printf("%-14s %8zu %10.2f %10.2f %12lld\n", label, times.size(), times[times.size() / 2], times.back(),
                static_cast<long long>(slices));
  }
  std::printf("worst frame %.2f ms at %ld events, %dx%d\n", worst_all, events, w, h);
  return 0;
}
