// arlsim-view TIMELINE [TIMELINE2]: the timeline viewer. With --screenshot it renders offscreen
// into a PNG and exits (for tests, documents and CI); a file it cannot read is named with the
// problem, in a dialog or on stderr, and the exit status is 2.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QPixmap>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "gui/timeline_view.h"
#include "gui/viewer_window.h"

namespace {

constexpr int kExitBadInput = 2;

bool parse_pair(const QString& text, QChar sep, double& a, double& b) {
  const auto parts = text.split(sep);
  if (parts.size() != 2) return false;
  bool ok1 = false, ok2 = false;
  a = parts[0].toDouble(&ok1);
  b = parts[1].toDouble(&ok2);
  return ok1 && ok2 && std::isfinite(a) && std::isfinite(b);
}

}  // namespace

int main(int argc, char** argv) {
  // A screenshot needs no screen: render offscreen unless the caller chose a platform.
  bool screenshot = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--screenshot" || std::string(argv[i]).rfind("--screenshot=", 0) == 0) screenshot = true;
  // Without a screen (no DISPLAY, no Wayland, no platform chosen) Qt would abort: parse the
  // options offscreen and say so instead of opening a window.
  const bool platform_chosen = !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  const bool has_display = platform_chosen || !qEnvironmentVariableIsEmpty("DISPLAY") ||
                           !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
  if ((screenshot && !platform_chosen) || !has_display) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("arlsim-view");

  QCommandLineParser cli;
  cli.setApplicationDescription(
      "Shows arlsim timelines (timeline.json, or any Chrome Trace Event file); two side by side with their zoom "
      "kept together and the difference per stage.\nKeys: W/S zoom, A/D pan, F fit, Ctrl+wheel zoom, "
      "Shift+wheel pan, drag pans, Shift+drag selects a range, click selects a slice.");
  cli.addHelpOption();
  cli.addPositionalArgument("TIMELINE", "a timeline.json");
  cli.addPositionalArgument("TIMELINE2", "a second one, shown beside the first", "[TIMELINE2]");
  QCommandLineOption shot("screenshot", "render offscreen into OUT.png and exit", "OUT.png");
  QCommandLineOption size("size", "window size for --screenshot (default 1400x900)", "WxH", "1400x900");
  QCommandLineOption range("range", "show seconds A to B of each timeline", "A:B");
  QCommandLineOption step("step", "show step N", "N");
  QCommandLineOption align("align", "two timelines: align them by the step shown");
  cli.addOptions({shot, size, range, step, align});
  auto usage = [&](const QString& what) {
    std::cerr << "arlsim-view: " << what.toStdString() << "\n";
    return kExitBadInput;
  };
  // parse(), not process(): an unknown option is a usage error with status 2, as elsewhere.
  if (!cli.parse(QApplication::arguments())) return usage(cli.errorText());
  if (cli.isSet("help")) cli.showHelp(0);
  if (!screenshot && !has_display)
    return usage("no display to show the window on (DISPLAY is not set); --screenshot OUT.png renders without one");
  const QStringList files = cli.positionalArguments();
  if (files.isEmpty() || files.size() > 2) return usage("give one or two timeline files (see --help)");
  double w = 0, h = 0, r0 = 0, r1 = 0;
  if (!parse_pair(cli.value(size), 'x', w, h) || w < 200 || h < 150 || w > 16384 || h > 16384)
    return usage("--size must be WxH, from 200x150 to 16384x16384, got \"" + cli.value(size) + "\"");
  if (cli.isSet(range) && (!parse_pair(cli.value(range), ':', r0, r1) || !(r1 > r0)))
    return usage("--range must be A:B seconds with A < B, got \"" + cli.value(range) + "\"");
  int step_shown = -1;
  if (cli.isSet(step)) {
    bool ok = false;
    step_shown = cli.value(step).toInt(&ok);
    if (!ok || step_shown < 0) return usage("--step must be a step number, got \"" + cli.value(step) + "\"");
  }

  std::vector<arlsim::view::Timeline> timelines;
  try {
    for (const auto& f : files) timelines.push_back(arlsim::view::load_timeline(f.toStdString()));
  } catch (const arlsim::view::LoadError& e) {
    if (!screenshot) QMessageBox::critical(nullptr, "arlsim-view", QString::fromStdString(e.what()));
    return usage(QString::fromStdString(e.what()));
  }

  arlsim::view::ViewerWindow window(std::move(timelines));
  window.resize(static_cast<int>(w), static_cast<int>(h));
  if (cli.isSet(align)) window.set_aligned(true);
  if (step_shown >= 0) window.select_step(step_shown);
  if (cli.isSet(range)) window.show_seconds(r0, r1);
  if (screenshot) {
    window.show();
    QApplication::processEvents();
    const QString out = cli.value(shot);
    if (!window.grab().save(out, "PNG")) return usage("cannot write the screenshot to \"" + out + "\"");
    return 0;
  }
  window.show();
  return QApplication::exec();
}
