// Charts as inline SVG text for the HTML reports: axes with 1-2-5 ticks, bars, lines, points,
// reference lines and a legend, in a fixed palette. Written here rather than taken from a
// library: Debian packages no C++ library that writes static SVG charts, and a report needs only
// these few marks. Text is escaped for XML; coordinates are finite or the mark is left out.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arlsim::report {

// Escapes & < > " for XML text and attributes.
std::string xml_escape(std::string_view s);
// A number for people: at most `digits` significant digits, thousands unseparated ("1234.5").
std::string short_number(double v, int digits = 4);

// The colour of one of arlsim's stages (graph::kStages order) or of series i.
const char* stage_color(size_t stage);
const char* series_color(size_t i);

class SvgChart {
 public:
  // A chart `id` (the svg element's id) of width x height pixels, its title on top.
  SvgChart(std::string id, std::string title, double width = 760, double height = 300);
  // The data ranges the axes show (0 is included on y when `from_zero`), with labels.
  void set_x(double lo, double hi, std::string label);
  // [lo, hi] as given (for categories at 0, 1, ...), not widened to whole ticks.
  void set_x_exact(double lo, double hi, std::string label);
  void set_y(double lo, double hi, std::string label, bool from_zero = true);
  // Category ticks on x at the given data positions, instead of numbers.
  void set_x_categories(std::vector<std::pair<double, std::string>> ticks);

  void bar(double x0, double x1, double y0, double y1, const char* color, std::string_view tip = {});
  void line(const std::vector<std::pair<double, double>>& points, const char* color, double width = 2,
            bool dashed = false);
  void area(const std::vector<std::pair<double, double>>& upper, const std::vector<std::pair<double, double>>& lower,
            const char* color, double opacity = 0.25);
  void point(double x, double y, const char* color, double radius = 3.5, std::string_view tip = {});
  void ring(double x, double y, const char* color, double radius = 5, std::string_view tip = {});
  void cross(double x, double y, const char* color, std::string_view label = {});
  void hline(double y, const char* color, std::string_view label, bool dashed = true);
  void vline(double x, const char* color, std::string_view label, bool dashed = true);
  void label(double x, double y, std::string_view text, const char* color = "#333");
  void legend(const std::vector<std::pair<const char*, std::string>>& entries);

  std::string svg() const;
  double px(double x) const;
  double py(double y) const;

 private:
  std::string id_, title_, x_label_, y_label_;
  double width_, height_;
  double left_ = 64, right_ = 16, top_ = 30, bottom_ = 64;
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
  std::vector<double> y_ticks_, x_ticks_;
  std::vector<std::pair<double, std::string>> x_categories_;
  std::string marks_, legend_;
};

}  // namespace arlsim::report
