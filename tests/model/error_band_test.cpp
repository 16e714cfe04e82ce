#include <doctest/doctest.h>

#include "sim/model/error_band.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

namespace {

const char* kRecord = R"({"format": "arlsim-error-bands/1", "kinds": {
  "training": {"rows": 40, "error_low": -0.2, "error_high": 0.1},
  "biased": {"rows": 10, "error_low": -0.3, "error_high": -0.1},
  "reversed": {"rows": 10, "error_low": 0.1, "error_high": -0.1}}})";

}  // namespace

TEST_CASE("error band: the measured value lies in [p / (1 + e_high), p / (1 + e_low)], widened to hold p") {
  const auto b = model::band_from_record(kRecord, "training");
  REQUIRE(b);
  CHECK(b->rows == 40);
  // Predicted 10 s: measured 20% below the prediction's error means 10 / 0.8 = 12.5 s; 10% above,
  // 10 / 1.1 s.
  CHECK(b->time_low(10) == test::near(10 / 1.1));
  CHECK(b->time_high(10) == test::near(12.5));
  // A rate goes the other way.
  CHECK(b->rate_low(100) == test::near(80));
  CHECK(b->rate_high(100) == test::near(110));
  // A model that was always fast: the range lies above the prediction, and the band is widened
  // to bracket the point estimate.
  const auto biased = model::band_from_record(kRecord, "biased");
  REQUIRE(biased);
  CHECK(biased->time_low(10) == 10);
  CHECK(biased->time_high(10) == test::near(10 / 0.7));
  CHECK(biased->rate_high(100) == 100);
}

TEST_CASE("error band: a GPU with enough rows of its own has its own band; others take the kind's") {
  const char* record = R"({"kinds": {"training": {"rows": 40, "error_low": -0.2, "error_high": 0.1, "by_gpu": {
    "h100-sxm": {"rows": 20, "error_low": -0.05, "error_high": 0.02},
    "few": {"rows": 4, "error_low": -0.5, "error_high": 0.5},
    "bad": {"rows": 9, "error_low": 0.3, "error_high": 0.1}}}}})";
  const auto h100 = model::band_from_record(record, "training", "h100-sxm");
  REQUIRE(h100);
  CHECK(h100->rows == 20);
  CHECK(h100->gpu == "h100-sxm");
  CHECK(h100->error_low == -0.05);
  // Fewer rows than a band of its own needs, a malformed one, none, or no GPU asked: every row's.
  for (const char* gpu : {"few", "bad", "l40s", ""}) {
    const auto b = model::band_from_record(record, "training", gpu);
    REQUIRE(b);
    CHECK(b->rows == 40);
    CHECK(b->gpu.empty());
  }
}

TEST_CASE("error band: no band for a kind the record lacks, or from a malformed record") {
  CHECK_FALSE(model::band_from_record(kRecord, "rollout"));
  CHECK_FALSE(model::band_from_record(kRecord, "reversed"));
  CHECK_FALSE(model::band_from_record("{not json", "training"));
  CHECK_FALSE(model::band_from_record(R"({"kinds": {"training": {"rows": 3, "error_low": -1.5, "error_high": 0}}})",
                                      "training"));
}

TEST_CASE("error band: the embedded record has the training and collective kinds, bracketing predictions") {
  for (const char* kind : {"training", "collective"}) {
    const auto b = model::validation_band(kind);
    REQUIRE(b);
    CHECK(b->rows > 10);
    CHECK(b->time_low(1.0) <= 1.0);
    CHECK(b->time_high(1.0) >= 1.0);
  }
}
