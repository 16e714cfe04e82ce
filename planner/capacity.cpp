#include "planner/capacity.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "planner/analytic_run.h"
#include "planner/plan.h"
#include "sim/core/assert.h"
#include "sim/core/time.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"
#include "sim/input/loader.h"

namespace arlsim::planner {

namespace {

input::Value integer(int64_t v) { return input::Value::make_number(static_cast<double>(v)); }

// The largest power-of-two divisor of `gpus` that is at most `want`.
int64_t fitting(int64_t want, int64_t gpus) {
  int64_t d = 1;
  while (d * 2 <= want && gpus % (d * 2) == 0) d *= 2;
  return d;
}

// The machines a GPU comes in (its profile's `system`): the system's cluster as its document (its
// references resolved: a file named by the profile is read next to the profile) and parsed.
struct GpuSystem {
  std::string name;
  input::Value document;
  input::ClusterSpec cluster;
};

// Reads `v` (a document or a reference to one, resolved in place) as a document of `kind`: "" or
// why it cannot be read.
std::string read_reference(input::Value& v, input::SpecKind kind, std::optional<input::AnySpec>& out) {
  input::Diagnostics diag;
  input::Loader loader(diag);
  loader.resolve(v, kind, "");
  if (diag.error_count() == 0) out = input::parse_document(v, kind, diag);
  if (out && diag.error_count() == 0) return {};
  // Its errors on one line (a row's reason); warnings are not why it cannot be read.
  std::string text = input::format_errors(diag, "; ");
  return text.empty() ? "cannot be read" : text;
}

// A GPU profile named on the command line (--gpus): read relative to the working directory, as a
// file --set names would be, even where the scenario is a preset.
input::Value gpu_reference(const std::string& gpu) {
  static const auto command_line = std::make_shared<const parse::SourceFile>(parse::SourceFile{"--gpus", ".", false});
  input::Value v = input::Value::make_string(gpu);
  v.set_origin(command_line, {});
  return v;
}

// The profile `gpu` names (read from the command line's `--gpus`) and its system, if it names one:
// "" or why they cannot be read.
std::string system_of(const std::string& gpu, std::optional<GpuSystem>& system) {
  input::Value profile = gpu_reference(gpu);
  std::optional<input::AnySpec> parsed;
  if (std::string why = read_reference(profile, input::SpecKind::gpu, parsed); !why.empty())
    return "cannot read the GPU profile " + gpu + ": " + why;
  const auto& p = std::get<input::GpuProfile>(*parsed);
  const input::Value* named = profile.is_object() ? profile.find("system") : nullptr;
  if (p.system.empty() || !named) return {};
  GpuSystem g{p.system, *named, {}};  // where the profile names it, so a file is found beside it
  std::optional<input::AnySpec> cluster;
  if (std::string why = read_reference(g.document, input::SpecKind::cluster, cluster); !why.empty())
    return "cannot read the GPU profile " + gpu + "'s system " + p.system + ": " + why;
  g.cluster = std::get<input::ClusterSpec>(std::move(*cluster));
  system = std::move(g);
  return {};
}

// The power of two that divides n.
int64_t two_part(int64_t n) { return n > 0 ? n & -n : 0; }

// The GPUs of one NVLink domain of `system` for `gpus`: of the sizes up to the system's node that
// divide them in whole hosts, the one that holds the largest power-of-two group (tensor-parallel
// groups and engines are powers of two: none straddles two domains up to it), then the largest;
// all of them when fewer than a host; 0 when none does.
int64_t domain_gpus(const input::ClusterSpec& system, int64_t gpus) {
  const int64_t host = system.host_gpus();
  if (gpus < host) return gpus;
  int64_t best = 0;
  for (int64_t d = host; d <= std::min(gpus, system.gpus_per_node); d += host)
    if (gpus % d == 0 && (best == 0 || two_part(d) >= two_part(best))) best = d;
  return best;
}

// Whether a node of `c` is an NVLink domain of several hosts (a GB200 NVL72 rack), not one host.
bool multi_host_domains(const input::ClusterSpec& c) { return c.host_gpus() < c.gpus_per_node; }

std::string join_layouts(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    if (i == 0 || names[i] != names[i - 1]) out += (out.empty() ? "" : " -> ") + names[i];
  return out;
}

template <typename Candidate>
std::string first_misfit(const Schedule& sch, const std::vector<Candidate>& candidates, const std::vector<int64_t>& steps,
                         const CostTable& t, const char* stage) {
  for (size_t i = 0; i < sch.choice.size(); ++i)
    if (!t.fits(i, sch.choice[i])) {
      // The reason of the candidate that failed there, or of the first candidate that did.
      for (size_t c = 0; c < candidates.size(); ++c) {
        const auto& why = candidates[c].pruned.empty() ? candidates[c].misfit : candidates[c].pruned;
        if (!t.fits(i, c) && !why.empty())
          return "OOM at step " + std::to_string(steps[i]) + " (" + stage + "): no layout fits; e.g. " + layout_name(candidates[c].layout) +
                 ": " + why;
      }
      return "OOM at step " + std::to_string(steps[i]) + " (" + stage + "): no layout fits";
    }
  return {};
}

}  // namespace

CapacityResult evaluate_capacity_config(const input::ScenarioSpec& base, const input::Value& document, const std::vector<StepFeatures>& f,
                               const CapacityConfig& config, const CapacityOptions& o) {
  CapacityResult r;
  r.config = config;
  r.gpus = config.nodes * base.cluster.gpus_per_node;
  input::ScenarioSpec s;
  BuiltShape shape;
  if (std::string problem = scenario_on(base, document, config, s, &r.system, &shape); !problem.empty()) {
    // The row says what would have been built, where it got that far.
    r.gpus_per_node = shape.gpus_per_node;
    r.rollout_gpus = shape.rollout_gpus;
    r.reason = problem;
    return r;
  }
  r.gpus = s.cluster.total_gpus();
  r.gpus_per_node = s.cluster.gpus_per_node;
  if (s.policy.placement == input::Placement::disaggregated) r.rollout_gpus = s.policy.rollout_gpus;
  r.price_usd_per_gpu_hour = s.cluster.price_usd_per_gpu_hour;
  for (const auto& [gpu, price] : o.prices)
    if (gpu == config.gpu) r.price_usd_per_gpu_hour = price;
  PlanOptions po;
  po.confirm = o.trace ? o.confirm : 0;
  po.switch_overhead_s = o.switch_overhead_s;
  Plan p;
  try {
    p = make_plan(s, f, o.trace, po);
  } catch (const SimTimeOutOfRange& e) {
    r.reason = e.what();
    return r;
  }
  const auto& rs = p.rollout_schedules.find("offline");
  const auto& ts = p.train_schedules.find("offline");
  r.reason = first_misfit(rs, p.rollout, p.steps, p.rollout_schedules.costs, "rollout");
  if (r.reason.empty()) r.reason = first_misfit(ts, p.train, p.steps, p.train_schedules.costs, "train");
  if (!r.reason.empty()) return r;
  r.feasible = true;
  r.policy = p.policy;
  std::vector<std::string> rollout_names, train_names;
  for (size_t i = 0; i < f.size(); ++i) {
    rollout_names.push_back(layout_name(p.rollout[rs.choice[i]].layout));
    train_names.push_back(layout_name(p.train[ts.choice[i]].layout));
  }
  const auto run = analytic_run(s, p, f, "offline");
  ARLSIM_ASSERT(run);  // first_misfit found none
  const double total = run->total_s;
  r.rollout_layouts = join_layouts(rollout_names);
  r.train_layouts = join_layouts(train_names);
  r.step_time_s = f.empty() ? 0 : total / static_cast<double>(f.size());
  const int64_t n = o.steps > 0 ? o.steps : static_cast<int64_t>(f.size());
  r.total_time_s = r.step_time_s * static_cast<double>(n);
  r.gpu_hours = static_cast<double>(r.gpus + rl::reward_model_gpus(s)) * r.total_time_s / 3600.0;  // the reward model's too
  if (r.price_usd_per_gpu_hour > 0) r.cost_usd = r.gpu_hours * r.price_usd_per_gpu_hour;
  return r;
}



std::string scenario_on(const input::ScenarioSpec& base, const input::Value& document, const CapacityConfig& c,
                        input::ScenarioSpec& out, std::string* shaped_by, BuiltShape* built) {
  input::Value doc = document;
  input::Value* cluster = doc.find("cluster");
  input::Value* policy = doc.find("policy");
  if (!cluster || !cluster->is_object() || !policy || !policy->is_object()) return "the scenario's cluster or policy is not an object";
  const bool same_gpu = c.gpu == base.cluster.gpu.name;
  std::optional<GpuSystem> system;
  if (!same_gpu) {
    if (std::string why = system_of(c.gpu, system); !why.empty()) return why;
    // Its system shapes the nodes where either side comes in domains of several hosts: a GB200
    // takes racks' domains, and an H100 in a GB200 scenario its own 8-GPU servers, not the racks.
    // Between one-host servers the scenario's nodes, network and host memory stay (a what-if
    // about the GPU in the user's machines).
    if (system && !multi_host_domains(system->cluster) &&
        (!multi_host_domains(base.cluster) || domain_gpus(system->cluster, c.nodes * base.cluster.gpus_per_node) <= 0))
      system.reset();  // (nor where its servers do not divide the GPUs: the scenario's nodes then)
    cluster->set("gpu", gpu_reference(c.gpu));
    cluster->erase("price_usd_per_gpu_hour");  // the price of the scenario's GPU, not of this one
  }
  cluster->set("nodes", integer(c.nodes));
  const int64_t gpus = c.nodes * base.cluster.gpus_per_node;
  int64_t per_node = base.cluster.gpus_per_node;  // a node: an NVLink domain
  int64_t rollout_gpus = gpus;
  policy->erase("schedule");
  policy->erase("old_logprob");
  policy->erase("ref_logprob");
  policy->erase("critic");
  policy->erase("rollout_gpus");
  if (c.placement == "disaggregated") {
    // Whole nodes to each side, the nearest to the share asked that leaves the other side one; where
    // a node is an NVLink domain of several hosts, whole hosts.
    const int64_t unit = system ? system->cluster.host_gpus() : base.cluster.host_gpus();
    const bool hosts = system || multi_host_domains(base.cluster);
    rollout_gpus = std::llround(static_cast<double>(gpus) * c.rollout_share / static_cast<double>(unit)) * unit;
    if (gpus >= 2 * unit) rollout_gpus = std::clamp(rollout_gpus, unit, gpus - unit);
    if (rollout_gpus <= 0 || rollout_gpus >= gpus)
      return "a " + std::to_string(std::llround(c.rollout_share * 100)) + "% rollout pool of " + std::to_string(gpus) +
             " GPUs leaves no whole " + (hosts ? "host" : "node") + " to one side";
    policy->set("placement", input::Value::make_string("disaggregated"));
    policy->set("rollout_gpus", integer(rollout_gpus));
  } else {
    policy->set("placement", input::Value::make_string("colocated"));
  }
  const int64_t train_gpus = c.placement == "disaggregated" ? gpus - rollout_gpus : gpus;
  if (system) {
    // The GPU's own machines: the same GPUs in NVLink domains of its system (part of a rack each),
    // with the system's topology, hosts, NICs and host memory per GPU; the scenario's tool pools.
    const input::ClusterSpec& sys = system->cluster;
    per_node = domain_gpus(sys, gpus);  // a domain may hold GPUs of both sides, as a node may
    if (per_node <= 0)
      return std::to_string(gpus) + " GPUs do not split into NVLink domains of whole hosts of " +
             std::to_string(sys.host_gpus()) + " (" + system->name + ")";
    const double share = static_cast<double>(per_node) / static_cast<double>(sys.gpus_per_node);
    input::Value shaped = system->document;
    shaped.set("gpu", *cluster->find("gpu"));
    shaped.set("nodes", integer(gpus / per_node));
    shaped.set("gpus_per_node", integer(per_node));
    if (per_node < sys.host_gpus()) shaped.set("gpus_per_host", integer(per_node));  // part of one host
    if (sys.host_memory_bytes > 0)
      shaped.set("host_memory", input::Value::make_string(std::to_string(std::llround(sys.host_memory_bytes * share)) + " B"));
    input::Value* network = shaped.find("network");
    if (!network || !network->is_object()) {
      shaped.set("network", input::Value::make_object());
      network = shaped.find("network");
    }
    network->set("nics_per_node", integer(std::max<int64_t>(1, std::llround(static_cast<double>(sys.nics_per_node) * share))));
    if (sys.nodes_per_leaf > 0)  // a leaf switch serves as many GPUs as before
      network->set("nodes_per_leaf", integer(std::max<int64_t>(1, std::llround(static_cast<double>(sys.nodes_per_leaf) / share))));
    if (const input::Value* pools = cluster->find("pools")) shaped.set("pools", *pools);
    else shaped.erase("pools");
    shaped.erase("price_usd_per_gpu_hour");
    doc.set("cluster", std::move(shaped));
    cluster = doc.find("cluster");
    if (shaped_by) *shaped_by = system->name;
  }
  if (built) *built = {per_node, c.placement == "disaggregated" ? rollout_gpus : 0};
  // Layouts that divide the new GPU counts (the planner searches them anyway).
  const auto& t = base.policy.train;
  int64_t tp = fitting(t.tp, std::min(train_gpus, per_node));
  int64_t cp = fitting(t.cp, train_gpus / tp);
  int64_t pp = fitting(t.pp, train_gpus / (tp * cp));
  // Where the mini-batch does not split over the dp left (more GPUs than it has trajectories), more
  // model parallelism until it does: tp within a node, as far as the models' heads split over it,
  // then cp.
  const auto heads_split = [](const input::ModelSpec& m, int64_t width) {
    return m.num_heads % width == 0 && (m.attention != input::AttentionKind::gqa || m.num_kv_heads % width == 0);
  };
  const auto tp_ok = [&](int64_t width) {
    return width <= per_node && per_node % width == 0 && heads_split(base.model, width) &&
           (!base.workload.critic || heads_split(*base.workload.critic, width));
  };
  for (;;) {
    input::TrainLayout l = t;
    l.tp = tp;
    l.cp = cp;
    l.pp = pp;
    l.dp = train_gpus / (tp * cp * pp);
    if (input::dp_split(l, base.workload) != input::DpSplit::refused) break;
    if (l.dp % 2 != 0) break;  // the scenario's check says why
    if (tp_ok(2 * tp)) tp *= 2;
    else if (!t.ulysses || (base.model.num_heads / tp) % (2 * cp) == 0) cp *= 2;
    else break;
  }
  input::Value* train = policy->find("train");
  if (!train || !train->is_object()) return "the scenario's policy has no train layout";
  train->set("tp", integer(tp));
  train->set("cp", integer(cp));
  train->set("pp", integer(pp));
  train->set("dp", integer(train_gpus / (tp * cp * pp)));
  if (pp == 1) train->erase("vpp");
  if (t.shard_group > 0 && (train_gpus / (tp * cp * pp) * cp) % t.shard_group != 0) train->erase("shard_group");
  if (pp != t.pp) {  // uneven stages belong to the configured pipeline
    train->erase("first_stage_layers");
    train->erase("last_stage_layers");
  }
  if (tp == 1) {
    train->erase("sequence_parallel");
    if (input::Value* overlap = train->find("overlap"); overlap && overlap->is_object()) overlap->erase("tp_comm");
  }
  input::Value* rollout = policy->find("rollout");
  if (!rollout || !rollout->is_object()) return "the scenario's policy has no rollout layout";
  const auto& r = base.policy.rollout;
  rollout->erase("replicas");
  rollout->set("tp", integer(fitting(r.tp, std::min(rollout_gpus, per_node))));
  rollout->set("pp", integer(1));
  std::optional<input::AnySpec> parsed;
  if (std::string why = read_reference(doc, input::SpecKind::scenario, parsed); !why.empty())
    return "cannot build the scenario: " + why;
  out = std::get<input::ScenarioSpec>(std::move(*parsed));
  return {};
}

std::optional<double> simulated_total_seconds(const input::ScenarioSpec& base, const input::Value& document,
                                              const trace::Trace& trace, const std::vector<StepFeatures>& features,
                                              const CapacityResult& result, const CapacityOptions& o) {
  input::ScenarioSpec s;
  if (!result.feasible || features.empty() || !scenario_on(base, document, result.config, s).empty()) return std::nullopt;
  s.policy = result.policy;  // as planned when the configuration was evaluated
  rl::RunOptions ro;
  ro.timeline = false;
  ro.first_step = features.front().step;
  ro.last_step = features.back().step;
  ro.max_steps = static_cast<int64_t>(features.size());
  const rl::RunResult run = rl::simulate_run(s, trace, ro);
  if (!run.oom_events.empty() || run.steps.empty()) return std::nullopt;
  const int64_t n = o.steps > 0 ? o.steps : static_cast<int64_t>(features.size());
  return run.total_time_s / static_cast<double>(run.steps.size()) * static_cast<double>(n);
}

double confirmation_memory_bytes(const input::ScenarioSpec& base, const input::Value& document, const trace::Trace& trace,
                                 const CapacityResult& result) {
  input::ScenarioSpec s;
  if (!result.feasible || !scenario_on(base, document, result.config, s).empty()) return 0;
  s.policy = result.policy;
  return rl::run_memory(s, trace).bytes;
}

namespace {

// The candidates for each answer, by analytic figures: the feasible results passing `keep`, best
// first by `better`, at most kConfirmCandidates.
struct Candidates {
  std::vector<size_t> in_deadline, in_budget, fastest;
};

Candidates candidates_of(const std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                         std::optional<double> budget_usd) {
  const double slack = 1 + kConfirmTolerance;
  const auto pick = [&](auto keep, auto better) {
    std::vector<size_t> c;
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].feasible && results[i].total_time_s > 0 && keep(results[i])) c.push_back(i);
    std::stable_sort(c.begin(), c.end(), [&](size_t a, size_t b) { return better(results[a], results[b]); });
    if (c.size() > kConfirmCandidates) c.resize(kConfirmCandidates);
    return c;
  };
  // The best within the limit and, apart, the best just beyond it (by the tolerance): near misses
  // on paper may make it when simulated, but never crowd out those within.
  const auto both = [](std::vector<size_t> a, const std::vector<size_t>& b) {
    for (size_t i : b)
      if (std::find(a.begin(), a.end(), i) == a.end()) a.push_back(i);
    return a;
  };
  const auto cheaper = [](const CapacityResult& a, const CapacityResult& b) { return *a.cost_usd < *b.cost_usd; };
  const auto faster = [](const CapacityResult& a, const CapacityResult& b) { return a.total_time_s < b.total_time_s; };
  Candidates c;
  if (deadline_s)
    c.in_deadline = both(pick([&](const CapacityResult& r) { return r.cost_usd && r.total_time_s <= *deadline_s; }, cheaper),
                         pick([&](const CapacityResult& r) {
                           return r.cost_usd && r.total_time_s > *deadline_s && r.total_time_s <= *deadline_s * slack;
                         }, cheaper));
  if (budget_usd)
    c.in_budget = both(pick([&](const CapacityResult& r) { return r.cost_usd && *r.cost_usd <= *budget_usd; }, faster),
                       pick([&](const CapacityResult& r) {
                         return r.cost_usd && *r.cost_usd > *budget_usd && *r.cost_usd <= *budget_usd * slack;
                       }, faster));
  if (!deadline_s && !budget_usd)
    c.fastest = pick([](const CapacityResult&) { return true; },
                     [](const CapacityResult& a, const CapacityResult& b) { return a.total_time_s < b.total_time_s; });
  return c;
}

}  // namespace

std::vector<size_t> confirmation_list(const std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                                      std::optional<double> budget_usd) {
  const Candidates c = candidates_of(results, deadline_s, budget_usd);
  std::vector<size_t> to_confirm;
  for (size_t i = 0; i < results.size(); ++i) {
    const bool wanted = results[i].pareto || std::count(c.in_deadline.begin(), c.in_deadline.end(), i) ||
                        std::count(c.in_budget.begin(), c.in_budget.end(), i) || std::count(c.fastest.begin(), c.fastest.end(), i);
    if (wanted && results[i].feasible && !results[i].confirmed && results[i].unconfirmable.empty()) to_confirm.push_back(i);
  }
  return to_confirm;
}

namespace {

void record_confirmation(CapacityResult& r, std::optional<double> simulated_total_s) {
  r.confirmed = true;
  r.simulated_total_s = simulated_total_s;
  r.beyond_tolerance = !simulated_total_s || !(r.total_time_s > 0) ||
                       std::abs(*simulated_total_s / r.total_time_s - 1) > kConfirmTolerance;
}

}  // namespace

void record_confirmations(std::vector<CapacityResult>& results, const std::vector<size_t>& confirmed,
                          const std::vector<CapacityConfirmation>& outcomes) {
  bool any_beyond = false;
  for (size_t k = 0; k < confirmed.size(); ++k) {
    CapacityResult& r = results[confirmed[k]];
    if (!outcomes[k].beyond_clock) {
      record_confirmation(r, outcomes[k].total_s);
      continue;
    }
    r.feasible = false;
    r.reason = SimTimeOutOfRange().what();
    any_beyond = true;
  }
  if (any_beyond) mark_pareto(results);
}

Recommendation recommend(const std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                         std::optional<double> budget_usd) {
  const auto simulated_cost = [](const CapacityResult& r) {
    return *r.cost_usd * (*r.simulated_total_s / r.total_time_s);  // cost goes with time
  };
  // Every confirmed result is a candidate (the frontier's too), not only those confirmation_list
  // picked for the limits.
  std::vector<size_t> confirmed;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].confirmed && results[i].simulated_total_s && results[i].total_time_s > 0) confirmed.push_back(i);
  Recommendation out;
  for (size_t i : confirmed) {
    const auto& r = results[i];
    if (!deadline_s || !r.cost_usd || *r.simulated_total_s > *deadline_s) continue;
    if (!out.cheapest_in_deadline || simulated_cost(r) < simulated_cost(results[*out.cheapest_in_deadline]))
      out.cheapest_in_deadline = i;
  }
  for (size_t i : confirmed) {
    const auto& r = results[i];
    if (!budget_usd || !r.cost_usd || simulated_cost(r) > *budget_usd) continue;
    if (!out.fastest_in_budget || *r.simulated_total_s < *results[*out.fastest_in_budget].simulated_total_s)
      out.fastest_in_budget = i;
  }
  if (!deadline_s && !budget_usd)
    for (size_t i : confirmed)
      if (!out.fastest || *results[i].simulated_total_s < *results[*out.fastest].simulated_total_s) out.fastest = i;
  return out;
}

Recommendation confirm_and_recommend(std::vector<CapacityResult>& results, std::optional<double> deadline_s,
                                     std::optional<double> budget_usd, const Simulate& simulate, int threads) {
  const std::vector<size_t> to_confirm = confirmation_list(results, deadline_s, budget_usd);
  std::vector<CapacityConfirmation> outcomes(to_confirm.size());
  std::atomic<size_t> next{0};
  std::mutex failed_mutex;
  std::exception_ptr failed;  // the first simulation that threw, rethrown on this thread
  const auto work = [&] {
    for (size_t k; (k = next++) < to_confirm.size();) try {
        outcomes[k].total_s = simulate(results[to_confirm[k]]);
      } catch (const SimTimeOutOfRange&) {
        outcomes[k].beyond_clock = true;
      } catch (...) {
        std::lock_guard<std::mutex> lock(failed_mutex);
        if (!failed) failed = std::current_exception();
        next = to_confirm.size();
      }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads) && static_cast<size_t>(t) < to_confirm.size(); ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (failed) std::rethrow_exception(failed);
  record_confirmations(results, to_confirm, outcomes);
  return recommend(results, deadline_s, budget_usd);
}

void fold_same_builds(std::vector<CapacityResult>& results, Recommendation& rec) {
  const auto same = [](const CapacityResult& a, const CapacityResult& b) {
    return a.rollout_gpus > 0 && a.rollout_gpus == b.rollout_gpus && a.gpus == b.gpus &&
           a.gpus_per_node == b.gpus_per_node && a.config.gpu == b.config.gpu && a.config.placement == b.config.placement;
  };
  std::vector<size_t> index(results.size());  // old index -> new
  std::vector<CapacityResult> kept;
  for (size_t i = 0; i < results.size(); ++i) {
    CapacityResult& r = results[i];
    const auto first = std::find_if(kept.begin(), kept.end(), [&](const CapacityResult& k) { return same(k, r); });
    if (first == kept.end()) {
      index[i] = kept.size();
      kept.push_back(std::move(r));
      continue;
    }
    index[i] = static_cast<size_t>(first - kept.begin());
    if (std::find(first->same_shares.begin(), first->same_shares.end(), r.config.rollout_share) == first->same_shares.end() &&
        r.config.rollout_share != first->config.rollout_share)
      first->same_shares.push_back(r.config.rollout_share);
    if (r.confirmed && !first->confirmed) {
      first->confirmed = true;
      first->simulated_total_s = r.simulated_total_s;
      first->beyond_tolerance = r.beyond_tolerance;
    }
  }
  for (auto* i : {&rec.cheapest_in_deadline, &rec.fastest_in_budget, &rec.fastest})
    if (*i) *i = index[**i];
  results = std::move(kept);
}

void mark_pareto(std::vector<CapacityResult>& results) {
  for (auto& a : results) {
    a.pareto = a.feasible && a.cost_usd.has_value();
    if (!a.pareto) continue;
    for (const auto& b : results) {
      if (&a == &b || !b.feasible || !b.cost_usd) continue;
      const bool no_worse = b.total_time_s <= a.total_time_s && *b.cost_usd <= *a.cost_usd;
      const bool better = b.total_time_s < a.total_time_s || *b.cost_usd < *a.cost_usd;
      if (no_worse && better) {
        a.pareto = false;
        break;
      }
    }
  }
}

std::vector<CapacityConfig> capacity_configs(const CapacityOptions& o) {
  std::vector<CapacityConfig> configs;
  for (const auto& gpu : o.gpus)
    for (int64_t n : o.nodes)
      for (auto c : o.placements) {
        c.gpu = gpu;
        c.nodes = n;
        configs.push_back(c);
      }
  return configs;
}

std::vector<CapacityResult> plan_capacity(const input::ScenarioSpec& base, const input::Value& document,
                                          const std::vector<StepFeatures>& features, const CapacityOptions& o) {
  const std::vector<CapacityConfig> configs = capacity_configs(o);
  std::vector<CapacityResult> results(configs.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  size_t done = 0;
  auto work = [&] {
    for (size_t i = next++; i < configs.size(); i = next++) {
      results[i] = evaluate_capacity_config(base, document, features, configs[i], o);
      if (o.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        o.progress(++done, configs.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, o.threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  mark_pareto(results);
  return results;
}

}  // namespace arlsim::planner
