#include "sim/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace arlsim::report {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Ticks at 1, 2 or 5 x 10^k covering [lo, hi] with about `target` of them; widens the range to
// whole ticks.
std::vector<double> nice_ticks(double& lo, double& hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target, p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * p;
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> t;
  for (double v = lo; v <= hi + step * 1e-6 && t.size() < 50; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

bool finite(double a, double b) { return std::isfinite(a) && std::isfinite(b); }

// A tick's text: as few digits as tell the ticks apart ("0", "2.5", "100", "1.5e+06").
std::string tick_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string short_number(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  if (std::abs(v) >= 1e6 || (std::abs(v) < 1e-3 && v != 0)) std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  else {
    const int whole = v == 0 ? 1 : std::max(1, static_cast<int>(std::floor(std::log10(std::abs(v)))) + 1);
    std::snprintf(buf, sizeof buf, "%.*f", std::max(0, digits - whole), v);
  }
  return buf;
}

const char* stage_color(size_t stage) {
  static const char* colors[] = {"#4c91db", "#f0ad4e", "#6ebe78", "#46a05a", "#9678c8", "#dc6e5a", "#c84646", "#828282"};
  return colors[stage % 8];
}

const char* series_color(size_t i) {
  static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  return colors[i % 8];
}

SvgChart::SvgChart(std::string id, std::string title, double width, double height)
    : id_(std::move(id)), title_(std::move(title)), width_(width), height_(height) {}

void SvgChart::set_x(double lo, double hi, std::string label) {
  x_label_ = std::move(label);
  if (!finite(lo, hi)) lo = 0, hi = 1;
  if (!(hi > lo)) hi = lo + 1;
  x_ticks_ = nice_ticks(lo, hi, 8);
  x0_ = lo;
  x1_ = hi;
}

void SvgChart::set_x_exact(double lo, double hi, std::string label) {
  x_label_ = std::move(label);
  if (!finite(lo, hi) || !(hi > lo)) lo = 0, hi = 1;
  x_ticks_.clear();
  x0_ = lo;
  x1_ = hi;
}

void SvgChart::set_y(double lo, double hi, std::string label, bool from_zero) {
  y_label_ = std::move(label);
  if (!finite(lo, hi)) lo = 0, hi = 1;
  if (from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (!(hi > lo)) hi = lo + 1;
  y_ticks_ = nice_ticks(lo, hi, 5);
  y0_ = lo;
  y1_ = hi;
}

void SvgChart::set_x_categories(std::vector<std::pair<double, std::string>> ticks) { x_categories_ = std::move(ticks); }

double SvgChart::px(double x) const { return left_ + (x - x0_) / (x1_ - x0_) * (width_ - left_ - right_); }
double SvgChart::py(double y) const { return height_ - bottom_ - (y - y0_) / (y1_ - y0_) * (height_ - top_ - bottom_); }

void SvgChart::bar(double x0, double x1, double y0, double y1, const char* color, std::string_view tip) {
  if (!finite(x0, x1) || !finite(y0, y1)) return;
  const double a = px(std::min(x0, x1)), b = px(std::max(x0, x1)), c = py(std::max(y0, y1)), d = py(std::min(y0, y1));
  marks_ += "<rect x=\"" + num(a) + "\" y=\"" + num(c) + "\" width=\"" + num(std::max(0.5, b - a)) + "\" height=\"" +
            num(std::max(0.0, d - c)) + "\" fill=\"" + color + "\">";
  if (!tip.empty()) marks_ += "<title>" + xml_escape(tip) + "</title>";
  marks_ += "</rect>\n";
}

void SvgChart::line(const std::vector<std::pair<double, double>>& points, const char* color, double width, bool dashed) {
  std::string pts;
  for (const auto& [x, y] : points)
    if (finite(x, y)) pts += num(px(x)) + "," + num(py(y)) + " ";
  if (pts.empty()) return;
  marks_ += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"" + num(width) + "\"" +
            (dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + pts + "\"/>\n";
}

void SvgChart::area(const std::vector<std::pair<double, double>>& upper, const std::vector<std::pair<double, double>>& lower,
                    const char* color, double opacity) {
  std::string pts;
  for (const auto& [x, y] : upper)
    if (finite(x, y)) pts += num(px(x)) + "," + num(py(y)) + " ";
  for (auto it = lower.rbegin(); it != lower.rend(); ++it)
    if (finite(it->first, it->second)) pts += num(px(it->first)) + "," + num(py(it->second)) + " ";
  if (pts.empty()) return;
  marks_ += "<polygon fill=\"" + std::string(color) + "\" fill-opacity=\"" + num(opacity) + "\" points=\"" + pts + "\"/>\n";
}

void SvgChart::point(double x, double y, const char* color, double radius, std::string_view tip) {
  if (!finite(x, y)) return;
  marks_ += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"" + num(radius) + "\" fill=\"" + color + "\">";
  if (!tip.empty()) marks_ += "<title>" + xml_escape(tip) + "</title>";
  marks_ += "</circle>\n";
}

void SvgChart::ring(double x, double y, const char* color, double radius, std::string_view tip) {
  if (!finite(x, y)) return;
  marks_ += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"" + num(radius) + "\" fill=\"none\" stroke=\"" +
            color + "\" stroke-width=\"2\">";
  if (!tip.empty()) marks_ += "<title>" + xml_escape(tip) + "</title>";
  marks_ += "</circle>\n";
}

void SvgChart::cross(double x, double y, const char* color, std::string_view text) {
  if (!finite(x, y)) return;
  const double a = px(x), b = py(y);
  marks_ += "<path d=\"M" + num(a - 5) + "," + num(b - 5) + " L" + num(a + 5) + "," + num(b + 5) + " M" + num(a - 5) + "," +
            num(b + 5) + " L" + num(a + 5) + "," + num(b - 5) + "\" stroke=\"" + color + "\" stroke-width=\"2.5\"/>\n";
  if (!text.empty()) label(x, y, text, color);
}

void SvgChart::hline(double y, const char* color, std::string_view text, bool dashed) {
  if (!std::isfinite(y)) return;
  marks_ += "<line x1=\"" + num(left_) + "\" x2=\"" + num(width_ - right_) + "\" y1=\"" + num(py(y)) + "\" y2=\"" + num(py(y)) +
            "\" stroke=\"" + color + "\" stroke-width=\"1.5\"" + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
  marks_ += "<text x=\"" + num(width_ - right_ - 4) + "\" y=\"" + num(py(y) - 4) + "\" text-anchor=\"end\" fill=\"" + color +
            "\">" + xml_escape(text) + "</text>\n";
}

void SvgChart::vline(double x, const char* color, std::string_view text, bool dashed) {
  if (!std::isfinite(x)) return;
  marks_ += "<line x1=\"" + num(px(x)) + "\" x2=\"" + num(px(x)) + "\" y1=\"" + num(top_) + "\" y2=\"" +
            num(height_ - bottom_) + "\" stroke=\"" + color + "\" stroke-width=\"1.5\"" +
            (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
  marks_ += "<text x=\"" + num(px(x) + 4) + "\" y=\"" + num(top_ + 12) + "\" fill=\"" + color + "\">" + xml_escape(text) +
            "</text>\n";
}

void SvgChart::label(double x, double y, std::string_view text, const char* color) {
  if (!finite(x, y)) return;
  marks_ += "<text x=\"" + num(px(x) + 6) + "\" y=\"" + num(py(y) - 6) + "\" fill=\"" + color + "\">" + xml_escape(text) +
            "</text>\n";
}

void SvgChart::legend(const std::vector<std::pair<const char*, std::string>>& entries) {
  double x = left_;
  for (const auto& [color, text] : entries) {
    legend_ += "<rect x=\"" + num(x) + "\" y=\"" + num(height_ - 14) + "\" width=\"10\" height=\"10\" fill=\"" + color + "\"/>";
    legend_ += "<text x=\"" + num(x + 14) + "\" y=\"" + num(height_ - 5) + "\">" + xml_escape(text) + "</text>\n";
    x += 24 + 7.0 * static_cast<double>(text.size());
  }
}

std::string SvgChart::svg() const {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + xml_escape(id_) + "\" width=\"" + num(width_) +
                  "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
                  "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n";
  s += "<title>" + xml_escape(title_) + "</title>\n";
  s += "<text x=\"" + num(left_) + "\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" + xml_escape(title_) + "</text>\n";
  const double plot_bottom = height_ - bottom_, plot_right = width_ - right_;
  for (double t : y_ticks_) {
    s += "<line x1=\"" + num(left_) + "\" x2=\"" + num(plot_right) + "\" y1=\"" + num(py(t)) + "\" y2=\"" + num(py(t)) +
         "\" stroke=\"#e4e4e4\"/>";
    s += "<text x=\"" + num(left_ - 6) + "\" y=\"" + num(py(t) + 4) + "\" text-anchor=\"end\">" + tick_text(t) + "</text>\n";
  }
  if (x_categories_.empty())
    for (double t : x_ticks_)
      s += "<text x=\"" + num(px(t)) + "\" y=\"" + num(plot_bottom + 15) + "\" text-anchor=\"middle\">" + tick_text(t) +
           "</text>\n";
  else
    for (const auto& [x, text] : x_categories_)
      s += "<text x=\"" + num(px(x)) + "\" y=\"" + num(plot_bottom + 15) + "\" text-anchor=\"middle\">" + xml_escape(text) +
           "</text>\n";
  s += "<line x1=\"" + num(left_) + "\" x2=\"" + num(plot_right) + "\" y1=\"" + num(plot_bottom) + "\" y2=\"" +
       num(plot_bottom) + "\" stroke=\"#555\"/>";
  s += "<line x1=\"" + num(left_) + "\" x2=\"" + num(left_) + "\" y1=\"" + num(top_) + "\" y2=\"" + num(plot_bottom) +
       "\" stroke=\"#555\"/>\n";
  s += "<text x=\"" + num((left_ + plot_right) / 2) + "\" y=\"" + num(plot_bottom + 30) + "\" text-anchor=\"middle\">" +
       xml_escape(x_label_) + "</text>\n";
  s += "<text transform=\"translate(14," + num((top_ + plot_bottom) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       xml_escape(y_label_) + "</text>\n";
  s += marks_;
  s += legend_;
  s += "</svg>\n";
  return s;
}

}  // namespace arlsim::report
