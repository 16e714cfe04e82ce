#include "sim/model/error_band.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "sim/input/presets.h"

namespace arlsim::model {

namespace {

std::optional<ErrorBand> band_of(const nlohmann::json& k) {
  if (!k.is_object() || !k.contains("error_low") || !k.contains("error_high") || !k.contains("rows") ||
      !k["error_low"].is_number() || !k["error_high"].is_number() || !k["rows"].is_number_integer())
    return std::nullopt;
  ErrorBand b;
  b.error_low = k["error_low"].get<double>();
  b.error_high = k["error_high"].get<double>();
  b.rows = k["rows"].get<int>();
  // A band must be ordered and keep predictions positive.
  if (!std::isfinite(b.error_low) || !std::isfinite(b.error_high) || b.error_low > b.error_high ||
      b.error_low <= -1 || b.rows <= 0)
    return std::nullopt;
  return b;
}

}  // namespace

std::optional<ErrorBand> band_from_record(std::string_view record_json, std::string_view kind, std::string_view gpu) {
  const auto j = nlohmann::json::parse(record_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kinds") || !j["kinds"].is_object()) return std::nullopt;
  const auto it = j["kinds"].find(std::string(kind));
  if (it == j["kinds"].end() || !it->is_object()) return std::nullopt;
  if (!gpu.empty() && it->contains("by_gpu") && (*it)["by_gpu"].is_object()) {
    const auto& by_gpu = (*it)["by_gpu"];
    if (const auto g = by_gpu.find(std::string(gpu)); g != by_gpu.end())
      if (auto b = band_of(*g); b && b->rows >= kBandMinimumRows) {
        b->gpu = std::string(gpu);
        return b;
      }
  }
  return band_of(*it);
}

std::optional<ErrorBand> validation_band(std::string_view kind, std::string_view gpu) {
  const input::Preset* record = input::find_preset("bands", "error-bands");
  if (!record) return std::nullopt;
  return band_from_record(record->text, kind, gpu);
}

}  // namespace arlsim::model
