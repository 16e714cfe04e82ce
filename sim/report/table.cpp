#include "sim/report/table.h"

#include <cmath>
#include <cstdint>

#include "sim/report/summary.h"
#include "sim/report/text.h"

namespace arlsim::report {
namespace {

// The OOM line names this many of the largest contributors; the rest is in summary.json.
constexpr size_t kOomContributorsShown = 3;

// Right-aligned in `width` columns, and a space apart from what is before it however wide.
std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? " " + s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// "1:02:03" for a duration in seconds, so long runs read at a glance.
std::string clock_time(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e15) return "?";
  const auto total = static_cast<int64_t>(seconds + 0.5);
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  return std::to_string(h) + ":" + (m < 10 ? "0" : "") + std::to_string(m) + ":" + (s < 10 ? "0" : "") +
         std::to_string(s);
}

std::string step_time_lines(const RunStats& s) {
  const auto& t = s.step_time_s;
  std::string out = pad_right("step time (s)", 16);
  for (const char* h : {"mean", "p50", "p90", "p99", "max"}) out += pad_left(h, 12);
  out += "\n" + std::string(16, ' ');
  for (double v : {t.mean, t.p50, t.p90, t.p99, t.max}) out += pad_left(format_fixed(v, 3), 12);
  return out + "\n";
}

std::string stage_lines(const RunStats& s, size_t steps) {
  std::string out = pad_right("stage", 16) + pad_left("total (s)", 14) + pad_left("per step (s)", 14) +
                    pad_left("share", 10) + "\n";
  for (size_t i = 0; i < kStageCount; ++i) {
    if (s.stage_total_s[i] <= 0) continue;
    out += pad_right("  " + std::string(graph::kStages[i].name), 16) + pad_left(format_fixed(s.stage_total_s[i], 3), 14) +
           pad_left(format_fixed(s.stage_total_s[i] / static_cast<double>(steps), 3), 14) +
           pad_left(format_fixed(100 * s.stage_share[i], 1) + "%", 10) + "\n";
  }
  return out;
}

std::string cost_line(const rl::RunResult& r) {
  if (r.price_usd_per_gpu_hour <= 0) return "unknown (no price per GPU-hour)";
  return "$" + format_fixed(r.cost_usd, 2) + " at $" + format_fixed(r.price_usd_per_gpu_hour, 2) + " per GPU-hour";
}

// `text` in lines of at most `width` columns, each indented by `indent` spaces, broken at spaces.
std::string wrap_lines(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

std::string oom_lines(const rl::RunResult& r) {
  if (r.oom_events.empty()) return "none\n";
  const auto& e = r.oom_events.front();
  std::string out = std::to_string(r.oom_events.size()) + (r.oom_events.size() == 1 ? " event" : " events");
  out += "; first: step " + std::to_string(e.step) + ", stage " + e.stage + ", rank " + std::to_string(e.rank);
  out += ": needs " + format_fixed(e.needed_gib, 2) + " GiB of " + format_fixed(e.available_gib, 2) + " GiB" +
         (e.host ? " of host memory per node\n" : "\n");
  if (e.contributors_gib.empty()) return out;
  std::string parts;
  for (size_t i = 0; i < e.contributors_gib.size() && i < kOomContributorsShown; ++i)
    parts += (i > 0 ? ", " : "") + e.contributors_gib[i].first + " " + format_fixed(e.contributors_gib[i].second, 2);
  if (e.contributors_gib.size() > kOomContributorsShown) parts += ", ...";
  return out + std::string(16, ' ') + "(GiB: " + parts + ")\n";
}

}  // namespace

std::string run_table(const rl::RunResult& r) {
  const RunStats s = run_stats(r);
  std::string out = r.scenario + ": " + std::to_string(r.gpus) + " GPUs, " + std::to_string(r.steps.size()) +
                    (r.steps.size() == 1 ? " step" : " steps");
  if (r.stopped_on_oom && !r.oom_events.empty())
    out += "; STOPPED at step " + std::to_string(r.oom_events.front().step) + " (" + std::to_string(r.steps.size()) + " of " +
           std::to_string(r.steps_planned) + "): OOM in " + r.oom_events.front().stage +
           (r.oom_events.front().host ? " (host memory)" : "");
  out += "\n\n";
  if (!r.steps.empty()) out += step_time_lines(s) + "\n" + stage_lines(s, r.steps.size()) + "\n";
  if (r.stopped_on_oom) {
    // Not a whole run: its figures would read as one.
    out += pad_right("before the OOM", 16) + format_fixed(r.total_time_s, 3) + " s, " + format_fixed(r.gpu_hours, 3) +
           " GPU-hours over the steps before it; no throughput or cost is given for a run that stopped\n";
    out += pad_right("OOM", 16) + oom_lines(r);
    return out;
  }
  out += pad_right("throughput", 16) + format_fixed(s.tokens_per_s, 1) + " tokens/s\n";
  out += pad_right("total time", 16) + format_fixed(r.total_time_s, 3) + " s (" + clock_time(r.total_time_s) + ")\n";
  if (const TotalBand band = total_time_band(r, s); band.covered_share > 0 && r.total_time_s > 0)
    out += pad_right("", 16) + "-" + format_fixed(100 * (1 - band.low_s / r.total_time_s), 0) + "% to +" +
           format_fixed(100 * (band.high_s / r.total_time_s - 1), 0) + "% (validation bands of " +
           format_fixed(100 * band.covered_share, 0) + "% of stage time)\n";
  out += pad_right("GPU-hours", 16) + format_fixed(r.gpu_hours, 3) +
         (r.reward_gpus > 0 ? " (the reward model's " + std::to_string(r.reward_gpus) + (r.reward_gpus == 1 ? " GPU" : " GPUs") +
                                   " included)"
                                 : std::string()) + "\n";
  out += pad_right("cost", 16) + cost_line(r) + "\n";
  if (r.steps_total > 0) {
    // The figures above are the simulated steps'; the trace samples a longer run.
    out += pad_right("whole run", 16) + std::to_string(r.steps.size()) + " of " + std::to_string(r.steps_total) +
           " steps simulated; projected " + format_fixed(r.projected_total_time_s, 1) + " s (" +
           clock_time(r.projected_total_time_s) + "), " + format_fixed(r.projected_gpu_hours, 1) + " GPU-hours" +
           (r.price_usd_per_gpu_hour > 0 ? ", $" + format_fixed(r.projected_cost_usd, 2) : std::string()) + "\n";
  }
  for (const auto& p : pool_summaries(r)) {
    if (p.act_s.count == 0) continue;
    const double busy = p.provisioned_resource_s > 0 ? p.busy_resource_s / p.provisioned_resource_s : 0;
    out += pad_right("pool " + p.name, 16) + std::to_string(p.act_s.count) + " actions, ACT p50 " +
           format_fixed(p.act_s.p50, 2) + " s, p99 " + format_fixed(p.act_s.p99, 2) + " s, queue mean " +
           format_fixed(p.queue_s.mean, 2) + " s\n";
    out += pad_right("", 16) + format_fixed(p.provisioned_resource_s / 3600, 1) + " unit-hours provisioned (" +
           format_fixed(100 * busy, 0) + "% busy), peak " + std::to_string(p.peak_provisioned) + " units, " +
           std::to_string(p.cold_starts) + " cold starts" +
           (p.cost_usd > 0 ? ", $" + format_fixed(p.cost_usd, 2) : std::string()) + "\n";
  }
  out += pad_right("OOM", 16) + oom_lines(r);
  if (!r.warnings.empty())
    out += pad_right("warnings", 16) + std::to_string(r.warnings.size()) + (r.warnings.size() == 1 ? " step" : " steps") +
           " thrashing the KV cache; first: step " + std::to_string(r.warnings.front().step) + "\n" +
           wrap_lines(r.warnings.front().message, 16, 100);
  return out;
}

}  // namespace arlsim::report
