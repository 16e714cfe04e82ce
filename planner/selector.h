// The parallelism selector over a trace (EARL, arXiv 2510.05943, "Parallelism Selector", and
// better). Given, for every step and candidate layout, the step's cost on that layout (or that it
// does not fit), and what switching between two layouts costs, it returns a layout per step:
//
// - static: the one layout with the fewest steps that do not fit, then the least total time;
// - online: EARL's rule. Before the run it measures every candidate on probes of each context
//   range (bucket) and keeps the best per bucket; before each rollout it buckets the running
//   average context of the steps already done and switches when that bucket changes. It uses
//   only the past, so it lags growth by a step or more;
// - offline: the optimal schedule by dynamic programming over (step, layout): the least total of
//   step costs plus switch costs, steps that do not fit counted first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>
#include "sim/parse/registry.h"

namespace arlsim::planner {

// cost[step][candidate] in seconds; a negative value means the candidate cannot run the step.
struct CostTable {
  std::vector<std::vector<double>> cost;
  std::function<double(size_t from, size_t to)> switch_cost;  // seconds; 0 for from == to
  size_t steps() const { return cost.size(); }
  size_t candidates() const { return cost.empty() ? 0 : cost.front().size(); }
  bool fits(size_t step, size_t c) const { return cost[step][c] >= 0; }
};

struct Schedule {
  std::string selector;
  std::vector<size_t> choice;  // candidate per step
  double step_seconds = 0;     // sum of the chosen steps' costs (steps that fit)
  double switch_seconds = 0;
  int64_t switches = 0;
  int64_t misfits = 0;  // steps whose chosen candidate cannot run them
  double total_seconds() const { return step_seconds + switch_seconds; }
};

// Totals of a given choice of candidates.
Schedule evaluate(const CostTable& t, std::vector<size_t> choice, std::string selector);

Schedule select_static(const CostTable& t);
Schedule select_offline(const CostTable& t);

struct OnlineOptions {
  std::vector<double> step_context;      // per step: its mean context (known once the step ran)
  std::vector<double> bucket_edges;      // ascending context lengths that start buckets 1, 2, ...
  std::vector<size_t> best_per_bucket;   // the candidate measured best in each bucket
  size_t initial = 0;                    // the layout the run starts with
  int64_t window = 1;                    // steps in the running average
};
Schedule select_online(const CostTable& t, const OnlineOptions& o);

// Bucket of a context length: the number of edges at or below it.
size_t bucket_of(double context, const std::vector<double>& edges);

// The registered selectors (`arlsim list policies`, `arlsim plan --selector`); a schedule carries
// its selector's name.
enum class SelectorKind { static_layout, online, offline };
const parse::Registry<SelectorKind>& selectors();

}  // namespace arlsim::planner
