// Fitting a length distribution to what a training dashboard reports per step (mean, and some of
// min, max, standard deviation, clip ratio) and drawing a batch from it that reproduces those
// figures: a log-normal whose spread comes from the standard deviation when given, otherwise from
// the maximum (read as the expected largest of n draws), otherwise from the minimum, otherwise a
// default; the drawn batch is pinned to the reported bounds and rescaled so that its mean is the
// reported mean (to within half a token over the batch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arlsim::trace {

struct Moments {
  double mean = 0;
  std::optional<double> min;
  std::optional<double> max;
  std::optional<double> std;
  double clip_ratio = 0;  // share of the batch at the maximum (a length limit)
};

struct LognormalFit {
  double mu = 0;
  double sigma = 0;
  std::string basis;  // "std", "max", "min" or "default": where sigma came from
};

// Fits mu and sigma for a batch of n values.
LognormalFit fit_lognormal(const Moments& m, size_t n, double default_sigma);

struct FittedBatch {
  std::vector<int64_t> values;
  std::vector<char> at_max;  // pinned at the maximum by the clip ratio
  bool mean_reached = true;  // false when the bounds make the mean impossible
};

// Values for the given standard-normal latents (one per value; their order decides who gets the
// largest values), at least `floor_value` each.
FittedBatch draw_fitted(const Moments& m, const LognormalFit& fit, const std::vector<double>& latents,
                        int64_t floor_value);

}  // namespace arlsim::trace
