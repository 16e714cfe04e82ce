// `arlsim simulate SCENARIO`: a run of RL steps over the scenario's trace, with a per-step account
// of stage times, memory and OOMs (summary.json, steps.csv, timeline.json) and a table on stdout.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <iostream>
#include <unistd.h>

#include "app/commands.h"
#include "app/memory_limit.h"
#include "app/options.h"
#include "sim/report/outputs.h"
#include "sim/report/summary.h"
#include "sim/report/table.h"
#include "sim/report/timeline.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

// A progress bar on a terminal; nothing when stderr is not one.
void progress_bar(int64_t done, int64_t total) {
  const int width = 40;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r  [%.*s%*s] step %lld/%lld", filled, "########################################", width - filled,
               "", static_cast<long long>(done), static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

// "A:B", "A:" or "A" -> inclusive range; false when malformed.
bool parse_step_range(const std::string& text, int64_t& first, int64_t& last) {
  auto number = [](const std::string& t, int64_t& out) {
    if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoll(t);
    return true;
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return number(text, first) && number(text, last);
  if (!number(text.substr(0, colon), first)) return false;
  const std::string rest = text.substr(colon + 1);
  last = -1;
  return rest.empty() || (number(rest, last) && last >= first);
}

int simulate_scenario(const std::string& scenario, const SimulateArgs& a) {
  input::Diagnostics diag;
  std::vector<std::string> overrides = a.overrides;
  auto s = input::load_scenario(scenario, overrides, diag);
  std::cerr << input::format_all(diag);
  if (!s) return kExitBadInput;
  if (a.seed >= 0 && (!s->generated_trace || !a.trace.empty())) {
    std::cerr << "arlsim simulate: --seed draws a generated trace; a trace file (--trace, or the scenario's) is read as it is\n";
    return kExitBadInput;
  }
  if (a.seed >= 0) s->generated_trace->seed = static_cast<uint64_t>(a.seed);
  if (!a.trace.empty()) s->generated_trace.reset();  // the file replaces the generated trace (and its run length)
  rl::RunOptions o;
  o.first_step = a.first_step;
  o.last_step = a.last_step;
  o.per_iteration = a.per_iteration;
  o.stop_on_oom = a.stop_on_oom;
  o.timeline = !a.out.empty();
  report::TimelineOptions timeline;
  report::parse_detail(a.timeline_detail, timeline.detail);  // checked by run_simulate
  timeline.first_step = a.timeline_first;
  timeline.last_step = a.timeline_last;
  timeline.pipeline = a.detail_pipeline;
  // The full timeline has the pipeline stages' micro-batches too.
  o.detail_pipeline = a.detail_pipeline || timeline.detail == report::TimelineOptions::Detail::full;
  input::Diagnostics trace_diag;
  std::optional<double> limit;
  if (std::string error; !memory_limit(a.max_memory, limit, error)) {
    std::cerr << "arlsim simulate: " << error << "\n";
    return kExitBadInput;
  }
  // A generated trace too large for memory is refused before it is drawn.
  if (const std::string problem = expected_memory_problem(*s, &o, limit, !a.max_memory.empty()); !problem.empty()) {
    std::cerr << "arlsim simulate: " << problem << "\n";
    return kExitBadInput;
  }
  auto t = rl::load_scenario_trace(*s, a.trace, trace_diag, &o);  // only the steps the run simulates
  std::cerr << input::format_all(trace_diag);
  if (!t) return kExitBadInput;
  if (const std::string problem = run_memory_problem(rl::run_memory(*s, *t, o.timeline), limit, !a.max_memory.empty());
      !problem.empty()) {
    std::cerr << "arlsim simulate: " << problem << "\n";
    return kExitBadInput;
  }
  // A --timeline-steps range must hold a step the run simulates, or the timeline would be empty.
  if (a.timeline_first >= 0 && !a.out.empty()) {
    bool any = false;
    std::vector<int64_t> steps;
    for (size_t i = 0; i < t->size() && !any; ++i) {
      const int64_t step = t->trajectory(i).info.step;
      any = timeline.keeps_step(step);
      if (steps.empty() || steps.back() != step) steps.push_back(step);
    }
    if (!any) {
      std::string list;
      for (size_t i = 0; i < steps.size() && i < 6; ++i) list += (i ? ", " : "") + std::to_string(steps[i]);
      std::cerr << "arlsim simulate: --timeline-steps: no step the run simulates is in it (its steps: " << list
                << (steps.size() > 6 ? ", ..." : "") << ")\n";
      return kExitBadInput;
    }
  }
  const bool tty = isatty(STDERR_FILENO) != 0 && !a.json;
  // With --out the timeline is written while the run goes: memory stays flat in the steps.
  std::string error;
  std::unique_ptr<std::ofstream> timeline_file;
  std::unique_ptr<report::TimelineStream> stream;
  if (!a.out.empty()) {
    // Every file it will write checked before the run, not after it.
    if (!report::prepare_output_files(a.out, {report::kSummaryFile, report::kStepsFile, report::kReportFile, report::kTimelineFile},
                                      error)) {
      std::cerr << "arlsim simulate: --out: " << error << "\n";
      return kExitBadInput;
    }
    timeline_file = report::open_timeline_file(a.out, error);
    if (!timeline_file) {
      std::cerr << "arlsim simulate: --out: " << error << "\n";
      return kExitBadInput;
    }
    const int64_t max_processes = s->cluster.nodes + static_cast<int64_t>(s->cluster.pools.size()) + 3;
    stream = std::make_unique<report::TimelineStream>(*timeline_file, timeline, max_processes);
    o.sink = stream.get();
  }
  const auto r = rl::simulate_run(*s, *t, o, tty ? rl::Progress(progress_bar) : rl::Progress());
  if (stream) {
    stream->finish(r);
    if (!report::close_timeline_file(*timeline_file, a.out, error)) {
      std::cerr << "arlsim simulate: " << error << "\n";
      return kExitInternal;
    }
  }
  if (r.steps.empty()) {
    std::cerr << scenario << ": the trace has no step in the requested range\n";
    if (stream) std::remove((std::filesystem::path(a.out) / report::kTimelineFile).c_str());  // nothing to show
    return kExitBadInput;
  }
  if (a.json) std::cout << report::summary_json(r);
  else std::cout << report::run_table(r);
  if (!a.out.empty()) {
    if (!report::write_summary_outputs(r, a.out, error)) {
      std::cerr << "arlsim simulate: " << error << "\n";
      return kExitInternal;
    }
    if (!a.json)
      std::cout << "wrote " << a.out << "/summary.json, steps.csv, report.html, timeline.json (" << stream->events_written()
                << " timeline events, detail " << report::detail_name(timeline.detail) << ")\n";
  }
  return a.fail_on_oom && !r.oom_events.empty() ? kExitOom : kExitOk;
}

int run_simulate(const Args& args) {
  std::string scenario, steps, on_oom = "stop", granularity = "skip", detail, timeline_steps;
  SimulateArgs a;
  po::options_description opts("arlsim simulate SCENARIO [options]\n\n"
                               "Simulates RL steps of a scenario (a file or a preset name) over its trace and prints\n"
                               "step-time percentiles, stage shares, throughput and OOMs.\n\nOptions");
  opts.add_options()("help,h", "this text")("trace", po::value(&a.trace), "trace file to use instead of the scenario's")(
      "steps", po::value(&steps), "trace steps to run: A:B (inclusive), A: or A")(
      "out", po::value(&a.out), "write summary.json, steps.csv, report.html and timeline.json to this folder")(
      "seed", po::value(&a.seed), "seed of a generated trace")(
      "set", po::value(&a.overrides)->composing(), "override a field: /json/pointer=value (repeatable)")(
      "on-oom", po::value(&on_oom)->default_value("stop"), "stop at the first OOM, or skip the step and go on")(
      "rollout-granularity", po::value(&granularity)->default_value("skip"),
      "\"skip\" jumps over decode iterations whose batch does not change; \"iteration\" simulates each")(
      "json", "print summary.json on stdout instead of the table")(
      "fail-on-oom", "exit with status 3 when any step ran out of memory")(
      "detail", po::value(&detail), "\"pipeline\": the timeline shows each micro-batch on each pipeline stage")(
      "timeline-detail", po::value(&a.timeline_detail)->default_value("engines"),
      "what timeline.json holds: \"stages\" (stages, mini-batches, GPU memory), \"engines\" (and each engine's "
      "iterations and KV use) or \"full\" (and every tool call and pipeline micro-batch)")(
      "timeline-steps", po::value(&timeline_steps), "only these steps on the timeline: A:B, A: or A")(
      "max-memory", po::value(&a.max_memory),
      "refuse the run when its estimated peak memory is above this size (default: the memory available)");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); status >= 0)
    return status;
  if (scenario.empty()) {
    std::cerr << "arlsim simulate: no scenario\n" << opts;
    return kExitBadInput;
  }
  if (!steps.empty() && !parse_step_range(steps, a.first_step, a.last_step)) {
    std::cerr << "arlsim simulate: --steps expects A:B, A: or A (step numbers), got \"" << steps << "\"\n";
    return kExitBadInput;
  }
  if (on_oom != "stop" && on_oom != "skip") {
    std::cerr << "arlsim simulate: --on-oom must be \"stop\" or \"skip\", not \"" << on_oom << "\"\n";
    return kExitBadInput;
  }
  if (granularity != "skip" && granularity != "iteration") {
    std::cerr << "arlsim simulate: --rollout-granularity must be \"skip\" or \"iteration\", not \"" << granularity << "\"\n";
    return kExitBadInput;
  }
  if (!detail.empty() && detail != "pipeline") {
    std::cerr << "arlsim simulate: --detail takes \"pipeline\", not \"" << detail << "\"\n";
    return kExitBadInput;
  }
  a.detail_pipeline = detail == "pipeline";
  report::TimelineOptions::Detail level{};
  if (!report::parse_detail(a.timeline_detail, level)) {
    std::cerr << "arlsim simulate: --timeline-detail must be \"stages\", \"engines\" or \"full\", not \""
              << a.timeline_detail << "\"\n";
    return kExitBadInput;
  }
  if (!timeline_steps.empty() && !parse_step_range(timeline_steps, a.timeline_first, a.timeline_last)) {
    std::cerr << "arlsim simulate: --timeline-steps expects A:B, A: or A (step numbers), got \"" << timeline_steps << "\"\n";
    return kExitBadInput;
  }
  // Options that would change nothing are refused rather than quietly ignored.
  if (a.out.empty() && (vm.count("timeline-steps") || !vm["timeline-detail"].defaulted() || !detail.empty())) {
    std::cerr << "arlsim simulate: --timeline-steps, --timeline-detail and --detail shape the timeline --out writes: give --out\n";
    return kExitBadInput;
  }
  if (vm.count("seed") && a.seed < 0) {
    std::cerr << "arlsim simulate: --seed must be 0 or more, got " << a.seed << "\n";
    return kExitBadInput;
  }
  a.stop_on_oom = on_oom == "stop";
  a.per_iteration = granularity == "iteration";
  a.json = vm.count("json") > 0;
  a.fail_on_oom = vm.count("fail-on-oom") > 0;
  return simulate_scenario(scenario, a);
}

}  // namespace arlsim::app
