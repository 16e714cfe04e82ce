// Random draws and the distributions built on them: fixed sequences for a seed, the moments of
// each distribution, the spliced length distribution's mean and tail, and tool specs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/trace/distributions.h"

using namespace arlsim::trace;

TEST_CASE("random: the engine is the standard mt19937_64, so a seed means the same draws everywhere") {
  std::mt19937_64 engine(5489);
  engine.discard(9999);
  CHECK(engine() == 9981545732273789042ULL);  // the value the C++ standard fixes for the 10000th draw
}

TEST_CASE("random: a seed gives the same sequence, uniform draws stay inside (0, 1)") {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.uniform01();
    CHECK(x == b.uniform01());
    differs |= x != c.uniform01();
    CHECK(x > 0);
    CHECK(x < 1);
  }
  CHECK(differs);
}

TEST_CASE("random: normal, exponential and integer draws have the right moments") {
  Rng rng(1);
  const int n = 200000;
  double sum = 0, sq = 0, esum = 0;
  std::vector<int> counts(6);
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    sum += z;
    sq += z * z;
    esum += rng.exponential(3.0);
    ++counts[static_cast<size_t>(rng.uniform_int(0, 5))];
  }
  CHECK(sum / n == doctest::Approx(0).epsilon(0.01).scale(1));
  CHECK(sq / n == doctest::Approx(1).epsilon(0.01));
  CHECK(esum / n == doctest::Approx(3).epsilon(0.01));
  for (int c : counts) CHECK(c == doctest::Approx(n / 6.0).epsilon(0.02));
}

TEST_CASE("random: the normal distribution function and its inverse") {
  CHECK(normal_cdf(0) == doctest::Approx(0.5));
  CHECK(normal_cdf(1.959963984540054) == doctest::Approx(0.975));
  CHECK(normal_quantile(0.975) == doctest::Approx(1.959963984540054));
  CHECK(normal_quantile(0.01) == doctest::Approx(-2.3263478740408408));
  CHECK(normal_quantile(1 - 1e-9) == doctest::Approx(5.997807015).epsilon(1e-6));
  CHECK(normal_upper_tail(8) == doctest::Approx(6.22096057427178e-16));
}

TEST_CASE("lengths: the spliced distribution has mean 1 and is continuous at the splice") {
  for (const LengthShape shape : {LengthShape{0.6, 0.05, 2.5}, LengthShape{0.3, 0.1, 1.8}, LengthShape{1.0, 0, 2}}) {
    const LengthDistribution d(shape);
    // Mean by integrating the quantile function over (0, 1) on a fine grid (midpoint rule).
    const int n = 400000;
    double mean = 0;
    for (int i = 0; i < n; ++i) mean += d.quantile((i + 0.5) / n);
    mean /= n;
    CHECK(mean == doctest::Approx(1).epsilon(shape.tail_alpha < 2 ? 0.02 : 0.005));
    if (shape.tail_weight > 0) {
      const double p = 1 - shape.tail_weight;
      CHECK(d.quantile(p - 1e-9) == doctest::Approx(d.quantile(p + 1e-9)).epsilon(1e-6));
    }
  }
}

TEST_CASE("lengths: the Pareto tail is heavier than the log-normal body alone") {
  const LengthDistribution body({0.6, 0, 2.5});
  const LengthDistribution tailed({0.6, 0.05, 2.0});
  const double body_ratio = body.quantile(0.999) / body.quantile(0.5);
  const double tail_ratio = tailed.quantile(0.999) / tailed.quantile(0.5);
  CHECK(tail_ratio > 1.5 * body_ratio);
  // Beyond the splice the tail follows x_t (w / (1 - p))^(1/alpha).
  const double xt = tailed.quantile(0.95);
  CHECK(tailed.quantile(0.995) == doctest::Approx(xt * std::pow(0.05 / 0.005, 1 / 2.0)).epsilon(1e-6));
}

TEST_CASE("latency: each distribution has its mean, log-normal by mean and sigma") {
  Rng rng(5);
  const int n = 200000;
  const Latency kinds[] = {{LatencyKind::fixed, 2, 0, 0, 0},
                           {LatencyKind::exponential, 1.5, 0, 0, 0},
                           {LatencyKind::lognormal, 0.8, 0.6, 0, 0},
                           {LatencyKind::uniform, 0, 0, 1, 3}};
  const double means[] = {2, 1.5, 0.8, 2};
  for (size_t k = 0; k < 4; ++k) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += kinds[k].sample(rng);
    CHECK(sum / n == doctest::Approx(means[k]).epsilon(0.01));
  }
}

TEST_CASE("tool specs: parse, print back, and explain mistakes") {
  std::string error;
  auto t = parse_tool_spec("python: dist=lognormal mean=0.8s sigma=0.6 cold_start=5s cold_start_prob=0.1 "
                           "timeout=2min share=2 obs_tokens=300",
                           error);
  REQUIRE(t.has_value());
  CHECK(t->name == "python");
  CHECK(t->latency.kind == LatencyKind::lognormal);
  CHECK(t->latency.mean_s == 0.8);
  CHECK(t->cold_start_s == 5);
  CHECK(t->cold_start_prob == 0.1);
  CHECK(t->timeout_s == 120);
  CHECK(t->share == 2);
  CHECK(t->obs_tokens == 300);
  auto again = parse_tool_spec(tool_spec_text(*t), error);
  REQUIRE(again.has_value());
  CHECK(tool_spec_text(*again) == tool_spec_text(*t));
  CHECK(parse_tool_spec("search", error)->latency.kind == LatencyKind::fixed);
  CHECK(parse_tool_spec("x: mean=250ms", error)->latency.mean_s == doctest::Approx(0.25));

  CHECK_FALSE(parse_tool_spec("python: dist=gamma", error));
  CHECK(error == "tool \"python\": unknown latency distribution \"gamma\"; expected one of \"fixed\", \"exponential\", "
                 "\"lognormal\" or \"uniform\"");
  CHECK_FALSE(parse_tool_spec("python: meen=1s", error));
  CHECK(error == "tool \"python\": unknown setting \"meen=1s\"; did you mean \"mean=\"?");
  CHECK_FALSE(parse_tool_spec("python: mean=1 parsec", error));
  CHECK(error.starts_with("tool \"python\": unknown setting \"parsec\""));
  CHECK_FALSE(parse_tool_spec("python: mean=fast", error));
  CHECK(error == "tool \"python\": expected a number followed by a unit, got \"fast\"");
  CHECK_FALSE(parse_tool_spec("python: dist=uniform min=3s max=1s", error));
  CHECK(error == "tool \"python\": dist=uniform needs min <= max");
  CHECK_FALSE(parse_tool_spec(": mean=1s", error));
}

TEST_CASE("distributions: the capped mean is the mean of min(value, cap), in the body and in the tail") {
  // Against a direct quadrature of min(at_latent(z), cap) over the standard normal latent.
  const auto quadrature = [](const LengthDistribution& d, double cap) {
    const int n = 400000;
    const double lo = -9, hi = 9, dz = (hi - lo) / n;
    double sum = 0, weight = 0;
    for (int i = 0; i < n; ++i) {
      const double z = lo + (i + 0.5) * dz, w = std::exp(-z * z / 2);
      sum += w * std::min(d.at_latent(z), cap);
      weight += w;
    }
    return sum / weight;
  };
  const LengthShape with_tail{0.6, 0.05, 2.5}, body_only{0.8, 0, 2.5}, flat{0, 0.1, 3};
  for (const LengthShape& shape : {with_tail, body_only, flat}) {
    const LengthDistribution d(shape);
    // Caps below the median, in the body, at the tail's start and deep in the tail.
    for (double cap : {0.3, 0.9, 1.4, d.quantile(0.95), d.quantile(0.99), 6.0, 40.0}) {
      CAPTURE(shape.sigma);
      CAPTURE(cap);
      CHECK(d.capped_mean(cap) == doctest::Approx(quadrature(d, cap)).epsilon(2e-4));
    }
    CHECK(d.capped_mean(1e12) == doctest::Approx(1.0).epsilon(1e-6));  // no cap: the unit mean
    CHECK(d.capped_mean(0) == 0);
  }
}
