// One-line and tabular descriptions of checked inputs, shared by check, list and the default run.
#pragma once

#include <string>
#include <vector>

#include "sim/input/check.h"

namespace arlsim::app {

// "Qwen2ForCausalLM (qwen2): 7.62 B params, dense, 28 layers, GQA 28/4 heads, 32768 context"
std::string describe_model(const input::ModelSpec& m);
std::string describe(const input::CheckedDocument& doc);

// A table of every preset model's derived figures at the given context length.
std::string model_table(int64_t context);

// Loads and checks a preset; prints diagnostics to stderr when it fails.
std::optional<input::CheckedDocument> check_preset(std::string_view kind, std::string_view name);

}  // namespace arlsim::app
