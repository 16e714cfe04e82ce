// Presets embedded in the program at build time from the JSON files in scenarios/ and
// calib/profiles/, so that an installed arlsim works from any directory.
#pragma once

#include <string_view>
#include <vector>

namespace arlsim::input {

// The embedded validation record (calib/error-bands.json) is a preset of this kind; it is not a
// specification and the loader never offers it.
inline constexpr std::string_view kNotASpec = "bands";

struct Preset {
  std::string_view kind;  // model, gpu, cluster, workload, policy, scenario
  std::string_view name;  // file name without ".json"
  std::string_view origin;  // the file it was embedded from, relative to the source tree
  std::string_view text;
};

const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view kind, std::string_view name);
std::vector<std::string_view> preset_names(std::string_view kind);

}  // namespace arlsim::input
