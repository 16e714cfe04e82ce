#include "sim/trace/stats_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "sim/parse/json.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// 1234567 -> "1,234,567"
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// Right-aligned in `width`, and a space before it however wide it grows (a column never runs into
// the one before it).
std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? " " + s : std::string(width - s.size(), ' ') + s;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string table_rows(const TraceStats& stats) {
  static const char* heads[] = {"step",    "traj",   "resp_mean", "resp_p50", "resp_p99", "resp_max",
                                "ctx_mean", "ctx_p99", "ctx_max",  "turns",    "t_max",    "trunc%",
                                "tool_s",  "tool%",  "p99/p50",   "max/p50"};
  // The usual widths, each widened to its longest cell, so that a column stays under its head.
  size_t widths[] = {6, 7, 10, 9, 9, 9, 9, 9, 9, 6, 6, 7, 8, 6, 8, 8};
  std::vector<std::array<std::string, 16>> rows;
  for (const StepStats& s : stats.steps) {
    rows.push_back({
        std::to_string(s.step),           std::to_string(s.trajectories),       fmt("%.0f", s.response_tokens.mean),
        std::to_string(s.response_tokens.p50), std::to_string(s.response_tokens.p99), std::to_string(s.response_tokens.max),
        fmt("%.0f", s.context_tokens.mean), std::to_string(s.context_tokens.p99), std::to_string(s.context_tokens.max),
        fmt("%.1f", s.turns.mean),        std::to_string(s.turns.max),          fmt("%.1f", 100 * s.truncated_fraction),
        fmt("%.1f", s.tool_ms.mean / 1e3), fmt("%.1f", 100 * s.tool_time_share), fmt("%.2f", s.tail_p99_over_p50),
        fmt("%.2f", s.tail_max_over_median)});
    for (size_t i = 0; i < 16; ++i) widths[i] = std::max(widths[i], rows.back()[i].size() + 1);
  }
  std::string out;
  for (size_t i = 0; i < 16; ++i) out += pad(heads[i], widths[i]);
  out += "\n";
  for (const auto& cells : rows) {
    for (size_t i = 0; i < 16; ++i) out += pad(cells[i], widths[i]);
    out += "\n";
  }
  return out;
}

std::string summary_lines(const TraceStats& stats) {
  const StepStats& a = stats.steps.front();
  const StepStats& b = stats.steps.back();
  std::string out;
  out += "growth: mean response " + grouped(std::llround(a.response_tokens.mean)) + " -> " +
         grouped(std::llround(b.response_tokens.mean)) + " tokens (x" +
         fmt("%.2f", a.response_tokens.mean > 0 ? b.response_tokens.mean / a.response_tokens.mean : 0) +
         "), mean context " + grouped(std::llround(a.context_tokens.mean)) + " -> " +
         grouped(std::llround(b.context_tokens.mean)) + ", mean turns " + fmt("%.1f", a.turns.mean) + " -> " +
         fmt("%.1f", b.turns.mean) + ", from step " + std::to_string(a.step) + " to step " + std::to_string(b.step) + "\n";
  std::vector<double> p99_p50, max_p50;
  int64_t longest = 0;
  for (const auto& s : stats.steps) {
    p99_p50.push_back(s.tail_p99_over_p50);
    max_p50.push_back(s.tail_max_over_median);
    longest = std::max(longest, s.context_tokens.max);
  }
  out += "tail: p99/p50 of response tokens " + fmt("%.2f", median_of(p99_p50)) + " (median over steps, max " +
         fmt("%.2f", *std::max_element(p99_p50.begin(), p99_p50.end())) + "), max/median up to " +
         fmt("%.2f", *std::max_element(max_p50.begin(), max_p50.end())) + "; longest context " + grouped(longest) +
         " tokens\n";
  out += "tool time share: " + fmt("%.1f", 100 * stats.tool_time_share) +
         "% of trajectory time (tool calls against generation at " + fmt("%g", stats.decode_tokens_per_s) +
         " tokens/s per sequence; prefill not counted)\n";
  for (const auto& t : stats.tools) {
    if (t.calls == 0) continue;
    out += "  tool " + t.name + ": " + grouped(static_cast<int64_t>(t.calls)) + " calls, mean " +
           fmt("%.3f", t.seconds / static_cast<double>(t.calls)) + " s, max " + fmt("%.3f", t.max_seconds) + " s\n";
  }
  return out;
}

parse::Value number(double v) { return parse::Value::make_number(std::round(v * 1000) / 1000); }

parse::Value distribution_json(const Distribution& d, bool with_min) {
  parse::Value o = parse::Value::make_object();
  o.set("mean", number(d.mean));
  if (with_min) o.set("min", number(static_cast<double>(d.min)));
  o.set("p50", number(static_cast<double>(d.p50)));
  o.set("p90", number(static_cast<double>(d.p90)));
  o.set("p99", number(static_cast<double>(d.p99)));
  o.set("max", number(static_cast<double>(d.max)));
  return o;
}

parse::Value step_json(const StepStats& s) {
  parse::Value o = parse::Value::make_object();
  o.set("step", number(s.step));
  o.set("trajectories", number(static_cast<double>(s.trajectories)));
  o.set("groups", number(static_cast<double>(s.groups)));
  o.set("prompt_tokens", distribution_json(s.prompt_tokens, true));
  o.set("response_tokens", distribution_json(s.response_tokens, true));
  o.set("context_tokens", distribution_json(s.context_tokens, true));
  o.set("generated_tokens", number(static_cast<double>(s.generated_tokens)));
  o.set("turns", distribution_json(s.turns, true));
  o.set("truncated_fraction", number(s.truncated_fraction));
  parse::Value tools = parse::Value::make_object();
  tools.set("calls_mean", number(s.tool_calls_mean));
  parse::Value secs = parse::Value::make_object();
  secs.set("mean", number(s.tool_ms.mean / 1e3));
  secs.set("p50", number(static_cast<double>(s.tool_ms.p50) / 1e3));
  secs.set("p99", number(static_cast<double>(s.tool_ms.p99) / 1e3));
  secs.set("max", number(static_cast<double>(s.tool_ms.max) / 1e3));
  tools.set("seconds_per_trajectory", std::move(secs));
  tools.set("time_share", number(s.tool_time_share));
  o.set("tools", std::move(tools));
  parse::Value tail = parse::Value::make_object();
  tail.set("p99_over_p50", number(s.tail_p99_over_p50));
  tail.set("max_over_median", number(s.tail_max_over_median));
  o.set("tail", std::move(tail));
  return o;
}

}  // namespace

std::string stats_table(const TraceStats& stats, const std::string& source) {
  std::string out = source + ": " + grouped(static_cast<int64_t>(stats.steps.size())) + " steps, " +
                    grouped(static_cast<int64_t>(stats.trajectories)) + " trajectories, " +
                    grouped(static_cast<int64_t>(stats.turns)) + " turns\n";
  if (!stats.header.description.empty()) out += stats.header.description + "\n";
  out += "provenance: " + stats.header.provenance_json.substr(0, 200) +
         (stats.header.provenance_json.size() > 200 ? "..." : "") + "\n\n";
  if (stats.steps.empty()) return out;
  out += table_rows(stats) + "\n" + summary_lines(stats);
  return out;
}

std::string stats_json(const TraceStats& stats) {
  std::string out = "[";
  for (size_t i = 0; i < stats.steps.size(); ++i) out += (i ? ",\n" : "\n") + to_json(step_json(stats.steps[i]));
  return out + "\n]\n";
}

}  // namespace arlsim::trace
