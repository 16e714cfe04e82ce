#include "sim/report/html_report.h"

#include <algorithm>
#include <cmath>

#include "sim/report/summary.h"
#include "sim/report/svg.h"
#include "sim/report/text.h"

namespace arlsim::report {

namespace {

const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1120px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "th{background:#f2f2f2}.l{text-align:left}.kpi{display:inline-block;margin:0 28px 12px 0}"
    ".kpi b{display:block;font-size:20px}.warn{color:#b00020}.note{color:#555;font-size:13px}svg{display:block}";

std::string page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>" + xml_escape(title) +
         "</title><style>" + kStyle + "</style></head><body>\n<h1>" + xml_escape(title) + "</h1>\n";
}

std::string page_end() { return "<p class=\"note\">Written by arlsim. Charts are inline SVG; hover a mark for its value.</p>\n</body></html>\n"; }

std::string kpi(const std::string& name, const std::string& value) {
  return "<div class=\"kpi\">" + xml_escape(name) + "<b>" + xml_escape(value) + "</b></div>";
}

std::string hours(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 120) return short_number(seconds) + " s";
  if (seconds < 7200) return short_number(seconds / 60) + " min";
  return short_number(seconds / 3600) + " h";
}

std::string usd(double v) { return "$" + format_fixed(v, 2); }

std::string cell(const std::string& text, bool left = false) {
  return std::string(left ? "<td class=\"l\">" : "<td>") + xml_escape(text) + "</td>";
}
std::string head(const std::vector<std::string>& names) {
  std::string s = "<tr>";
  for (size_t i = 0; i < names.size(); ++i) s += std::string(i == 0 ? "<th class=\"l\">" : "<th>") + xml_escape(names[i]) + "</th>";
  return s + "</tr>\n";
}

// Category ticks for n items labelled by `label(i)`, at most about 16 of them.
template <typename F>
std::vector<std::pair<double, std::string>> every_kth(size_t n, F label) {
  std::vector<std::pair<double, std::string>> t;
  const size_t k = std::max<size_t>(1, (n + 15) / 16);
  for (size_t i = 0; i < n; i += k) t.emplace_back(static_cast<double>(i), label(i));
  return t;
}

std::string step_time_chart(const rl::RunResult& r) {
  const size_t n = r.steps.size();
  SvgChart c("step-times", "Step time by stage", 1060, 320);
  double top = 0;
  for (const auto& s : r.steps) {
    double sum = 0;
    for (size_t k = 0; k < kStageCount; ++k) sum += stage_seconds(s.stages, k);
    top = std::max({top, sum, s.time_s});
  }
  c.set_x_exact(-0.6, static_cast<double>(n) - 0.4, "step");
  c.set_y(0, top * 1.05, "seconds");
  c.set_x_categories(every_kth(n, [&](size_t i) { return std::to_string(r.steps[i].step); }));
  for (size_t i = 0; i < n; ++i) {
    const auto& s = r.steps[i];
    double y = 0;
    const double w = n > 200 ? 0.5 : 0.4;
    for (size_t k = 0; k < kStageCount; ++k) {
      const double v = stage_seconds(s.stages, k);
      if (v <= 0) continue;
      c.bar(static_cast<double>(i) - w, static_cast<double>(i) + w, y, y + v, stage_color(k),
            "step " + std::to_string(s.step) + " " + std::string(graph::kStages[k].name) + ": " + short_number(v) + " s");
      y += v;
    }
    if (s.oom) c.cross(static_cast<double>(i), y, "#b00020", "OOM");
  }
  std::vector<std::pair<double, double>> wall;
  for (size_t i = 0; i < n; ++i) wall.emplace_back(static_cast<double>(i), r.steps[i].time_s);
  c.line(wall, "#222", 1.5);
  std::vector<std::pair<const char*, std::string>> legend;
  for (size_t k = 0; k < kStageCount; ++k) {
    double any = 0;
    for (const auto& s : r.steps) any += stage_seconds(s.stages, k);
    if (any > 0) legend.emplace_back(stage_color(k), std::string(graph::kStages[k].name));
  }
  legend.emplace_back("#222", "step wall time");
  c.legend(legend);
  return c.svg();
}

std::string context_chart(const rl::RunResult& r) {
  SvgChart c("contexts", "Context length per step: median, tail and longest", 1060, 300);
  double lo = 1e300, hi = -1e300, top = 0;
  for (const auto& s : r.steps) {
    lo = std::min(lo, static_cast<double>(s.step));
    hi = std::max(hi, static_cast<double>(s.step));
    top = std::max(top, s.contexts.max);
  }
  if (!(hi > lo)) lo -= 1, hi += 1;  // one step: centred
  c.set_x(lo, hi, "step");
  c.set_y(0, top * 1.05, "tokens");
  std::vector<std::pair<double, double>> p50, p90, p99, mx;
  for (const auto& s : r.steps) {
    const auto x = static_cast<double>(s.step);
    p50.emplace_back(x, s.contexts.p50);
    p90.emplace_back(x, s.contexts.p90);
    p99.emplace_back(x, s.contexts.p99);
    mx.emplace_back(x, s.contexts.max);
  }
  c.area(p99, p50, series_color(0), 0.15);
  c.line(p50, series_color(0));
  c.line(p90, series_color(1));
  c.line(p99, series_color(3));
  c.line(mx, "#555", 1.2, true);
  if (r.steps.size() == 1) {
    const auto& s = r.steps.front();
    for (auto [v, k] : {std::pair{s.contexts.p50, 0}, {s.contexts.p90, 1}, {s.contexts.p99, 3}})
      c.point(static_cast<double>(s.step), v, series_color(static_cast<size_t>(k)), 4);
  }
  c.legend({{series_color(0), "p50"}, {series_color(1), "p90"}, {series_color(3), "p99"}, {"#555", "longest"}});
  return c.svg();
}

std::string memory_chart(const rl::RunResult& r) {
  SvgChart c("memory", "Memory per GPU by stage (the largest rank), against the GPU's", 1060, 300);
  double lo = 1e300, hi = -1e300, top = r.gpu_memory_gib;
  std::vector<std::string> stages;
  for (const auto& s : r.steps) {
    lo = std::min(lo, static_cast<double>(s.step));
    hi = std::max(hi, static_cast<double>(s.step));
    for (const auto& [name, gib] : s.memory_peak_gib) {
      top = std::max(top, gib);
      if (std::find(stages.begin(), stages.end(), name) == stages.end()) stages.push_back(name);
    }
  }
  for (const auto& o : r.oom_events) top = std::max(top, o.needed_gib);
  if (!(hi > lo)) lo -= 1, hi += 1;
  c.set_x(lo, hi, "step");
  c.set_y(0, top * 1.08, "GiB");
  std::vector<std::pair<const char*, std::string>> legend;
  for (size_t i = 0; i < stages.size(); ++i) {
    std::vector<std::pair<double, double>> line;
    for (const auto& s : r.steps)
      for (const auto& [name, gib] : s.memory_peak_gib)
        if (name == stages[i]) line.emplace_back(static_cast<double>(s.step), gib);
    c.line(line, series_color(i));
    for (const auto& [x, y] : line) c.point(x, y, series_color(i), 2.5, stages[i] + ": " + short_number(y) + " GiB");
    legend.emplace_back(series_color(i), stages[i]);
  }
  if (r.gpu_memory_gib > 0) c.hline(r.gpu_memory_gib, "#b00020", "GPU memory " + short_number(r.gpu_memory_gib) + " GiB");
  for (const auto& o : r.oom_events)
    c.cross(static_cast<double>(o.step), o.needed_gib, "#b00020", "OOM in " + o.stage + (o.host ? " (host memory)" : ""));
  c.legend(legend);
  return c.svg();
}

std::string pools_section(const rl::RunResult& r) {
  const auto pools = pool_summaries(r);
  if (pools.empty()) return "<p>No tool pools in this run.</p>\n";
  std::string out;
  for (size_t i = 0; i < pools.size(); ++i) {
    const auto& p = pools[i];
    SvgChart c("pool-" + std::to_string(i), "Tool pool " + p.name + ": queueing and action completion time (ACT)", 700, 260);
    const std::vector<std::pair<std::string, double>> bars = {{"queue p50", p.queue_s.p50}, {"queue p90", p.queue_s.p90},
                                                              {"queue p99", p.queue_s.p99}, {"ACT p50", p.act_s.p50},
                                                              {"ACT p90", p.act_s.p90},     {"ACT p99", p.act_s.p99}};
    double top = 0;
    for (const auto& b : bars) top = std::max(top, b.second);
    c.set_x_exact(-0.6, 5.6, "");
    c.set_y(0, top * 1.08, "seconds");
    std::vector<std::pair<double, std::string>> ticks;
    for (size_t k = 0; k < bars.size(); ++k) {
      c.bar(static_cast<double>(k) - 0.35, static_cast<double>(k) + 0.35, 0, bars[k].second, series_color(k < 3 ? 1 : 0),
            bars[k].first + ": " + short_number(bars[k].second) + " s");
      ticks.emplace_back(static_cast<double>(k), bars[k].first);
    }
    c.set_x_categories(ticks);
    out += c.svg();
  }
  out += "<table>" + head({"pool", "actions", "busy / provisioned", "peak in use", "peak provisioned", "cold starts", "cost"});
  for (const auto& p : pools) {
    const double util = p.provisioned_resource_s > 0 ? p.busy_resource_s / p.provisioned_resource_s : 0;
    out += "<tr>" + cell(p.name, true) + cell(std::to_string(p.act_s.count)) + cell(format_fixed(100 * util, 1) + "%") +
           cell(std::to_string(p.peak_in_use)) + cell(std::to_string(p.peak_provisioned)) +
           cell(std::to_string(p.cold_starts)) + cell(p.cost_usd > 0 ? usd(p.cost_usd) : "-") + "</tr>\n";
  }
  return out + "</table>\n";
}

std::string stages_table(const rl::RunResult& r, const RunStats& st) {
  std::string out = "<table>" + head({"stage", "total", "share of stage time", "mean per step"});
  const double n = std::max<double>(1, static_cast<double>(r.steps.size()));
  for (size_t k = 0; k < kStageCount; ++k) {
    if (st.stage_total_s[k] <= 0) continue;
    out += "<tr><td class=\"l\"><span style=\"color:" + std::string(stage_color(k)) + "\">&#9632;</span> " +
           xml_escape(graph::kStages[k].name) + "</td>" + cell(hours(st.stage_total_s[k])) +
           cell(format_fixed(100 * st.stage_share[k], 1) + "%") + cell(short_number(st.stage_total_s[k] / n) + " s") + "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string run_report_html(const rl::RunResult& r) {
  const RunStats st = run_stats(r);
  std::string h = page_start("arlsim simulate: " + r.scenario);
  h += "<p>" + std::to_string(r.gpus) + " GPUs; " + std::to_string(r.steps.size()) + " steps simulated" +
       (r.steps_total > 0 ? " of a " + std::to_string(r.steps_total) + "-step run" : "") + ".</p>\n";
  if (r.stopped_on_oom && !r.oom_events.empty()) {
    const auto& o = r.oom_events.front();
    h += "<p class=\"warn\">Stopped at step " + std::to_string(o.step) + ": out of " + (o.host ? "host " : "") +
         "memory in " + xml_escape(o.stage) + " (" +
         short_number(o.needed_gib) + " GiB needed, " + short_number(o.available_gib) +
         " GiB available). The figures below are the steps before it, not a whole run.</p>\n";
  }
  h += "<div>" + kpi("run time", hours(r.total_time_s)) + kpi("step time, mean", short_number(st.step_time_s.mean) + " s") +
       kpi("step time, p90", short_number(st.step_time_s.p90) + " s") +
       kpi("tokens / s", r.stopped_on_oom ? "-" : short_number(st.tokens_per_s)) +
       kpi("GPU-hours", short_number(r.gpu_hours)) +
       kpi("cost", r.stopped_on_oom ? "-" : r.cost_usd > 0 ? usd(r.cost_usd) : "no price");
  if (r.steps_total > 0)
    h += kpi("whole run, projected", hours(r.projected_total_time_s) + ", " + short_number(r.projected_gpu_hours) + " GPU-h" +
                                          (r.projected_cost_usd > 0 ? ", " + usd(r.projected_cost_usd) : ""));
  h += "</div>\n";
  h += "<h2>Step time</h2>\n" + step_time_chart(r) + stages_table(r, st);
  h += "<h2>Context growth</h2>\n" + context_chart(r);
  h += "<h2>Memory</h2>\n" + memory_chart(r);
  if (!r.oom_events.empty()) {
    h += "<table>" + head({"step", "stage", "rank", "needed GiB", "available GiB", "largest part"});
    for (const auto& o : r.oom_events)
      h += "<tr>" + cell(std::to_string(o.step), true) + cell(o.stage + (o.host ? " (host memory)" : "")) + cell(std::to_string(o.rank)) +
           cell(short_number(o.needed_gib)) + cell(short_number(o.available_gib)) +
           cell(o.contributors_gib.empty() ? "-" : o.contributors_gib.front().first + " " +
                                                        short_number(o.contributors_gib.front().second) + " GiB") +
           "</tr>\n";
    h += "</table>\n";
  }
  h += "<h2>Tool pools</h2>\n" + pools_section(r);
  if (!r.warnings.empty()) {
    h += "<h2>Warnings</h2>\n<ul>";
    for (const auto& w : r.warnings) h += "<li>step " + std::to_string(w.step) + ": " + xml_escape(w.message) + "</li>";
    h += "</ul>\n";
  }
  return h + page_end();
}

std::string whatif_report_html(const std::string& scenario, const std::vector<ReportVariant>& variants) {
  std::string h = page_start("arlsim whatif: " + scenario);
  std::vector<RunStats> stats;
  for (const auto& v : variants) stats.push_back(run_stats(*v.result));
  SvgChart c("variants", "Mean step time by stage, per variant", 1060, 340);
  double top = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const double n = std::max<double>(1, static_cast<double>(variants[i].result->steps.size()));
    double sum = 0;
    for (size_t k = 0; k < kStageCount; ++k) sum += stats[i].stage_total_s[k] / n;
    top = std::max({top, sum, stats[i].step_time_s.mean});
  }
  const auto letter = [](size_t i) { return std::string(1, static_cast<char>('A' + i % 26)) + (i >= 26 ? std::to_string(i / 26) : ""); };
  c.set_x_exact(-0.6, static_cast<double>(variants.size()) - 0.4, "variant");
  c.set_y(0, top * 1.08, "seconds");
  c.set_x_categories(every_kth(variants.size(), letter));
  std::vector<std::pair<double, double>> mean;
  for (size_t i = 0; i < variants.size(); ++i) {
    const double n = std::max<double>(1, static_cast<double>(variants[i].result->steps.size()));
    double y = 0;
    for (size_t k = 0; k < kStageCount; ++k) {
      const double v = stats[i].stage_total_s[k] / n;
      if (v <= 0) continue;
      c.bar(static_cast<double>(i) - 0.35, static_cast<double>(i) + 0.35, y, y + v, stage_color(k),
            letter(i) + " " + std::string(graph::kStages[k].name) + ": " + short_number(v) + " s per step");
      y += v;
    }
    if (!variants[i].result->stopped_on_oom)
      c.point(static_cast<double>(i), stats[i].step_time_s.mean, "#222", 4,
              letter(i) + ": step " + short_number(stats[i].step_time_s.mean) + " s");
    if (!variants[i].result->oom_events.empty())
      c.cross(static_cast<double>(i), y, "#b00020", variants[i].result->stopped_on_oom ? "stopped: OOM" : "OOM");
  }
  std::vector<std::pair<const char*, std::string>> legend;
  for (size_t k = 0; k < kStageCount; ++k) legend.emplace_back(stage_color(k), std::string(graph::kStages[k].name));
  legend.emplace_back("#222", "mean step wall time");
  c.legend(legend);
  h += "<h2>Variants</h2>\n" + c.svg();
  h += "<table>" + head({"variant", "overrides", "step mean s", "step p90 s", "tokens/s", "run time", "GPU-hours", "cost",
                         "vs A", "OOMs"});
  // A variant an OOM stopped has no figures to compare: "-" for them, and against it.
  const bool a_whole = !variants[0].result->stopped_on_oom && stats[0].step_time_s.mean > 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const auto& r = *variants[i].result;
    const bool whole = !r.stopped_on_oom;
    const double rel = a_whole ? stats[i].step_time_s.mean / stats[0].step_time_s.mean - 1 : 0;
    const auto fig = [&](const std::string& v) { return cell(whole ? v : "-"); };
    h += "<tr>" + cell(letter(i), true) + cell(variants[i].label, true) + fig(short_number(stats[i].step_time_s.mean)) +
         fig(short_number(stats[i].step_time_s.p90)) + fig(short_number(stats[i].tokens_per_s)) + fig(hours(r.total_time_s)) +
         fig(short_number(r.gpu_hours)) + fig(r.cost_usd > 0 ? usd(r.cost_usd) : "-") +
         cell(whole && a_whole ? (rel >= 0 ? "+" : "") + format_fixed(100 * rel, 1) + "%" : "-") +
         cell(std::to_string(r.oom_events.size()) + (whole ? "" : " (stopped at step " + std::to_string(r.oom_events.front().step) + ")")) +
         "</tr>\n";
  }
  h += "</table>\n";
  return h + page_end();
}

std::string capacity_report_html(const CapacityReport& cr) {
  std::string h = page_start("arlsim capacity: " + cr.scenario);
  bool priced = false;
  for (const auto& p : cr.points) priced = priced || (p.feasible && p.cost_usd);
  const auto y_of = [&](const CapacityPoint& p) { return priced ? p.cost_usd.value_or(NAN) : p.gpu_hours; };
  double x_hi = 0, y_hi = 0;
  for (const auto& p : cr.points)
    if (p.feasible) {
      x_hi = std::max(x_hi, p.total_time_s / 3600);
      if (std::isfinite(y_of(p))) y_hi = std::max(y_hi, y_of(p));
    }
  // A deadline or budget far beyond every configuration would squeeze them into a corner: the
  // plot shows them only within three times the configurations' range, and says so otherwise.
  const bool show_deadline = cr.deadline_s && (x_hi <= 0 || *cr.deadline_s / 3600 <= 3 * x_hi);
  const bool show_budget = cr.budget_usd && priced && (y_hi <= 0 || *cr.budget_usd <= 3 * y_hi);
  if (show_deadline) x_hi = std::max(x_hi, *cr.deadline_s / 3600);
  if (show_budget) y_hi = std::max(y_hi, *cr.budget_usd);
  SvgChart c("pareto", std::string("Time and ") + (priced ? "cost" : "GPU-hours") + " of " + std::to_string(cr.steps) +
                           " steps per configuration",
             1060, 420);
  c.set_x(0, x_hi * 1.05, "hours");
  c.set_y(0, y_hi * 1.08, priced ? "USD" : "GPU-hours");
  std::vector<std::pair<double, double>> frontier;
  for (const auto& p : cr.points) {
    if (!p.feasible) continue;
    const double x = p.total_time_s / 3600, y = y_of(p);
    c.point(x, y, p.pareto ? series_color(0) : "#aaa", p.pareto ? 4.5 : 3,
            p.label + ": " + hours(p.total_time_s) + (p.cost_usd ? ", " + usd(*p.cost_usd) : "") + ", " +
                short_number(p.gpu_hours) + " GPU-h");
    if (p.pareto) frontier.emplace_back(x, y);
    if (p.simulated_total_s) {  // the simulator's figure, joined to the analytic one
      const double scale = *p.simulated_total_s / p.total_time_s;
      const double sx = *p.simulated_total_s / 3600, sy = priced ? y * scale : p.gpu_hours * scale;
      c.line({{x, y}, {sx, sy}}, p.beyond_tolerance ? "#b00020" : "#555", 1);
      c.ring(sx, sy, p.beyond_tolerance ? "#b00020" : "#555", 5,
             p.label + ", simulated: " + hours(*p.simulated_total_s) + (p.beyond_tolerance ? " (beyond the tolerance)" : ""));
    }
  }
  std::sort(frontier.begin(), frontier.end());
  c.line(frontier, series_color(0), 1.5);
  if (show_deadline) c.vline(*cr.deadline_s / 3600, "#b00020", "deadline " + hours(*cr.deadline_s));
  if (show_budget) c.hline(*cr.budget_usd, "#2ca02c", "budget " + usd(*cr.budget_usd));
  const auto mark = [&](const std::optional<size_t>& i, const std::string& what) {
    if (!i || *i >= cr.points.size()) return;
    const auto& p = cr.points[*i];
    c.point(p.total_time_s / 3600, y_of(p), "#222", 6);
    c.label(p.total_time_s / 3600, y_of(p), what + ": " + p.label);
  };
  mark(cr.cheapest_in_deadline, "cheapest within the deadline");
  mark(cr.fastest_in_budget, "fastest within the budget");
  c.legend({{series_color(0), "Pareto frontier (analytic)"}, {"#aaa", "other feasible configurations"},
            {"#555", "simulated (ring), joined to the analytic point"}, {"#b00020", "simulated beyond the tolerance"}});
  h += "<h2>Configurations</h2>\n" + c.svg();
  if (cr.deadline_s && !show_deadline)
    h += "<p class=\"note\">The deadline, " + hours(*cr.deadline_s) + ", lies beyond the plotted range.</p>\n";
  if (cr.budget_usd && priced && !show_budget)
    h += "<p class=\"note\">The budget, " + usd(*cr.budget_usd) + ", lies beyond the plotted range.</p>\n";
  if (cr.budget_usd && !priced) h += "<p class=\"note\">No configuration has a price: the budget cannot be drawn.</p>\n";
  h += "<table>" + head({"configuration", "GPUs", "run time", "simulated", "GPU-hours", "cost", "Pareto", "layouts"});
  for (const auto& p : cr.points) {
    if (!p.feasible) {
      h += "<tr>" + cell(p.label, true) + cell(std::to_string(p.gpus)) + "<td class=\"l warn\" colspan=\"6\">" +
           xml_escape(p.reason) + "</td></tr>\n";
      continue;
    }
    const std::string sim = !p.confirmed ? "" : p.simulated_total_s ? hours(*p.simulated_total_s) : "OOM";
    h += "<tr>" + cell(p.label, true) + cell(std::to_string(p.gpus)) + cell(hours(p.total_time_s)) +
         cell(sim + (p.beyond_tolerance ? " !" : "")) + cell(short_number(p.gpu_hours)) + cell(p.cost_usd ? usd(*p.cost_usd) : "-") + cell(p.pareto ? "yes" : "") +
         cell(p.layouts, true) + "</tr>\n";
  }
  h += "</table>\n";
  return h + page_end();
}

}  // namespace arlsim::report
