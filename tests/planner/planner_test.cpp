#include <doctest/doctest.h>

#include <array>
#include <random>

#include "planner/capacity.h"
#include "planner/analytic.h"
#include "planner/dispatch_plan.h"
#include "planner/analytic_run.h"
#include "planner/features.h"
#include "planner/plan.h"
#include "planner/selector.h"
#include "sim/model/transformer.h"
#include "sim/rl/step.h"
#include "sim/input/check.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;
using planner::CostTable;

namespace {

// Every choice of candidates per step, the best by (steps that do not fit, total time).
std::pair<int64_t, double> brute_force(const CostTable& t) {
  const size_t n = t.steps(), k = t.candidates();
  std::vector<size_t> choice(n, 0);
  std::pair<int64_t, double> best{INT64_MAX, 0};
  while (true) {
    const auto s = planner::evaluate(t, choice, "brute force");
    const std::pair<int64_t, double> v{s.misfits, s.total_seconds()};
    if (v.first < best.first || (v.first == best.first && v.second < best.second - 1e-9)) best = v;
    size_t i = 0;
    while (i < n && ++choice[i] == k) choice[i++] = 0;
    if (i == n) break;
  }
  return best;
}

CostTable random_table(std::mt19937& rng, size_t steps, size_t candidates) {
  std::uniform_real_distribution<double> cost(1, 10), coin(0, 1);
  CostTable t;
  t.cost.assign(steps, std::vector<double>(candidates));
  for (auto& row : t.cost)
    for (auto& c : row) c = coin(rng) < 0.2 ? -1 : cost(rng);
  std::vector<std::vector<double>> sw(candidates, std::vector<double>(candidates));
  for (size_t a = 0; a < candidates; ++a)
    for (size_t b = 0; b < candidates; ++b) sw[a][b] = a == b ? 0 : cost(rng) / 2;
  t.switch_cost = [sw](size_t a, size_t b) { return sw[a][b]; };
  return t;
}

input::ScenarioSpec scenario(const std::vector<std::string>& overrides) { return test::preset_scenario("default", overrides); }

// The features the planner reads from a scenario's own trace.
std::vector<planner::StepFeatures> features_of(const input::ScenarioSpec& s) {
  input::Diagnostics diag;
  auto t = rl::load_scenario_trace(s, "", diag);
  REQUIRE(t);
  planner::FeatureOptions fo;
  fo.max_context = s.workload.max_context_tokens;
  return planner::step_features(*t, fo);
}

// One single-turn trajectory per sample: a 512-token prompt, the rest of `context` generated.
trace::Trace growing_trace(const std::vector<int32_t>& contexts, int32_t samples) {
  trace::Trace t;
  for (size_t step = 0; step < contexts.size(); ++step)
    for (int32_t i = 0; i < samples; ++i) {
      trace::Turn turn;
      turn.prefill_tokens = 512;
      turn.gen_tokens = contexts[step] - 512;
      t.add({static_cast<int32_t>(step), i, static_cast<int64_t>(step) * 1000 + i / 8, false}, std::span<const trace::Turn>(&turn, 1));
    }
  return t;
}

}  // namespace

TEST_CASE("selector: the offline schedule equals brute force on small instances") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const auto t = random_table(rng, 1 + round % 6, 1 + round % 4);
    const auto offline = planner::select_offline(t);
    const auto best = brute_force(t);
    CHECK(offline.misfits == best.first);
    CHECK(offline.total_seconds() == doctest::Approx(best.second));
    // No other selector beats it.
    const auto stat = planner::select_static(t);
    CHECK((stat.misfits > offline.misfits ||
           (stat.misfits == offline.misfits && stat.total_seconds() >= offline.total_seconds() - 1e-9)));
  }
}

TEST_CASE("selector: static picks the one best layout, online follows the past with a lag") {
  CostTable t;
  // Candidate 0 is best for short contexts (steps 0-2), candidate 1 for long ones (3-5).
  t.cost = {{1, 2}, {1, 2}, {1, 2}, {5, 2}, {5, 2}, {5, 2}};
  t.switch_cost = [](size_t a, size_t b) { return a == b ? 0.0 : 0.5; };
  const auto stat = planner::select_static(t);
  CHECK(stat.choice == std::vector<size_t>(6, 1));  // 12 s against 18 s for candidate 0
  CHECK(stat.total_seconds() == doctest::Approx(12));
  const auto offline = planner::select_offline(t);
  CHECK(offline.choice == std::vector<size_t>{0, 0, 0, 1, 1, 1});
  CHECK(offline.total_seconds() == doctest::Approx(3 + 6 + 0.5));
  CHECK(offline.switches == 1);
  planner::OnlineOptions o;
  o.step_context = {1000, 1500, 1800, 5000, 6000, 7000};
  o.bucket_edges = {4096};
  o.best_per_bucket = {0, 1};
  const auto online = planner::select_online(t, o);
  // Step 3 still runs on candidate 0: only after it does the average show the longer contexts.
  CHECK(online.choice == std::vector<size_t>{0, 0, 0, 0, 1, 1});
  CHECK(online.total_seconds() == doctest::Approx(3 + 5 + 4 + 0.5));
  CHECK(planner::bucket_of(4096, o.bucket_edges) == 1);
  CHECK(planner::bucket_of(4095, o.bucket_edges) == 0);
}

TEST_CASE("plan: a layout that wins at short contexts and loses at long ones makes online and offline switch, and static lose") {
  // Qwen3-8B on one node. Many short trajectories keep every engine's batch full: eight TP1
  // engines decode more sequences at once than four TP2 engines and pay no all-reduce. A few long
  // trajectories make the step a critical path of one token per iteration: TP2 iterations are
  // shorter (half the weights to read per GPU).
  const auto s = scenario({"/cluster/nodes=1", "/policy/rollout={\"tp\": 1}", "/policy/train/dp=4",
                           "/workload/max_context_tokens=32768", "/workload/max_response_tokens=32256",
                           "/workload/max_prompt_tokens=512"});
  trace::Trace t;
  auto add_step = [&](int32_t step, int32_t samples, int32_t context) {
    const auto part = growing_trace({context}, samples);
    for (size_t i = 0; i < part.size(); ++i) {
      auto v = part.trajectory(i);
      v.info.step = step;
      t.add(v.info, v.turns);
    }
  };
  for (int32_t step = 0; step < 4; ++step) add_step(step, 4096, 1024);
  for (int32_t step = 4; step < 8; ++step) add_step(step, 64, 32768);
  planner::FeatureOptions fo;
  fo.max_context = s.workload.max_context_tokens;
  const auto features = planner::step_features(t, fo);
  REQUIRE(features.size() == 8);
  CHECK(features[0].max_context == 1024);
  CHECK(features[0].gen_tokens == doctest::Approx(4096 * 512));
  // Each generated token attends to the prompt and the tokens before it: 512 + (0 + ... + 511) / 512.
  CHECK(features[0].decode_kv_tokens == doctest::Approx(512 + 255.5));
  planner::PlanOptions o;
  o.confirm = 0;
  const auto p = planner::make_plan(s, features, nullptr, o);
  const auto& configured = p.rollout_schedules.find("configured");
  const auto& stat = p.rollout_schedules.find("static");
  const auto& online = p.rollout_schedules.find("online");
  const auto& offline = p.rollout_schedules.find("offline");
  CHECK(configured.misfits == 0);
  CHECK(offline.misfits == 0);
  CHECK(online.misfits == 0);
  CHECK(offline.switches >= 1);
  CHECK(online.switches >= 1);
  CHECK(stat.total_seconds() > offline.total_seconds());
  CHECK(online.total_seconds() >= offline.total_seconds() - 1e-9);
  // The adopted (offline) schedule is the policy's, and the simulator replays it without OOM.
  REQUIRE_FALSE(p.policy.schedule.empty());
  input::ScenarioSpec planned = s;
  planned.policy = p.policy;
  rl::RunOptions ro;
  ro.timeline = false;
  ro.max_steps = 8;
  const auto run = rl::simulate_run(planned, t, ro);
  CHECK(run.steps.size() == 8);
  CHECK(run.oom_events.empty());
}

TEST_CASE("plan: to_schedule writes one entry per run of equal layouts") {
  input::RolloutLayout a{4, 1, 1, 0}, b{8, 1, 1, 0};
  input::TrainLayout tr;
  const auto e = planner::to_schedule({0, 4, 8, 12}, {a, a, b, b}, {tr, tr, tr, tr});
  REQUIRE(e.size() == 2);
  CHECK(e[0].first_step == 0);
  CHECK(e[0].last_step == 7);
  CHECK(e[1].first_step == 8);
  CHECK(e[1].last_step == -1);
  CHECK(planner::to_schedule({0, 4}, {a, a}, {tr, tr}).empty());
}

TEST_CASE("dispatch plan: layout-aware keeps samples on their node and stays balanced") {
  const auto s = scenario({"/cluster/nodes=2", "/policy/rollout={\"tp\": 2}", "/policy/train/dp=8", "/policy/train/tp=2"});
  std::vector<int64_t> tokens;
  for (int i = 0; i < 256; ++i) tokens.push_back(1000 + (i * 37) % 3000);
  const auto samples = planner::samples_round_robin(s, s.policy.rollout, tokens);
  const auto d = planner::compare_dispatch(s, s.policy.train, samples, 0);
  REQUIRE(d.plans.size() == 4);
  const auto& aware = d.plans[0];
  const auto& balanced = d.plans[1];
  CHECK(aware.name == "layout-aware");
  CHECK(aware.imbalance <= 1.02 + 1e-9);
  CHECK(aware.cross_node_bytes < 0.1 * balanced.cross_node_bytes);
  CHECK(aware.seconds <= balanced.seconds);
  CHECK(d.plans[3].mode == "centralized");
  CHECK(d.plans[3].seconds > aware.seconds);
  // Every sample has a rank, and the transfers carry every byte that changes GPU.
  for (int64_t r : aware.rank) CHECK((r >= 0 && r < 8));
}

TEST_CASE("analytic: continuous generation prices a step's rollout by throughput, not by its longest trajectory") {
  const std::vector<std::string> base{"/policy/placement=\"disaggregated\"", "/policy/rollout_gpus=8", "/policy/train/dp=4"};
  auto with = [&](const std::string& sync) { return scenario(test::plus(base, "/policy/sync=" + sync)); };
  const auto whole = with(R"({"mode": "async", "staleness": 4})");
  const auto cont = with(R"({"mode": "async", "staleness": 4, "continuous": true})");
  const auto cont1 = with(R"({"mode": "async", "staleness": 1, "continuous": true})");
  // 64 trajectories of 1,000 generated tokens and one of 16,000: the long one sets the whole-step
  // rollout's time; held across steps it sets none.
  planner::StepFeatures f;
  f.trajectories = 64;
  f.gen_tokens = 63 * 1000.0 + 16000.0;
  f.prefill_tokens = 64 * 512.0;
  f.mean_context = 1200;
  f.max_context = 16512;
  f.decode_kv_tokens = 1000;
  f.tail.push_back({16000.0, 0.0});
  const planner::RolloutEstimator ew(whole, whole.policy.rollout), ec(cont, cont.policy.rollout),
      e1(cont1, cont1.policy.rollout);
  const auto cw = ew.cost(f), cc = ec.cost(f), c1 = e1.cost(f);
  REQUIRE(cw.feasible());
  REQUIRE(cc.feasible());
  CHECK(cc.seconds < 0.5 * cw.seconds);
  CHECK(c1.seconds == cw.seconds);  // a staleness of 1 holds one step: the whole-step rollout
  // Keeping the KV across the update spares the running requests' second prefill.
  const auto keep = with(R"({"mode": "async", "staleness": 4, "continuous": true, "kv_cache": "keep"})");
  const planner::RolloutEstimator ek(keep, keep.policy.rollout);
  CHECK(ek.cost(f).seconds < cc.seconds);
}

TEST_CASE("analytic: preparation passes are costed in the policy's layouts for them") {
  const auto own = scenario({});
  const auto separate = scenario({"/policy/ref_logprob={\"tp\": 1, \"dp\": 16}"});
  planner::StepFeatures f;
  f.trajectories = 512;
  f.mean_context = 8192;
  f.max_context = 8192;
  const planner::TrainEstimator a(own, own.policy.train), b(separate, separate.policy.train);
  const auto ca = a.cost(f), cb = b.cost(f);
  REQUIRE(ca.feasible());
  REQUIRE(cb.feasible());
  // Only the reference pass differs, by what the simulator's pass functions say.
  const double own_ref = rl::forward_pass_seconds(own, own.model, rl::pass_layout(own.policy.train, std::nullopt), 512, 8192);
  const double tp1_ref =
      rl::forward_pass_seconds(own, own.model, rl::pass_layout(own.policy.train, separate.policy.ref_logprob), 512, 8192);
  CHECK(own_ref != tp1_ref);
  CHECK(cb.seconds - ca.seconds == doctest::Approx(tp1_ref - own_ref));
}

TEST_CASE("analytic: ZeRO-3 ranks go through their micro-batches in step, as the simulator runs them") {
  // Two data-parallel ranks of tp 8, one sequence a micro-batch, one mini-batch. Only the
  // samples' split differs between the steps below (the lengths the costs are priced at are the
  // same), so the costs differ only by the mini-batch's skew times the training pipeline.
  const auto s = scenario({"/workload/mini_batches=1"});
  input::TrainLayout l = s.policy.train;
  l.tp = 8;
  l.dp = 2;
  l.max_tokens_per_gpu = 0;
  l.micro_batch = 1;
  const auto features = [](int64_t step, std::vector<int64_t> contexts) {
    planner::StepFeatures f;
    f.step = step;
    f.trajectories = static_cast<int64_t>(contexts.size());
    f.mean_context = f.attention_context = 4050;
    f.max_context = 8192;
    f.contexts = std::move(contexts);
    return f;
  };
  // Balanced longest first: equal {4050, 4050} each; A {8000, 100} and {4100, 4000} (8,100
  // tokens each); B {6000, 2000} and {5000, 3100} (8,000 and 8,100).
  const auto equal = features(1, {4050, 4050, 4050, 4050}), a = features(2, {8000, 4100, 4000, 100}),
             b = features(3, {6000, 5000, 3100, 2000});
  const auto costs = [&](int zero) {
    l.zero = zero;
    const planner::TrainEstimator te(s, l);
    REQUIRE(te.problem().empty());
    const auto e = te.cost(equal), ca = te.cost(a), cb = te.cost(b);
    REQUIRE(e.feasible());
    return std::array<double, 2>{ca.seconds - e.seconds, cb.seconds - e.seconds};
  };
  // Gradients reduced once a step: the busiest rank's tokens over the mean's. A's ranks are
  // even; B's busiest is 8,100 / 8,050.
  const auto once = costs(1);
  CHECK(once[0] == doctest::Approx(0).scale(1));
  CHECK(once[1] > 0);
  // In step, each micro-batch index takes its heaviest rank's: A 8000 + 4000 = 12,000, B 6000 +
  // 3100 = 9,100, over the mean rank's 8,100 and 8,050.
  const auto in_step = costs(3);
  CHECK(in_step[0] > 0);
  CHECK(in_step[0] / in_step[1] == doctest::Approx((12000.0 / 8100 - 1) / (9100.0 / 8050 - 1)));
}

TEST_CASE("planner: the adopted dispatch plan weighs its dispatch against the imbalance it leaves") {
  // Layout-aware: 0.1 s of dispatch, busiest rank 5% over the mean; balanced: 0.5 s, none.
  planner::DispatchComparison c;
  planner::DispatchPlanResult la, bal, rr, cen;
  la.kind = planner::DispatchPlanKind::layout_aware;
  la.mode = "decentralized";
  la.seconds = 0.1;
  la.imbalance = 1.05;
  bal.kind = planner::DispatchPlanKind::balanced;
  bal.mode = "decentralized";
  bal.seconds = 0.5;
  rr = bal;
  rr.kind = planner::DispatchPlanKind::round_robin;
  rr.seconds = 0.0;  // never adopted, however cheap
  cen.kind = planner::DispatchPlanKind::centralized;
  cen.mode = "centralized";
  cen.seconds = 2;
  c.plans = {la, bal, rr, cen};
  input::PolicySpec p;
  p.dispatch = input::DispatchMode::decentralized;
  // 10 s of passes: 0.1 + 10.5 > 0.5 + 10; 1 s: 0.1 + 1.05 < 0.5 + 1.
  CHECK(planner::best_adoptable_plan(c, p, 10) == 1);
  CHECK(planner::best_adoptable_plan(c, p, 1) == 0);
  planner::adopt_dispatch_plan(p, planner::DispatchPlanKind::layout_aware);
  CHECK(p.batch_assignment == input::BatchAssignment::layout_aware);
  // A centralized policy can only run the centralized plan; a transfer dock none of them.
  p.dispatch = input::DispatchMode::centralized;
  CHECK(planner::best_adoptable_plan(c, p, 1) == 3);
  p.dispatch = input::DispatchMode::transfer_dock;
  CHECK(planner::best_adoptable_plan(c, p, 1) == -1);
  // On a tie the policy's own assignment stays.
  c.plans = {la, la};
  c.plans[1].kind = planner::DispatchPlanKind::balanced;
  p.dispatch = input::DispatchMode::decentralized;
  p.batch_assignment = input::BatchAssignment::balanced;
  CHECK(planner::best_adoptable_plan(c, p, 1) == 1);
}

TEST_CASE("plan: a rollout layout that thrashes its KV cache when simulated is infeasible, with the reason") {
  // The default scenario with engines allowed 18% of their GPUs' memory: confirmation runs each
  // candidate on the trace, and those whose preemptions recompute more than 10% of a step's
  // tokens are refused there.
  const auto s = scenario({"/workload/engine/gpu_memory_utilization=0.18"});
  input::Diagnostics diag;
  auto t = rl::load_scenario_trace(s, "", diag);
  REQUIRE(t);
  planner::FeatureOptions fo;
  fo.max_context = s.workload.max_context_tokens;
  const auto features = planner::step_features(*t, fo);
  planner::PlanOptions o;
  o.confirm = 4;
  const auto p = planner::make_plan(s, features, &*t, o);
  int thrashing = 0;
  for (const auto& c : p.rollout)
    if (c.misfit.find("preemptions recompute") != std::string::npos) ++thrashing;
  CHECK(thrashing > 0);
}

namespace {
// A feasible, priced capacity result of `hours` for the N steps.
planner::CapacityResult make(double hours, double usd) {
  planner::CapacityResult r;
  r.feasible = true;
  r.total_time_s = hours * 3600;
  r.cost_usd = usd;
  return r;
}
}  // namespace

TEST_CASE("capacity: shares that build the same split are one result, its recommendation kept") {
  const auto split = [](double share, int64_t rollout_gpus, int64_t gpus) {
    planner::CapacityResult r = make(10, 100);
    r.config.gpu = "h100-sxm";
    r.config.placement = "disaggregated";
    r.config.rollout_share = share;
    r.gpus = gpus;
    r.gpus_per_node = 8;
    r.rollout_gpus = rollout_gpus;
    return r;
  };
  // 0.6 and 0.7 of 32 GPUs both build 16 (whole nodes); 0.75 builds 24; 0.6 of 64 builds 32.
  std::vector<planner::CapacityResult> results = {split(0.6, 16, 32), split(0.7, 16, 32), split(0.75, 24, 32),
                                                  split(0.6, 32, 64)};
  results[1].confirmed = true;
  results[1].simulated_total_s = 11 * 3600.0;
  planner::Recommendation rec;
  rec.fastest = 1;
  rec.cheapest_in_deadline = 3;
  planner::fold_same_builds(results, rec);
  REQUIRE(results.size() == 3);
  CHECK(results[0].config.rollout_share == 0.6);
  CHECK(results[0].same_shares == std::vector<double>{0.7});
  CHECK(results[0].confirmed);  // the confirmation its twin had
  CHECK(*results[0].simulated_total_s == 11 * 3600.0);
  CHECK(results[1].same_shares.empty());
  CHECK(rec.fastest == 0u);
  CHECK(rec.cheapest_in_deadline == 2u);
  CHECK_FALSE(rec.fastest_in_budget);
}

TEST_CASE("capacity: recommendations are the event simulator's, confirmed, re-ranked and marked") {
  // Four priced configurations: a (cheapest, fast on paper, but its simulation takes 30% longer),
  // b, c and d, one infeasible; the frontier is a, b, c.
  std::vector<planner::CapacityResult> results = {make(10, 100), make(12, 150), make(6, 300), make(20, 400)};
  planner::CapacityResult bad;
  bad.reason = "does not fit";
  results.push_back(bad);
  planner::mark_pareto(results);
  CHECK(results[0].pareto);
  CHECK_FALSE(results[3].pareto);
  int runs = 0;
  const planner::Simulate simulate = [&](const planner::CapacityResult& r) -> std::optional<double> {
    ++runs;
    if (r.total_time_s == 10 * 3600) return 13 * 3600.0;  // a: 30% slower than its analytic run
    if (r.total_time_s == 20 * 3600) return std::nullopt;  // d: an OOM the analytic run missed
    return r.total_time_s * 1.02;
  };
  const auto rec = planner::confirm_and_recommend(results, 12 * 3600.0, 320.0, simulate);
  // Deadline 12 h: a would be cheapest by its analytic 10 h, but simulated it takes 13 h: b (12.24 h)
  // misses too, so the cheapest confirmed within the deadline is c.
  REQUIRE(rec.cheapest_in_deadline);
  CHECK(*rec.cheapest_in_deadline == 2);
  // Budget $320: c's simulated cost 306 is within it and it is the fastest.
  REQUIRE(rec.fastest_in_budget);
  CHECK(*rec.fastest_in_budget == 2);
  CHECK(results[0].confirmed);
  CHECK(results[0].beyond_tolerance);  // 30% > 10%
  CHECK(*results[0].simulated_total_s == 13 * 3600.0);
  CHECK_FALSE(results[1].beyond_tolerance);  // 2%
  CHECK_FALSE(results[4].confirmed);         // infeasible: never simulated
  CHECK(runs == 3);                          // a, b, c once each (d is neither on the frontier nor within a limit)
  // With neither a deadline nor a budget: the fastest by simulation among the fastest on paper; d's
  // OOM marks it.
  for (auto& r : results) r.confirmed = false;
  const auto any = planner::confirm_and_recommend(results, std::nullopt, std::nullopt, simulate);
  REQUIRE(any.fastest);
  CHECK(*any.fastest == 2);
  CHECK(results[3].confirmed);
  CHECK_FALSE(results[3].simulated_total_s);
  CHECK(results[3].beyond_tolerance);
}

TEST_CASE("space: offload is searched where the training states do not fit without it, and only there") {
  const auto count_offload = [](const input::ScenarioSpec& s, bool& fits) {
    size_t n = 0;
    fits = false;
    for (const auto& c : planner::train_space(s)) {
      if (!c.layout.offload_optimizer) continue;
      ++n;
      CHECK(c.layout.zero == 3);
      CHECK(c.layout.recompute == input::Recompute::full);
      fits = fits || rl::train_memory_at(s, c.layout, c.layout.dp, 1024).fits();
    }
    return n;
  };
  bool fits = false;
  // Qwen2.5-72B on one node of 8 H100: 72e9 x 16 bytes of states over 8 GPUs is 144 GB each.
  const auto big = scenario({"/model=\"qwen2.5-72b\"", "/cluster/nodes=1", "/policy/train/dp=4"});
  CHECK(count_offload(big, fits) > 0);
  CHECK(fits);  // and some offloaded layout holds them
  // Qwen3-8B fits without: no offload candidates lengthen its search.
  CHECK(count_offload(scenario({}), fits) == 0);
}

TEST_CASE("analytic: a layout whose offloaded states do not fit the node's host memory is infeasible, with the reason") {
  // Qwen2.5-72B on one node of 8 H100 with its optimizer states offloaded: 12 bytes a parameter
  // over the node's 8 ranks is about 0.8 TiB of host memory, and the sleeping TP2 engines' bf16
  // weights 4 x 145 GB more.
  const auto s = scenario({"/model=\"qwen2.5-72b\"", "/cluster/nodes=1", "/policy/train/dp=4"});
  input::TrainLayout l = s.policy.train;
  l.zero = 3;
  l.recompute = input::Recompute::full;
  l.offload_optimizer = true;
  planner::StepFeatures f;
  f.trajectories = 512;
  f.mean_context = 1024;
  f.max_context = 1024;
  const auto host = rl::host_memory_at(s, s.policy.rollout, l);
  REQUIRE(host);
  const double params = model::count_params(s.model).total;
  CHECK(host->get("offloaded optimizer states") == doctest::Approx(12.0 * params).epsilon(0.01));
  CHECK(host->get("sleeping engines' weights") == doctest::Approx(8 * 2.0 * params / 2));
  CHECK(host->fits());  // 2 TiB of the DGX H100
  CHECK(planner::TrainEstimator(s, l).cost(f).feasible());
  auto small = s;
  small.cluster.host_memory_bytes = 512.0 * (1 << 30);
  const auto cost = planner::TrainEstimator(small, l).cost(f);
  CHECK(!cost.feasible());
  CHECK(cost.infeasible.find("GiB of host memory per node (offloaded optimizer states") != std::string::npos);
  // Unknown host memory is not checked.
  small.cluster.host_memory_bytes = 0;
  CHECK(!rl::host_memory_at(small, small.policy.rollout, l));
  CHECK(planner::TrainEstimator(small, l).cost(f).feasible());
}

TEST_CASE("plan: the preparation passes take the fastest tp x dp layout that fits, the policy's own where it gives one") {
  // Qwen3-8B trained at tp2 x dp8: a forward pass keeps no optimizer state, and runs faster at
  // tp1 x dp16 (no all-reduces, GEMMs twice as wide).
  const auto s = scenario({"/steps=2"});
  const auto f = features_of(s);
  int64_t evaluations = 0;
  const auto choices = planner::choose_pass_layouts(s, f, evaluations);
  REQUIRE(choices.size() == 2);  // old and reference log-probs; no critic
  CHECK(evaluations > 0);
  for (const auto& c : choices) {
    CHECK(c.searched);
    REQUIRE(c.chosen);
    CHECK(c.chosen->tp * c.chosen->dp == s.train_gpus());
    CHECK(c.chosen_s < c.training_layout_s);
    // What the simulator's pass functions give for the chosen layout, step by step.
    double expected = 0;
    for (const auto& step : f)
      expected += rl::forward_pass_seconds(s, s.model, rl::pass_layout(s.policy.train, c.chosen), step.trajectories,
                                           std::llround(step.mean_context), false, std::llround(step.attention_context));
    CHECK(c.chosen_s == doctest::Approx(expected));
  }
  // The plan adopts them, and its policy replays with them.
  planner::PlanOptions o;
  o.confirm = 0;
  const auto p = planner::make_plan(s, f, nullptr, o);
  REQUIRE(p.policy.old_logprob);
  CHECK(*p.policy.old_logprob == *choices.front().chosen);
  // Chosen beside the adopted training layouts: it fits beside each, at every step.
  for (const auto& step : f)
    CHECK(rl::forward_memory_at(s, s.model, rl::pass_layout(rl::layouts_at(p.policy, step.step).train, p.policy.old_logprob),
                                step.max_context)
              .fits());
  // A larger model whose configured training shards its weights (ZeRO-3): a pass layout chosen
  // beside that one must not rule out the plan's other training layouts, nor OOM in its replay.
  const auto big = scenario({"/steps=1", "/model=\"qwen3-32b\"", "/policy/train/zero=3"});
  const auto big_f = features_of(big);
  const auto big_plan = planner::make_plan(big, big_f, nullptr, o);
  for (const auto& step : big_f)
    CHECK(rl::forward_memory_at(big, big.model,
                                rl::pass_layout(rl::layouts_at(big_plan.policy, step.step).train, big_plan.policy.old_logprob),
                                step.max_context)
              .fits());
  // Reference weights swapped in from host memory: each candidate of the reference pass also
  // pays the copies a rank of its layout makes.
  const auto swapped = scenario({"/steps=2", "/policy/reference_weights=\"swapped\""});
  const auto with_swap = planner::choose_pass_layouts(swapped, f, evaluations);
  REQUIRE(with_swap.size() == 2);
  CHECK(with_swap[0].chosen_s == doctest::Approx(choices[0].chosen_s));  // old log-probs: unchanged
  double swap = 0;
  for (size_t i = 0; i < f.size(); ++i)
    swap += rl::reference_swap_seconds(swapped, rl::pass_layout(swapped.policy.train, with_swap[1].chosen));
  CHECK(swap > 0);
  CHECK(with_swap[1].chosen_s >= choices[1].chosen_s + swap - 1e-9);
  // A layout the policy gives is kept, not searched.
  const auto fixed = scenario({"/steps=2", "/policy/old_logprob={\"tp\": 2, \"dp\": 8}"});
  const auto kept = planner::choose_pass_layouts(fixed, features_of(fixed), evaluations);
  CHECK(!kept.front().searched);
  CHECK(kept.front().chosen->tp == 2);
  // A pass the workload does not run is not planned.
  const auto rollout_logprobs = scenario({"/steps=2", "/workload/use_rollout_log_probs=true"});
  const auto only_ref = planner::choose_pass_layouts(rollout_logprobs, features_of(rollout_logprobs), evaluations);
  REQUIRE(only_ref.size() == 1);
  CHECK(only_ref.front().stage == "ref_logprob");
}

TEST_CASE("analytic run: host memory is checked for each step's pair of rollout and training layouts") {
  // Colocated engines asleep at level 1 keep each GPU's shard of the weights in host memory: 8
  // GPUs x 16.4 GB at tp1 (122 GiB), half that at the configured tp2. A schedule switching to tp1
  // does not fit 100 GiB from that step on, though the configured pair does.
  // (ZeRO-3: the state the weight sync swaps out during the rollout, 8 GB a rank, stays below.)
  const auto tight = scenario({"/steps=3", "/cluster/host_memory=\"100 GiB\"", "/policy/train/zero=3",
                               "/policy/schedule=[{\"steps\": \"16:\", \"rollout\": {\"tp\": 1}}]"});
  CHECK(rl::host_memory_at(tight, tight.policy.rollout, tight.policy.train)->fits());
  CHECK(!planner::analytic_run(tight, features_of(tight)));
  // The training estimator checks each step beside that step's rollout layout.
  const auto tight_f = features_of(tight);
  REQUIRE(tight_f.size() >= 2);
  REQUIRE(tight_f[1].step == 16);
  const planner::TrainEstimator te(tight, tight.policy.train);
  CHECK(te.cost(tight_f[0]).feasible());
  CHECK(te.cost(tight_f[1]).infeasible.find("GiB of host memory per node (sleeping engines' weights") != std::string::npos);
  const auto roomy = scenario({"/steps=3", "/cluster/host_memory=\"2 TiB\"", "/policy/train/zero=3",
                               "/policy/schedule=[{\"steps\": \"16:\", \"rollout\": {\"tp\": 1}}]"});
  CHECK(planner::analytic_run(roomy, features_of(roomy)));
}

TEST_CASE("analytic run: a training state swapped to-cpu costs what the simulator charges, its way back with the training") {
  const auto pinned = scenario({"/steps=2", "/policy/placement=\"colocated\""});
  const auto cpu = scenario({"/steps=2", "/policy/placement=\"colocated\"", "/policy/weight_sync={\"state\": \"to-cpu\"}"});
  const auto a = planner::analytic_run(pinned, features_of(pinned)), b = planner::analytic_run(cpu, features_of(cpu));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->stages.size() == b->stages.size());
  const rl::StateSwapIn in = rl::state_swap_in(cpu, cpu.policy.train);
  CHECK(in.weights_s > 0);
  CHECK(in.optimizer_s > 0);
  for (size_t i = 0; i < a->stages.size(); ++i) {
    CHECK(b->stages[i].train - a->stages[i].train == doctest::Approx(in.weights_s + in.optimizer_s));
    CHECK(b->stages[i].weight_sync - a->stages[i].weight_sync ==
          doctest::Approx(rl::refit_seconds(cpu, cpu.policy.rollout, cpu.policy.train) -
                          rl::refit_seconds(pinned, pinned.policy.rollout, pinned.policy.train)));
  }
}

TEST_CASE("capacity: near misses on paper never crowd out a configuration within the limit") {
  // Four cheaper configurations just beyond a 10 h deadline (within the tolerance) and one well
  // within it; every simulation equals its analytic time. The one within must be recommended.
  std::vector<planner::CapacityResult> late = {make(10.5, 50), make(10.6, 60), make(10.7, 70), make(10.8, 80), make(9, 100)};
  planner::mark_pareto(late);
  const planner::Simulate exact = [](const planner::CapacityResult& r) -> std::optional<double> { return r.total_time_s; };
  const auto in_time = planner::confirm_and_recommend(late, 10 * 3600.0, std::nullopt, exact);
  REQUIRE(in_time.cheapest_in_deadline);
  CHECK(*in_time.cheapest_in_deadline == 4);
  // The same for a budget: four faster ones just over $100, one within it.
  std::vector<planner::CapacityResult> dear = {make(1, 105), make(2, 106), make(3, 107), make(4, 108), make(5, 90)};
  planner::mark_pareto(dear);
  const auto in_budget = planner::confirm_and_recommend(dear, std::nullopt, 100.0, exact);
  REQUIRE(in_budget.fastest_in_budget);
  CHECK(*in_budget.fastest_in_budget == 4);
  // A simulation that throws is rethrown to the caller (on any thread count), not a crash.
  const planner::Simulate broken = [](const planner::CapacityResult&) -> std::optional<double> {
    throw std::runtime_error("broken");
  };
  for (auto& r : dear) r.confirmed = false;
  CHECK_THROWS_AS(planner::confirm_and_recommend(dear, std::nullopt, 100.0, broken, 2), std::runtime_error);
}

TEST_CASE("space: interleaved candidates whose fixed-size micro-batches are no multiple of pp are pruned, with the reason") {
  // No token budget: 512 samples in 4 mini-batches, 3 sequences a micro-batch.
  const auto s = scenario({"/policy/train/max_tokens_per_gpu=null", "/policy/train/micro_batch=3"});
  int pruned = 0, kept = 0;
  for (const auto& c : planner::train_space(s)) {
    const auto& l = c.layout;
    if (l.vpp <= 1) continue;
    const int64_t per_rank = 512 / (4 * l.dp), count = (per_rank + 2) / 3;
    const bool by_vpp = c.pruned.find("which Megatron's interleaved schedule requires") != std::string::npos;
    CAPTURE(c.pruned);
    CHECK(by_vpp == (count % l.pp != 0 && c.pruned.rfind("vpp", 0) == 0));
    if (by_vpp) ++pruned;
    else if (c.pruned.empty()) ++kept;
  }
  CHECK(pruned > 0);
  CHECK(kept > 0);
  // With a token budget the simulator makes the counts a multiple: none is pruned for it.
  for (const auto& c : planner::train_space(scenario({})))
    CHECK(c.pruned.find("interleaved schedule requires") == std::string::npos);
}

TEST_CASE("space: a dp that a mini-batch does not split over is pruned, unless packed into token budgets") {
  // 8 prompts x 4 samples in 4 mini-batches: 8 trajectories each, fewer than dp = 16.
  const auto s = scenario({"/workload/prompts_per_step=8", "/workload/samples_per_prompt=4", "/workload/mini_batches=4"});
  int refused = 0, kept = 0;
  for (const auto& c : planner::train_space(s)) {
    CAPTURE(c.pruned);
    const bool by_dp = c.pruned.find("does not split evenly over dp") != std::string::npos;
    CHECK(by_dp == (8 % c.layout.dp != 0 && c.layout.gpus() == 16));
    if (by_dp) ++refused;
    else if (c.pruned.empty()) ++kept;
  }
  CHECK(refused > 0);
  CHECK(kept > 0);
  // 24 trajectories over dp = 16 under fit packing into a budget: AReaL's uneven split, kept.
  const auto fit = scenario({"/workload/prompts_per_step=24", "/workload/samples_per_prompt=4", "/workload/mini_batches=4",
                             "/policy/train/packing=\"fit\""});
  bool dp16 = false;
  for (const auto& c : planner::train_space(fit))
    if (c.layout.dp == 16 && c.pruned.empty()) dp16 = true;
  CHECK(dp16);
}

TEST_CASE("space: every candidate runs the scenario's kernels, whatever its ZeRO stage") {
  // ZeRO-1 by default: Megatron's fused kernels, for the ZeRO-3 candidates too.
  int zero3 = 0;
  for (const auto& c : planner::train_space(scenario({}))) {
    CHECK_FALSE(c.layout.eager_kernels());
    if (c.layout.zero >= 3) ++zero3;
  }
  CHECK(zero3 > 0);
  // A ZeRO-3 (FSDP) scenario trains a Hugging Face model in eager PyTorch: its ZeRO-1 candidates too.
  int zero1 = 0;
  for (const auto& c : planner::train_space(scenario({"/policy/train/zero=3"}))) {
    CHECK(c.layout.eager_kernels());
    if (c.layout.zero < 3) ++zero1;
  }
  CHECK(zero1 > 0);
  // Fused kernels said outright stay so under ZeRO-3.
  for (const auto& c : planner::train_space(scenario({"/policy/train/zero=3", "/policy/train/kernels=\"fused\""})))
    CHECK_FALSE(c.layout.eager_kernels());
  // So does a schedule entry that moves to ZeRO-3, unless it names its kernels.
  const auto later = scenario({"/policy/schedule=[{\"steps\": \"2:\", \"train\": {\"zero\": 3}}]"});
  REQUIRE(later.policy.schedule.size() == 1);
  CHECK_FALSE(later.policy.schedule[0].train->eager_kernels());
  const auto named = scenario({"/policy/schedule=[{\"steps\": \"2:\", \"train\": {\"zero\": 3, \"kernels\": \"eager\"}}]"});
  CHECK(named.policy.schedule[0].train->eager_kernels());
}

TEST_CASE("capacity: a GPU that comes in NVLink domains of several hosts runs in its system's domains") {
  input::Diagnostics diag;
  input::Value document;
  const auto base = input::load_scenario("default", {}, diag, &document);
  REQUIRE(base);
  // The scenario's 8-GPU nodes, counted as the sweep counts them; 128 GPUs as two domains of 64.
  const std::vector<std::pair<int64_t, int64_t>> shapes{{2, 16}, {4, 32}, {16, 64}};  // nodes -> GPUs a domain
  for (const auto& [nodes, domain] : shapes) {
    CAPTURE(nodes);
    input::ScenarioSpec s;
    REQUIRE(planner::scenario_on(*base, document, {"gb200", nodes, "colocated", 0}, s).empty());
    CHECK(s.cluster.gpu.name == "gb200");
    CHECK(s.cluster.total_gpus() == 8 * nodes);
    CHECK(s.cluster.gpus_per_node == domain);
    CHECK(s.cluster.host_gpus() == 4);
    // 480 GB of a Grace CPU for each two GPUs, the system's.
    CHECK(s.cluster.host_memory_bytes == doctest::Approx(240e9 * static_cast<double>(domain)));
    CHECK(s.cluster.pools.size() == base->cluster.pools.size());  // the scenario's tool pools stay
  }
  // A disaggregated half in whole hosts of 4, within one domain of 8.
  input::ScenarioSpec d;
  REQUIRE(planner::scenario_on(*base, document, {"gb200", 1, "disaggregated", 0.5}, d).empty());
  CHECK(d.cluster.gpus_per_node == 8);
  CHECK(d.policy.rollout_gpus == 4);
  // Sizes that are no power of two take the domain that holds the largest power-of-two group:
  // 80 GPUs as five of 16 (not two of 40, which a group of 16 would straddle), 96 as three of 32,
  // 72 as one rack.
  input::Value wide;
  const auto bigger = input::load_scenario("default", {"/workload/prompts_per_step=360"}, diag, &wide);
  REQUIRE(bigger);
  for (const auto& [nodes, domain] : std::vector<std::pair<int64_t, int64_t>>{{10, 16}, {12, 32}, {9, 72}}) {
    CAPTURE(nodes);
    input::ScenarioSpec s;
    const std::string why = planner::scenario_on(*bigger, wide, {"gb200", nodes, "colocated", 0}, s);
    CAPTURE(why);
    REQUIRE(why.empty());
    CHECK(s.cluster.gpus_per_node == domain);
  }
  // A GPU of 8-GPU servers keeps the scenario's 8-GPU nodes and their network, unshaped.
  input::Value slow_doc;
  const auto slow = input::load_scenario("default", {"/cluster/network/nic_bandwidth=\"100 Gbps\""}, diag, &slow_doc);
  REQUIRE(slow);
  input::ScenarioSpec a;
  std::string shaped_by = "unset";
  REQUIRE(planner::scenario_on(*slow, slow_doc, {"a100-sxm-80g", 2, "colocated", 0}, a, &shaped_by).empty());
  CHECK(shaped_by == "unset");
  CHECK(a.cluster.gpus_per_node == 8);
  CHECK(a.cluster.nic_bandwidth_bytes_per_s == doctest::Approx(slow->cluster.nic_bandwidth_bytes_per_s));
  // A GB200's configurations say which system shaped them.
  input::ScenarioSpec g;
  REQUIRE(planner::scenario_on(*base, document, {"gb200", 2, "colocated", 0}, g, &shaped_by).empty());
  CHECK(shaped_by == "gb200-nvl72");
}

TEST_CASE("capacity: an 8-GPU server's GPU in a scenario of racks runs in its own servers") {
  input::Diagnostics diag;
  input::Value document;
  const auto racks = input::load_scenario("default",
                                          {"/cluster={\"extends\": \"gb200-nvl72\", \"nodes\": 1}", "/policy/train/dp=36",
                                           "/workload/prompts_per_step=72", "/workload/mini_batches=1"},
                                          diag, &document);
  CAPTURE(input::format_all(diag));
  REQUIRE(racks);
  REQUIRE(racks->cluster.gpus_per_node == 72);
  input::ScenarioSpec h;
  std::string shaped_by;
  REQUIRE(planner::scenario_on(*racks, document, {"h100-sxm", 1, "colocated", 0}, h, &shaped_by).empty());
  CHECK(shaped_by == "dgx-h100");
  CHECK(h.cluster.gpu.name == "h100-sxm");
  CHECK(h.cluster.gpus_per_node == 8);  // nine DGX H100s, not one NVLink domain of 72
  CHECK(h.cluster.nodes == 9);
  CHECK(h.cluster.host_gpus() == 8);
  CHECK(h.cluster.host_memory_bytes == doctest::Approx(2.0 * 1024 * 1024 * 1024 * 1024));  // the DGX's 2 TiB
  // A GPU that names no system stays in the racks' domains.
  input::ScenarioSpec x;
  shaped_by.clear();
  REQUIRE(planner::scenario_on(*racks, document, {"h800-sxm", 1, "colocated", 0}, x, &shaped_by).empty());
  CHECK(shaped_by.empty());
  CHECK(x.cluster.gpus_per_node == 72);
}

TEST_CASE("space: the search's groups that would straddle nodes are pruned, the scenario's own layout is not") {
  // Two 72-GPU nodes (GB200 racks): tensor-parallel groups and engines of 16 and 32 straddle them.
  const auto s = scenario({"/cluster/gpus_per_node=72", "/cluster/nodes=2", "/policy/train/dp=72", "/workload/prompts_per_step=144",
                           "/workload/mini_batches=1"});
  const auto train = planner::train_space(s);
  int straddling = 0;
  for (size_t i = 0; i < train.size(); ++i) {
    CAPTURE(train[i].pruned);
    const bool pruned = train[i].pruned.find("straddle nodes of 72") != std::string::npos;
    CHECK(pruned == (i > 0 && 72 % train[i].layout.tp != 0));
    straddling += pruned;
  }
  CHECK(straddling > 0);
  const auto rollouts = planner::rollout_space(s);
  straddling = 0;
  for (size_t i = 1; i < rollouts.size(); ++i) {
    const int64_t g = rollouts[i].layout.gpus_per_engine();
    const bool pruned = rollouts[i].pruned.find("engines straddle nodes of 72") != std::string::npos;
    CHECK(pruned == (144 % g == 0 && 72 % g != 0 && g % 72 != 0));
    straddling += pruned;
  }
  CHECK(straddling > 0);
}
