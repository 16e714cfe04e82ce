#include "sim/input/presets.h"

#include <span>

#include "sim/input/presets_data.h"

namespace arlsim::input {

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = [] {
    std::vector<Preset> out;
    for (const auto& p : std::span(generated::kPresetTable, generated::kPresetCount))
      out.push_back({p.kind, p.name, p.origin, std::string_view(p.text, p.size)});
    return out;
  }();
  return all;
}

const Preset* find_preset(std::string_view kind, std::string_view name) {
  for (const auto& p : presets())
    if (p.kind == kind && p.name == name) return &p;
  return nullptr;
}

std::vector<std::string_view> preset_names(std::string_view kind) {
  std::vector<std::string_view> out;
  for (const auto& p : presets())
    if (p.kind == kind) out.push_back(p.name);
  return out;
}

}  // namespace arlsim::input
