// What the framework readers of `arlsim import` share (import.cpp: verl, OpenRLHF and slime
// launches; import_areal.cpp: AReaL's YAML configuration): a launch in arlsim's terms before it
// becomes a scenario (import_scenario.cpp). Private to the importer.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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

// The commands of a shell script, each its words (import_words.cpp): backslash-newline joins lines,
// `#` starts a comment, quotes group, redirections are dropped, nothing is expanded. The line of
// a quote never closed goes to `unclosed_quote_line` (0: none).
std::vector<std::vector<Word>> shell_commands(const std::string& raw, int& unclosed_quote_line);
// A finite number; nothing otherwise.
std::optional<double> real(const std::string& s);
// A boolean as OmegaConf takes one (any case): true, yes, on, 1; false, no, off, 0.
std::optional<bool> boolean(const std::string& s);
// The known key that `key` is a slip of (one or two edits away), or "": a framework's keys are
// long dotted paths, where parse::closest_match's proportional rule would pair unrelated siblings.
std::string slip_of(const std::string& key, const std::vector<std::string>& known);

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
  // Per scenario field, the launch's word that last set it ("FILE:LINE: key=value"): a scenario
  // the launch cannot make is reported at the words the user wrote (Origins records it).
  std::map<std::string, std::string> origin;
};

// Records, for each field of a launch that reading one word changes, that word as its origin:
// made before the word is read, it compares when it goes.
class Origins {
 public:
  Origins(Launch& l, std::string at)
      : l_(l), at_(std::move(at)), workload_(l.workload), engine_(l.engine), rollout_(l.rollout), train_(l.train),
        scalars_(scalars(l)) {}
  Origins(const Origins&) = delete;
  Origins& operator=(const Origins&) = delete;
  ~Origins() {
    note(workload_, l_.workload, "/workload/");
    note(engine_, l_.engine, "/workload/engine/");
    note(rollout_, l_.rollout, "/policy/rollout/");
    note(train_, l_.train, "/policy/train/");
    static const char* pointers[] = {"/cluster/nodes", "/cluster/gpus_per_node", "/workload/prompts_per_step",
                                     "/workload/mini_batches", "/steps"};
    const auto now = scalars(l_);
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i] != scalars_[i]) l_.origin[pointers[i]] = at_;
  }

 private:
  static std::vector<int64_t> scalars(const Launch& l) {
    return {l.nodes, l.gpus_per_node, l.prompts, l.mini_batch_prompts, l.steps};
  }
  void note(const std::map<std::string, Json>& before, const std::map<std::string, Json>& after, const std::string& prefix) {
    for (const auto& [k, v] : after)
      if (const auto it = before.find(k); it == before.end() || it->second != v) l_.origin[prefix + k] = at_;
  }
  Launch& l_;
  std::string at_;
  std::map<std::string, Json> workload_, engine_, rollout_, train_;
  std::vector<int64_t> scalars_;
};

// AReaL v2's YAML: the backend strings and the batch keys, every other key listed; false (with
// errors in `out`) when it cannot be read.
bool areal(const ImportRequest& r, ImportResult& out, Launch& l);

// A note at a launch's word: "FILE:LINE: key: how".
void note_at(ImportResult& out, const std::string& file, const Word& w, const std::string& key, const std::string& how);

// The launches a framework's file holds (import.cpp; AReaL's YAML by areal()), in order, and the
// weight-sync bucket a verl launch gives; none, with out.errors saying why, when nothing usable
// was read. import_scenario.cpp makes them one scenario.
struct ReadLaunches {
  std::vector<Launch> launches;
  int64_t weight_sync_bucket_mb = 0;
};
ReadLaunches read_launches(const ImportRequest& r, ImportResult& out);

}  // namespace arlsim::planner::import_detail
