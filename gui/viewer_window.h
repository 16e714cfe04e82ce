// The viewer's window: one timeline, or two side by side with their zoom and scroll kept together
// (aligned by a step when asked), a step selector, a search, the details of the selected slice or
// the statistics of a selected range, and for two timelines the difference per stage (predicted
// against measured, variant A against B) — the comparison a trace viewer such as Perfetto lacks.
#pragma once
#include <QWidget>
#include <memory>
#include <vector>

#include "gui/timeline_data.h"

class QComboBox;
class QCheckBox;
class QLineEdit;
class QPlainTextEdit;
class QTableWidget;
class QSplitter;
class QLabel;

namespace arlsim::view {

class TimelineView;

class ViewerWindow : public QWidget {
  Q_OBJECT
 public:
  explicit ViewerWindow(std::vector<Timeline> timelines, QWidget* parent = nullptr);
  ~ViewerWindow() override;
  // Every pane shows [t0, t1] seconds of its own timeline.
  void show_seconds(double t0_s, double t1_s);
  void select_step(int32_t step);  // -1: all
  void set_aligned(bool on);
  const std::vector<TimelineView*>& views() const { return views_; }
  QTableWidget* difference_table() const { return diff_; }

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void fill_difference();
  void show_range_stats(size_t pane, double t0_us, double t1_us);
  void align();

  std::vector<std::unique_ptr<Timeline>> timelines_;
  std::vector<TimelineView*> views_;
  std::vector<QLabel*> labels_;  // each pane's header
  std::vector<QString> label_texts_;
  QComboBox* steps_ = nullptr;
  QCheckBox* align_ = nullptr;
  QLineEdit* search_ = nullptr;
  QPlainTextEdit* details_ = nullptr;
  QTableWidget* diff_ = nullptr;
  QSplitter* split_ = nullptr;
  bool sized_ = false;
  bool syncing_ = false;
};

}  // namespace arlsim::view
