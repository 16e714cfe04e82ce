// The HTML reports' pieces: escaping, numbers for people, chart coordinates, and pages that hold
// what they promise whatever the run (an empty one, non-finite figures, names with markup).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "sim/report/html_report.h"
#include "sim/report/svg.h"

using namespace arlsim;
using namespace arlsim::report;

namespace {
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("svg: escaping and numbers for people") {
  CHECK(xml_escape("a<b & \"c\">\x01") == "a&lt;b &amp; &quot;c&quot;&gt; ");
  CHECK(short_number(0) == "0.000");
  CHECK(short_number(12.3456) == "12.35");
  CHECK(short_number(1234.5) == "1234");  // four significant digits, as many as the integer part
  CHECK(short_number(2.5e7) == "2.5e+07");
  CHECK(short_number(std::numeric_limits<double>::infinity()) == "-");
}

TEST_CASE("svg: data to pixels, and marks at non-finite coordinates left out") {
  SvgChart c("c", "t", 200, 100);  // plot area: x 64..184, y 30..36 (top 30, bottom 64)
  c.set_x_exact(0, 10, "x");
  c.set_y(0, 1, "y");
  CHECK(c.px(0) == doctest::Approx(64));
  CHECK(c.px(10) == doctest::Approx(184));
  CHECK(c.py(0) == doctest::Approx(36));
  CHECK(c.py(1) == doctest::Approx(30));
  c.point(std::nan(""), 1, "#000");
  c.bar(0, 1, 0, std::numeric_limits<double>::infinity(), "#000");
  CHECK(occurrences(c.svg(), "<circle") == 0);
  CHECK(occurrences(c.svg(), "<rect") == 0);
  c.point(5, 0.5, "#000", 3, "a <tip>");
  CHECK(c.svg().find("<title>a &lt;tip&gt;</title>") != std::string::npos);
}

TEST_CASE("report.html of a run: its charts, its figures, markup in names escaped, no non-finite text") {
  rl::RunResult r;
  r.scenario = "<b>demo</b> & co";
  r.gpus = 8;
  r.gpu_memory_gib = 80;
  for (int64_t s = 1; s <= 3; ++s) {
    rl::StepRecord rec;
    rec.step = s;
    rec.time_s = 10.0 * static_cast<double>(s);
    rec.stages.rollout = 7.0 * static_cast<double>(s);
    rec.stages.train = 3.0 * static_cast<double>(s);
    rec.contexts = {10, 1000, 800, 1500, 1900, 2000};
    rec.memory_peak_gib = {{"rollout", 60}, {"train", std::nan("")}};
    r.steps.push_back(rec);
  }
  r.total_time_s = 60;
  const std::string html = run_report_html(r);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  for (const char* id : {"id=\"step-times\"", "id=\"contexts\"", "id=\"memory\""}) CHECK(html.find(id) != std::string::npos);
  CHECK(html.find("&lt;b&gt;demo&lt;/b&gt; &amp; co") != std::string::npos);
  CHECK(html.find("<b>demo</b>") == std::string::npos);
  CHECK(html.find("nan") == std::string::npos);
  CHECK(html.find("inf") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(occurrences(html, "<rect x=") >= 6);  // two stages in each of three steps, and the legend's
  CHECK(html.find("No tool pools in this run.") != std::string::npos);
  // An empty run still makes a page.
  CHECK(run_report_html(rl::RunResult{}).find("</html>") != std::string::npos);
}

TEST_CASE("capacity report: the deadline drawn when near the configurations, noted when far") {
  CapacityReport c;
  c.scenario = "s";
  c.steps = 10;
  CapacityPoint a;
  a.label = "a";
  a.feasible = true;
  a.total_time_s = 3600;
  a.gpu_hours = 8;
  a.cost_usd = 20;
  a.pareto = true;
  CapacityPoint b = a;
  b.label = "b";
  b.feasible = false;
  b.reason = "does not fit";
  c.points = {a, b};
  c.deadline_s = 2 * 3600.0;
  c.cheapest_in_deadline = 0;
  std::string html = capacity_report_html(c);
  CHECK(html.find("deadline 2.000 h") != std::string::npos);
  CHECK(html.find("cheapest within the deadline: a") != std::string::npos);
  CHECK(html.find("does not fit") != std::string::npos);
  c.deadline_s = 100 * 3600.0;
  html = capacity_report_html(c);
  CHECK(html.find("lies beyond the plotted range") != std::string::npos);
}
