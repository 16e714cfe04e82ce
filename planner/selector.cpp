#include "planner/selector.h"

#include <algorithm>
#include <limits>

#include "sim/core/assert.h"

namespace arlsim::planner {

namespace {

// Steps that do not fit count before any amount of time: a schedule with fewer of them wins.
constexpr double kMisfitPenalty = 1e12;

double step_cost(const CostTable& t, size_t step, size_t c) { return t.fits(step, c) ? t.cost[step][c] : kMisfitPenalty; }

}  // namespace

Schedule evaluate(const CostTable& t, std::vector<size_t> choice, std::string selector) {
  ARLSIM_ASSERT(choice.size() == t.steps());
  Schedule s;
  s.selector = std::move(selector);
  for (size_t i = 0; i < choice.size(); ++i) {
    if (t.fits(i, choice[i])) s.step_seconds += t.cost[i][choice[i]];
    else ++s.misfits;
    if (i > 0 && choice[i] != choice[i - 1]) {
      ++s.switches;
      s.switch_seconds += t.switch_cost(choice[i - 1], choice[i]);
    }
  }
  s.choice = std::move(choice);
  return s;
}

Schedule select_static(const CostTable& t) {
  size_t best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < t.candidates(); ++c) {
    double total = 0;
    for (size_t i = 0; i < t.steps(); ++i) total += step_cost(t, i, c);
    if (total < best_cost) {
      best_cost = total;
      best = c;
    }
  }
  return evaluate(t, std::vector<size_t>(t.steps(), best), std::string(selectors().name(SelectorKind::static_layout)));
}

Schedule select_offline(const CostTable& t) {
  const size_t n = t.steps(), k = t.candidates();
  if (n == 0 || k == 0) return evaluate(t, {}, std::string(selectors().name(SelectorKind::offline)));
  // best[i][c]: least cost of steps 0..i ending on c; from[i][c]: the candidate of step i - 1.
  std::vector<std::vector<double>> best(n, std::vector<double>(k));
  std::vector<std::vector<size_t>> from(n, std::vector<size_t>(k, 0));
  for (size_t c = 0; c < k; ++c) best[0][c] = step_cost(t, 0, c);
  std::vector<std::vector<double>> switching(k, std::vector<double>(k));
  for (size_t a = 0; a < k; ++a)
    for (size_t b = 0; b < k; ++b) switching[a][b] = a == b ? 0 : t.switch_cost(a, b);
  for (size_t i = 1; i < n; ++i)
    for (size_t c = 0; c < k; ++c) {
      double least = std::numeric_limits<double>::infinity();
      for (size_t p = 0; p < k; ++p) {
        const double v = best[i - 1][p] + switching[p][c];
        if (v < least) {
          least = v;
          from[i][c] = p;
        }
      }
      best[i][c] = least + step_cost(t, i, c);
    }
  std::vector<size_t> choice(n);
  choice[n - 1] = static_cast<size_t>(std::min_element(best[n - 1].begin(), best[n - 1].end()) - best[n - 1].begin());
  for (size_t i = n - 1; i > 0; --i) choice[i - 1] = from[i][choice[i]];
  return evaluate(t, std::move(choice), std::string(selectors().name(SelectorKind::offline)));
}

size_t bucket_of(double context, const std::vector<double>& edges) {
  return static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), context) - edges.begin());
}

Schedule select_online(const CostTable& t, const OnlineOptions& o) {
  ARLSIM_ASSERT(o.step_context.size() == t.steps() && o.best_per_bucket.size() == o.bucket_edges.size() + 1);
  std::vector<size_t> choice(t.steps());
  size_t current = o.initial;
  size_t bucket = static_cast<size_t>(-1);
  for (size_t i = 0; i < t.steps(); ++i) {
    if (i > 0) {
      // The running average of the steps already done decides the layout of the next rollout.
      const size_t first = i > static_cast<size_t>(o.window) ? i - static_cast<size_t>(o.window) : 0;
      double sum = 0;
      for (size_t j = first; j < i; ++j) sum += o.step_context[j];
      const size_t b = bucket_of(sum / static_cast<double>(i - first), o.bucket_edges);
      if (b != bucket) {
        bucket = b;
        current = o.best_per_bucket[b];
      }
    }
    choice[i] = current;
  }
  return evaluate(t, std::move(choice), std::string(selectors().name(SelectorKind::online)));
}

const parse::Registry<SelectorKind>& selectors() {
  static const parse::Registry<SelectorKind> r{
      "selector",
      {{"static", "the single layout with the fewest out-of-memory steps, then the least total time over the trace",
        SelectorKind::static_layout},
       {"online",
        "EARL: best layout per context range measured up front; switch before a rollout when the running average "
        "context enters a new range (uses only the past)",
        SelectorKind::online},
       {"offline",
        "the optimal layout schedule over the whole trace: dynamic programming over (step, layout) with switch costs "
        "(engine relaunch, weight reshard)",
        SelectorKind::offline}}};
  return r;
}

}  // namespace arlsim::planner
