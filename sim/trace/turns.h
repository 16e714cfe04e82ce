// Builds the turns of one trajectory from its totals: a prompt, a response length (everything
// after the prompt) and a number of turns. Every turn but the last calls a tool whose
// observation is appended to the context; the rest of the response is spread over the turns'
// generations with uniform (Dirichlet(1)) shares. A response cap (the length limit) cuts the
// trajectory where it is reached, as generation does: the turn in progress is shortened, later
// turns never happen, and the trajectory is marked truncated. Shared by the generator and the
// importers, which know the same totals from a dashboard or a dump.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "sim/trace/distributions.h"
#include "sim/trace/random.h"
#include "sim/trace/trace.h"

namespace arlsim::trace {

struct TurnShape {
  std::vector<ToolSpec> tools;       // none: turns between the first and last have no tool
  double obs_tokens = 256;           // mean observation tokens per call (tools may override)
  double obs_sigma = 0.8;            // log-normal spread of observation sizes
  int64_t turn_prefill_tokens = 0;   // text added before each turn after the first (chat template)
};

struct TurnTotals {
  int64_t prompt_tokens = 1;
  int64_t response_tokens = 1;  // what the trajectory would reach without a limit
  int turns = 1;
  int64_t response_cap = std::numeric_limits<int64_t>::max();
};

class TurnBuilder {
 public:
  explicit TurnBuilder(TurnShape shape);

  // Fills `out` (tool fields hold indices into shape.tools); returns true when the cap cut it.
  bool build(Rng& rng, const TurnTotals& totals, std::vector<Turn>& out);
  const TurnShape& shape() const { return shape_; }

 private:
  int pick_tool(Rng& rng) const;
  void draw_tool_calls(Rng& rng, int calls, std::vector<Turn>& out);
  void fit_observations(std::vector<Turn>& out, int64_t room) const;
  void split_generation(Rng& rng, int64_t tokens, std::vector<Turn>& out);
  static bool apply_cap(int64_t cap, std::vector<Turn>& out);

  TurnShape shape_;
  std::vector<double> cumulative_share_;
  std::vector<char> used_;  // tool kinds already called in this trajectory (cold starts)
  std::vector<double> weights_;
};

}  // namespace arlsim::trace
