// What the exporters share (export.cpp: verl's launch and the entry point; export_frameworks.cpp:
// OpenRLHF's, slime's and AReaL's). Not part of the planner's interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/export/export.h"

namespace arlsim::planner::export_detail {

std::string num(int64_t v);
std::string num(double v);
std::string flag(bool b);  // Python's True / False
// Text for a comment line: no line breaks.
std::string one_line(std::string t);
// A scenario's name as a word a shell, Hydra, Slurm and YAML take as is: letters, digits, `.`, `_`
// and `-`, anything else a `-`.
std::string safe_name(const std::string& name);
// The training run's length in steps: a generated trace's steps (which a sampled trace, every
// k-th step kept, still spans), else the scenario's.
int64_t run_steps(const input::ScenarioSpec& s);
// Whether the layout needs Megatron (tensor, pipeline or expert parallelism, or ring context
// parallelism) rather than a data-parallel engine (FSDP, DeepSpeed).
bool needs_megatron(const input::TrainLayout& l);
// Workers go on nnodes x n_gpus_per_node GPUs: whole nodes, or part of one; false (and `error`)
// when the GPUs do not fill whole nodes.
bool worker_grid(int64_t gpus, int64_t per_node, int64_t& nnodes, int64_t& n_gpus, std::string& error,
                 const std::string& what);

// Each framework's launch; `notes` gains what it cannot express, `error` what stops it.
std::string openrlhf_script(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                            std::string& error);
std::string slime_script(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                         std::string& error);
std::string areal_config(const input::ScenarioSpec& s, const ExportRequest& r, std::vector<std::string>& notes,
                         std::string& error);

}  // namespace arlsim::planner::export_detail
