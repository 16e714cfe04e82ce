// write_outputs: the three files in a fresh directory with the same bytes as the string writers,
// and failures that name the path instead of throwing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/report/outputs.h"
#include "sim/report/summary.h"
#include "sim/report/timeline.h"
#include "tests/report/fixture.h"

using namespace arlsim;
using namespace arlsim::report;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh, empty scratch directory for one test.
fs::path scratch(const char* name) {
  const fs::path dir = fs::temp_directory_path() / "arlsim_out_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("write_outputs creates the directory and writes the three files") {
  const rl::RunResult r = testing::sample_run();
  const fs::path dir = scratch("ok") / "nested" / "run";
  std::string error;
  REQUIRE(write_outputs(r, dir.string(), error));
  CHECK(error.empty());
  CHECK(read_file(dir / "summary.json") == summary_json(r));
  CHECK(read_file(dir / "steps.csv") == steps_csv(r));
  std::ostringstream timeline;
  write_timeline(r, timeline);
  CHECK(read_file(dir / "timeline.json") == timeline.str());

  // Again into the same directory: files are replaced with identical bytes.
  REQUIRE(write_outputs(r, dir.string(), error));
  CHECK(read_file(dir / "summary.json") == summary_json(r));
}

TEST_CASE("write_outputs reports a directory that cannot be created, naming it") {
  const fs::path base = scratch("blocked");
  std::ofstream(base / "file") << "x";
  const std::string below_file = (base / "file" / "run").string();
  std::string error;
  CHECK_FALSE(write_outputs(testing::sample_run(), below_file, error));
  CHECK(error.find("cannot create directory '" + below_file + "': ") == 0);

  const std::string is_file = (base / "file").string();
  CHECK_FALSE(write_outputs(testing::sample_run(), is_file, error));
  CHECK(error.find("cannot create directory '" + is_file + "': ") == 0);
}

TEST_CASE("write_outputs reports a file that cannot be opened, naming it") {
  const fs::path dir = scratch("taken");
  fs::create_directory(dir / "steps.csv");  // a directory where the file should go
  std::string error;
  CHECK_FALSE(write_outputs(testing::sample_run(), dir.string(), error));
  CHECK(error.find("cannot open '" + (dir / "steps.csv").string() + "' for writing: ") == 0);
}
