// The synthetic trace generator behind `arlsim trace gen`: P prompts x G samples per step over a
// run of steps, with the mean response length growing by a chosen curve, a heavy-tailed spread
// within each step, lengths correlated within a group, turns whose number grows too, tool calls
// with latencies and cold starts, and length limits that truncate (and can be raised at given
// steps). Every parameter is listed with its default by `arlsim trace gen --help` (gen_options.h).
// The output depends only on the parameters: each step draws from its own Rng, seeded with
// (`seed`, step number), in a fixed order (prompt, sample, then each trajectory's draws), so a
// seed gives byte-identical traces, and a step's trajectories are the same whichever other steps
// are generated (a run that simulates a few steps generates only those).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/distributions.h"
#include "sim/trace/growth.h"
#include "sim/trace/trace.h"

namespace arlsim::trace {

enum class TurnsDistribution { fixed, lognormal, uniform };

struct GenParams {
  std::string preset;  // the preset the parameters started from, for the provenance ("" if none)
  uint64_t seed = 1;
  int steps = 100;
  int first_step = 1;
  int every = 1;  // write every k-th step only (the curves still span all steps)
  int prompts_per_step = 64;
  int group_size = 8;

  double prompt_tokens = 512;  // mean prompt length (one prompt per group)
  double prompt_sigma = 0.4;   // log-normal spread of prompt lengths
  int64_t prompt_limit = 2048;

  Growth response_mean = Growth::linear(1024, 4096);  // mean response tokens, before the limits unless:
  // the mean of the responses as written, after the limits cut them (what a run's logs report);
  // the generator then draws from the mean before the limits that gives it (mean_before_limits).
  bool response_mean_after_limits = false;
  Growth response_limit = Growth::constant(16384);    // max response tokens (generation stops)
  Growth context_limit = Growth::constant(0);         // max prompt + response tokens; 0 = none
  LengthShape shape;
  double group_correlation = 0.5;  // of the length latents of two samples of one group

  Growth turns_mean = Growth::constant(1);
  TurnsDistribution turns_distribution = TurnsDistribution::lognormal;
  double turns_sigma = 0.4;
  int turns_min = 1;
  int turns_max = 1;
  double turns_length_correlation = 0.5;  // longer trajectories take more turns

  std::vector<ToolSpec> tools;
  double obs_tokens = 256;
  double obs_sigma = 0.8;
  int64_t turn_prefill_tokens = 0;

  int last_step() const { return first_step + steps - 1; }
};

// Problems with a parameter set, each as "--name: what is wrong"; empty when it can be generated.
std::vector<std::string> check_gen_params(const GenParams& p);

// The mean of the length distribution, before the limits, whose responses average `target` tokens
// once cut at the step's response limit and at its context limit less the prompt (over the
// prompts' spread); nothing when the limits keep the mean below `target` whatever the draws.
std::optional<double> mean_before_limits(const GenParams& p, double target, double response_limit, double context_limit);

// Streams the trace into `sink` (header first). `p` must pass check_gen_params. With `keep_step`,
// only the steps it accepts (asked once per step, in order) are drawn and written.
void generate(const GenParams& p, TraceSink& sink, const std::function<bool(int)>& keep_step = {});

// The storage generate() lays out before it draws (its sink's expect()), per step it keeps: the
// step's trajectories and turns at half as many again as the step's mean turns (within the
// bounds a trajectory's count takes). Read before generating, to refuse a trace too large.
struct StepSize {
  int step = 0;
  double trajectories = 0, turns = 0;
};
std::vector<StepSize> expected_size(const GenParams& p, const std::function<bool(int)>& keep_step = {});

}  // namespace arlsim::trace
