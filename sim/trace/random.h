// The generators' random numbers: one std::mt19937_64 per stream (its output sequence is fixed by
// the C++ standard) and our own transforms on top of it, because the std:: distributions are
// implemented differently by each standard library and would break byte-identical traces.
#pragma once

#include <cstdint>
#include <random>

namespace arlsim::trace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // The seed of stream `stream` of a run seeded with `seed`: SplitMix64's finaliser over the pair,
  // so neighbouring streams (steps) start far apart in the engine's state space.
  static uint64_t stream_seed(uint64_t seed, uint64_t stream);

  // Uniform in the open interval (0, 1): 53 random bits, centred in their cell.
  double uniform01();
  // Uniform integer in [lo, hi] (inclusive).
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Standard normal by the Box-Muller transform; the second value of each pair is kept for the
  // next call.
  double normal();
  // Exponential with the given mean.
  double exponential(double mean);
  bool bernoulli(double p) { return uniform01() < p; }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// Standard normal distribution function and its upper tail, 1 - Phi(z), accurate far out.
double normal_cdf(double z);
double normal_upper_tail(double z);
// Inverse of normal_cdf for p in (0, 1), by bisection (called once per parameter set).
double normal_quantile(double p);

}  // namespace arlsim::trace
