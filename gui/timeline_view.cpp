#include "gui/timeline_view.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <functional>

namespace arlsim::view {

namespace {
constexpr int kLabelWidth = 180;
constexpr int kRulerHeight = 22;
constexpr int kHeaderHeight = 20;
constexpr int kRowHeight = 16;
constexpr int kCounterHeight = 34;

// A time in the unit that suits `scale_us` (a ruler's step, or the value itself).
QString seconds_text(double us, double scale_us) {
  const double a = std::abs(scale_us);
  if (a >= 1e6) return QString::number(us / 1e6, 'f', a >= 1e7 ? 0 : (a >= 1e6 ? 1 : 3)) + " s";
  if (a >= 1e3) return QString::number(us / 1e3, 'f', a >= 1e4 ? 0 : 1) + " ms";
  return QString::number(us, 'f', a >= 1 ? 0 : 3) + " us";
}

QString seconds_text(double us) {
  const double a = std::abs(us);
  if (a >= 1e6) return QString::number(us / 1e6, 'f', a >= 1e8 ? 1 : 3) + " s";
  if (a >= 1e3) return QString::number(us / 1e3, 'f', 3) + " ms";
  return QString::number(us, 'f', 3) + " us";
}

// A ruler step of 1, 2 or 5 x 10^k microseconds that gives about `target` ticks.
double nice_step(double span_us, double target) {
  const double raw = span_us / target, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}
}  // namespace

QColor category_color(const std::string& cat) {
  static const std::pair<const char*, QColor> known[] = {
      {"rollout", QColor(76, 145, 219)},   {"reward", QColor(240, 173, 78)},  {"old_logprob", QColor(110, 190, 120)},
      {"ref_logprob", QColor(70, 160, 90)}, {"critic", QColor(150, 120, 200)}, {"dispatch", QColor(220, 110, 90)},
      {"train", QColor(200, 70, 70)},       {"weight_sync", QColor(130, 130, 130)}};
  for (const auto& [name, color] : known)
    if (cat == name) return color;
  const size_t h = std::hash<std::string>{}(cat);
  return QColor::fromHsv(static_cast<int>(h % 360), 110 + static_cast<int>((h >> 9) % 60), 200);
}

TimelineView::TimelineView(const Timeline& tl, QWidget* parent) : QWidget(parent), tl_(tl) {
  collapsed_.assign(tl_.processes.size(), false);
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  setMinimumSize(320, 160);
  layout_rows();
  fit_all();
}

void TimelineView::layout_rows() {
  rows_.clear();
  int y = 0;
  for (size_t p = 0; p < tl_.processes.size(); ++p) {
    const Process& pr = tl_.processes[p];
    rows_.push_back({Row::Kind::process, p, 0, 0, 0, y, kHeaderHeight});
    y += kHeaderHeight;
    if (collapsed_[p]) continue;
    for (size_t t : pr.tracks) {
      const size_t depths = std::max<size_t>(1, tl_.tracks[t].depths.size());
      for (size_t d = 0; d < depths; ++d) {
        rows_.push_back({Row::Kind::slices, p, t, d, 0, y, kRowHeight});
        y += kRowHeight;
      }
    }
    for (size_t c = 0; c < pr.counters.size(); ++c) {
      rows_.push_back({Row::Kind::counter, p, 0, 0, c, y, kCounterHeight});
      y += kCounterHeight;
    }
  }
  content_height_ = y;
}

int TimelineView::track_y(size_t track) const {
  for (const auto& r : rows_)
    if (r.kind == Row::Kind::slices && r.track == track && r.depth == 0) return kRulerHeight + r.y - scroll_;
  return -1;
}

double TimelineView::x_of(double t_us) const {
  const double w = std::max(1, width() - kLabelWidth);
  return kLabelWidth + (t_us - origin_ - a0_) / (a1_ - a0_) * w;
}

double TimelineView::t_of(double x) const {
  const double w = std::max(1, width() - kLabelWidth);
  return origin_ + a0_ + (x - kLabelWidth) / w * (a1_ - a0_);
}

void TimelineView::set_range(double a0_us, double a1_us) {
  if (!(a1_us > a0_us) || !std::isfinite(a0_us) || !std::isfinite(a1_us)) return;
  // A nanosecond across at least, and many times the spacing of doubles there (times counted
  // from the epoch are ~1e15 us, where a nanosecond is below it).
  const double spacing = std::max(std::abs(a0_us + origin_), std::abs(a1_us + origin_)) * 1e-15;
  a1_us = std::max(a1_us, a0_us + std::max(1e-3, 64 * spacing));
  if (a0_us == a0_ && a1_us == a1_) return;
  a0_ = a0_us;
  a1_ = a1_us;
  update();
  emit range_changed(a0_, a1_);
}

void TimelineView::fit_all() {
  const double span = std::max(tl_.end_us - tl_.start_us, 1.0);
  set_range(tl_.start_us - origin_ - 0.01 * span, tl_.end_us - origin_ + 0.01 * span);
}

void TimelineView::fit_step(int32_t step) {
  const StepSpan* s = tl_.step(step);
  if (!s) return;
  const double span = std::max(s->end_us - s->start_us, 1.0);
  set_range(s->start_us - origin_ - 0.01 * span, s->end_us - origin_ + 0.01 * span);
}

void TimelineView::set_search(const QString& text) {
  search_ = text.toStdString();
  update();
}

void TimelineView::zoom_at(double x, double factor) {
  const double t = t_of(std::clamp<double>(x, kLabelWidth, width())) - origin_;
  set_range(t - (t - a0_) * factor, t + (a1_ - t) * factor);
}

void TimelineView::pan_by_pixels(double dx) {
  const double dt = dx / std::max(1, width() - kLabelWidth) * (a1_ - a0_);
  set_range(a0_ + dt, a1_ + dt);
}

void TimelineView::draw_ruler(QPainter& p) {
  p.fillRect(0, 0, width(), kRulerHeight, QColor(245, 245, 245));
  p.setPen(QColor(90, 90, 90));
  const double step = nice_step(a1_ - a0_, std::max(2.0, (width() - kLabelWidth) / 110.0));
  // Ticks by index, never more than the width allows (a float step below the values' spacing
  // would not advance).
  const double first = std::ceil(a0_ / step);
  for (int k = 0; k < 64; ++k) {
    const double a = (first + k) * step;
    if (a > a1_) break;
    const double x = x_of(a + origin_);
    p.drawLine(QPointF(x, kRulerHeight - 6), QPointF(x, kRulerHeight));
    p.drawText(QPointF(x + 3, kRulerHeight - 8), seconds_text(a, step));
  }
  p.drawLine(0, kRulerHeight - 1, width(), kRulerHeight - 1);
}

void TimelineView::draw_slices(QPainter& p, const Row& r) {
  const Track& t = tl_.tracks[r.track];
  if (r.depth >= t.depths.size()) return;
  const auto& d = t.depths[r.depth];
  const int y = kRulerHeight + r.y - scroll_;
  const double t0 = t_of(kLabelWidth), t1 = t_of(width());
  const QFontMetrics fm = p.fontMetrics();
  size_t i = first_ending_after(d, t0);
  while (i < d.size() && d[i].start_us < t1) {
    const Slice& s = d[i];
    const double x0 = std::max<double>(kLabelWidth, x_of(s.start_us)), x1 = std::min<double>(width(), x_of(s.end_us));
    const int px0 = static_cast<int>(std::floor(x0)), px1 = std::max(px0 + 1, static_cast<int>(std::ceil(x1)));
    QColor c = category_color(tl_.str(s.cat));
    if (s.name != s.cat) c = c.lighter(100 + static_cast<int>(std::hash<std::string>{}(tl_.str(s.name)) % 4) * 12);
    const bool match = search_.empty() || tl_.str(s.name).find(search_) != std::string::npos;
    if (!match) c = c.lighter(170);
    p.fillRect(px0, y + 1, px1 - px0, kRowHeight - 2, c);
    ++drawn_;
    if (px1 - px0 > 40) {
      p.setPen(match ? Qt::black : QColor(150, 150, 150));
      p.drawText(QRect(px0 + 3, y, px1 - px0 - 6, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(QString::fromStdString(tl_.str(s.name)), Qt::ElideRight, px1 - px0 - 6));
    }
    // Every slice that ends inside the pixels just filled is covered: jump past them.
    const double t_next = t_of(px1);
    if (i + 1 < d.size() && d[i + 1].end_us <= t_next) i = std::max(i + 1, first_ending_after(d, t_next));
    else ++i;
  }
  // The selected slice's outline over whatever decimation drew there.
  if (selected_ && selected_->track == r.track && selected_->depth == r.depth && selected_->index < d.size()) {
    const Slice& s = d[selected_->index];
    if (s.end_us >= t0 && s.start_us <= t1) {
      const int px0 = static_cast<int>(std::floor(std::max<double>(kLabelWidth, x_of(s.start_us))));
      const int px1 = std::max(px0 + 1, static_cast<int>(std::ceil(std::min<double>(width(), x_of(s.end_us)))));
      p.setPen(QPen(Qt::black, 2));
      p.drawRect(px0, y + 1, px1 - px0 - 1, kRowHeight - 3);
    }
  }
}

void TimelineView::draw_counter(QPainter& p, const Row& r) {
  const CounterSeries& c = tl_.processes[r.process].counters[r.counter];
  const int y = kRulerHeight + r.y - scroll_, h = kCounterHeight - 4;
  const double top = c.max_value > 0 ? c.max_value : 1;
  QPainterPath path;
  path.moveTo(kLabelWidth, y + 2 + h);
  const auto& pts = c.points;
  // One sample per pixel: the value in force there (the last point at or before it).
  for (int x = kLabelWidth; x <= width(); ++x) {
    const double t = t_of(x);
    auto it = std::upper_bound(pts.begin(), pts.end(), t, [](double v, const auto& q) { return v < q.first; });
    const double v = it == pts.begin() ? 0 : std::prev(it)->second;
    path.lineTo(x, y + 2 + h - std::clamp(v / top, 0.0, 1.0) * h);
  }
  path.lineTo(width(), y + 2 + h);
  path.closeSubpath();
  p.fillPath(path, QColor(90, 150, 210, 150));
  p.setPen(QColor(60, 60, 60));
  p.drawText(QPointF(kLabelWidth + 4, y + 12), "max " + QString::number(c.max_value, 'g', 4));
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  drawn_ = 0;
  scroll_ = std::clamp(scroll_, 0, std::max(0, content_height_ - (height() - kRulerHeight)));
  if (selection_) {
    const double x0 = x_of(selection_->first), x1 = x_of(selection_->second);
    p.fillRect(QRectF(x0, kRulerHeight, std::max(1.0, x1 - x0), height()), QColor(255, 230, 150));
  }
  const QFontMetrics fm = p.fontMetrics();
  for (const Row& r : rows_) {
    const int y = kRulerHeight + r.y - scroll_;
    if (y + r.height < kRulerHeight || y > height()) continue;
    p.setClipRect(kLabelWidth, kRulerHeight, width() - kLabelWidth, height() - kRulerHeight);
    if (r.kind == Row::Kind::slices) draw_slices(p, r);
    else if (r.kind == Row::Kind::counter) draw_counter(p, r);
    p.setClipRect(0, kRulerHeight, width(), height() - kRulerHeight);
    // Labels.
    QString label;
    if (r.kind == Row::Kind::process) {
      p.fillRect(0, y, width(), kHeaderHeight, QColor(228, 232, 240));
      label = QString(collapsed_[r.process] ? "▸ " : "▾ ") + QString::fromStdString(tl_.processes[r.process].name);
      p.setPen(Qt::black);
      QFont f = p.font();
      f.setBold(true);
      p.setFont(f);
      p.drawText(QRect(4, y, width() - 8, kHeaderHeight), Qt::AlignVCenter | Qt::AlignLeft, label);
      f.setBold(false);
      p.setFont(f);
      continue;
    }
    if (r.kind == Row::Kind::slices && r.depth == 0) label = QString::fromStdString(tl_.tracks[r.track].name);
    if (r.kind == Row::Kind::counter) label = QString::fromStdString(tl_.processes[r.process].counters[r.counter].name);
    if (!label.isEmpty()) {
      p.setPen(QColor(40, 40, 40));
      p.drawText(QRect(14, y, kLabelWidth - 18, r.kind == Row::Kind::counter ? kCounterHeight : kRowHeight),
                 Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(label, Qt::ElideMiddle, kLabelWidth - 18));
    }
  }
  p.setClipping(false);
  p.setPen(QColor(200, 200, 200));
  p.drawLine(kLabelWidth - 1, kRulerHeight, kLabelWidth - 1, height());
  draw_ruler(p);
}

std::optional<TimelineView::Hit> TimelineView::hit(QPoint pt) const {
  if (pt.x() < kLabelWidth || pt.y() < kRulerHeight) return std::nullopt;
  const int cy = pt.y() - kRulerHeight + scroll_;
  for (const Row& r : rows_) {
    if (r.kind != Row::Kind::slices || cy < r.y || cy >= r.y + r.height) continue;
    const Track& t = tl_.tracks[r.track];
    if (r.depth >= t.depths.size()) return std::nullopt;
    const auto& d = t.depths[r.depth];
    // The slice under the pointer, or one within two pixels of it (a thin slice).
    const double slack = 2 * (a1_ - a0_) / std::max(1, width() - kLabelWidth), at = t_of(pt.x());
    const size_t i = first_ending_after(d, at - slack);
    if (i < d.size() && d[i].start_us <= at + slack) return Hit{r.track, r.depth, i};
    return std::nullopt;
  }
  return std::nullopt;
}

QString TimelineView::details(const Hit& h) const {
  const Track& t = tl_.tracks[h.track];
  const Slice& s = t.depths[h.depth][h.index];
  QString out = QString::fromStdString(tl_.str(s.name)) + "\n";
  out += "stage: " + QString::fromStdString(tl_.str(s.cat)) + "\n";
  if (s.op != Slice::kNone) out += "op: " + QString::fromStdString(tl_.str(s.op)) + "\n";
  out += "where: " + QString::fromStdString(t.name);
  for (const auto& p : tl_.processes)
    if (p.pid == t.pid) out += ", " + QString::fromStdString(p.name);
  out += "\n";
  if (s.step >= 0) out += "step: " + QString::number(s.step) + "\n";
  out += "start: " + seconds_text(s.start_us) + "\nduration: " + seconds_text(s.end_us - s.start_us) + "\n";
  if (s.flops > 0) out += "FLOPs: " + QString::number(s.flops, 'g', 4) + "\n";
  if (s.bytes > 0) out += "bytes: " + QString::number(s.bytes, 'g', 4) + "\n";
  return out;
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double notches = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ControlModifier) zoom_at(e->position().x(), std::pow(0.8, notches));
  else if (e->modifiers() & Qt::ShiftModifier) pan_by_pixels(-notches * 80);
  else {
    scroll_ = std::clamp(scroll_ - static_cast<int>(notches * 3 * kRowHeight), 0,
                         std::max(0, content_height_ - (height() - kRulerHeight)));
    update();
  }
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  press_ = last_ = e->pos();
  selecting_ = (e->modifiers() & Qt::ShiftModifier) || e->button() == Qt::RightButton;
  dragging_ = !selecting_;
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_) {
    pan_by_pixels(last_.x() - e->pos().x());
    scroll_ = std::clamp(scroll_ - (e->pos().y() - last_.y()), 0, std::max(0, content_height_ - (height() - kRulerHeight)));
    update();
  } else if (selecting_) {
    const double t0 = t_of(std::min(press_.x(), e->pos().x())), t1 = t_of(std::max(press_.x(), e->pos().x()));
    selection_ = std::make_pair(t0, t1);
    update();
  }
  last_ = e->pos();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const bool click = (e->pos() - press_).manhattanLength() < 4;
  if (selecting_ && selection_ && !click) emit range_selected(selection_->first, selection_->second);
  if (click) {
    selection_.reset();
    // A click on a process header collapses or expands it.
    const int cy = e->pos().y() - kRulerHeight + scroll_;
    for (const Row& r : rows_)
      if (r.kind == Row::Kind::process && cy >= r.y && cy < r.y + r.height && e->pos().y() >= kRulerHeight) {
        collapsed_[r.process] = !collapsed_[r.process];
        layout_rows();
        update();
        dragging_ = selecting_ = false;
        return;
      }
    selected_ = hit(e->pos());
    emit slice_selected(selected_ ? details(*selected_) : QString());
    update();
  }
  dragging_ = selecting_ = false;
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double cx = mapFromGlobal(QCursor::pos()).x();
  const double x = cx >= kLabelWidth && cx <= width() ? cx : (kLabelWidth + width()) / 2.0;
  switch (e->key()) {
    case Qt::Key_W: zoom_at(x, 0.8); break;
    case Qt::Key_S: zoom_at(x, 1.25); break;
    case Qt::Key_A: pan_by_pixels(-0.1 * (width() - kLabelWidth)); break;
    case Qt::Key_D: pan_by_pixels(0.1 * (width() - kLabelWidth)); break;
    case Qt::Key_F:
      if (selected_) {
        const Slice& s = tl_.tracks[selected_->track].depths[selected_->depth][selected_->index];
        const double pad = std::max(0.05 * (s.end_us - s.start_us), 1e-3);
        set_range(s.start_us - origin_ - pad, s.end_us - origin_ + pad);
      } else {
        fit_all();
      }
      break;
    case Qt::Key_Up: scroll_ = std::max(0, scroll_ - kRowHeight); update(); break;
    case Qt::Key_Down: scroll_ += kRowHeight; update(); break;
    default: QWidget::keyPressEvent(e);
  }
}

}  // namespace arlsim::view
