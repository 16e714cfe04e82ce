// One timeline drawn as tracks: a header per process (click to collapse), a row per nesting depth
// of each thread's slices, and each counter as an area chart under its process; a time ruler on
// top. Zoom and pan as Perfetto's users expect (Ctrl+wheel or W/S zoom at the pointer, Shift+wheel
// or A/D pan, drag pans, the wheel scrolls), Shift+drag selects a time range, a click selects a
// slice. A frame draws at most one slice per pixel per row (timeline_data.h).
#pragma once
#include <QWidget>
#include <optional>
#include <string>

#include "gui/timeline_data.h"

namespace arlsim::view {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(const Timeline& tl, QWidget* parent = nullptr);

  // The visible range in aligned time: microseconds after origin() (0 unless aligned).
  double range_start() const { return a0_; }
  double range_end() const { return a1_; }
  double origin() const { return origin_; }
  void set_origin(double origin_us) { origin_ = origin_us; update(); }
  void fit_all();
  void fit_step(int32_t step);
  void set_search(const QString& text);
  const Timeline& timeline() const { return tl_; }
  // Rows drawn in the last frame and the slices among them (for the benchmark and tests).
  int64_t last_frame_slices() const { return drawn_; }
  // The top of each track's first row, in widget pixels (-1: hidden), as last laid out.
  int track_y(size_t track) const;

 public slots:
  void set_range(double a0_us, double a1_us);

 signals:
  void range_changed(double a0_us, double a1_us);
  void slice_selected(const QString& details);
  void range_selected(double t0_us, double t1_us);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  struct Row {
    enum class Kind { process, slices, counter } kind = Kind::slices;
    size_t process = 0, track = 0, depth = 0, counter = 0;
    int y = 0, height = 0;
  };
  struct Hit {
    size_t track = 0, depth = 0, index = 0;
  };
  void layout_rows();
  double x_of(double t_us) const;  // t_us: the file's own time
  double t_of(double x) const;
  void zoom_at(double x, double factor);
  void pan_by_pixels(double dx);
  std::optional<Hit> hit(QPoint p) const;
  QString details(const Hit& h) const;
  void draw_ruler(class QPainter& p);
  void draw_slices(class QPainter& p, const Row& r);
  void draw_counter(class QPainter& p, const Row& r);

  const Timeline& tl_;
  double a0_ = 0, a1_ = 1, origin_ = 0;
  int scroll_ = 0;
  std::vector<bool> collapsed_;
  std::vector<Row> rows_;
  int content_height_ = 0;
  std::optional<Hit> selected_;
  std::optional<std::pair<double, double>> selection_;  // file time
  std::string search_;
  QPoint press_, last_;
  bool dragging_ = false, selecting_ = false;
  int64_t drawn_ = 0;
};

// The colour of a stage or category (fixed for arlsim's stages, hashed for other names).
QColor category_color(const std::string& cat);

}  // namespace arlsim::view
