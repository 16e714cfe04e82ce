// A registry of named choices: the pluggable policies (routing, tool scheduling, dispatch, batch
// assignment, layout selectors) each register once, with the name a user types, a one-line
// description and what the name stands for, and everything else — the input parser, `arlsim list
// policies`, output names, error messages with "did you mean" — reads the registry. (SimGrid
// registers its models the same way.) What a choice builds, a routing policy object say, is made
// by its module from the value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/core/assert.h"
#include "sim/parse/diagnostics.h"
#include "sim/parse/json.h"

namespace arlsim::parse {

template <typename T>
struct Choice {
  std::string_view name;
  std::string_view description;
  T value;
};

template <typename T>
class Registry {
 public:
  // `what` names the family in messages ("routing policy").
  Registry(std::string_view what, std::vector<Choice<T>> choices) : what_(what), choices_(std::move(choices)) {}

  std::string_view what() const { return what_; }
  const std::vector<Choice<T>>& choices() const { return choices_; }
  // nullptr for an unknown name.
  const Choice<T>* find(std::string_view name) const {
    for (const auto& c : choices_)
      if (c.name == name) return &c;
    return nullptr;
  }
  std::string_view name(T value) const {
    for (const auto& c : choices_)
      if (c.value == value) return c.name;
    ARLSIM_ASSERT(false && "a value every registry lists");
    return {};
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& c : choices_) out.emplace_back(c.name);
    return out;
  }
  // `unknown routing policy "x"; expected one of "a", "b" or "c"`.
  std::string unknown(std::string_view name) const {
    return "unknown " + std::string(what_) + " " + quote(name) + "; expected one of " + join_quoted(names());
  }
  // `did you mean "a"?`, or "" when no name is close.
  std::string hint(std::string_view name) const {
    const std::string guess = closest_match(name, names());
    return guess.empty() ? std::string() : "did you mean " + quote(guess) + "?";
  }

 private:
  std::string_view what_;
  std::vector<Choice<T>> choices_;
};

}  // namespace arlsim::parse
