#include "sim/trace/growth.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "sim/parse/units.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_value(std::string_view text, double& out, std::string& error) {
  const parse::ParsedQuantity q = parse::parse_quantity(trim(text), parse::Dimension::tokens);
  if (!q.error.empty()) {
    error = q.error;
    return false;
  }
  if (!(q.value >= 0)) {
    error = "expected a non-negative value, got \"" + std::string(trim(text)) + "\"";
    return false;
  }
  out = q.value;
  return true;
}

bool parse_step(std::string_view text, int& out, std::string& error) {
  text = trim(text);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size() || out < 0) {
    error = "expected a step number after '@', got \"" + std::string(text) + "\"";
    return false;
  }
  return true;
}

// "A..B" -> start, end.
bool parse_range(std::string_view text, double& start, double& end, std::string& error) {
  const size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    error = "expected START..END, got \"" + std::string(text) + "\"";
    return false;
  }
  return parse_value(text.substr(0, dots), start, error) && parse_value(text.substr(dots + 2), end, error);
}

std::optional<Growth> parse_steps(std::string_view text, std::string& error) {
  std::vector<std::pair<int, double>> points;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = trim(text.substr(pos, comma - pos));
    const size_t at = item.find('@');
    std::pair<int, double> point{0, 0};
    if (!parse_value(item.substr(0, at), point.second, error)) return std::nullopt;
    if (at != std::string_view::npos && !parse_step(item.substr(at + 1), point.first, error)) return std::nullopt;
    if (points.empty() && at != std::string_view::npos && point.first > 0) {
      error = "the first value applies from the start and takes no step: write \"" +
              std::string(trim(item.substr(0, at))) + ",...\"";
      return std::nullopt;
    }
    if (!points.empty() && at == std::string_view::npos) {
      error = "every value after the first needs its step, as in \"8K,16K@100\"";
      return std::nullopt;
    }
    if (points.size() > 1 && point.first <= points.back().first) {
      error = "steps must increase: " + std::to_string(point.first) + " comes after " +
              std::to_string(points.back().first);
      return std::nullopt;
    }
    points.push_back(point);
    pos = comma + 1;
  }
  return points.size() == 1 ? Growth::constant(points[0].second) : Growth::steps(std::move(points));
}

// Reads "key=value" options after the range; `keys` name the allowed ones.
bool parse_options(std::string_view rest, std::initializer_list<std::pair<std::string_view, double*>> keys,
                   std::string& error) {
  size_t pos = 0;
  while (true) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    if (pos >= rest.size()) return true;
    const size_t space = std::min(rest.find(' ', pos), rest.size());
    const std::string_view item = rest.substr(pos, space - pos);
    const size_t eq = item.find('=');
    bool known = false;
    for (const auto& [name, target] : keys) {
      if (eq == std::string_view::npos || item.substr(0, eq) != name) continue;
      known = true;
      if (!parse_value(item.substr(eq + 1), *target, error)) return false;
    }
    if (!known && keys.size() == 0) {
      error = "unexpected \"" + std::string(item) + "\" after the range";
      return false;
    }
    if (!known) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + std::string(k.first) + "=";
      error = "unknown option \"" + std::string(item) + "\"; expected " + names;
      return false;
    }
    pos = space;
  }
}

}  // namespace

Growth Growth::constant(double value) {
  Growth g;
  g.kind_ = GrowthKind::constant;
  g.start_ = g.end_ = value;
  return g;
}

Growth Growth::linear(double start, double end) {
  Growth g;
  g.kind_ = GrowthKind::linear;
  g.start_ = start;
  g.end_ = end;
  return g;
}

Growth Growth::logistic(double start, double end, double midpoint, double width) {
  Growth g = linear(start, end);
  g.kind_ = GrowthKind::logistic;
  g.midpoint_ = midpoint;
  g.width_ = width;
  return g;
}

Growth Growth::saturating(double start, double end, double tau) {
  Growth g = linear(start, end);
  g.kind_ = GrowthKind::saturating;
  g.tau_ = tau;
  return g;
}

Growth Growth::steps(std::vector<std::pair<int, double>> points) {
  Growth g;
  g.kind_ = GrowthKind::steps;
  g.points_ = std::move(points);
  if (!g.points_.empty()) g.start_ = g.points_.front().second, g.end_ = g.points_.back().second;
  return g;
}

std::optional<Growth> Growth::parse(std::string_view text, std::string& error) {
  text = trim(text);
  const size_t space = text.find(' ');
  const std::string_view word = text.substr(0, space);
  const std::string_view rest = space == std::string_view::npos ? std::string_view() : trim(text.substr(space + 1));
  const std::string_view range = rest.substr(0, rest.find(' '));
  const std::string_view options = range.size() < rest.size() ? rest.substr(range.size()) : std::string_view();
  double start = 0, end = 0, a = 0, b = 0;
  if (word == "linear" || word == "logistic" || word == "saturating") {
    if (!parse_range(range, start, end, error)) return std::nullopt;
  }
  if (word == "linear") {
    if (!parse_options(options, {}, error)) return std::nullopt;
    return linear(start, end);
  }
  if (word == "logistic") {
    if (!parse_options(options, {{"mid", &a}, {"width", &b}}, error)) return std::nullopt;
    return logistic(start, end, a, b);
  }
  if (word == "saturating") {
    if (!parse_options(options, {{"tau", &a}}, error)) return std::nullopt;
    return saturating(start, end, a);
  }
  if (word == "steps") return parse_steps(rest, error);
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
    return parse_steps(text, error);
  error = "expected a value (\"2K\"), step changes (\"8K,16K@100\") or a curve (\"linear 1K..4K\", "
          "\"logistic 1K..12K\", \"saturating 1K..12K\"), got \"" + std::string(text) + "\"";
  return std::nullopt;
}

double Growth::at(int step, int first, int last) const {
  const double span = std::max(1, last - first);
  const double x = std::clamp(static_cast<double>(step - first), 0.0, span);
  switch (kind_) {
    case GrowthKind::constant: return start_;
    case GrowthKind::linear: return start_ + (end_ - start_) * x / span;
    case GrowthKind::logistic: {
      const double mid = midpoint_ > 0 ? midpoint_ - first : span / 2;
      const double width = width_ > 0 ? width_ : std::max(1.0, span / 10);
      auto s = [&](double t) { return 1 / (1 + std::exp(-(t - mid) / width)); };
      const double s0 = s(0), s1 = s(span);
      if (s1 - s0 < 1e-12) return start_;
      return start_ + (end_ - start_) * (s(x) - s0) / (s1 - s0);
    }
    case GrowthKind::saturating: {
      const double tau = tau_ > 0 ? tau_ : std::max(1.0, span / 4);
      return start_ + (end_ - start_) * (1 - std::exp(-x / tau)) / (1 - std::exp(-span / tau));
    }
    case GrowthKind::steps: {
      double v = points_.empty() ? 0 : points_.front().second;
      for (size_t i = 1; i < points_.size(); ++i)
        if (step >= points_[i].first) v = points_[i].second;
      return v;
    }
  }
  return start_;
}

double Growth::max_over(int first, int last) const {
  double m = at(first, first, last);
  for (int s = first; s <= last; ++s) m = std::max(m, at(s, first, last));
  return m;
}

std::pair<double, double> Growth::bounds() const {
  if (kind_ == GrowthKind::steps && !points_.empty()) {
    double lo = points_.front().second, hi = lo;
    for (const auto& [step, value] : points_) {
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
    return {lo, hi};
  }
  if (kind_ == GrowthKind::constant) return {start_, start_};
  return {std::min(start_, end_), std::max(start_, end_)};
}

std::string Growth::to_string() const {
  const std::string range = format_number(start_) + ".." + format_number(end_);
  switch (kind_) {
    case GrowthKind::constant: return format_number(start_);
    case GrowthKind::linear: return "linear " + range;
    case GrowthKind::logistic: {
      std::string s = "logistic " + range;
      if (midpoint_ > 0) s += " mid=" + format_number(midpoint_);
      if (width_ > 0) s += " width=" + format_number(width_);
      return s;
    }
    case GrowthKind::saturating: return "saturating " + range + (tau_ > 0 ? " tau=" + format_number(tau_) : "");
    case GrowthKind::steps: {
      std::string s;
      for (size_t i = 0; i < points_.size(); ++i) {
        if (i > 0) s += ",";
        s += format_number(points_[i].second);
        if (i > 0) s += "@" + std::to_string(points_[i].first);
      }
      return s;
    }
  }
  return {};
}

}  // namespace arlsim::trace
