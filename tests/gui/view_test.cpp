// The viewer's widgets rendered offscreen: slices land in their tracks in their stage's colour, a
// frame draws at most about one slice per pixel, two panes keep their ranges together and align
// by step, and the difference per stage is A against B.
#include <doctest/doctest.h>

#include <QApplication>
#include <QImage>
#include <QTableWidget>
#include <QTest>
#include <QWheelEvent>
#include <string>

#include "gui/timeline_view.h"
#include "gui/viewer_window.h"

using namespace arlsim::view;

namespace {
// The application lives in main() (view_test_main.cpp), which makes it before any test runs.
void app() { REQUIRE(QApplication::instance() != nullptr); }

// Stage slices of one step on the "stages" track of "training", starting at `offset` us.
std::string stages_timeline(double offset, double train_us) {
  const auto x = [&](const char* name, double ts, double dur) {
    return std::string(R"({"ph":"X","pid":1,"tid":2,"ts":)") + std::to_string(offset + ts) + R"(,"dur":)" +
           std::to_string(dur) + R"(,"name":")" + name + R"(","cat":")" + name + R"(","args":{"step":1,"op":"train"}})";
  };
  return std::string(R"({"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"training"}},)") +
         R"({"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"stages"}},)" + x("train", 0, train_us) + "," +
         x("weight_sync", train_us, 50) + "]}";
}

QImage render(QWidget& w) {
  w.show();
  QApplication::processEvents();
  return w.grab().toImage();
}
}  // namespace

TEST_CASE("slices are drawn in their track in their stage's colour") {
  app();
  const Timeline tl = parse_timeline(stages_timeline(0, 100), "a.json");
  TimelineView v(tl);
  v.resize(800, 200);
  v.set_range(0, 200);
  const QImage img = render(v);
  const int y = v.track_y(0) + 8;
  REQUIRE(y > 0);
  // 620 pixels of time after the 180-pixel label column: train covers x 180..490, weight_sync
  // 490..645 (each with its name written from its left end).
  CHECK(QColor(img.pixel(300, y)) == category_color("train"));
  CHECK(QColor(img.pixel(630, y)) == category_color("weight_sync"));
  CHECK(QColor(img.pixel(700, y)) == QColor(Qt::white));  // after the step
  CHECK(v.last_frame_slices() == 2);
}

TEST_CASE("a frame draws at most about one slice per pixel however many there are") {
  app();
  std::string text = "[";
  for (int i = 0; i < 100000; ++i)
    text += (i ? "," : "") + std::string(R"({"ph":"X","pid":1,"tid":2,"ts":)") + std::to_string(2 * i) +
            R"(,"dur":1,"name":"s","cat":"rollout"})";
  text += "]";
  const Timeline tl = parse_timeline(text, "many.json");
  REQUIRE(tl.tracks[0].slice_count() == 100000);
  TimelineView v(tl);
  v.resize(800, 200);
  v.fit_all();
  render(v);
  CHECK(v.last_frame_slices() <= 620 + 10);
  CHECK(v.last_frame_slices() >= 300);  // and the track is not left empty
  v.set_range(0, 40);  // 20 slices in view: every one drawn
  render(v);
  CHECK(v.last_frame_slices() == 20);
}

TEST_CASE("two timelines side by side: ranges kept together, aligned by step, difference per stage") {
  app();
  std::vector<Timeline> two;
  two.push_back(parse_timeline(stages_timeline(0, 100), "a.json"));
  two.push_back(parse_timeline(stages_timeline(1000, 150), "b.json"));
  ViewerWindow w(std::move(two));
  w.resize(1200, 600);
  render(w);
  REQUIRE(w.views().size() == 2);
  w.views()[0]->set_range(10, 20);
  CHECK(w.views()[1]->range_start() == 10);
  CHECK(w.views()[1]->range_end() == 20);
  w.set_aligned(true);
  CHECK(w.views()[0]->origin() == 0);
  CHECK(w.views()[1]->origin() == 1000);  // step 1 of B starts at 1000 us
  QTableWidget* diff = w.difference_table();
  REQUIRE(diff != nullptr);
  REQUIRE(diff->rowCount() == 2);
  CHECK(diff->item(0, 0)->text() == "train");
  CHECK(diff->item(0, 1)->text() == "0.000");  // 100 us
  CHECK(diff->item(0, 4)->text() == "50.0%");  // 150 us against 100 us
  CHECK(diff->item(1, 0)->text() == "weight_sync");
  CHECK(diff->item(1, 4)->text() == "0.0%");
}

TEST_CASE("keys, wheel and mouse: zoom and pan, a click selects a slice or collapses a process, Shift+drag a range") {
  app();
  const Timeline tl = parse_timeline(stages_timeline(0, 100), "a.json");
  TimelineView v(tl);
  v.resize(800, 200);
  v.set_range(0, 200);
  render(v);
  QString details;
  std::pair<double, double> range{-1, -1};
  QObject::connect(&v, &TimelineView::slice_selected, [&](const QString& d) { details = d; });
  QObject::connect(&v, &TimelineView::range_selected, [&](double a, double b) { range = {a, b}; });
  // W zooms in about the middle, S out again; D pans right by a tenth of the view.
  QTest::keyClick(&v, Qt::Key_W);
  CHECK(v.range_end() - v.range_start() == doctest::Approx(160));
  QTest::keyClick(&v, Qt::Key_S);
  CHECK(v.range_end() - v.range_start() == doctest::Approx(200));
  const double before = v.range_start();
  QTest::keyClick(&v, Qt::Key_D);
  CHECK(v.range_start() == doctest::Approx(before + 20));
  v.set_range(0, 200);
  // Ctrl+wheel zooms at the pointer: the time under it stays put.
  const QPointF at(490, v.track_y(0) + 8);  // 100 us
  QWheelEvent zoom(at, v.mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(&v, &zoom);
  CHECK(v.range_end() - v.range_start() == doctest::Approx(160));
  CHECK(v.range_start() + (490.0 - 180.0) / 620.0 * 160.0 == doctest::Approx(100));
  v.set_range(0, 200);
  // A click on the train slice gives its details.
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(300, v.track_y(0) + 8));
  CHECK(details.startsWith("train\n"));
  CHECK(details.contains("duration: 100.000 us"));
  CHECK(details.contains("op: train"));
  CHECK(details.contains("step: 1"));
  // A click on empty space clears it.
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(750, v.track_y(0) + 8));
  CHECK(details.isEmpty());
  // Shift+drag from 50 us to 100 us selects that range.
  QTest::mousePress(&v, Qt::LeftButton, Qt::ShiftModifier, QPoint(335, v.track_y(0) + 8));
  QMouseEvent move(QEvent::MouseMove, QPointF(490, v.track_y(0) + 8), v.mapToGlobal(QPointF(490, v.track_y(0) + 8)),
                   Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
  QApplication::sendEvent(&v, &move);
  QTest::mouseRelease(&v, Qt::LeftButton, Qt::ShiftModifier, QPoint(490, v.track_y(0) + 8));
  CHECK(range.first == doctest::Approx(50));
  CHECK(range.second == doctest::Approx(100));
  // A click on the process header collapses it: its track is no longer laid out.
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, QPoint(300, v.track_y(0) - 10));
  CHECK(v.track_y(0) == -1);
}
