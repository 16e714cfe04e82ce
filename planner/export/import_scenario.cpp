// `arlsim import`'s second half: the launches a framework's file holds (read by import.cpp and
// import_areal.cpp) made into one scenario, their sizes checked and later launches a layout
// schedule.
#include "planner/export/import.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "planner/export/import_launch.h"
#include "sim/input/cluster.h"
#include "sim/input/loader.h"

namespace arlsim::planner {

namespace {

using import_detail::Json;
using import_detail::Launch;
using import_detail::Word;
using import_detail::note_at;
using import_detail::ReadLaunches;
using import_detail::read_launches;

Json layout_json(const std::map<std::string, Json>& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

// Whether the GPU of `cluster` (a preset's name or a file) gives the rates of a swap through
// pageable host memory (a scenario swapping "to-cpu" on one that does not is refused).
bool cluster_has_pageable_rates(const std::string& cluster) {
  input::Diagnostics diag;
  input::Loader loader(diag);
  const auto doc = loader.load(cluster, input::SpecKind::cluster);
  input::ClusterSpec c;
  if (!doc || !input::parse_cluster(*doc, "", diag, c)) return false;
  return c.gpu.host_pageable_out_bytes_per_s > 0 && c.gpu.host_pageable_in_bytes_per_s > 0;
}

}  // namespace

ImportResult import_launch(const ImportRequest& r) {
  ImportResult out;
  const ReadLaunches read = read_launches(r, out);
  if (read.launches.empty()) return out;
  const std::vector<Launch>& launches = read.launches;
  const Launch& base = launches.front();
  // Sizes: the GPUs the launch runs on, and the batch's split.
  // The keys each framework names for what a scenario needs.
  struct Required {
    const char *nodes, *lengths, *batch;
  };
  static const Required required[] = {
      {"trainer.nnodes and trainer.n_gpus_per_node", "data.max_prompt_length and data.max_response_length",
       "data.train_batch_size and actor_rollout_ref.actor.ppo_mini_batch_size, the first a multiple of the second"},
      {"--actor.num_nodes and --actor.num_gpus_per_node", "--data.max_len and --rollout.max_new_tokens",
       "--rollout.batch_size and --train.batch_size, the step's samples (batch x --rollout.n_samples_per_prompt) a "
       "multiple of the second"},
      {"--actor-num-nodes and --actor-num-gpus-per-node", "--rollout-max-context-len and --rollout-max-response-len",
       "--rollout-batch-size and --global-batch-size, the step's samples a multiple of the second"},
      {"cluster.n_nodes and cluster.n_gpus_per_node", "gconfig.max_tokens and gconfig.max_new_tokens",
       "train_dataset.batch_size and actor.ppo_n_minibatches, the first a multiple of the second"}};
  const Required& need = required[static_cast<int>(r.from)];
  if (base.nodes <= 0 || base.gpus_per_node <= 0) {
    out.errors.push_back(r.file + ": " + need.nodes + " are required (the GPUs of the run)");
    return out;
  }
  if (!base.workload.count("max_prompt_tokens") || !base.workload.count("max_response_tokens")) {
    out.errors.push_back(r.file + ": " + need.lengths + " are required (the length limits the simulation needs)");
    return out;
  }
  if (base.prompts <= 0 || base.mini_batch_prompts <= 0 || base.prompts % base.mini_batch_prompts != 0) {
    out.errors.push_back(r.file + ": " + need.batch + " are required");
    return out;
  }
  auto train_layout = [&](const Launch& l) {
    auto t = l.train;
    const int64_t gpus = l.nodes * l.gpus_per_node;
    const int64_t model = t.count("tp") ? t.at("tp").get<int64_t>() : 1, pp = t.count("pp") ? t.at("pp").get<int64_t>() : 1,
                  cp = t.count("cp") ? t.at("cp").get<int64_t>() : 1;
    if (!t.count("dp")) t["dp"] = std::max<int64_t>(1, gpus / std::max<int64_t>(1, model * pp * cp));
    if (!t.count("tp")) t["tp"] = 1;
    return layout_json(t);
  };
  Json s;
  s["format"] = "arlsim-scenario/1";
  s["name"] = base.name.empty() ? "imported" : base.name;
  static const char* frameworks[] = {"verl", "OpenRLHF", "slime", "AReaL"};
  s["description"] = "Imported from " + r.file + " (" + frameworks[static_cast<int>(r.from)] + " launch)";
  const int64_t rollout_nodes = base.disaggregated ? base.rollout_nodes : 0;
  s["cluster"] = {{"extends", r.cluster}, {"nodes", base.nodes + rollout_nodes}, {"gpus_per_node", base.gpus_per_node}};
  s["model"] = r.model;
  Json w = layout_json(base.workload);
  // verl's default estimator is gae (PPO), whose critic starts from the actor's model.
  if (!w.contains("algorithm")) w["algorithm"] = "ppo";
  if (w["algorithm"] == "ppo") w["critic"] = r.model;
  w["prompts_per_step"] = base.prompts;
  w["mini_batches"] = base.prompts / base.mini_batch_prompts;
  if (!base.engine.empty()) w["engine"] = layout_json(base.engine);
  s["workload"] = w;
  Json p;
  p["placement"] = base.disaggregated ? "disaggregated" : "colocated";
  if (base.disaggregated)
    p["rollout_gpus"] = r.from == ImportSource::areal
                            ? base.rollout.at("replicas").get<int64_t>() * base.rollout.at("tp").get<int64_t>() *
                                  (base.rollout.count("pp") ? base.rollout.at("pp").get<int64_t>() : 1)
                            : base.rollout_nodes * base.rollout_gpus_per_node;
  p["rollout"] = layout_json(base.rollout);
  p["train"] = train_layout(base);
  p["balance_batch"] = base.balance;
  if ((base.disaggregated || base.async) && base.staleness > 0) {
    p["sync"] = {{"mode", "async"}, {"staleness", base.staleness}};
    // AReaL's rollout controller keeps submitting prompts while the version lag allows: its
    // engines generate continuously across steps, max_head_offpolicyness + 1 batches in flight.
    if (r.from == ImportSource::areal) p["sync"]["continuous"] = base.staleness + 1;
  }
  if (read.weight_sync_bucket_mb > 0) p["weight_sync"] = {{"bucket", std::to_string(read.weight_sync_bucket_mb) + " MiB"}};
  // verl's sharding managers (FSDP's full_tensor() of each parameter, Megatron's per-tensor
  // generator over tp, pp and ep) and OpenRLHF's DeepSpeed GatheredParameters make every parameter
  // whole on each training rank before the engines take it.
  if (r.from == ImportSource::verl || r.from == ImportSource::openrlhf) p["weight_sync"]["gather"] = "full-model";
  // verl's actor offload: the to-cpu swap, where the placement swaps and the GPU gives its rates.
  if (base.optimizer_offload || base.param_offload) {
    const Word& at = base.optimizer_offload ? *base.optimizer_offload : *base.param_offload;
    const std::string key = "actor_rollout_ref.actor." + std::string(base.megatron ? "megatron." : "fsdp_config.") +
                            (base.optimizer_offload ? "optimizer_offload" : "param_offload");
    if (base.disaggregated) {
      note_at(out, r.file, at, key, "verl moves a disaggregated actor's state to host memory between its own phases; not priced");
    } else if (!base.optimizer_offload) {
      note_at(out, r.file, at, key, "verl moves the actor's weights to host memory between its phases; not priced (arlsim swaps "
                          "the optimizer's state with them, \"to-cpu\", only when optimizer_offload is set too)");
    } else if (!cluster_has_pageable_rates(r.cluster)) {
      note_at(out, r.file, at, key, "verl moves the actor's state to host memory by tensor.to(\"cpu\") between its phases (weight_sync "
                          "state \"to-cpu\"), but the GPU profile of " + r.cluster + " gives no host_pageable rates for it: "
                          "priced as a pinned swap");
    } else {
      p["weight_sync"]["state"] = "to-cpu";
      note_at(out, r.file, at, key, "verl moves the actor's state to host memory by tensor.to(\"cpu\") between its phases, Adam on "
                          "the GPU: priced as weight_sync state \"to-cpu\" (Adam's moments through pageable memory and the "
                          "weights through a pinned buffer, once a step; verl's Megatron engine also moves the fp32 master "
                          "weights and its FSDP engine moves the weights at each phase, which are not priced)");
    }
  }
  // Later launches, each resuming: segments of a layout schedule.
  if (launches.size() > 1) {
    Json schedule = Json::array();
    int64_t from = base.steps + 1;
    for (size_t i = 1; i < launches.size(); ++i) {
      const Launch& l = launches[i];
      const std::string range = std::to_string(from) + ":" + (i + 1 < launches.size() ? std::to_string(l.steps) : "");
      schedule.push_back({{"steps", range}, {"rollout", layout_json(l.rollout)}, {"train", train_layout(l)}});
      from = l.steps + 1;
    }
    p["schedule"] = schedule;
  }
  s["policy"] = p;
  // The run's length: the launch's (verl, slime), else ten steps (OpenRLHF runs over its dataset).
  const int64_t steps = launches.back().steps > 0 ? launches.back().steps : 10;
  s["steps"] = steps;
  // No trace comes with a launch: one generated at the launch's limits stands in.
  Json options = Json::object();
  if (base.workload.count("max_prompt_tokens")) options["prompt-limit"] = base.workload.at("max_prompt_tokens");
  if (base.workload.count("max_response_tokens")) options["response-limit"] = base.workload.at("max_response_tokens");
  s["trace"] = {{"generate", {{"steps", steps}, {"options", options}}}};
  out.scenario = s.dump(2) + "\n";
  out.origin = base.origin;
  // A data-parallel size the launch does not give is what its GPUs leave: at the words that set them.
  if (!base.train.count("dp")) {
    std::string words;
    for (const char* from : {"/cluster/nodes", "/cluster/gpus_per_node", "/policy/train/tp", "/policy/train/pp", "/policy/train/cp"})
      if (const auto it = base.origin.find(from); it != base.origin.end()) words += (words.empty() ? "" : " and ") + it->second;
    if (!words.empty()) out.origin["/policy/train/dp"] = words;
  }
  return out;
}


}  // namespace arlsim::planner
