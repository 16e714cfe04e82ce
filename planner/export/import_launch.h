// What the framework readers of `arlsim import` share (import.cpp: verl, OpenRLHF and slime
// launches; import_areal.cpp: AReaL's YAML configuration): a launch in arlsim's terms before it
// becomes a scenario. Private to the importer.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "planner/export/import.h"

namespace arlsim::planner::import_detail {

using Json = nlohmann::ordered_json;

// One shell word and the line it starts on.
struct Word {
  std::string text;
  int line = 0;
};

// A whole number from 0 to 10^17 (a launch's counts); nothing otherwise.
inline std::optional<int64_t> integer(const std::string& s) {
  if (s.empty() || s.size() > 17 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

// What one launch says, in arlsim's terms, before it becomes a scenario.
struct Launch {
  std::map<std::string, Json> workload, engine, rollout, train;
  int64_t nodes = 0, gpus_per_node = 0, rollout_nodes = 0, rollout_gpus_per_node = 0;
  int64_t prompts = 0, mini_batch_prompts = 0, train_batch_samples = 0, steps = 0, staleness = -1;
  bool disaggregated = false, async = false, balance = true, megatron = false;
  // verl's actor offload (optimizer_offload, with or without param_offload): its state to host
  // memory between phases by tensor.to("cpu"), Adam still on the GPU: the to-cpu swap, not
  // ZeRO-Offload. Where the flag was read, for the note.
  std::optional<Word> optimizer_offload, param_offload;
  std::string name;
};

// AReaL v2's YAML: the backend strings and the batch keys, every other key listed; false (with
// errors in `out`) when it cannot be read.
bool areal(const ImportRequest& r, ImportResult& out, Launch& l);

}  // namespace arlsim::planner::import_detail
