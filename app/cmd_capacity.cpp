// `arlsim capacity SCENARIO --gpus a,b --nodes 2..64`: the scenario's run on every combination of
// GPU type, node count and placement, each with its best layouts over the trace; the Pareto
// frontier of time against cost, the cheapest configuration within a deadline and the fastest
// within a budget. A table, --json or --csv.
#include <algorithm>
#include <cmath>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "app/commands.h"
#include "app/json_optional.h"
#include "app/memory_limit.h"
#include "app/task_farm.h"
#include "app/options.h"
#include "app/planning_input.h"
#include "planner/capacity.h"
#include "sim/core/time.h"
#include "sim/report/html_report.h"
#include "sim/report/outputs.h"
#include "sim/report/text.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"
#include "sim/parse/units.h"

namespace arlsim::planner {
// What a rank sends rank 0 of each configuration it evaluated (see pack_result).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CapacityConfig, gpu, nodes, placement, rollout_share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CapacityResult, config, gpus, gpus_per_node, system, rollout_gpus, feasible, reason, step_time_s, total_time_s, gpu_hours,
                                   cost_usd, price_usd_per_gpu_hour, rollout_layouts, train_layouts, unconfirmable)
}  // namespace arlsim::planner

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

bool parse_count(const std::string& t, int64_t& out) {
  if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoll(t);
  return out > 0;
}

// "2,4,8" or "2..64" (the powers of two in between).
bool parse_nodes(const std::string& text, std::vector<int64_t>& out) {
  if (const size_t dots = text.find(".."); dots != std::string::npos) {
    int64_t lo = 0, hi = 0;
    if (!parse_count(text.substr(0, dots), lo) || !parse_count(text.substr(dots + 2), hi) || hi < lo) return false;
    for (int64_t n = 1; n <= hi; n *= 2)
      if (n >= lo) out.push_back(n);
    return !out.empty();
  }
  for (const auto& item : split(text, ',')) {
    int64_t n = 0;
    if (!parse_count(item, n)) return false;
    out.push_back(n);
  }
  return !out.empty();
}

// "colocated", "disaggregated" (half the GPUs roll out) or "disaggregated:0.75".
bool parse_placements(const std::string& text, std::vector<planner::CapacityConfig>& out) {
  for (const auto& item : split(text, ',')) {
    planner::CapacityConfig c;
    if (item == "colocated") {
      out.push_back(c);
      continue;
    }
    if (!item.starts_with("disaggregated")) return false;
    c.placement = "disaggregated";
    c.rollout_share = 0.5;
    if (item.size() > 13) {
      if (item[13] != ':') return false;
      try {
        c.rollout_share = std::stod(item.substr(14));
      } catch (const std::exception&) {
        return false;
      }
      if (!(c.rollout_share > 0 && c.rollout_share < 1)) return false;
    }
    out.push_back(c);
  }
  return !out.empty();
}

std::string percent(double share) { return std::to_string(static_cast<int>(share * 100 + 0.5)) + "%"; }

// As built: a disaggregated configuration's rollout share in whole nodes or hosts.
std::string placement_name(const planner::CapacityResult& r) {
  if (r.config.placement == "colocated") return "colocated";
  return "disagg " + percent(r.rollout_share());
}

std::string money(const std::optional<double>& v) { return v ? report::format_fixed(*v, 0) : "unknown"; }

// A configuration's result as text between processes (its planned policy stays where it was made).
// A configuration's result as text for rank 0 (its planned policy stays with the rank that
// planned it, which runs its confirmation).
std::string pack_result(const planner::CapacityResult& r) { return nlohmann::json(r).dump(); }
planner::CapacityResult unpack_result(const std::string& text) {
  return nlohmann::json::parse(text).get<planner::CapacityResult>();
}

// A recommended configuration, by its simulated figures (it is recommended only when confirmed).
std::string describe(const planner::CapacityResult& r) {
  const double sim = r.simulated_total_s.value_or(r.total_time_s), scale = sim / r.total_time_s;
  return r.config.gpu + " x " + std::to_string(r.gpus) + " (" + std::to_string(r.nodes()) + " nodes, " +
         placement_name(r) + "): " + report::format_fixed(sim / 3600, 2) + " h, " +
         money(r.cost_usd ? std::optional<double>(*r.cost_usd * scale) : std::nullopt) + " USD, simulated";
}

void print_table(const input::ScenarioSpec& base, const std::vector<planner::CapacityResult>& results, int64_t steps,
                 const planner::CapacityResult* cheapest,
                 const planner::CapacityResult* fastest, bool deadline, bool budget) {
  // Each figure keeps a space before it however wide it grows (a long run's GPU-hours).
  std::printf("%-12s%6s%7s%-12s%12s %13s %13s %11s %11s  %s\n", "gpu", "nodes", "gpus", "  placement", "step (s)", "total (h)",
              "simulated (h)", "GPU-hours", "cost (USD)", "pareto / layouts or reason");
  bool marked = false, unpriced = false;
  std::string unconfirmable;  // the first configuration's reason
  for (const auto& r : results) {
    std::printf("%-12s%6lld %6lld  %-10s", r.config.gpu.c_str(), static_cast<long long>(r.nodes()),
                static_cast<long long>(r.gpus), placement_name(r).c_str());
    if (!r.feasible) {
      std::printf("%12s %13s %13s %11s %11s  %s\n", "-", "-", "-", "-", "-", r.reason.c_str());
      continue;
    }
    std::string simulated = "-";
    if (r.confirmed) simulated = r.simulated_total_s ? report::format_fixed(*r.simulated_total_s / 3600, 2) : "OOM";
    if (!r.unconfirmable.empty()) {
      simulated = "memory";
      if (unconfirmable.empty()) unconfirmable = r.unconfirmable;
    }
    if (r.beyond_tolerance) simulated += " !";
    marked = marked || r.beyond_tolerance;
    unpriced = unpriced || !r.cost_usd;
    std::printf("%12s %13s %13s %11s %11s  %s rollout %s; train %s\n", report::format_fixed(r.step_time_s, 1).c_str(),
                report::format_fixed(r.total_time_s / 3600, 2).c_str(), simulated.c_str(),
                report::format_fixed(r.gpu_hours, 1).c_str(), money(r.cost_usd).c_str(), r.pareto ? "*" : " ",
                r.rollout_layouts.c_str(), r.train_layouts.c_str());
  }
  std::printf("\n%lld steps; * = on the Pareto frontier of total time and cost; simulated = the event simulator's total "
              "for the configurations it confirmed\n",
              static_cast<long long>(steps));
  if (marked)
    std::printf("! = the event simulator's total differs from the analytic one by more than %.0f%% (or its run hit an OOM)\n",
                100 * planner::kConfirmTolerance);
  if (unpriced) std::printf("cost unknown: the GPU profile has no price; give one with --price GPU=USD\n");
  std::vector<std::string> systems;  // one line per GPU whose nodes its system shaped, or did not
  for (const auto& r : results) {
    if (std::find(systems.begin(), systems.end(), r.config.gpu) != systems.end()) continue;
    if (!r.system.empty()) {
      systems.push_back(r.config.gpu);
      std::printf("%s: nodes are NVLink domains of %s, each of the GPUs that divide a configuration's in whole hosts\n",
                  r.config.gpu.c_str(), r.system.c_str());
    } else if (r.gpus_per_node > 0 && r.config.gpu != base.cluster.gpu.name &&
               base.cluster.host_gpus() < base.cluster.gpus_per_node) {
      systems.push_back(r.config.gpu);
      const std::string& domains = base.cluster.gpu.system.empty() ? base.cluster.name : base.cluster.gpu.system;
      std::printf("%s: its profile names no system: it runs in the scenario's nodes, NVLink domains of %s\n",
                  r.config.gpu.c_str(), domains.c_str());
    }
  }
  std::vector<double> rounded;  // asked shares that whole nodes (or hosts) moved: one line each
  for (const auto& r : results) {
    if (r.rollout_gpus <= 0 || (std::abs(r.rollout_share() - r.config.rollout_share) < 0.005 && r.same_shares.empty()) ||
        std::find(rounded.begin(), rounded.end(), r.config.rollout_share) != rounded.end())
      continue;
    rounded.push_back(r.config.rollout_share);
    // Shares that built the same split share its row and this line.
    std::string asked = "disaggregated:" + report::format_json_number(r.config.rollout_share);
    for (size_t k = 0; k < r.same_shares.size(); ++k)
      asked += (k + 1 == r.same_shares.size() ? " and disaggregated:" : ", disaggregated:") +
               report::format_json_number(r.same_shares[k]);
    std::printf("%s split%s in whole %s: e.g. %lld of %lld %s GPUs roll out (%s)\n", asked.c_str(),
                r.same_shares.empty() ? "s" : "",
                r.gpus_per_node > 0 && r.rollout_gpus % r.gpus_per_node != 0 ? "hosts" : "nodes",
                static_cast<long long>(r.rollout_gpus), static_cast<long long>(r.gpus), r.config.gpu.c_str(),
                percent(r.rollout_share()).c_str());
  }
  if (!unconfirmable.empty())
    std::printf("memory = not run whole by the event simulator: %s (others may need more); raise --max-memory or use "
                "fewer --threads\n",
                unconfirmable.c_str());
  if (deadline)
    std::printf("cheapest within the deadline: %s\n",
                cheapest ? describe(*cheapest).c_str() : "none that the event simulator confirms");
  if (budget)
    std::printf("fastest within the budget: %s\n", fastest ? describe(*fastest).c_str() : "none that the event simulator confirms");
}

}  // namespace

int run_capacity(const Args& args) {
  std::string scenario, gpus_text, nodes_text, placements_text, deadline_text, trace_path, out_dir, max_memory;
  std::vector<std::string> overrides, price_text;
  int64_t steps = 0, confirm = 1;
  double budget = 0;
  double o_overhead = planner::CapacityOptions{}.switch_overhead_s;
  int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
  po::options_description opts("arlsim capacity SCENARIO [--gpus a,b] [--nodes 2..64] [options]\n\n"
                               "Evaluates the scenario's run on every GPU type x node count x placement, each with\n"
                               "its best rollout and training layouts over the trace (analytic stage costs and the\n"
                               "offline selector): step time, time for N steps, GPU-hours, cost, the Pareto frontier\n"
                               "of time and cost, and configurations that cannot run with the reason.\n\nOptions");
  opts.add_options()("help,h", "this text")("gpus", po::value(&gpus_text), "GPU profiles, comma-separated (default: the scenario's)")(
      "nodes", po::value(&nodes_text), "node counts: 2,4,8 or 2..64 (powers of two; default: the scenario's)")(
      "placements", po::value(&placements_text)->default_value("colocated,disaggregated"),
      "colocated, disaggregated (half the GPUs roll out) or disaggregated:SHARE")(
      "steps", po::value(&steps), "N, the steps to finish (default: the trace's)")(
      "deadline", po::value(&deadline_text), "e.g. 72h: report the cheapest configuration that finishes in time")(
      "budget", po::value(&budget), "USD: report the fastest configuration within it")(
      "price", po::value(&price_text)->composing(), "GPU=USD per GPU-hour, over the profile's price (repeatable)")(
      "switch-overhead", po::value(&o_overhead)->default_value(o_overhead),
      "seconds added to each layout switch (restarts, communicator setup) on top of the data it moves "
      "(default: the scenario's policy switch_overhead when it gives one, else 30)")(
      "confirm", po::value(&confirm)->default_value(confirm),
      "rollout layouts the event simulator confirms per context range of each configuration (0: analytic only)")(
      "threads", po::value(&threads), "worker threads (default: the cores)")("trace", po::value(&trace_path), "trace file")(
      "set", po::value(&overrides)->composing(), "override a field of the scenario: /json/pointer=value")(
      "json", "print the candidates as JSON")("csv", "print the candidates as CSV")(
      "out", po::value(&out_dir), "write report.html (the time-cost plane) and capacity.json (as --json) to this folder")(
      "max-memory", po::value(&max_memory),
      "a configuration whose simulation's estimated peak memory is above this size (shared by the threads; default: "
      "the memory available) is not simulated, and says so");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"scenario", 1, po::value(&scenario)}, vm); status >= 0) return status;
  auto usage = [&](const std::string& message) {
    std::cerr << "arlsim capacity: " << message << "\n";
    return kExitBadInput;
  };
  if (scenario.empty()) return usage("give a scenario (a file or a preset name)");
  planner::CapacityOptions o;
  // Each thread holds a simulation's memory: more than a few hundred is a typo, not a machine.
  if (threads < 1 || threads > 1024) return usage("--threads must be 1 to 1024, got " + std::to_string(threads));
  o.threads = threads;
  o.steps = steps;
  if (!(o_overhead >= 0 && o_overhead <= 1e6)) return usage("--switch-overhead must be 0 to 1000000 seconds");
  if (vm.count("steps") && (steps < 1 || steps > 100000000))
    return usage("--steps must be 1 to 100000000, got " + std::to_string(steps));
  if (confirm < 0) return usage("--confirm must be 0 or more");
  std::optional<double> memory;
  if (std::string error; !memory_limit(max_memory, memory, error)) return usage(error);
  o.confirm = confirm;
  if (!parse_placements(placements_text, o.placements))
    return usage("--placements expects colocated, disaggregated or disaggregated:SHARE (0 < SHARE < 1), comma-separated; got \"" +
                 placements_text + "\"");
  if (!nodes_text.empty() && !parse_nodes(nodes_text, o.nodes))
    return usage("--nodes expects counts like 2,4,8 or a range 2..64, got \"" + nodes_text + "\"");
  // A count or a placement given twice would be a row twice.
  for (size_t i = 0; i < o.nodes.size(); ++i)
    if (std::find(o.nodes.begin(), o.nodes.begin() + static_cast<std::ptrdiff_t>(i), o.nodes[i]) !=
        o.nodes.begin() + static_cast<std::ptrdiff_t>(i))
      return usage("--nodes names " + std::to_string(o.nodes[i]) + " twice");
  for (size_t i = 0; i < o.placements.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (o.placements[j].placement == o.placements[i].placement && o.placements[j].rollout_share == o.placements[i].rollout_share)
        return usage("--placements names " +
                     (o.placements[i].placement == "colocated" ? std::string("colocated")
                                                               : "disaggregated:" + report::format_json_number(o.placements[i].rollout_share)) +
                     " twice");
  for (int64_t n : o.nodes)
    if (n > input::kMaxNodes)
      return usage("--nodes: " + std::to_string(n) + " is more than a cluster may have (" + std::to_string(input::kMaxNodes) + ")");
  double deadline_s = 0;
  if (!deadline_text.empty()) {
    const auto q = input::parse_quantity(deadline_text, input::Dimension::seconds);
    if (!q.error.empty()) return usage("--deadline expects a duration like 72h or \"3 d\", got \"" + deadline_text + "\"");
    if (!(q.value > 0)) return usage("--deadline must be more than zero, got \"" + deadline_text + "\"");
    deadline_s = q.value;
  }
  if (vm.count("budget") && !(budget > 0 && std::isfinite(budget))) return usage("--budget must be a positive amount of USD");
  for (const auto& p : price_text) {
    const size_t eq = p.find('=');
    double usd = 0;
    try {
      usd = eq == std::string::npos ? 0 : std::stod(p.substr(eq + 1));
    } catch (const std::exception&) {
    }
    if (eq == std::string::npos || eq == 0 || !(usd > 0) || !std::isfinite(usd))
      return usage("--price expects GPU=USD (e.g. h100-sxm=2.5), got \"" + p + "\"");
    if (usd > input::kMaxPriceUsdPerGpuHour)
      return usage("--price: " + p.substr(eq + 1) + " USD a GPU-hour is more than a profile may say (" +
                   std::to_string(static_cast<int>(input::kMaxPriceUsdPerGpuHour)) + ")");
    o.prices.emplace_back(p.substr(0, eq), usd);
  }

  if (std::string error; !out_dir.empty() && !report::prepare_output_files(out_dir, {report::kReportFile, "capacity.json"}, error)) {
    std::cerr << "arlsim capacity: --out: " << error << "\n";
    return kExitBadInput;
  }
  // The trace must fit this machine (--max-memory bounds each confirmation's simulation, sized as it
  // is confirmed, not the sweep). Under mpirun each process would read its own room, and one
  // refusing while the others wait for it would hang them: none is refused there.
  const std::optional<double> room = launched_by_mpirun() ? std::nullopt : available_memory_bytes();
  const auto in = load_planning_input(scenario, overrides, trace_path, {}, {room, false, "arlsim capacity"});
  if (!in) return kExitBadInput;
  const auto& [s, document, t, features] = *in;
  o.gpus = vm.count("gpus") == 0 ? std::vector<std::string>{s.cluster.gpu.name} : split(gpus_text, ',');
  if (o.gpus.empty() || std::any_of(o.gpus.begin(), o.gpus.end(), [](const std::string& g) { return g.empty(); }))
    return usage("--gpus expects GPU profiles separated by commas (e.g. h100-sxm,h200-sxm), got \"" + gpus_text + "\"");
  for (size_t i = 0; i < o.gpus.size(); ++i)
    if (std::find(o.gpus.begin(), o.gpus.begin() + static_cast<std::ptrdiff_t>(i), o.gpus[i]) != o.gpus.begin() + static_cast<std::ptrdiff_t>(i))
      return usage("--gpus names \"" + o.gpus[i] + "\" twice");
  for (const auto& g : o.gpus) {
    input::Diagnostics gd;
    if (!input::check_document(g, input::SpecKind::gpu, {}, gd)) {
      std::cerr << "arlsim capacity: --gpus: " << input::format_all(gd);
      return kExitBadInput;
    }
  }
  // A price names one of the GPUs evaluated.
  for (const auto& [gpu, usd] : o.prices)
    if (std::find(o.gpus.begin(), o.gpus.end(), gpu) == o.gpus.end()) {
      std::string list;
      for (const auto& g : o.gpus) list += (list.empty() ? "" : ", ") + g;
      return usage("--price: \"" + gpu + "\" is not one of the GPUs evaluated (" + list + ")");
    }
  if (o.nodes.empty()) o.nodes = {s.cluster.nodes};
  o.switch_overhead_s = switch_overhead(s, vm, o_overhead);
  if (features.empty()) return usage(scenario + ": the trace has no steps");
  const int64_t n = steps > 0 ? steps : static_cast<int64_t>(features.size());
  o.trace = &t;
  // A progress line on a terminal (the sweep takes seconds to minutes).
  const bool tty = isatty(STDERR_FILENO) != 0 && !vm.count("json") && !vm.count("csv");
  if (tty)
    o.progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\r  capacity: %zu/%zu configurations evaluated", done, total);
      if (done == total) std::fprintf(stderr, "; confirming by simulation...\n");
      std::fflush(stderr);
    };
  const std::optional<double> deadline = deadline_s > 0 ? std::optional<double>(deadline_s) : std::nullopt;
  const std::optional<double> budget_limit = budget > 0 ? std::optional<double>(budget) : std::nullopt;
  const auto simulate = [&](const planner::CapacityResult& r) {
    return planner::simulated_total_seconds(s, document, t, features, r, o);
  };
  // A configuration whose simulation would not fit in memory (beside the other threads' runs) is
  // passed over by the confirmations, with the reason.
  const std::optional<double> allowance = memory ? std::optional<double>(*memory / std::max(1, o.threads)) : std::nullopt;
  const auto check_memory = [&](planner::CapacityResult& r) {
    if (!allowance || !r.feasible) return;
    const double bytes = planner::confirmation_memory_bytes(s, document, t, r);
    if (bytes <= *allowance) return;
    r.unconfirmable = "its simulation needs about " + parse::format_bytes(bytes) + " of memory, more than the " +
                      parse::format_bytes(*allowance) +
                      limit_origin(!max_memory.empty()) +
                      (o.threads > 1 ? " per thread (" + std::to_string(o.threads) + " threads)" : std::string());
  };
  std::vector<planner::CapacityResult> results;
  planner::Recommendation rec;
  if (launched_by_mpirun()) {
    // Under mpirun the configurations, then their confirmations, are shared out; rank 0 writes.
    TaskFarm farm;
    const auto configs = planner::capacity_configs(o);
    std::vector<planner::CapacityResult> mine(configs.size());  // what this rank evaluated (with its policy)
    std::vector<int> owner;
    const auto packed = farm.map(configs.size(), [&](size_t i) {
      mine[i] = planner::evaluate_capacity_config(s, document, features, configs[i], o);
      check_memory(mine[i]);
      return pack_result(mine[i]);
    }, owner);
    std::vector<size_t> to_confirm;
    if (farm.rank() == 0) {
      try {  // the other ranks wait for rank 0's list: a failure here must end them too
        results.resize(configs.size());
        for (size_t i = 0; i < configs.size(); ++i) results[i] = owner[i] == 0 ? mine[i] : unpack_result(packed[i]);
        planner::mark_pareto(results);
        to_confirm = planner::confirmation_list(results, deadline, budget_limit);
      } catch (const std::exception& e) {
        farm.abort(std::string("arlsim capacity: internal error on rank 0: ") + e.what(), kExitInternal);
      }
    }
    const std::string beyond_clock = "beyond the clock";  // a confirmation the simulator's clock cannot hold
    const auto simulated = farm.run_on_owners(to_confirm, owner, [&](size_t i) {
      try {
        const auto total = simulate(mine[i]);
        return total ? report::format_json_number(*total) : std::string("null");
      } catch (const SimTimeOutOfRange&) {
        return beyond_clock;
      }
    });
    if (farm.rank() != 0) return kExitOk;
    std::vector<planner::CapacityConfirmation> outcomes(to_confirm.size());
    for (size_t k = 0; k < to_confirm.size(); ++k) {
      outcomes[k].beyond_clock = simulated[k] == beyond_clock;
      if (!outcomes[k].beyond_clock && simulated[k] != "null") outcomes[k].total_s = std::stod(simulated[k]);
    }
    planner::record_confirmations(results, to_confirm, outcomes);
    rec = planner::recommend(results, deadline, budget_limit);
  } else {
    results = planner::plan_capacity(s, document, features, o);
    for (auto& r : results) check_memory(r);
    // The answers are the event simulator's: the Pareto frontier and the best candidates for the
    // deadline, the budget (or, with neither, the fastest) run with their planned layouts.
    rec = planner::confirm_and_recommend(results, deadline, budget_limit, simulate, o.threads);
  }
  planner::fold_same_builds(results, rec);
  const auto at = [&](const std::optional<size_t>& i) -> const planner::CapacityResult* { return i ? &results[*i] : nullptr; };
  const planner::CapacityResult *cheapest = at(rec.cheapest_in_deadline), *fastest = at(rec.fastest_in_budget);
  std::vector<const planner::CapacityResult*> recommended;
  for (const auto* r : {cheapest, fastest, at(rec.fastest)})
    if (r && std::find(recommended.begin(), recommended.end(), r) == recommended.end()) recommended.push_back(r);
  auto agreement = [&](const planner::CapacityResult& r) {
    if (!r.confirmed) return nlohmann::ordered_json(nullptr);
    return nlohmann::ordered_json{
        {"analytic_s", r.total_time_s},
        {"simulated_s", r.simulated_total_s ? nlohmann::ordered_json(*r.simulated_total_s) : nlohmann::ordered_json(nullptr)}};
  };
  // The disaggregated shares asked that built this row (several where whole nodes round alike).
  const auto asked_shares = [](const planner::CapacityResult& r) {
    if (r.config.placement == "colocated") return nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json a = nlohmann::ordered_json::array({r.config.rollout_share});
    for (double x : r.same_shares) a.push_back(x);
    return a;
  };
  const auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  {
    for (const auto& r : results)
      j.push_back({{"gpu", r.config.gpu},
                   {"nodes", r.nodes()},
                   {"gpus", r.gpus},
                   {"gpus_per_node", r.gpus_per_node > 0 ? nlohmann::ordered_json(r.gpus_per_node) : nlohmann::ordered_json(nullptr)},
                   {"system", r.system.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.system)},
                   {"placement", r.config.placement},
                   {"rollout_share", r.config.placement == "colocated" ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.rollout_share())},
                   {"rollout_gpus", r.rollout_gpus > 0 ? nlohmann::ordered_json(r.rollout_gpus) : nlohmann::ordered_json(nullptr)},
                   {"asked_shares", asked_shares(r)},
                   {"feasible", r.feasible},
                   {"reason", r.feasible ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.reason)},
                   {"step_time_s", r.feasible ? nlohmann::ordered_json(r.step_time_s) : nlohmann::ordered_json(nullptr)},
                   {"total_time_s", r.feasible ? nlohmann::ordered_json(r.total_time_s) : nlohmann::ordered_json(nullptr)},
                   {"gpu_hours", r.feasible ? nlohmann::ordered_json(r.gpu_hours) : nlohmann::ordered_json(nullptr)},
                   {"price_usd_per_gpu_hour", r.price_usd_per_gpu_hour > 0 ? nlohmann::ordered_json(r.price_usd_per_gpu_hour) : nlohmann::ordered_json(nullptr)},
                   {"cost_usd", r.feasible && r.cost_usd ? nlohmann::ordered_json(*r.cost_usd) : nlohmann::ordered_json(nullptr)},
                   {"pareto", r.pareto},
                   {"rollout_layouts", r.rollout_layouts},
                   {"train_layouts", r.train_layouts},
                   {"cheapest_within_deadline", &r == cheapest},
                   {"fastest_within_budget", &r == fastest},
                   {"confirmed", r.confirmed},
                   {"unconfirmable", r.unconfirmable.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.unconfirmable)},
                   {"simulated_step_time_s", or_null(r.simulated_total_s ? std::optional<double>(*r.simulated_total_s / static_cast<double>(n)) : std::nullopt)},
                   {"simulated_total_time_s", or_null(r.simulated_total_s)},
                   {"beyond_tolerance", r.beyond_tolerance},
                   {"agreement", agreement(r)}});
  }
  if (!out_dir.empty()) {
    report::CapacityReport cr;
    cr.scenario = s.name;
    cr.steps = n;
    if (deadline_s > 0) cr.deadline_s = deadline_s;
    if (budget > 0) cr.budget_usd = budget;
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      report::CapacityPoint p;
      p.label = r.config.gpu + " x " + std::to_string(r.nodes()) + " nodes, " + placement_name(r);
      p.gpus = r.gpus;
      p.feasible = r.feasible;
      p.reason = r.reason;
      p.total_time_s = r.total_time_s;
      p.gpu_hours = r.gpu_hours;
      p.cost_usd = r.cost_usd;
      p.pareto = r.pareto;
      p.layouts = r.rollout_layouts + " / " + r.train_layouts;
      p.confirmed = r.confirmed;
      p.simulated_total_s = r.simulated_total_s;
      p.beyond_tolerance = r.beyond_tolerance;
      if (&r == cheapest) cr.cheapest_in_deadline = i;
      if (&r == fastest) cr.fastest_in_budget = i;
      cr.points.push_back(std::move(p));
    }
    std::string error;
    if (!report::write_text_file(out_dir, report::kReportFile, report::capacity_report_html(cr), error) ||
        !report::write_text_file(out_dir, "capacity.json", j.dump(2) + "\n", error)) {
      std::cerr << "arlsim capacity: " << error << "\n";
      return kExitInternal;
    }
  }
  if (vm.count("json")) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  if (vm.count("csv")) {
    std::cout << "gpu,nodes,gpus,placement,rollout_share,feasible,reason,step_time_s,total_time_s,gpu_hours,cost_usd,pareto\n";
    for (const auto& r : results) {
      std::string reason;  // CSV: a quote inside a quoted field is doubled
      for (char c : r.reason) reason += c == '"' ? std::string("\"\"") : std::string(1, c);
      std::cout << r.config.gpu << ',' << r.nodes() << ',' << r.gpus << ',' << r.config.placement << ','
                << (r.config.placement == "colocated" ? "" : report::format_json_number(r.rollout_share())) << ','
                << (r.feasible ? "true" : "false") << ",\"" << reason << "\","
                << (r.feasible ? report::format_json_number(r.step_time_s) : "") << ','
                << (r.feasible ? report::format_json_number(r.total_time_s) : "") << ','
                << (r.feasible ? report::format_json_number(r.gpu_hours) : "") << ','
                << (r.feasible && r.cost_usd ? report::format_json_number(*r.cost_usd) : "") << ','
                << (r.pareto ? "true" : "false") << "\n";
    }
    return kExitOk;
  }
  print_table(s, results, n, cheapest, fastest, deadline_s > 0, budget > 0);
  if (deadline_s <= 0 && budget <= 0)
  {
    const bool any = std::any_of(results.begin(), results.end(), [](const auto& r) { return r.feasible; });
    std::printf("fastest: %s\n", at(rec.fastest) ? describe(*at(rec.fastest)).c_str()
                                 : any ? "none that the event simulator confirms" : "none: no configuration can run");
  }
  for (const auto* r : recommended)
    std::printf("simulated: %s x %lld (%s): %s h by the event simulator against %s h here (%+.1f%%)%s\n", r->config.gpu.c_str(),
                static_cast<long long>(r->gpus), placement_name(*r).c_str(),
                report::format_fixed(*r->simulated_total_s / 3600, 2).c_str(), report::format_fixed(r->total_time_s / 3600, 2).c_str(),
                100.0 * (r->total_time_s / *r->simulated_total_s - 1), r->beyond_tolerance ? "  ! beyond the 10% tolerance" : "");
  if (!out_dir.empty()) std::printf("wrote %s/report.html, capacity.json\n", out_dir.c_str());
  return kExitOk;
}

}  // namespace arlsim::app
