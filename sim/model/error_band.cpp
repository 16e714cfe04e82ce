#include "sim/model/error_band.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "sim/input/presets.h"

namespace arlsim::model {

std::optional<ErrorBand> band_from_record(std::string_view record_json, std::string_view kind) {
  const auto j = nlohmann::json::parse(record_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kinds") || !j["kinds"].is_object()) return std::nullopt;
  const auto it = j["kinds"].find(std::string(kind));
  if (it == j["kinds"].end() || !it->is_object()) return std::nullopt;
  const auto& k = *it;
  if (!k.contains("error_low") || !k.contains("error_high") || !k.contains("rows") || !k["error_low"].is_number() ||
      !k["error_high"].is_number() || !k["rows"].is_number_integer())
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

std::optional<ErrorBand> validation_band(std::string_view kind) {
  const input::Preset* record = input::find_preset("bands", "error-bands");
  if (!record) return std::nullopt;
  return band_from_record(record->text, kind);
}

}  // namespace arlsim::model
