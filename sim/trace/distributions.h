// The distributions the trace generators draw from.
//
// Lengths: the response lengths of one step follow a log-normal body with a Pareto (power-law)
// tail spliced at the body's (1 - tail_weight) quantile, scaled to mean 1 and multiplied by the
// step's mean. Published agentic-RL rollouts have exactly this shape: most responses near the
// median, and a last ~10% that takes up to half of the rollout time (REFERENCE.md, section 2).
// A value is computed from a standard-normal latent, so samples of one group can share part of
// their latent (a Gaussian copula): correlated lengths within a GRPO group.
//
// Tool latencies: fixed, exponential, log-normal (by mean and sigma) or uniform, plus an optional
// cold start on a trajectory's first call of a tool and an optional timeout that caps a call.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/trace/random.h"

namespace arlsim::trace {

struct LengthShape {
  double sigma = 0.6;         // of the body's underlying normal
  double tail_weight = 0.05;  // share of samples in the Pareto tail (0 = pure log-normal)
  double tail_alpha = 2.5;    // Pareto index; smaller is heavier; must exceed 1 for a finite mean
};

class LengthDistribution {
 public:
  explicit LengthDistribution(const LengthShape& shape);
  // The value for a latent z ~ N(0, 1); the mean over z is 1.
  double at_latent(double z) const;
  double quantile(double p) const { return at_latent(normal_quantile(p)); }
  // The mean of min(value, cap): what the mean becomes when values are cut at `cap` (closed form:
  // the body's and the tail's partial means below the cap, plus the cap times the share above it).
  double capped_mean(double cap) const;

 private:
  double sigma_;
  double tail_weight_;
  double alpha_;
  double z_tail_;  // latent where the tail starts (+infinity without a tail)
  double x_tail_;  // unscaled body value there
  double scale_;   // makes the mean 1
};

enum class LatencyKind { fixed, exponential, lognormal, uniform };

struct Latency {
  LatencyKind kind = LatencyKind::fixed;
  double mean_s = 0;  // fixed, exponential, lognormal
  double sigma = 0.5; // lognormal: of the underlying normal
  double min_s = 0;   // uniform
  double max_s = 0;   // uniform

  double sample(Rng& rng) const;
};

// One tool kind a generated trajectory can call.
struct ToolSpec {
  std::string name;
  double share = 1;            // relative frequency among tool calls
  Latency latency;
  double cold_start_s = 0;     // added to a trajectory's first call of this tool ...
  double cold_start_prob = 1;  // ... with this probability
  double timeout_s = 0;        // a call never takes longer (0: no timeout)
  double obs_tokens = -1;      // mean observation tokens; < 0: the generator's default
  double obs_sigma = -1;       // of the log-normal observation size; < 0: the generator's default
};

// Parses "NAME: key=value ..." with keys dist (fixed, exponential, lognormal, uniform), mean,
// sigma, min, max, cold_start, cold_start_prob, timeout, share, obs_tokens, obs_sigma. Durations
// take units ("0.8s", "120 s" is not possible inside one word: write "120s") or plain seconds.
std::optional<ToolSpec> parse_tool_spec(std::string_view text, std::string& error);
// The canonical text form (parse_tool_spec(tool_spec_text(t)) gives t back).
std::string tool_spec_text(const ToolSpec& tool);

}  // namespace arlsim::trace
