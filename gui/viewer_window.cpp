#include "gui/viewer_window.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShowEvent>
#include <QTimer>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "gui/timeline_view.h"

namespace arlsim::view {

namespace {
QString fixed(double v, int decimals) { return QString::number(v, 'f', decimals); }
}  // namespace

ViewerWindow::~ViewerWindow() = default;

ViewerWindow::ViewerWindow(std::vector<Timeline> timelines, QWidget* parent) : QWidget(parent) {
  for (auto& t : timelines) timelines_.push_back(std::make_unique<Timeline>(std::move(t)));
  setWindowTitle("arlsim-view");
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel("Step:"));
  steps_ = new QComboBox;
  steps_->addItem("all steps", -1);
  std::set<int32_t> steps;
  for (const auto& t : timelines_)
    for (const auto& s : t->steps) steps.insert(s.step);
  for (int32_t s : steps) steps_->addItem("step " + QString::number(s), s);
  top->addWidget(steps_);
  if (timelines_.size() == 2) {
    align_ = new QCheckBox("align by step");
    top->addWidget(align_);
  }
  top->addWidget(new QLabel("Search:"));
  search_ = new QLineEdit;
  search_->setPlaceholderText("slice name");
  top->addWidget(search_, 1);
  auto* fit = new QPushButton("Fit");
  top->addWidget(fit);

  auto* panes = new QSplitter(Qt::Horizontal);
  for (size_t i = 0; i < timelines_.size(); ++i) {
    const Timeline& tl = *timelines_[i];
    auto* pane = new QWidget;
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(2, 2, 2, 2);
    const QString tag = timelines_.size() == 2 ? (i == 0 ? "A: " : "B: ") : "";
    label_texts_.push_back(tag + QFileInfo(QString::fromStdString(tl.path)).fileName() + "  (" + QString::number(tl.events) +
                           " events, " + QString::number(tl.steps.size()) + " steps, " +
                           fixed((tl.end_us - tl.start_us) / 1e6, 3) + " s)");
    labels_.push_back(new QLabel(label_texts_.back()));
    v->addWidget(labels_.back());
    auto* view = new TimelineView(tl);
    views_.push_back(view);
    v->addWidget(view, 1);
    panes->addWidget(pane);
  }

  details_ = new QPlainTextEdit;
  details_->setReadOnly(true);
  details_->setPlaceholderText("Click a slice for its details; Shift+drag for a range's statistics.");
  auto* bottom = new QWidget;
  auto* bl = new QHBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addWidget(details_, 1);
  if (timelines_.size() == 2) {
    diff_ = new QTableWidget;
    bl->addWidget(diff_, 1);
    fill_difference();
  }
  auto* split = split_ = new QSplitter(Qt::Vertical);
  split->addWidget(panes);
  split->addWidget(bottom);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 0);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);

  for (size_t i = 0; i < views_.size(); ++i) {
    TimelineView* view = views_[i];
    connect(view, &TimelineView::range_changed, this, [this, view](double a0, double a1) {
      if (syncing_) return;
      syncing_ = true;
      for (auto* other : views_)
        if (other != view) other->set_range(a0, a1);
      syncing_ = false;
    });
    connect(view, &TimelineView::slice_selected, this, [this, i](const QString& text) {
      details_->setPlainText(timelines_.size() == 2 && !text.isEmpty() ? QString(i == 0 ? "A: " : "B: ") + text : text);
    });
    connect(view, &TimelineView::range_selected, this, [this, i](double t0, double t1) { show_range_stats(i, t0, t1); });
  }
  connect(steps_, &QComboBox::currentIndexChanged, this, [this](int) { select_step(steps_->currentData().toInt()); });
  if (align_) connect(align_, &QCheckBox::toggled, this, [this](bool on) { set_aligned(on); });
  connect(search_, &QLineEdit::textChanged, this, [this](const QString& s) {
    for (auto* v : views_) v->set_search(s);
  });
  connect(fit, &QPushButton::clicked, this, [this] { select_step(steps_->currentData().toInt()); });
}

// The timelines take six sevenths of the height until the user moves the divider.
void ViewerWindow::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (sized_) return;
  sized_ = true;
  QTimer::singleShot(0, this, [this] {  // once the layout has given the splitter its height
    const int h = split_->height();
    split_->setSizes({h * 6 / 7, h - h * 6 / 7});
  });
}

void ViewerWindow::show_seconds(double t0_s, double t1_s) {
  for (auto* v : views_) {
    syncing_ = true;
    v->set_range(t0_s * 1e6 - v->origin(), t1_s * 1e6 - v->origin());
    syncing_ = false;
  }
}

void ViewerWindow::set_aligned(bool on) {
  if (align_ && align_->isChecked() != on) {
    align_->setChecked(on);  // calls back here
    return;
  }
  align();
  select_step(steps_->currentData().toInt());
}

// Aligned, each timeline's time counts from the start of the selected step (the first step when
// all are shown), so that the same step lines up in both panes.
void ViewerWindow::align() {
  const bool on = align_ && align_->isChecked();
  const int32_t chosen = steps_->currentData().toInt();
  for (size_t i = 0; i < views_.size(); ++i) {
    const Timeline& tl = *timelines_[i];
    double origin = 0;
    QString note;
    if (on) {
      // A pane without the chosen step keeps its own time, and says so.
      const StepSpan* s = tl.steps.empty() ? nullptr : chosen >= 0 ? tl.step(chosen) : &tl.steps.front();
      if (s) origin = s->start_us;
      else note = chosen >= 0 ? "  [no step " + QString::number(chosen) + ": not aligned]" : "  [no steps: not aligned]";
    }
    views_[i]->set_origin(origin);
    labels_[i]->setText(label_texts_[i] + note);
  }
}

void ViewerWindow::select_step(int32_t step) {
  const int index = steps_->findData(step);
  if (index >= 0 && index != steps_->currentIndex()) {
    steps_->setCurrentIndex(index);  // calls back here
    return;
  }
  align();
  // The first pane decides the range (the others follow); a step it lacks falls to the next.
  syncing_ = true;
  double a0 = 0, a1 = 0;
  bool set = false;
  for (auto* v : views_) {
    if (step >= 0 && !v->timeline().step(step)) continue;
    if (step >= 0) v->fit_step(step);
    else v->fit_all();
    if (!set) a0 = v->range_start(), a1 = v->range_end(), set = true;
    else a0 = std::min(a0, v->range_start()), a1 = std::max(a1, v->range_end());
  }
  if (set)
    for (auto* v : views_) v->set_range(a0, a1);
  syncing_ = false;
}

void ViewerWindow::show_range_stats(size_t pane, double t0_us, double t1_us) {
  const Timeline& tl = *timelines_[pane];
  QString out = QString(timelines_.size() == 2 ? (pane == 0 ? "A: " : "B: ") : "") + "range " + fixed(t0_us / 1e6, 6) +
                " s to " + fixed(t1_us / 1e6, 6) + " s (" + fixed((t1_us - t0_us) / 1e6, 6) + " s)\n";
  out += QString("%1  %2  %3  %4  %5\n").arg("name", -28).arg("count", 8).arg("total s", 12).arg("mean s", 12).arg("share", 7);
  const double span = std::max(t1_us - t0_us, 1e-9);
  for (const auto& s : tl.range_stats(t0_us, t1_us))
    out += QString("%1  %2  %3  %4  %5\n")
               .arg(QString::fromStdString(s.name).left(28), -28)
               .arg(s.count, 8)
               .arg(fixed(s.total_us / 1e6, 6), 12)
               .arg(fixed(s.mean_us() / 1e6, 6), 12)
               .arg(fixed(100.0 * s.total_us / span, 1) + "%", 7);
  details_->setPlainText(out);
}

void ViewerWindow::fill_difference() {
  const auto a = timelines_[0]->stage_totals_us(), b = timelines_[1]->stage_totals_us();
  // arlsim's stages in the step's order, then any other names alphabetically.
  static const std::vector<std::string> order = {"rollout", "reward",   "old_logprob", "ref_logprob",
                                                 "critic",  "dispatch", "train",       "weight_sync"};
  const auto rank = [&](const std::string& n) {
    const auto it = std::find(order.begin(), order.end(), n);
    return std::make_pair(static_cast<size_t>(it - order.begin()), n);
  };
  std::set<std::pair<size_t, std::string>> ranked;
  for (const auto& [k, v] : a) ranked.insert(rank(k));
  for (const auto& [k, v] : b) ranked.insert(rank(k));
  std::vector<std::string> names;
  for (const auto& [r, n] : ranked) names.push_back(n);
  diff_->setColumnCount(5);
  diff_->setHorizontalHeaderLabels({"stage", "A (s)", "B (s)", "B - A (s)", "B / A - 1"});
  diff_->setRowCount(static_cast<int>(names.size()));
  int row = 0;
  for (const auto& n : names) {
    const double x = a.count(n) ? a.at(n) / 1e6 : 0, y = b.count(n) ? b.at(n) / 1e6 : 0;
    const QString rel = x > 0 ? fixed(100.0 * (y / x - 1), 1) + "%" : QString("-");
    const QStringList cells{QString::fromStdString(n), fixed(x, 3), fixed(y, 3), fixed(y - x, 3), rel};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setFlags(item->flags() & ~Qt::ItemIsEditable);
      if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      diff_->setItem(row, c, item);
    }
    ++row;
  }
  diff_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  diff_->verticalHeader()->setVisible(false);
  diff_->verticalHeader()->setDefaultSectionSize(diff_->fontMetrics().height() + 6);
}

}  // namespace arlsim::view
