#include "sim/trace/generator.h"

#include <algorithm>
#include <cmath>

#include "sim/core/assert.h"
#include "sim/trace/gen_options.h"
#include "sim/trace/json_text.h"
#include "sim/trace/random.h"
#include "sim/trace/turns.h"

namespace arlsim::trace {
namespace {

// Values far beyond any limit are clamped before rounding so that llround stays defined.
constexpr double kMaxDraw = 1e12;

int64_t round_tokens(double v) { return std::llround(std::clamp(v, 0.0, kMaxDraw)); }

int draw_turns(Rng& rng, const GenParams& p, double mean, double length_latent) {
  if (p.turns_min == p.turns_max) return p.turns_min;
  double turns = mean;
  switch (p.turns_distribution) {
    case TurnsDistribution::fixed: break;
    case TurnsDistribution::uniform: return static_cast<int>(rng.uniform_int(p.turns_min, p.turns_max));
    case TurnsDistribution::lognormal: {
      const double c = p.turns_length_correlation;
      const double z = c * length_latent + std::sqrt(1 - c * c) * rng.normal();
      turns = mean * std::exp(p.turns_sigma * z - p.turns_sigma * p.turns_sigma / 2);
      break;
    }
  }
  return static_cast<int>(std::clamp<int64_t>(round_tokens(turns), p.turns_min, p.turns_max));
}

// Tool kinds get trace indices in order of first use, as a reader of the written file assigns
// them, so a generated trace and its read-back copy are identical.
class ToolAnnouncer {
 public:
  ToolAnnouncer(const std::vector<ToolSpec>& tools, TraceSink& sink)
      : tools_(tools), sink_(sink), index_(tools.size(), kNoTool) {}

  void remap(std::vector<Turn>& turns) {
    for (Turn& t : turns) {
      if (t.tool == kNoTool) continue;
      int16_t& idx = index_[static_cast<size_t>(t.tool)];
      if (idx == kNoTool) {
        idx = next_++;
        sink_.tool_kind(idx, tools_[static_cast<size_t>(t.tool)].name);
      }
      t.tool = idx;
    }
  }

 private:
  const std::vector<ToolSpec>& tools_;
  TraceSink& sink_;
  std::vector<int16_t> index_;
  int16_t next_ = 0;
};

// The caps a response meets, over the prompts' spread: (weight, cap) pairs. One cap without a
// context limit; else the prompt's log-normal latent in 33 slices over +-6 standard deviations,
// each prompt rounded and clamped as generate() draws it.
std::vector<std::pair<double, double>> response_caps(const GenParams& p, double response_limit, double context_limit) {
  const auto limit = static_cast<double>(round_tokens(response_limit));
  if (context_limit <= 0) return {{1.0, limit}};
  constexpr int kSlices = 33;
  constexpr double kSpan = 6;
  std::vector<std::pair<double, double>> caps;
  double total = 0;
  const double ps = p.prompt_sigma;
  for (int i = 0; i < kSlices; ++i) {
    const double n = -kSpan + (2 * kSpan) * (i + 0.5) / kSlices;
    const double w = std::exp(-n * n / 2);
    const int64_t prompt =
        std::clamp<int64_t>(round_tokens(p.prompt_tokens * std::exp(ps * n - ps * ps / 2)), 1, p.prompt_limit);
    caps.emplace_back(w, std::min(limit, static_cast<double>(round_tokens(context_limit) - prompt)));
    total += w;
  }
  for (auto& c : caps) c.first /= total;
  return caps;
}

void check_limits(const GenParams& p, std::vector<std::string>& problems) {
  for (int s = p.first_step; s <= p.last_step(); ++s) {
    if (p.response_limit.at(s, p.first_step, p.last_step()) < 1) {
      problems.push_back("--response-limit: must be at least 1 token at every step (step " + std::to_string(s) + ")");
      break;
    }
    const double context = p.context_limit.at(s, p.first_step, p.last_step());
    if (context > 0 && context <= static_cast<double>(p.prompt_limit)) {
      problems.push_back("--context-limit: " + std::to_string(std::llround(context)) + " tokens at step " +
                         std::to_string(s) + " leaves no room for a response after a prompt of up to " +
                         std::to_string(p.prompt_limit) + " tokens (--prompt-limit)");
      break;
    }
  }
}

}  // namespace

std::optional<double> mean_before_limits(const GenParams& p, double target, double response_limit, double context_limit) {
  if (target <= 0) return target;
  const LengthDistribution lengths(p.shape);
  const auto caps = response_caps(p, response_limit, context_limit);
  // The mean after the limits of draws of mean m: sum of w E[min(m U, cap)] = m E[min(U, cap / m)].
  const auto after = [&](double m) {
    double sum = 0;
    for (const auto& [w, cap] : caps) sum += w * m * lengths.capped_mean(cap / m);
    return sum;
  };
  double most = 0;  // every response at its cap
  for (const auto& [w, cap] : caps) most += w * cap;
  if (target >= most * (1 - 1e-9)) return std::nullopt;
  // after(m) <= m, and it rises with m towards `most`: bracket from the target up, then bisect.
  double lo = target, hi = target;
  while (after(hi) < target) {
    lo = hi;
    hi *= 2;
    if (hi > kMaxDraw) return std::nullopt;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (after(mid) < target ? lo : hi) = mid;
  }
  return hi;
}

std::vector<std::string> check_gen_params(const GenParams& p) {
  std::vector<std::string> problems;
  if (p.turns_min > p.turns_max)
    problems.push_back("--turns-min: " + std::to_string(p.turns_min) + " is more than --turns-max " +
                       std::to_string(p.turns_max));
  if (static_cast<double>(p.prompt_limit) < 1) problems.push_back("--prompt-limit: must be at least 1");
  if (static_cast<int64_t>(p.first_step) + p.steps - 1 > INT32_MAX)
    problems.push_back("--steps: the last step does not fit in a 32-bit step number");
  const double trajectories = static_cast<double>((p.steps + p.every - 1) / p.every) * p.prompts_per_step * p.group_size;
  if (trajectories > 2e9)
    problems.push_back("--prompts-per-step: " + std::to_string(static_cast<long long>(trajectories)) +
                       " trajectories in all is more than 2e9; use --every or fewer steps");
  check_limits(p, problems);
  // A response of no tokens is no generation: a mean below one token would draw one-token ones.
  for (int s = p.first_step; problems.empty() && s <= p.last_step(); s += p.every)
    if (const double mean = p.response_mean.at(s, p.first_step, p.last_step()); !(mean >= 1)) {
      problems.push_back("--response-mean: " + format_number(mean) + " tokens at step " + std::to_string(s) +
                         "; a mean response needs at least 1 token");
      break;
    }
  if (p.response_mean_after_limits && problems.empty()) {
    // Each step's mean after the limits must be one some draws give (below every response at its cap).
    double last_target = -1, last_response = -1, last_context = -1;
    for (int s = p.first_step; s <= p.last_step(); s += p.every) {
      const double target = p.response_mean.at(s, p.first_step, p.last_step());
      const double response = p.response_limit.at(s, p.first_step, p.last_step());
      const double context = p.context_limit.at(s, p.first_step, p.last_step());
      if (target == last_target && response == last_response && context == last_context) continue;
      last_target = target, last_response = response, last_context = context;
      if (mean_before_limits(p, target, response, context)) continue;
      double most = 0;
      for (const auto& [w, cap] : response_caps(p, response, context)) most += w * cap;
      problems.push_back("--response-mean: " + std::to_string(std::llround(target)) + " tokens after the limits (--response-mean-is after-limits) at step " +
                         std::to_string(s) + " is not below what the limits allow: responses all cut at their cap average " +
                         std::to_string(std::llround(most)) + " tokens (--response-limit, --context-limit less the prompt)");
      break;
    }
  }
  return problems;
}

namespace {

StepSize step_size(const GenParams& p, int step) {
  const int first = p.first_step, last = p.last_step();
  const double n = static_cast<double>(p.prompts_per_step) * p.group_size;
  return {step, n, n * std::clamp<double>(std::ceil(1.5 * p.turns_mean.at(step, first, last)) + 1, p.turns_min, p.turns_max)};
}

}  // namespace

std::vector<StepSize> expected_size(const GenParams& p, const std::function<bool(int)>& keep_step) {
  std::vector<StepSize> out;
  for (int step = p.first_step; step <= p.last_step(); step += p.every)
    if (!keep_step || keep_step(step)) out.push_back(step_size(p, step));
  return out;
}

void generate(const GenParams& p, TraceSink& sink, const std::function<bool(int)>& keep_step) {
  sink.header(gen_header(p));
  const LengthDistribution lengths(p.shape);
  TurnBuilder builder(TurnShape{p.tools, p.obs_tokens, p.obs_sigma, p.turn_prefill_tokens});
  ToolAnnouncer tools(p.tools, sink);
  const double shared = std::sqrt(p.group_correlation), own = std::sqrt(1 - p.group_correlation);
  std::vector<Turn> turns;
  const int first = p.first_step, last = p.last_step();
  // The storage the steps drawn will take, laid out once, so that a million trajectories' turns are
  // not copied as they grow.
  std::vector<std::pair<int, int>> kept;  // (step, its index among the generator's steps)
  double expected_trajectories = 0, expected_turns = 0;
  for (int step = first, index = 0; step <= last; step += p.every, ++index) {
    if (keep_step && !keep_step(step)) continue;
    kept.emplace_back(step, index);
    const StepSize size = step_size(p, step);
    expected_trajectories += size.trajectories;
    expected_turns += size.turns;
  }
  sink.expect(static_cast<size_t>(expected_trajectories), static_cast<size_t>(expected_turns));
  for (const auto& [step, index] : kept) {
    Rng rng(Rng::stream_seed(p.seed, static_cast<uint64_t>(step)));
    const double turns_mean = p.turns_mean.at(step, first, last);
    const double response_limit = p.response_limit.at(step, first, last);
    const double context_limit = p.context_limit.at(step, first, last);
    double mean = p.response_mean.at(step, first, last);
    if (p.response_mean_after_limits) {
      const std::optional<double> before = mean_before_limits(p, mean, response_limit, context_limit);
      ARLSIM_ASSERT(before.has_value());  // check_gen_params
      mean = *before;
    }
    for (int prompt = 0; prompt < p.prompts_per_step; ++prompt) {
      const double ps = p.prompt_sigma;
      const int64_t prompt_tokens =
          std::clamp<int64_t>(round_tokens(p.prompt_tokens * std::exp(ps * rng.normal() - ps * ps / 2)), 1,
                              p.prompt_limit);
      const double group_latent = rng.normal();
      TurnTotals totals;
      totals.prompt_tokens = prompt_tokens;
      totals.response_cap = round_tokens(response_limit);
      if (context_limit > 0)
        totals.response_cap = std::min(totals.response_cap, round_tokens(context_limit) - prompt_tokens);
      for (int sample = 0; sample < p.group_size; ++sample) {
        const double z = shared * group_latent + own * rng.normal();
        totals.response_tokens = std::max<int64_t>(1, round_tokens(mean * lengths.at_latent(z)));
        totals.turns = draw_turns(rng, p, turns_mean, z);
        TrajectoryInfo info;
        info.step = step;
        info.prompt_id = static_cast<int64_t>(index) * p.prompts_per_step + prompt;
        info.sample = sample;
        info.truncated = builder.build(rng, totals, turns);
        tools.remap(turns);
        sink.trajectory({info, turns});
      }
    }
  }
}

}  // namespace arlsim::trace
