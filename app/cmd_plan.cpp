// `arlsim plan SCENARIO [--out plan.json]`: rollout and training layouts chosen over the
// scenario's trace by each selector (as configured, static, online, offline), side by side; the
// adopted schedule simulated; a dispatch plan for one step; plan.json for exporters and replays.
#include <algorithm>
#include <cmath>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <iostream>
#include <unistd.h>

#include "app/commands.h"
#include "app/memory_limit.h"
#include "app/options.h"
#include "app/planning_input.h"
#include "app/run_codec.h"
#include "app/task_farm.h"
#include "planner/analytic_run.h"
#include "planner/dispatch_plan.h"
#include "planner/plan.h"
#include "planner/plan_json.h"
#include "sim/report/text.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

std::string fixed(double v, int decimals) { return report::format_fixed(v, decimals); }

template <typename Candidate>
void print_stage(const char* title, const std::vector<Candidate>& candidates, const planner::StageSchedules& st,
                 const std::vector<int64_t>& steps) {
  const auto& base = st.schedules.front();
  std::printf("\n%-28s", title);
  for (const auto& s : st.schedules) std::printf("%14s", s.selector.c_str());
  std::printf("\n");
  auto row = [&](const char* name, auto value) {
    std::printf("  %-26s", name);
    for (const auto& s : st.schedules) std::printf("%14s", value(s).c_str());
    std::printf("\n");
  };
  row("time over the trace (s)", [](const planner::Schedule& s) { return fixed(s.total_seconds(), 1); });
  row("  of which switching (s)", [](const planner::Schedule& s) { return fixed(s.switch_seconds, 1); });
  row("switches", [](const planner::Schedule& s) { return std::to_string(s.switches); });
  row("OOM steps", [](const planner::Schedule& s) { return std::to_string(s.misfits); });
  row("OOMs avoided", [&](const planner::Schedule& s) { return std::to_string(std::max<int64_t>(0, base.misfits - s.misfits)); });
  row("vs configured", [&](const planner::Schedule& s) {
    return base.total_seconds() > 0 && s.misfits == base.misfits ? fixed(s.total_seconds() / base.total_seconds(), 3) : std::string("-");
  });
  for (const auto& s : st.schedules) {
    std::printf("  %-12s", s.selector.c_str());
    for (size_t i = 0; i < s.choice.size(); ++i)
      if (i == 0 || s.choice[i] != s.choice[i - 1])
        std::printf("%s step %lld: %s", i == 0 ? "" : ",", static_cast<long long>(steps[i]),
                    planner::layout_name(candidates[s.choice[i]].layout).c_str());
    std::printf("\n");
  }
}

// The preparation passes' layouts: the policy's, or the fastest tried over the trace.
void print_passes(const std::vector<planner::PassChoice>& passes) {
  if (passes.empty()) return;
  auto name = [](const std::optional<input::InferenceLayout>& l) {
    return l ? "tp" + std::to_string(l->tp) + (l->pp > 1 ? " pp" + std::to_string(l->pp) : "") +
                   (l->cp > 1 ? " cp" + std::to_string(l->cp) : "") + " dp" + std::to_string(l->dp)
             : std::string("the training layout");
  };
  auto seconds = [](double s) { return std::isfinite(s) ? report::format_fixed(s, 1) + " s" : std::string("does not fit"); };
  std::printf("\npreparation passes (over the trace)\n");
  for (const auto& p : passes) {
    if (!p.searched) {
      std::printf("  %-12s %s, as configured: %s\n", p.stage.c_str(), name(p.chosen).c_str(), seconds(p.chosen_s).c_str());
      continue;
    }
    std::printf("  %-12s %s: %s", p.stage.c_str(), name(p.chosen).c_str(), seconds(p.chosen_s).c_str());
    if (p.chosen) std::printf(" (in the adopted training layouts: %s)", seconds(p.training_layout_s).c_str());
    std::printf("; %lld layouts tried\n", static_cast<long long>(p.candidates));
  }
}

template <typename Candidate>
void print_candidates(const char* title, const std::vector<Candidate>& candidates) {
  int64_t pruned = 0, misfit = 0;
  for (const auto& c : candidates) {
    pruned += c.pruned.empty() ? 0 : 1;
    misfit += c.pruned.empty() && !c.misfit.empty() ? 1 : 0;
  }
  std::printf("%s: %zu candidates, %lld pruned, %lld out of memory at some step (reasons in plan.json)\n", title,
              candidates.size(), static_cast<long long>(pruned), static_cast<long long>(misfit));
}

}  // namespace

int run_plan(const Args& args) {
  std::string scenario, out_path, steps, trace_path, max_memory, selector = "offline";
  std::vector<std::string> overrides;
  int64_t confirm = 3, window = 1, dispatch_step = -1;
  double overhead = planner::PlanOptions{}.switch_overhead_s;
  po::options_description opts("arlsim plan SCENARIO [options]\n\n"
                               "Chooses the rollout and training layouts over the scenario's trace: every candidate\n"
                               "layout costed per step by the analytic model, the best few rollout layouts confirmed\n"
                               "by the event simulator, then the static, online (EARL) and offline (optimal)\n"
                               "selectors side by side with the layouts as configured. The adopted schedule is\n"
                               "simulated, and plan.json carries it (`arlsim simulate plan.json` replays it).\n\nOptions");
  opts.add_options()("help,h", "this text")("out,o", po::value(&out_path), "write plan.json here")(
      "selector", po::value(&selector)->default_value("offline"), "the schedule to adopt: static, online or offline")(
      "confirm", po::value(&confirm)->default_value(3), "rollout layouts simulated per context range (0: analytic only)")(
      "online-window", po::value(&window)->default_value(1), "steps in the online selector's running average")(
      "switch-overhead", po::value(&overhead)->default_value(overhead),
      "seconds added to each layout switch (restarts, communicator setup) on top of the data it moves "
      "(default: the scenario's policy switch_overhead when it gives one, else 30); written into the plan's policy")(
      "dispatch-step", po::value(&dispatch_step), "the step to make a dispatch plan for (default: the last)")(
      "steps", po::value(&steps), "trace steps to plan: A:B, A: or A")("trace", po::value(&trace_path), "trace file")(
      "set", po::value(&overrides)->composing(), "override a field: /json/pointer=value")(
      "max-memory", po::value(&max_memory),
      "refuse when the simulations' estimated peak memory is above this size (default: the memory available)")(
      "json", "print plan.json on stdout instead of the tables");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); status >= 0) return status;
  if (scenario.empty()) {
    std::cerr << "arlsim plan: give a scenario (a file or a preset name)\n" << opts;
    return kExitBadInput;
  }
  if (!planner::selectors().find(selector)) {
    const std::string hint = planner::selectors().hint(selector);
    std::cerr << "arlsim plan: " << planner::selectors().unknown(selector) << (hint.empty() ? "" : "; " + hint) << "\n";
    return kExitBadInput;
  }
  // Each flag out of range named, with what it got.
  if (confirm < 0) {
    std::cerr << "arlsim plan: --confirm must be 0 or more, got " << confirm << "\n";
    return kExitBadInput;
  }
  if (window < 1) {
    std::cerr << "arlsim plan: --online-window must be 1 or more, got " << window << "\n";
    return kExitBadInput;
  }
  if (!(overhead >= 0 && overhead <= 1e6)) {
    std::cerr << "arlsim plan: --switch-overhead must be 0 to 1000000 seconds, got " << overhead << "\n";
    return kExitBadInput;
  }
  if (!out_path.empty())  // before the planning, which can take minutes
    if (const std::string problem = output_file_problem(out_path); !problem.empty()) {
      std::cerr << "arlsim plan: --out: " << problem << "\n";
      return kExitBadInput;
    }
  planner::FeatureOptions fo;
  if (!steps.empty() && !parse_step_range(steps, fo.first_step, fo.last_step)) {
    std::cerr << "arlsim plan: --steps expects A:B, A: or A (step numbers), got \"" << steps << "\"\n";
    return kExitBadInput;
  }
  // Under mpirun every process makes the same plan, sharing out each round of confirmation runs
  // and the two replays; rank 0 writes what one process would.
  std::optional<TaskFarm> farm;
  if (launched_by_mpirun()) {
    farm.emplace();
    if (!farm->distributed() && farm->rank() != 0) return kExitOk;  // built without MPI: rank 0 plans alone
  }

  std::optional<double> limit;
  if (std::string error; !memory_limit(max_memory, limit, error)) {
    std::cerr << "arlsim plan: " << error << "\n";
    return kExitBadInput;
  }
  if (farm && farm->distributed()) {
    // Every process decides on rank 0's reading of the memory available, so that all go on or none.
    std::string text = limit ? std::to_string(*limit) : std::string();
    farm->broadcast(text, 0);
    limit = text.empty() ? std::nullopt : std::optional<double>(std::stod(text));
  }
  const auto in = load_planning_input(scenario, overrides, trace_path, fo, {limit, !max_memory.empty(), "arlsim plan"});
  if (!in) return kExitBadInput;
  const auto& [s, document, t, features] = *in;
  // The plan's confirmations and replays simulate the trace's steps one at a time, as simulate does.
  if (const std::string problem = run_memory_problem(rl::run_memory(s, t), limit, !max_memory.empty()); !problem.empty()) {
    std::cerr << "arlsim plan: " << problem << "\n";
    return kExitBadInput;
  }
  if (features.empty()) {
    std::cerr << scenario << ": the trace has no step in the requested range\n";
    return kExitBadInput;
  }
  size_t di = features.size() - 1;
  if (vm.count("dispatch-step") && dispatch_step < 0) {
    std::cerr << "arlsim plan: --dispatch-step expects a step number (0 or more), got " << dispatch_step << "\n";
    return kExitBadInput;
  }
  if (dispatch_step >= 0) {
    const auto it = std::find_if(features.begin(), features.end(), [&](const auto& f) { return f.step == dispatch_step; });
    if (it == features.end()) {
      std::cerr << "arlsim plan: --dispatch-step " << dispatch_step << " is not a step of the plan\n";
      return kExitBadInput;
    }
    di = static_cast<size_t>(it - features.begin());
  }
  planner::PlanOptions po_;
  po_.selector = selector;
  po_.confirm = confirm;
  po_.online_window = window;
  po_.switch_overhead_s = switch_overhead(s, vm, overhead);
  if (farm)
  po_.map = [&farm](size_t n, const std::function<std::string(size_t)>& task) {
    std::vector<int> owner;
    std::vector<std::string> results = farm->map(n, task, owner);
    farm->broadcast(results, 0);  // every process records them, as it made the same plan
    return results;
  };
  // Progress on a terminal (stderr): the phase, and a bar while each replay runs.
  const bool tty = isatty(STDERR_FILENO) != 0 && !farm;
  auto phase = [&](const char* what) {
    if (!tty) return;
    std::fprintf(stderr, "\r\033[K  plan: %s", what);
    std::fflush(stderr);
  };
  auto bar = [&](const char* what) {
    return tty ? rl::Progress([what](int64_t done, int64_t total) {
      const int width = 30;
      const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
      std::fprintf(stderr, "\r\033[K  plan: %s [%.*s%*s] step %lld/%lld", what, filled, "##############################",
                   width - filled, "", static_cast<long long>(done), static_cast<long long>(total));
      std::fflush(stderr);
    })
               : rl::Progress();
  };
  phase("choosing layouts for every step");
  auto plan = planner::make_plan(s, features, &t, po_);

  // The dispatch plans on the dispatch step, in the layouts the schedule has there; the best one a
  // policy in this dispatch mode can run becomes the plan's balance_batch, which the replay moves.
  input::ScenarioSpec planned = s;
  planned.policy = plan.policy;
  const rl::Layouts at = rl::layouts_at(plan.policy, features[di].step);
  const auto dispatch = planner::compare_dispatch(
      planned, at.train, planner::samples_round_robin(planned, at.rollout, features[di].contexts), features[di].step);
  const auto& ts = plan.train_schedules.find(selector);
  const double passes_s = plan.train_schedules.costs.fits(di, ts.choice[di]) ? plan.train_schedules.costs.cost[di][ts.choice[di]] : 0.0;
  const int64_t adopted = planner::best_adoptable_plan(dispatch, plan.policy, passes_s);
  if (adopted >= 0) planner::adopt_dispatch_plan(plan.policy, dispatch.plans[static_cast<size_t>(adopted)].kind);
  planned.policy = plan.policy;
  rl::RunOptions ro;
  ro.timeline = false;
  ro.stop_on_oom = false;
  ro.first_step = fo.first_step;
  ro.last_step = fo.last_step;
  // The plan simulated, and the scenario as configured, simulated and composed the same way
  // (what the plan saves, and the planner's agreement with the simulator on the layouts the user
  // chose): under mpirun on two processes at once.
  rl::RunResult predicted, configured;
  if (farm) {
    std::vector<int> owner;
    const auto packed = farm->map(2, [&](size_t i) { return pack_run(rl::simulate_run(i == 0 ? planned : s, t, ro)); }, owner);
    if (farm->rank() != 0) return kExitOk;
    predicted = unpack_run(packed[0]);
    configured = unpack_run(packed[1]);
  } else {
    predicted = rl::simulate_run(planned, t, ro, bar("simulating the plan"));
    configured = rl::simulate_run(s, t, ro, bar("simulating the scenario as configured"));
  }

  const auto analytic = planner::analytic_run(planned, plan, features, selector);
  const double analytic_s = analytic ? analytic->total_s : 0.0;
  if (tty) std::fprintf(stderr, "\r\033[K");  // the progress line cleared before the report
  const auto configured_analytic = planner::analytic_run(s, plan, features, "configured");
  const double configured_analytic_s = configured_analytic ? configured_analytic->total_s : 0.0;
  const std::string json =
      planner::plan_json({&s, &document, &plan, &predicted, &dispatch, analytic ? &analytic_s : nullptr,
                          configured_analytic ? &configured_analytic_s : nullptr, &configured});
  if (!out_path.empty()) {
    std::ofstream f(out_path, std::ios::binary);
    f << json;
    if (!f) {
      std::cerr << "arlsim plan: cannot write " << out_path << "\n";
      return kExitInternal;
    }
  }
  if (vm.count("json")) {
    std::cout << json;
    return kExitOk;
  }
  std::printf("plan for %s: %zu steps (%lld..%lld), %lld analytic evaluations, %zu rollout runs to confirm\n",
              s.name.c_str(), features.size(), static_cast<long long>(features.front().step),
              static_cast<long long>(features.back().step), static_cast<long long>(plan.evaluations),
              plan.confirmations.size());
  print_candidates("rollout", plan.rollout);
  print_candidates("training", plan.train);
  print_stage("rollout layouts", plan.rollout, plan.rollout_schedules, plan.steps);
  print_stage("training layouts", plan.train, plan.train_schedules, plan.steps);
  print_passes(plan.passes);
  std::printf("\nadopted: %s; simulated with it: %.1f s over %zu steps, %zu OOM events\n", selector.c_str(),
              predicted.total_time_s, predicted.steps.size(), predicted.oom_events.size());
  if (configured.total_time_s > 0 && configured.oom_events.empty() && predicted.oom_events.empty())
    std::printf("as configured, simulated: %.1f s; the plan saves %.1f%%\n", configured.total_time_s,
                100.0 * (1 - predicted.total_time_s / configured.total_time_s));
  if (analytic && predicted.total_time_s > 0)
    std::printf("agreement: the planner's analytic run %.1f s, the simulator's %.1f s (%+.1f%%)\n", analytic_s,
                predicted.total_time_s, 100.0 * (analytic_s / predicted.total_time_s - 1));
  else
    std::printf("agreement: none (a step of the adopted schedule does not fit in memory)\n");
  if (configured_analytic && configured.total_time_s > 0)
    std::printf("agreement as configured: analytic %.1f s, simulated %.1f s (%+.1f%%)\n", configured_analytic_s,
                configured.total_time_s, 100.0 * (configured_analytic_s / configured.total_time_s - 1));
  std::printf("\ndispatch plans for step %lld (%lld samples)\n  %-14s%-15s%12s%16s%18s%12s\n",
              static_cast<long long>(dispatch.step), static_cast<long long>(dispatch.samples), "plan", "mode", "time (s)",
              "bytes (MiB)", "cross-node (MiB)", "imbalance");
  for (const auto& p : dispatch.plans)
    std::printf("  %-14s%-15s%12s%16s%18s%12s\n", p.name.c_str(), p.mode.c_str(), fixed(p.seconds, 4).c_str(),
                fixed(p.bytes / 1048576.0, 1).c_str(), fixed(p.cross_node_bytes / 1048576.0, 1).c_str(),
                fixed(p.imbalance, 3).c_str());
  if (adopted >= 0)
    std::printf("  adopted: %s (dispatch plus the step's passes slowed by the busiest rank; balance_batch %s)\n",
                dispatch.plans[static_cast<size_t>(adopted)].name.c_str(),
                std::string(input::batch_assignments().name(plan.policy.batch_assignment)).c_str());
  else
    std::printf("  adopted: none (no plan runs in dispatch mode %s); balance_batch as configured\n",
                std::string(input::dispatch_name(plan.policy.dispatch)).c_str());
  if (!out_path.empty()) std::printf("\nwrote %s\n", out_path.c_str());
  return kExitOk;
}

}  // namespace arlsim::app
