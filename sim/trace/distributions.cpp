#include "sim/trace/distributions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/core/assert.h"
#include "sim/parse/diagnostics.h"
#include "sim/parse/units.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
namespace {

bool parse_number(std::string_view text, double& out) {
  const std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(out);
}

// A duration with a unit ("0.8s", "120ms") or a plain number of seconds.
bool parse_seconds(std::string_view text, double& out, std::string& error) {
  if (parse_number(text, out)) return true;
  const parse::ParsedQuantity q = parse::parse_quantity(text, parse::Dimension::seconds);
  if (!q.error.empty()) {
    error = q.error;
    return false;
  }
  out = q.value;
  return true;
}

const std::vector<std::string>& latency_kinds() {
  static const std::vector<std::string> kinds{"fixed", "exponential", "lognormal", "uniform"};
  return kinds;
}

const std::vector<std::string>& tool_keys() {
  static const std::vector<std::string> keys{"dist", "mean", "sigma", "min", "max", "cold_start",
                                             "cold_start_prob", "timeout", "share", "obs_tokens", "obs_sigma"};
  return keys;
}

bool set_tool_key(ToolSpec& t, std::string_view key, std::string_view value, std::string& error) {
  double v = 0;
  if (key == "dist") {
    const auto& kinds = latency_kinds();
    for (size_t i = 0; i < kinds.size(); ++i)
      if (value == kinds[i]) {
        t.latency.kind = static_cast<LatencyKind>(i);
        return true;
      }
    error = "unknown latency distribution \"" + std::string(value) + "\"; expected one of " + parse::join_quoted(kinds);
    return false;
  }
  const bool duration = key == "mean" || key == "min" || key == "max" || key == "cold_start" || key == "timeout";
  if (duration ? !parse_seconds(value, v, error) : !parse_number(value, v)) {
    if (!duration) error = "expected a number for " + std::string(key) + ", got \"" + std::string(value) + "\"";
    return false;
  }
  if (v < 0) {
    error = std::string(key) + " must not be negative";
    return false;
  }
  if (key == "mean") t.latency.mean_s = v;
  else if (key == "sigma") t.latency.sigma = v;
  else if (key == "min") t.latency.min_s = v;
  else if (key == "max") t.latency.max_s = v;
  else if (key == "cold_start") t.cold_start_s = v;
  else if (key == "cold_start_prob") t.cold_start_prob = v;
  else if (key == "timeout") t.timeout_s = v;
  else if (key == "share") t.share = v;
  else if (key == "obs_tokens") t.obs_tokens = v;
  else if (key == "obs_sigma") t.obs_sigma = v;
  return true;
}

bool check_tool(const ToolSpec& t, std::string& error) {
  if (t.share <= 0) error = "share must be positive";
  else if (t.cold_start_prob > 1) error = "cold_start_prob must be between 0 and 1";
  else if (t.latency.kind == LatencyKind::uniform && t.latency.max_s < t.latency.min_s)
    error = "dist=uniform needs min <= max";
  else if (t.latency.kind == LatencyKind::lognormal && t.latency.sigma > 5) error = "sigma above 5 is not a latency";
  return error.empty();
}

}  // namespace

LengthDistribution::LengthDistribution(const LengthShape& shape)
    : sigma_(shape.sigma), tail_weight_(shape.tail_weight), alpha_(shape.tail_alpha) {
  ARLSIM_ASSERT(sigma_ >= 0 && tail_weight_ >= 0 && tail_weight_ < 1 && alpha_ > 1);
  // Unscaled: body exp(sigma z) below z_tail, Pareto x_tail * (w / (1 - Phi(z)))^(1/alpha) above.
  // Mean of the body part: exp(sigma^2 / 2) Phi(z_tail - sigma); of the tail: w x_tail alpha/(alpha-1).
  double mean = std::exp(sigma_ * sigma_ / 2);
  if (tail_weight_ > 0) {
    z_tail_ = normal_quantile(1 - tail_weight_);
    x_tail_ = std::exp(sigma_ * z_tail_);
    mean = std::exp(sigma_ * sigma_ / 2) * normal_cdf(z_tail_ - sigma_) + tail_weight_ * x_tail_ * alpha_ / (alpha_ - 1);
  } else {
    z_tail_ = std::numeric_limits<double>::infinity();
    x_tail_ = 0;
  }
  scale_ = 1 / mean;
}

double LengthDistribution::at_latent(double z) const {
  if (z <= z_tail_) return scale_ * std::exp(sigma_ * z);
  const double upper = std::max(normal_upper_tail(z), 1e-300);
  return scale_ * x_tail_ * std::pow(tail_weight_ / upper, 1 / alpha_);
}

double LengthDistribution::capped_mean(double cap) const {
  if (cap <= 0) return 0;
  // Values rise with the latent; z_cap is the latent where they reach the cap, and the share above
  // it, 1 - Phi(z_cap), is `above`.
  const double tail_start = std::isfinite(z_tail_) ? scale_ * x_tail_ : std::numeric_limits<double>::infinity();
  double z_cap = 0, above = 0;
  if (cap < tail_start) {
    if (sigma_ == 0) return std::min(cap, scale_);  // a body of one value, below the tail
    z_cap = std::log(cap / scale_) / sigma_;
    above = normal_upper_tail(z_cap);
  } else {
    // In the tail: cap = scale x_tail (w / u)^(1/alpha) at u = 1 - Phi(z).
    above = tail_weight_ * std::pow(tail_start / cap, alpha_);
    z_cap = std::numeric_limits<double>::infinity();  // the whole body lies below
  }
  // The body below min(z_cap, z_tail): scale exp(sigma^2/2) Phi(z - sigma).
  const double body_end = std::min(z_cap, z_tail_);
  double below = scale_ * std::exp(sigma_ * sigma_ / 2) * (std::isfinite(body_end) ? normal_cdf(body_end - sigma_) : 1.0);
  if (cap >= tail_start && tail_weight_ > 0) {
    // The tail from u = w down to u = above: scale x_tail w^(1/alpha) \int u^(-1/alpha) du.
    const double e = 1 - 1 / alpha_;
    below += scale_ * x_tail_ * std::pow(tail_weight_, 1 / alpha_) * (std::pow(tail_weight_, e) - std::pow(above, e)) / e;
  }
  return below + cap * above;
}

double Latency::sample(Rng& rng) const {
  switch (kind) {
    case LatencyKind::fixed: return mean_s;
    case LatencyKind::exponential: return rng.exponential(mean_s);
    case LatencyKind::lognormal: {
      const double mu = std::log(std::max(mean_s, 1e-12)) - sigma * sigma / 2;
      return std::exp(mu + sigma * rng.normal());
    }
    case LatencyKind::uniform: return min_s + (max_s - min_s) * rng.uniform01();
  }
  return mean_s;
}

std::optional<ToolSpec> parse_tool_spec(std::string_view text, std::string& error) {
  const size_t colon = text.find(':');
  ToolSpec tool;
  std::string_view name = text.substr(0, colon);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.empty() || name.find_first_of(" =,") != std::string_view::npos) {
    error = "expected \"NAME: key=value ...\" (e.g. \"python: dist=lognormal mean=0.8s sigma=0.6\"), got \"" +
            std::string(text) + "\"";
    return std::nullopt;
  }
  tool.name = std::string(name);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == ',')) ++pos;
    if (pos >= rest.size()) break;
    size_t end = pos;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != ',') ++end;
    const std::string_view item = rest.substr(pos, end - pos);
    pos = end;
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    bool known = false;
    for (const auto& k : tool_keys()) known |= k == key;
    if (eq == std::string_view::npos || !known) {
      const std::string guess = parse::closest_match(key, tool_keys());
      error = "tool " + parse::quote(tool.name) + ": unknown setting \"" + std::string(item) + "\"" +
              (guess.empty() ? "; expected key=value with keys " + parse::join_quoted(tool_keys(), ", ")
                             : "; did you mean \"" + guess + "=\"?");
      return std::nullopt;
    }
    std::string why;
    if (!set_tool_key(tool, key, item.substr(eq + 1), why)) {
      error = "tool " + parse::quote(tool.name) + ": " + why;
      return std::nullopt;
    }
  }
  std::string why;
  if (!check_tool(tool, why)) {
    error = "tool " + parse::quote(tool.name) + ": " + why;
    return std::nullopt;
  }
  return tool;
}

std::string tool_spec_text(const ToolSpec& t) {
  std::string s = t.name + ": dist=" + latency_kinds()[static_cast<size_t>(t.latency.kind)];
  if (t.latency.kind == LatencyKind::uniform) {
    s += " min=" + format_number(t.latency.min_s) + "s max=" + format_number(t.latency.max_s) + "s";
  } else {
    s += " mean=" + format_number(t.latency.mean_s) + "s";
    if (t.latency.kind == LatencyKind::lognormal) s += " sigma=" + format_number(t.latency.sigma);
  }
  if (t.cold_start_s > 0)
    s += " cold_start=" + format_number(t.cold_start_s) + "s cold_start_prob=" + format_number(t.cold_start_prob);
  if (t.timeout_s > 0) s += " timeout=" + format_number(t.timeout_s) + "s";
  s += " share=" + format_number(t.share);
  if (t.obs_tokens >= 0) s += " obs_tokens=" + format_number(t.obs_tokens);
  if (t.obs_sigma >= 0) s += " obs_sigma=" + format_number(t.obs_sigma);
  return s;
}

}  // namespace arlsim::trace
