#include "sim/rl/rollout.h"

#include <algorithm>
#include <climits>

namespace arlsim::rl {

trace::Trace carry_over(const input::PolicySpec& policy, const std::vector<trace::TrajectoryView>& trajectories,
                        const std::vector<RolloutInput::Carried>& before_carried, const RolloutResult& r,
                        std::vector<RolloutInput::Carried>& carried) {
  trace::Trace next;
  carried.clear();
  const auto before = [&](size_t t) { return t < before_carried.size() ? before_carried[t] : RolloutInput::Carried{}; };
  if (r.done.empty()) {
    if (!policy.continuous) return next;
    for (size_t t = 0; t < trajectories.size(); ++t) {
      const auto& view = trajectories[t];
      next.add(view.info, view.turns);
      carried.push_back(before(t));
    }
    return next;
  }
  std::vector<trace::Turn> turns;
  for (const auto& p : r.paused) {
    const auto& view = trajectories[static_cast<size_t>(p.trajectory)];
    RolloutInput::Carried c;
    c.continues = before(static_cast<size_t>(p.trajectory)).continues || p.turn > 0 || p.generated != 0;
    if (p.finished) {
      c.finished = true;
      c.engine = p.engine;
      next.add(view.info, view.turns);
      carried.push_back(c);
      continue;
    }
    if (policy.keep_kv_cache && p.generated >= 0 && p.engine >= 0) {
      c.engine = p.engine;
      c.kv_tokens = p.kv_tokens;
    }
    auto k = static_cast<size_t>(p.turn);
    turns.clear();
    if (p.generated >= 0) {
      trace::Turn now = view.turns[k];
      now.prefill_tokens = static_cast<int32_t>(std::min<int64_t>(p.context, INT32_MAX));
      now.gen_tokens = static_cast<int32_t>(std::max<int64_t>(1, now.gen_tokens - p.generated));
      turns.push_back(now);
    } else if (k + 1 < view.turns.size()) {  // its tool call finishes, then the next turn
      trace::Turn next_turn = view.turns[k + 1];
      next_turn.prefill_tokens = static_cast<int32_t>(
          std::min<int64_t>(p.context + view.turns[k].obs_tokens + next_turn.prefill_tokens, INT32_MAX));
      turns.push_back(next_turn);
      ++k;
    } else {
      continue;  // its last tool call finishes the trajectory: nothing left to generate
    }
    turns.insert(turns.end(), view.turns.begin() + static_cast<std::ptrdiff_t>(k) + 1, view.turns.end());
    next.add(view.info, turns);
    carried.push_back(c);
  }
  return next;
}

}  // namespace arlsim::rl
