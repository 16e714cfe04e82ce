// Error bands: how far the cost model's predictions of one kind (training iterations,
// collectives) have been from published measurements. The record, calib/error-bands.json, is
// written by tests/bench/validate_model.sh from the rows in tests/bench/validation and embedded at
// build time; a test checks that it is what the current model gives.
//
// A kind's signed errors e = (predicted - measured) / measured have a 10th percentile e_low and a
// 90th e_high: for 80% of the validation rows the measured value lay in [p / (1 + e_high),
// p / (1 + e_low)] of the prediction p. The band printed is that range widened to include p
// itself, so it always brackets the point estimate (a biased model's range may not). A rate
// (tokens/s, bandwidth) is banded the other way round.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace arlsim::model {

struct ErrorBand {
  double error_low = 0, error_high = 0;  // signed (predicted - measured) / measured
  int rows = 0;                          // validation rows behind it
  std::string gpu;                       // the GPU profile whose rows alone make it; empty: every row
  // The range a time predicted as `seconds` is expected in.
  double time_low(double seconds) const { return std::min(seconds, seconds / (1 + error_high)); }
  double time_high(double seconds) const { return std::max(seconds, seconds / (1 + error_low)); }
  // The same for a rate (the inverse of a time).
  double rate_low(double rate) const { return std::min(rate, rate * (1 + error_low)); }
  double rate_high(double rate) const { return std::max(rate, rate * (1 + error_high)); }
};

// The band of a kind ("training", "collective") in the embedded record; none when the record has
// no such kind (nothing of it was validated). With a GPU profile's name, the band of that GPU's
// rows where the record has one (kBandMinimumRows of them or more: the same hardware and its
// profile's sources), else the kind's over every row.
std::optional<ErrorBand> validation_band(std::string_view kind, std::string_view gpu = {});

// The same read from the text of a record (for tests); none when it is malformed or lacks the kind.
std::optional<ErrorBand> band_from_record(std::string_view record_json, std::string_view kind, std::string_view gpu = {});

// The fewest rows of one GPU that make a band of their own.
inline constexpr int kBandMinimumRows = 5;

}  // namespace arlsim::model
