#include "sim/trace/fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/trace/random.h"

namespace arlsim::trace {
namespace {

constexpr double kMinSigma = 0.01;

// Latent quantile of the largest of n draws (its median rank, n/(n+1)).
double max_latent(size_t n) { return normal_quantile(static_cast<double>(n) / static_cast<double>(n + 1)); }

// Multiplies the free values until their sum reaches `target`, clamping to the bounds.
bool rescale(std::vector<double>& v, const std::vector<char>& pinned, double target, double lo, double hi) {
  for (int iter = 0; iter < 100; ++iter) {
    double sum = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (!pinned[i]) sum += v[i];
    if (std::fabs(sum - target) < 1e-6 * std::max(1.0, target)) return true;
    if (sum <= 0) return false;
    const double f = target / sum;
    bool moved = false;
    for (size_t i = 0; i < v.size(); ++i) {
      if (pinned[i]) continue;
      const double next = std::clamp(v[i] * f, lo, hi);
      moved |= next != v[i];
      v[i] = next;
    }
    if (!moved) return false;
  }
  return false;
}

// Rounds to integers whose sum is `total`, moving the values with the largest rounding error first.
void round_to_total(const std::vector<double>& v, const std::vector<char>& pinned, int64_t total, int64_t lo,
                    int64_t hi, std::vector<int64_t>& out) {
  out.resize(v.size());
  int64_t sum = 0;
  for (size_t i = 0; i < v.size(); ++i) sum += out[i] = std::clamp<int64_t>(std::llround(v[i]), lo, hi);
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  const int64_t dir = total > sum ? 1 : -1;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dir * (v[a] - static_cast<double>(out[a])) > dir * (v[b] - static_cast<double>(out[b]));
  });
  for (size_t pass = 0; pass < 64 && sum != total; ++pass) {
    bool changed = false;
    for (size_t i : order) {
      if (sum == total) break;
      if (pinned[i] || out[i] + dir < lo || out[i] + dir > hi) continue;
      out[i] += dir;
      sum += dir;
      changed = true;
    }
    if (!changed) break;
  }
}

}  // namespace

LognormalFit fit_lognormal(const Moments& m, size_t n, double default_sigma) {
  LognormalFit fit;
  const double mean = std::max(m.mean, 1e-9);
  const double z = max_latent(std::max<size_t>(n, 2));
  if (m.std && *m.std > 0) {
    fit.sigma = std::sqrt(std::log1p((*m.std / mean) * (*m.std / mean)));
    fit.basis = "std";
  } else if (m.max && *m.max > mean && m.clip_ratio <= 0) {
    // ln(max/mean) = sigma z - sigma^2/2, the smaller root; beyond the vertex sigma = z.
    const double d = z * z - 2 * std::log(*m.max / mean);
    fit.sigma = d > 0 ? z - std::sqrt(d) : z;
    fit.basis = "max";
  } else if (m.min && *m.min < mean && *m.min > 0) {
    // ln(min/mean) = -sigma z - sigma^2/2.
    fit.sigma = -z + std::sqrt(z * z - 2 * std::log(*m.min / mean));
    fit.basis = "min";
  } else {
    fit.sigma = default_sigma;
    fit.basis = "default";
  }
  fit.sigma = std::max(fit.sigma, kMinSigma);
  fit.mu = std::log(mean) - fit.sigma * fit.sigma / 2;
  return fit;
}

FittedBatch draw_fitted(const Moments& m, const LognormalFit& fit, const std::vector<double>& latents,
                        int64_t floor_value) {
  const size_t n = latents.size();
  FittedBatch out;
  out.at_max.assign(n, 0);
  if (n == 0) return out;
  const double lo = std::max(static_cast<double>(floor_value), m.min.value_or(static_cast<double>(floor_value)));
  // A maximum below the floor (a dashboard's max of 0) leaves room for the floor only.
  const double hi = std::max(lo, m.max.value_or(1e12));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::clamp(std::exp(fit.mu + fit.sigma * latents[i]), lo, hi);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return latents[a] < latents[b]; });
  std::vector<char> pinned(n, 0);
  // The reported extremes occurred: the highest latents take the maximum (with a clip ratio, that
  // share of the batch sits at the limit) and the lowest takes the minimum.
  if (m.max && n >= 2) {
    const size_t at_max = std::max<size_t>(1, static_cast<size_t>(std::llround(m.clip_ratio * static_cast<double>(n))));
    for (size_t k = 0; k < std::min(at_max, n); ++k) {
      const size_t i = order[n - 1 - k];
      v[i] = hi;
      pinned[i] = 1;
      out.at_max[i] = m.clip_ratio > 0 ? 1 : 0;
    }
  }
  if (m.min && n >= 3 && !pinned[order.front()]) {
    v[order.front()] = lo;
    pinned[order.front()] = 1;
  }
  double pinned_sum = 0;
  for (size_t i = 0; i < n; ++i) pinned_sum += pinned[i] ? v[i] : 0.0;
  const double total = m.mean * static_cast<double>(n);
  out.mean_reached = rescale(v, pinned, total - pinned_sum, lo, hi);
  const auto lo_int = static_cast<int64_t>(std::ceil(lo));
  round_to_total(v, pinned, std::llround(total), lo_int, std::max(lo_int, static_cast<int64_t>(std::floor(hi))),
                 out.values);
  int64_t sum = 0;
  for (int64_t x : out.values) sum += x;
  out.mean_reached = out.mean_reached && sum == std::llround(total);
  return out;
}

}  // namespace arlsim::trace
