// The generator's parameters as named options: each has a flag name, a one-line description, a
// parser and a canonical text form. `arlsim trace gen` builds its flags and --help from this
// list, trace headers record every parameter through it, and presets are lists of such settings,
// so a preset is exactly the command line it stands for.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/parse/json.h"
#include "sim/trace/generator.h"

namespace arlsim::trace {

struct GenOption {
  std::string_view name;  // the flag without "--"
  std::string_view help;
  // Parses `value` into the parameters; returns "" or what is wrong.
  std::string (*set)(GenParams& p, std::string_view value);
  std::string (*get)(const GenParams& p);  // canonical text ("" for options that repeat)
};

std::span<const GenOption> gen_options();
const GenOption* find_gen_option(std::string_view name);

// A named starting point: the public facts it mimics and the settings that encode them.
struct GenPreset {
  std::string_view name;
  std::string_view description;
  std::string_view facts;  // what it mimics and where the figures come from
  std::vector<std::pair<std::string_view, std::string_view>> settings;
};

std::span<const GenPreset> gen_presets();
const GenPreset* find_gen_preset(std::string_view name);
std::vector<std::string> gen_preset_names();

// Applies named options to the parameters as `arlsim trace gen` applies its flags: the first
// "tool" replaces the tools the parameters had (a preset's) and later ones add to it. Returns,
// per option in order, "" or what is wrong with it (an unknown name included).
std::vector<std::string> apply_gen_options(GenParams& p, const std::vector<std::pair<std::string, std::string>>& options);

// Applies a preset's settings to default parameters (and records its name).
GenParams preset_params(const GenPreset& preset);

// The header of a generated trace: the generator, its preset and every parameter's value.
TraceHeader gen_header(const GenParams& p);
// The same parameters as a JSON object (option name -> canonical value).
parse::Value gen_parameters_json(const GenParams& p);

}  // namespace arlsim::trace
