// Bad-input corpora: files of one extension in a folder, each paired with NAME.expected.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace arlsim::test {

struct CorpusCase {
  std::filesystem::path input;
  std::string expected;  // the exact diagnostics
};

// The cases of `dir` (relative to the repository root, where ctest runs), in name order.
inline std::vector<CorpusCase> corpus(const std::filesystem::path& dir, const std::string& extension) {
  REQUIRE(std::filesystem::is_directory(dir));
  std::vector<std::filesystem::path> inputs;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == extension) inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  std::vector<CorpusCase> cases;
  for (const auto& input : inputs) {
    std::filesystem::path expected_path = input;
    expected_path.replace_extension(".expected");
    std::ifstream file(expected_path);
    REQUIRE_MESSAGE(file, "missing ", expected_path.string());
    std::stringstream text;
    text << file.rdbuf();
    cases.push_back({input, text.str()});
  }
  return cases;
}

}  // namespace arlsim::test
