// How a quantity (mean response length, mean turns, a length limit) changes over the steps of a
// training run. Written as text in flags and trace headers:
//   "2K"                                constant
//   "linear 1K..4K"                     straight line from the first step to the last
//   "logistic 1K..12K mid=100 width=20" S-curve centred on step `mid`, `width` steps per e-fold
//   "saturating 1K..12K tau=50"         fast early growth that levels off (time constant `tau`)
//   "8K,16K@100,24K@150"                step changes at given steps (a limit raised over a run)
// The curves are normalised to pass exactly through the start value at the first step and the
// end value at the last, so a shape change never moves the endpoints. Token counts take "K"
// suffixes (binary thousands, "8K" = 8192).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arlsim::trace {

enum class GrowthKind { constant, linear, logistic, saturating, steps };

class Growth {
 public:
  Growth() = default;
  static Growth constant(double value);
  static Growth linear(double start, double end);
  // `midpoint` and `width` in steps; 0 means the default (middle of the run, a tenth of it).
  static Growth logistic(double start, double end, double midpoint = 0, double width = 0);
  static Growth saturating(double start, double end, double tau = 0);
  static Growth steps(std::vector<std::pair<int, double>> points);  // first point's step ignored

  // Parses the text forms above; on failure returns nullopt and sets `error`.
  static std::optional<Growth> parse(std::string_view text, std::string& error);

  // The value at `step` of a run covering steps first..last.
  double at(int step, int first, int last) const;
  GrowthKind kind() const { return kind_; }
  // The canonical text form (parse(to_string()) gives the same curve).
  std::string to_string() const;
  // The largest value over the run (for checks such as "the mean never exceeds the limit").
  double max_over(int first, int last) const;
  // The smallest and largest values the curve is written with (its endpoints or its points): it
  // takes no value outside them over any run.
  std::pair<double, double> bounds() const;

 private:
  GrowthKind kind_ = GrowthKind::constant;
  double start_ = 0;
  double end_ = 0;
  double midpoint_ = 0;
  double width_ = 0;
  double tau_ = 0;
  std::vector<std::pair<int, double>> points_;
};

}  // namespace arlsim::trace
