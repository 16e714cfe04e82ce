// A sampled run's whole: the run's time, GPU-hours and cost projected from the steps simulated
// (see step.h, project_whole_run).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/rl/step.h"
#include "sim/trace/generator.h"

namespace arlsim::rl {

void project_whole_run(const input::ScenarioSpec& s, const trace::Trace& t, RunResult& r) {
  if (r.steps.empty() || !r.oom_events.empty()) return;
  // The run's steps: a generated trace's own count (its sampled steps still span it), else the
  // span of the trace's step numbers.
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t step = t.trajectory(i).info.step;
    first = std::min(first, step);
    last = std::max(last, step);
  }
  if (first > last) return;
  int64_t total = last - first + 1;
  if (s.generated_trace) {
    // A generated trace holds only the simulated steps; the run spans the generator's.
    const trace::GenParams p = scenario_gen_params(s);
    first = p.first_step;
    total = p.steps;
  }
  const auto simulated = static_cast<int64_t>(r.steps.size());
  if (total <= simulated) return;
  // Step times at the run's step numbers, linear between the simulated ones, held at the ends.
  std::vector<std::pair<int64_t, double>> known;
  double simulated_sum = 0;
  for (const auto& rec : r.steps) {
    known.emplace_back(rec.step, rec.time_s);
    simulated_sum += rec.time_s;
  }
  std::sort(known.begin(), known.end());
  double whole = 0;
  size_t j = 0;
  for (int64_t k = first; k < first + total; ++k) {
    while (j + 1 < known.size() && known[j + 1].first <= k) ++j;
    double t_k = known[j].second;
    if (k > known[j].first && j + 1 < known.size()) {
      const auto& [a, ta] = known[j];
      const auto& [b, tb] = known[j + 1];
      t_k = ta + (tb - ta) * static_cast<double>(k - a) / static_cast<double>(b - a);
    } else if (k < known.front().first) {
      t_k = known.front().second;
    }
    whole += t_k;
  }
  if (simulated_sum <= 0) return;
  const double scale = whole / simulated_sum;  // overlapping (asynchronous) steps keep their overlap
  r.steps_total = total;
  r.projected_total_time_s = r.total_time_s * scale;
  r.projected_gpu_hours = r.gpu_hours * scale;
  r.projected_cost_usd = r.cost_usd * scale;
}

}  // namespace arlsim::rl
