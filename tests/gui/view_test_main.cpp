// The widget tests' main: a QApplication (offscreen unless a platform is chosen) made before
// doctest runs the cases and destroyed after them.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <QApplication>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  int qt_argc = 1;
  QApplication app(qt_argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
