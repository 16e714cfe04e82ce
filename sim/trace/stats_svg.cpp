// The SVG chart of trace statistics: two panels sharing the step axis, drawn with plain SVG
// elements (no scripts, no external styles) so the file opens anywhere and diffs cleanly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "sim/trace/stats_report.h"

namespace arlsim::trace {
namespace {

constexpr double kWidth = 960, kPanelHeight = 280, kLeft = 80, kRight = 170, kTop = 50, kGap = 70;

struct Series {
  const char* label;
  const char* color;
  bool dashed;
  std::function<double(const StepStats&)> value;
};

std::string f(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A round axis top at least v (m x 10^k for m in 1, 2, 2.5, 3, 4, 5, 6, 8) and how many grid
// intervals divide it into round steps.
struct AxisTop {
  double top;
  int intervals;
};

AxisTop nice_ceiling(double v) {
  if (v <= 0) return {1, 5};
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  static const std::pair<double, int> kSteps[] = {{1, 5}, {2, 4}, {2.5, 5}, {3, 3}, {4, 4},
                                                   {5, 5}, {6, 3}, {8, 4}, {10, 5}};
  for (const auto& [m, intervals] : kSteps)
    if (m * p >= v * (1 - 1e-12)) return {m * p, intervals};
  return {10 * p, 5};
}

std::string tick_label(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Frame {
  double x0, y0, w, h;   // plot area
  double first, last;    // steps
  double top;            // y value at the top
  int intervals;         // horizontal grid intervals
  double x(double step) const { return x0 + (last > first ? (step - first) / (last - first) : 0.5) * w; }
  double y(double v) const { return y0 + h - v / top * h; }
};

std::string axes(const Frame& fr, const std::string& title, const std::string& unit) {
  std::string out = "<text x=\"" + f(fr.x0) + "\" y=\"" + f(fr.y0 - 12) + "\" font-size=\"14\" font-weight=\"bold\">" +
                    escape(title) + "</text>\n";
  for (int i = 0; i <= fr.intervals; ++i) {
    const double v = fr.top * i / fr.intervals, y = fr.y(v);
    out += "<line x1=\"" + f(fr.x0) + "\" y1=\"" + f(y) + "\" x2=\"" + f(fr.x0 + fr.w) + "\" y2=\"" + f(y) +
           "\" stroke=\"#e5e5e5\"/>\n";
    out += "<text x=\"" + f(fr.x0 - 8) + "\" y=\"" + f(y + 4) + "\" font-size=\"11\" text-anchor=\"end\">" +
           tick_label(v) + "</text>\n";
  }
  const double span = std::max(1.0, fr.last - fr.first);
  const double step = nice_ceiling(span / 8).top;
  for (double s = std::ceil(fr.first / step) * step; s <= fr.last + 1e-9; s += step) {
    out += "<text x=\"" + f(fr.x(s)) + "\" y=\"" + f(fr.y0 + fr.h + 16) + "\" font-size=\"11\" text-anchor=\"middle\">" +
           tick_label(s) + "</text>\n";
  }
  out += "<rect x=\"" + f(fr.x0) + "\" y=\"" + f(fr.y0) + "\" width=\"" + f(fr.w) + "\" height=\"" + f(fr.h) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  out += "<text x=\"" + f(fr.x0 + fr.w / 2) + "\" y=\"" + f(fr.y0 + fr.h + 32) +
         "\" font-size=\"12\" text-anchor=\"middle\">step</text>\n";
  out += "<text x=\"" + f(fr.x0 - 60) + "\" y=\"" + f(fr.y0 + fr.h / 2) + "\" font-size=\"12\" text-anchor=\"middle\" " +
         "transform=\"rotate(-90 " + f(fr.x0 - 60) + " " + f(fr.y0 + fr.h / 2) + ")\">" + escape(unit) + "</text>\n";
  return out;
}

std::string panel(const TraceStats& stats, double y0, const std::string& title, const std::string& unit,
                  const std::vector<Series>& series) {
  double top = 0;
  for (const auto& s : stats.steps)
    for (const auto& line : series) top = std::max(top, line.value(s));
  const AxisTop axis = nice_ceiling(top);
  const Frame fr{kLeft,
                 y0,
                 kWidth - kLeft - kRight,
                 kPanelHeight,
                 static_cast<double>(stats.steps.front().step),
                 static_cast<double>(stats.steps.back().step),
                 axis.top,
                 axis.intervals};
  std::string out = axes(fr, title, unit);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& line = series[i];
    std::string points;
    for (const auto& s : stats.steps) points += f(fr.x(s.step)) + "," + f(fr.y(line.value(s))) + " ";
    if (stats.steps.size() == 1) {
      out += "<circle cx=\"" + f(fr.x(stats.steps[0].step)) + "\" cy=\"" + f(fr.y(line.value(stats.steps[0]))) +
             "\" r=\"3\" fill=\"" + line.color + "\"/>\n";
    } else {
      out += "<polyline fill=\"none\" stroke=\"" + std::string(line.color) + "\" stroke-width=\"1.8\"" +
             (line.dashed ? " stroke-dasharray=\"5 3\"" : "") + " points=\"" + points + "\"/>\n";
    }
    const double ly = y0 + 14 + 18 * static_cast<double>(i), lx = kWidth - kRight + 15;
    out += "<line x1=\"" + f(lx) + "\" y1=\"" + f(ly - 4) + "\" x2=\"" + f(lx + 22) + "\" y2=\"" + f(ly - 4) +
           "\" stroke=\"" + line.color + "\" stroke-width=\"2\"" + (line.dashed ? " stroke-dasharray=\"5 3\"" : "") +
           "/>\n<text x=\"" + f(lx + 28) + "\" y=\"" + f(ly) + "\" font-size=\"11\">" + line.label + "</text>\n";
  }
  return out;
}

}  // namespace

std::string stats_svg(const TraceStats& stats, const std::string& title) {
  const double height = kTop + 2 * kPanelHeight + kGap + 50;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(kWidth) + "\" height=\"" + f(height) +
                    "\" viewBox=\"0 0 " + f(kWidth) + " " + f(height) + "\" font-family=\"sans-serif\">\n" +
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"" + f(kLeft) +
                    "\" y=\"24\" font-size=\"16\">" + escape(title) + "</text>\n";
  if (stats.steps.empty()) return out + "</svg>\n";
  const std::vector<Series> tokens{
      {"response max", "#d62728", false, [](const StepStats& s) { return double(s.response_tokens.max); }},
      {"response p99", "#ff7f0e", false, [](const StepStats& s) { return double(s.response_tokens.p99); }},
      {"response mean", "#1f1f1f", false, [](const StepStats& s) { return s.response_tokens.mean; }},
      {"response p50", "#1f77b4", false, [](const StepStats& s) { return double(s.response_tokens.p50); }},
      {"context p99", "#9467bd", true, [](const StepStats& s) { return double(s.context_tokens.p99); }},
  };
  const std::vector<Series> turns{
      {"turns max", "#d62728", false, [](const StepStats& s) { return double(s.turns.max); }},
      {"turns p99", "#ff7f0e", false, [](const StepStats& s) { return double(s.turns.p99); }},
      {"turns mean", "#1f1f1f", false, [](const StepStats& s) { return s.turns.mean; }},
  };
  out += panel(stats, kTop + 20, "tokens per trajectory", "tokens", tokens);
  out += panel(stats, kTop + 20 + kPanelHeight + kGap, "turns per trajectory", "turns", turns);
  return out + "</svg>\n";
}

}  // namespace arlsim::trace
