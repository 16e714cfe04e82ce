// Random damage for the fuzz tests: one to four edits (replace, delete, insert, truncate,
// duplicate a span, write a random byte), with replacements drawn mostly from `special`.
#pragma once

#include <random>
#include <string>
#include <string_view>

namespace arlsim::test {

inline std::string mutate(std::string text, std::string_view special, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    const size_t at = rng() % text.size();
    switch (rng() % 6) {
      case 0: text[at] = special[rng() % special.size()]; break;
      case 1: text.erase(at, 1 + rng() % 16); break;
      case 2: text.insert(at, 1, special[rng() % special.size()]); break;
      case 3: text.resize(at); break;
      case 4: text.insert(at, text.substr(rng() % text.size(), rng() % 64)); break;
      default: text[at] = static_cast<char>(rng() & 0xff); break;
    }
  }
  return text;
}

}  // namespace arlsim::test
