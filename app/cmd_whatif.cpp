// `arlsim whatif SCENARIO --vary /ptr=v1,v2 ...`: the scenario simulated under each combination of
// variations (or, with --zip, the i-th values together), side by side.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/memory_limit.h"
#include "app/run_codec.h"
#include "app/task_farm.h"
#include "app/options.h"
#include "planner/analytic_run.h"
#include "planner/features.h"
#include "sim/report/html_report.h"
#include "sim/report/outputs.h"
#include "sim/report/summary.h"
#include "sim/report/text.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

struct Variation {
  std::string pointer;
  std::vector<std::string> values;
};

// "/ptr=a,b,{"x": 1, "y": 2}": values split at commas outside brackets, braces and quotes.
bool parse_variation(const std::string& text, Variation& v, std::string& error) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    error = "--vary expects /json/pointer=value1,value2,..., got \"" + text + "\"";
    return false;
  }
  v.pointer = text.substr(0, eq);
  std::string current;
  int depth = 0;
  bool quoted = false;
  for (size_t i = eq + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    if (!quoted && (c == '{' || c == '[')) ++depth;
    if (!quoted && (c == '}' || c == ']')) --depth;
    if (c == ',' && depth == 0 && !quoted) {
      v.values.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  v.values.push_back(current);
  for (const auto& value : v.values) {
    if (value.empty()) {
      error = "--vary " + v.pointer + ": an empty value";
      return false;
    }
  }
  return true;
}

// The variants: each a list of "/ptr=value" overrides.
std::vector<std::vector<std::string>> variants(const std::vector<Variation>& vary, bool zip) {
  std::vector<std::vector<std::string>> out{{}};
  if (zip) {
    out.assign(vary.front().values.size(), {});
    for (const auto& v : vary)
      for (size_t i = 0; i < v.values.size(); ++i) out[i].push_back(v.pointer + "=" + v.values[i]);
    return out;
  }
  for (const auto& v : vary) {
    std::vector<std::vector<std::string>> next;
    for (const auto& partial : out)
      for (const auto& value : v.values) {
        auto extended = partial;
        extended.push_back(v.pointer + "=" + value);
        next.push_back(std::move(extended));
      }
    out = std::move(next);
  }
  return out;
}

struct Column {
  std::vector<std::string> overrides;
  rl::RunResult result;
  report::RunStats stats;
};

std::string cell(double v, int decimals) { return report::format_fixed(v, decimals); }

// The planner's analytic run of a scenario as a run result: per-step stage times and spans, totals;
// a layout that does not fit gives one OOM event and no steps.
rl::RunResult analytic_result(const input::ScenarioSpec& s, const trace::Trace& t, const rl::RunOptions& o) {
  planner::FeatureOptions fo;
  fo.max_context = s.workload.max_context_tokens;
  fo.first_step = o.first_step;
  fo.last_step = o.last_step;
  fo.max_steps = s.steps;
  const auto f = planner::step_features(t, fo);
  rl::RunResult r;
  r.scenario = s.name;
  r.gpus = s.cluster.total_gpus();
  r.reward_gpus = rl::reward_model_gpus(s);
  r.price_usd_per_gpu_hour = s.cluster.price_usd_per_gpu_hour;
  r.gpu_profile = s.cluster.gpu.name;  // its validation bands, as a simulated run's
  const auto run = planner::analytic_run(s, f);
  if (!run) {
    // No figure of the run stands: it is withheld as a stopped run's are.
    rl::OomEvent oom;
    oom.stage = "analytic: a layout does not fit a step";
    if (!f.empty()) oom.step = f.front().step;
    r.oom_events.push_back(oom);
    r.stopped_on_oom = true;
    return r;
  }
  double previous_end = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    rl::StepRecord rec;
    rec.step = f[i].step;
    rec.start_s = run->spans[i].start_s;
    rec.end_s = run->spans[i].end_s;
    rec.time_s = run->spans[i].end_s - previous_end;
    rec.stages = run->stages[i];
    rec.tokens = f[i].total_tokens;
    rec.tokens_per_s = rec.time_s > 0 ? static_cast<double>(rec.tokens) / rec.time_s : 0;
    previous_end = run->spans[i].end_s;
    r.steps.push_back(rec);
  }
  r.total_time_s = run->total_s;
  r.gpu_hours = static_cast<double>(r.gpus + r.reward_gpus) * r.total_time_s / 3600.0;
  r.cost_usd = r.gpu_hours * r.price_usd_per_gpu_hour;
  return r;
}

void print_table(const std::vector<Column>& cols) {
  const int width = 16;
  auto row = [&](const std::string& name, const std::vector<std::string>& values) {
    std::printf("%-24s", name.c_str());
    for (const auto& v : values) std::printf(" %*s", width - 1, v.c_str());  // a space apart, however wide
    std::printf("\n");
  };
  std::vector<std::string> header;
  for (size_t i = 0; i < cols.size(); ++i) header.push_back("#" + std::to_string(i + 1));
  row("variant", header);
  for (size_t i = 0; i < cols.size(); ++i) {
    std::string label;
    for (const auto& o : cols[i].overrides) label += (label.empty() ? "" : "  ") + o;
    std::printf("  #%zu %s\n", i + 1, label.c_str());
  }
  // A variant an OOM stopped ran only part of the run: its figures are not the run's, and are
  // withheld as simulate withholds them ("-"); the OOM row says where it stopped.
  auto numbers = [&](auto f, int decimals) {
    std::vector<std::string> v;
    for (const auto& c : cols) v.push_back(c.result.stopped_on_oom ? "-" : cell(f(c), decimals));
    return v;
  };
  row("step time mean (s)", numbers([](const Column& c) { return c.stats.step_time_s.mean; }, 3));
  row("step time p90 (s)", numbers([](const Column& c) { return c.stats.step_time_s.p90; }, 3));
  for (size_t s = 0; s < report::kStageCount; ++s) {
    bool any = false;
    for (const auto& c : cols) any = any || c.stats.stage_total_s[s] > 0;
    if (!any) continue;
    row("  " + std::string(graph::kStages[s].name) + " (s/step)", numbers([&](const Column& c) {
          return c.result.steps.empty() ? 0.0 : c.stats.stage_total_s[s] / static_cast<double>(c.result.steps.size());
        }, 3));
  }
  row("tokens/s", numbers([](const Column& c) { return c.stats.tokens_per_s; }, 1));
  row("total time (s)", numbers([](const Column& c) { return c.result.total_time_s; }, 1));
  row("GPU-hours", numbers([](const Column& c) { return c.result.gpu_hours; }, 3));
  std::vector<std::string> cost, ooms, ratio;
  for (const auto& c : cols) {
    cost.push_back(c.result.stopped_on_oom                 ? "-"
                   : c.result.price_usd_per_gpu_hour > 0 ? cell(c.result.cost_usd, 2)
                                                          : "unknown");
    // A variant an OOM stopped is not a whole run: say where it stopped.
    ooms.push_back(c.result.stopped_on_oom && !c.result.oom_events.empty()
                       ? "stopped, step " + std::to_string(c.result.oom_events.front().step)
                       : std::to_string(c.result.oom_events.size()));
    const double base = cols.front().result.stopped_on_oom ? 0 : cols.front().stats.step_time_s.mean;
    ratio.push_back(base > 0 && !c.result.stopped_on_oom ? cell(c.stats.step_time_s.mean / base, 3) : "-");
  }
  row("cost (USD)", cost);
  row("OOM events", ooms);
  // Each tool pool's actions (ARL-Tangram's figures): completion time and the resources held.
  std::vector<std::string> pool_names;
  for (const auto& c : cols)
    for (const auto& p : c.result.pools)
      if (std::find(pool_names.begin(), pool_names.end(), p.name) == pool_names.end()) pool_names.push_back(p.name);
  for (const auto& name : pool_names) {
    std::vector<std::string> act, held;
    for (const auto& c : cols) {
      if (c.result.stopped_on_oom) {  // withheld with the rest of a stopped variant's figures
        act.push_back("-");
        held.push_back("-");
        continue;
      }
      const auto pools = report::pool_summaries(c.result);
      const auto it = std::find_if(pools.begin(), pools.end(), [&](const auto& p) { return p.name == name; });
      act.push_back(it == pools.end() || it->act_s.count == 0 ? "-" : cell(it->act_s.p99, 2));
      held.push_back(it == pools.end() ? "-" : cell(it->provisioned_resource_s / 3600, 1));
    }
    row("pool " + name + " ACT p99 (s)", act);
    row("pool " + name + " unit-hours", held);
  }
  row("step time / #1", ratio);
}

}  // namespace

int run_whatif(const Args& args) {
  std::string scenario, steps, out_dir, max_memory;
  std::vector<std::string> vary_text, overrides;
  std::string trace_path;
  po::options_description opts("arlsim whatif SCENARIO --vary /json/pointer=v1,v2 [--vary ...] [options]\n\n"
                               "Simulates the scenario under every combination of the variations (or, with --zip,\n"
                               "the i-th values of every variation together) and prints them side by side, with\n"
                               "each variant's mean step time relative to the first.\n\nOptions");
  opts.add_options()("help,h", "this text")("vary", po::value(&vary_text)->composing(),
                                            "a field and its values: /json/pointer=v1,v2,... (repeatable)")(
      "zip", "pair the variations' values instead of crossing them")(
      "set", po::value(&overrides)->composing(), "override a field in every variant: /json/pointer=value")(
      "steps", po::value(&steps), "trace steps to run: A:B, A: or A")("trace", po::value(&trace_path), "trace file")(
      "analytic", "the planner's analytic run of each variant's layouts instead of the simulator: fast, for wide "
                  "sweeps; preparation and training are reported together as train")(
      "json", "print each variant's summary.json as a JSON array")(
      "out", po::value(&out_dir), "write report.html (the variants side by side) and variants.json (as --json) to this folder")(
      "max-memory", po::value(&max_memory),
      "refuse a variant whose estimated peak memory is above this size (default: the memory available)");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); status >= 0)
    return status;
  if (scenario.empty() || vary_text.empty()) {
    std::cerr << "arlsim whatif: give a scenario and at least one --vary\n" << opts;
    return kExitBadInput;
  }
  std::vector<Variation> vary;
  for (const auto& t : vary_text) {
    Variation v;
    std::string error;
    if (!parse_variation(t, v, error)) {
      std::cerr << "arlsim whatif: " << error << "\n";
      return kExitBadInput;
    }
    for (const auto& other : vary)
      if (other.pointer == v.pointer) {
        std::cerr << "arlsim whatif: --vary " << v.pointer << " is given twice: give its values in one --vary\n";
        return kExitBadInput;
      }
    vary.push_back(v);
  }
  for (const auto& o : overrides)
    for (const auto& v : vary)
      if (o.substr(0, o.find('=')) == v.pointer) {
        std::cerr << "arlsim whatif: " << v.pointer << " is both set (--set) and varied (--vary): the variants would set it again\n";
        return kExitBadInput;
      }
  const bool zip = vm.count("zip") > 0;
  if (zip)
    for (const auto& v : vary)
      if (v.values.size() != vary.front().values.size()) {
        std::cerr << "arlsim whatif: --zip needs as many values in every --vary (" << vary.front().pointer << " has "
                  << vary.front().values.size() << ", " << v.pointer << " has " << v.values.size() << ")\n";
        return kExitBadInput;
      }
  if (std::string error; !out_dir.empty() && !report::prepare_output_files(out_dir, {report::kReportFile, "variants.json"}, error)) {
    std::cerr << "arlsim whatif: --out: " << error << "\n";
    return kExitBadInput;
  }
  std::optional<double> limit;
  if (std::string error; !memory_limit(max_memory, limit, error)) {
    std::cerr << "arlsim whatif: " << error << "\n";
    return kExitBadInput;
  }
  rl::RunOptions o;
  o.timeline = false;
  if (!steps.empty() && !parse_step_range(steps, o.first_step, o.last_step)) {
    std::cerr << "arlsim whatif: --steps expects A:B, A: or A (step numbers), got \"" << steps << "\"\n";
    return kExitBadInput;
  }
  std::vector<Column> cols;
  const auto all_variants = variants(vary, zip);
  // One variant: its run, packed, or why it cannot run ("!" then the message).
  const auto label_of = [](const std::vector<std::string>& variant) {
    std::string label;
    for (const auto& v : variant) label += " " + v;
    return label;
  };
  const auto run_variant = [&](const std::vector<std::string>& variant, rl::RunResult& result) -> std::string {
    auto all = overrides;
    all.insert(all.end(), variant.begin(), variant.end());
    input::Diagnostics diag;
    auto s = input::load_scenario(scenario, all, diag);
    if (s) {
      if (!trace_path.empty()) s->generated_trace.reset();  // the file replaces the generated trace
      // A generated trace too large for memory is refused before it is drawn (the analytic run too).
      if (const std::string problem = expected_memory_problem(*s, &o, limit, !max_memory.empty()); !problem.empty())
        return "arlsim whatif: variant" + label_of(variant) + ": " + problem + "\n";
      auto t = rl::load_scenario_trace(*s, trace_path, diag, &o);
      // Variants run one after another: each must fit on its own (the analytic run holds less).
      if (t && !vm.count("analytic"))
        if (const std::string problem = run_memory_problem(rl::run_memory(*s, *t), limit, !max_memory.empty());
            !problem.empty())
          return "arlsim whatif: variant" + label_of(variant) + ": " + problem + "\n";
      if (t && t->empty())
        return "arlsim whatif: variant" + label_of(variant) + ": " + scenario + ": the trace has no step in the requested range\n";
      if (t) {
        result = vm.count("analytic") ? analytic_result(*s, *t, o) : rl::simulate_run(*s, *t, o);
        return {};
      }
    }
    return "arlsim whatif: variant" + label_of(variant) + ":\n" + input::format_all(diag);
  };
  if (launched_by_mpirun()) {
    // Under mpirun the variants are shared out and their runs sent to rank 0, which writes what
    // one process would; a variant that cannot run stops the command as it would alone.
    TaskFarm farm;
    std::vector<int> owner;
    const auto packed = farm.map(all_variants.size(), [&](size_t i) {
      rl::RunResult r;
      const std::string problem = run_variant(all_variants[i], r);
      return problem.empty() ? "R" + pack_run(r) : "!" + problem;
    }, owner);
    if (farm.rank() != 0) return kExitOk;
    for (size_t i = 0; i < packed.size(); ++i) {
      if (packed[i].front() == '!') {
        std::cerr << packed[i].substr(1);
        return kExitBadInput;
      }
      Column c{all_variants[i], unpack_run(packed[i].substr(1)), {}};
      c.stats = report::run_stats(c.result);
      cols.push_back(std::move(c));
    }
  } else {
    const bool tty = isatty(STDERR_FILENO) != 0 && !vm.count("json");
    for (const auto& variant : all_variants) {
      if (tty) {  // a progress line on a terminal
        std::fprintf(stderr, "\r  whatif: variant %zu/%zu", cols.size() + 1, all_variants.size());
        if (cols.size() + 1 == all_variants.size()) std::fprintf(stderr, "\n");
        std::fflush(stderr);
      }
      Column c{variant, {}, {}};
      if (const std::string problem = run_variant(variant, c.result); !problem.empty()) {
        std::cerr << problem;
        return kExitBadInput;
      }
      c.stats = report::run_stats(c.result);
      cols.push_back(std::move(c));
    }
  }
  // Each variant's summary.json, as --json prints it and variants.json keeps it.
  const auto summaries_json = [&] {
    std::string out = "[\n";
    for (size_t i = 0; i < cols.size(); ++i) out += report::summary_json(cols[i].result) + (i + 1 < cols.size() ? ",\n" : "");
    return out + "]\n";
  };
  if (!out_dir.empty()) {
    std::vector<report::ReportVariant> variants;
    for (const auto& c : cols) {
      std::string label;
      for (const auto& v : c.overrides) label += (label.empty() ? "" : " ") + v;
      variants.push_back({label, &c.result});
    }
    std::string error;
    if (!report::write_text_file(out_dir, report::kReportFile, report::whatif_report_html(scenario, variants), error) ||
        !report::write_text_file(out_dir, "variants.json", summaries_json(), error)) {
      std::cerr << "arlsim whatif: " << error << "\n";
      return kExitInternal;
    }
  }
  if (vm.count("json")) {
    std::cout << summaries_json();
    return kExitOk;
  }
  print_table(cols);
  if (!out_dir.empty()) std::cout << "wrote " << out_dir << "/report.html, variants.json\n";
  return kExitOk;
}

}  // namespace arlsim::app
