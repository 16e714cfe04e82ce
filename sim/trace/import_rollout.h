// Importing rollout dumps: JSONL files with one generated sample per line, as RL frameworks write
// them for debugging (verl's rollout data directory writes STEP.jsonl files; slime's debug rollout
// data, once converted to JSONL, holds samples with response_length and tokens). Each line gives a
// sample's step (or the file name does), its prompt (an id, or the prompt text itself as the
// identity), prompt and response token counts (numbers, arrays of token ids, or text with an
// assumed number of characters per token; or the prompt as all tokens minus the response, as in
// slime's samples), and optionally its turns and whether it was cut at the limit. Field names are recognised from common aliases or chosen with ROLE=FIELD (a JSON pointer
// such as /meta/response_length reaches into nested objects).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/parse/diagnostics.h"
#include "sim/trace/trace.h"
#include "sim/trace/turns.h"

namespace arlsim::trace {

struct RolloutImportOptions {
  std::vector<std::pair<std::string, std::string>> fields;  // ROLE=FIELD choices (--field)
  double chars_per_token = 0;  // > 0: text fields count as characters / chars_per_token tokens
  int group_size = 0;          // > 0 without a prompt id: consecutive samples of a step form groups
  uint64_t seed = 1;           // splits of multi-turn responses into turns
  TurnShape shape;
};

struct RolloutRole {
  std::string_view name;
  std::string_view description;
  std::vector<std::string_view> aliases;       // fields holding the value itself (counts, ids)
  std::vector<std::string_view> text_aliases;  // fields holding text, tried last (need chars per token)
};

const std::vector<RolloutRole>& rollout_roles();

struct NamedText {
  std::string name;  // shown in messages; its trailing digits give the step when no field does
  std::string text;
};

std::optional<Trace> import_rollout_jsonl(const std::vector<NamedText>& files, const RolloutImportOptions& options,
                                          parse::Diagnostics& diag);

}  // namespace arlsim::trace
