// nlohmann's conversion of std::optional (absent: null), which the release in Debian 12 lacks:
// for the codecs that send results between processes under mpirun. Include after
// <nlohmann/json.hpp>, in .cpp files only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) { j = v ? json(*v) : json(nullptr); }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) v.reset();
    else v = j.get<T>();
  }
};
}  // namespace nlohmann
