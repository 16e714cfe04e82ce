#include <doctest/doctest.h>

#include <cmath>

#include "sim/model/transformer.h"
#include "sim/input/check.h"

using namespace arlsim;

namespace {

input::ModelSpec load(const std::string& name_or_path) {
  input::Diagnostics diag;
  auto doc = input::check_document(name_or_path, input::SpecKind::model, {}, diag);
  INFO(input::format_all(diag));
  REQUIRE(doc.has_value());
  return std::get<input::ModelSpec>(doc->spec);
}

double rel(double a, double b) { return std::fabs(a - b) / b; }

}  // namespace

// Published totals from the model cards and technical reports (scenarios/models/SOURCES.md).
// Where a card rounds (e.g. "8.2B"), the tolerance is the 1% the presets promise.
TEST_CASE("model presets match their published parameter counts within 1%") {
  struct Published {
    const char* preset;
    double total;
    double non_embedding;  // 0 when not published
  };
  const Published published[] = {
      {"llama-3.1-8b", 8.03e9, 0},      {"llama-3.1-70b", 70.6e9, 0},    {"qwen2.5-7b", 7.61e9, 6.53e9},
      {"qwen2.5-14b", 14.7e9, 13.1e9},  {"qwen2.5-32b", 32.5e9, 31.0e9}, {"qwen2.5-72b", 72.7e9, 70.0e9},
      {"qwen3-4b", 4.0e9, 3.6e9},       {"qwen3-8b", 8.2e9, 6.95e9},     {"qwen3-14b", 14.8e9, 13.2e9},
      {"qwen3-32b", 32.8e9, 31.2e9},    {"qwen3-30b-a3b", 30.5e9, 29.9e9}, {"deepseek-v3", 671e9, 0},
  };
  for (const auto& p : published) {
    const auto counts = model::count_params(load(p.preset));
    INFO(p.preset, ": total ", counts.total, ", non-embedding ", counts.non_embedding());
    CHECK(rel(counts.total, p.total) < 0.01);
    if (p.non_embedding > 0) CHECK(rel(counts.non_embedding(), p.non_embedding) < 0.015);
  }
}

TEST_CASE("MoE presets match their published active parameter counts") {
  // Qwen3-30B-A3B: "3.3B activated"; DeepSeek-V3: "37B activated" (both rounded; the tolerance is
  // half of the last published digit: 0.05B of 3.3B, 0.5B of 37B, plus the 1% margin).
  const auto qwen = model::count_params(load("qwen3-30b-a3b"));
  CHECK(rel(qwen.active, 3.3e9) < 0.015 + 0.01);
  const auto ds = model::count_params(load("deepseek-v3"));
  CHECK(rel(ds.active, 37e9) < 0.0135 + 0.01);
  // The 685B on the model hub includes the 14B multi-token-prediction module.
  CHECK(rel(ds.total + ds.mtp, 685e9) < 0.01);
}

TEST_CASE("GPT-NeoX (Pythia-6.9B) counts exactly as its model card") {
  const auto m = load(ARLSIM_SOURCE_DIR "/tests/input/data/hf/pythia-6.9b.json");
  CHECK(m.mlp == input::MlpKind::plain);
  CHECK(m.norm == input::NormKind::layernorm);
  const auto c = model::count_params(m);
  CHECK(c.total == 6857302016.0);
  CHECK(c.non_embedding() == 6444163072.0);
}

TEST_CASE("Mistral config.json is read as a Llama-like GQA model") {
  const auto m = load(ARLSIM_SOURCE_DIR "/tests/input/data/hf/mistral-7b-v0.3.json");
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  // 32 layers x (attention 4096x(4096+2x1024+4096) + MLP 3x4096x14336 + 2 norms) + 2 x 32768 x 4096 + norm
  const double layer = 4096.0 * (4096 + 2 * 1024 + 4096) + 3.0 * 4096 * 14336 + 2 * 4096;
  CHECK(model::count_params(m).total == 32 * layer + 2.0 * 32768 * 4096 + 4096);
}

TEST_CASE("KV-cache bytes per token: GQA and MLA") {
  // Llama-3.1-8B: 32 layers x 2 (K and V) x 8 kv heads x 128 x 2 bytes = 131072.
  CHECK(model::kv_bytes_per_token(load("llama-3.1-8b")) == 32 * 2 * 8 * 128 * 2);
  // DeepSeek-V3 MLA: 61 layers x (512 latent + 64 rotary) x 2 bytes = 70272.
  CHECK(model::kv_bytes_per_token(load("deepseek-v3")) == 61 * (512 + 64) * 2);
}

TEST_CASE("forward FLOPs per token: 2 x matmul weights + attention term") {
  const auto m = load("llama-3.1-8b");
  const auto c = model::count_params(m);
  // Matmul weights: everything but the input embedding and the norms.
  const double matmul = c.total - 128256.0 * 4096 - (32 * 2 + 1) * 4096.0;
  const double attention_per_ctx = 2.0 * 32 * 32 * (128 + 128);
  CHECK(model::forward_flops_per_token(m, 0) == doctest::Approx(2 * matmul));
  CHECK(model::forward_flops_per_token(m, 4096) == doctest::Approx(2 * matmul + attention_per_ctx * 4096));
  // Causal mean over 4096 tokens attends to (4096 + 1) / 2 tokens on average.
  CHECK(model::forward_flops_per_token_causal(m, 4096) == doctest::Approx(2 * matmul + attention_per_ctx * 4096.5 / 2));
}

TEST_CASE("our own model format reads the same figures as the HF config") {
  input::Diagnostics diag;
  auto doc = input::check_document(ARLSIM_SOURCE_DIR "/tests/input/data/own-qwen2.5-7b.json", input::SpecKind::model, {}, diag);
  INFO(input::format_all(diag));
  REQUIRE(doc);
  const auto own = model::count_params(std::get<input::ModelSpec>(doc->spec));
  const auto hf = model::count_params(load("qwen2.5-7b"));
  CHECK(own.total == hf.total);
  CHECK(own.active == hf.active);
}
