#include "app/summaries.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "sim/model/transformer.h"
#include "sim/input/presets.h"
#include "sim/parse/units.h"

namespace arlsim::app {

using input::format_bytes;
using input::format_count;

std::string describe_model(const input::ModelSpec& m) {
  const auto p = model::count_params(m);
  std::string s = (m.description.empty() ? m.family : m.description + " (" + m.family + ")") + ": " +
                  format_count(p.total) + " params";
  if (m.has_moe)
    s += ", MoE " + std::to_string(m.moe.experts_per_token) + "/" + std::to_string(m.moe.num_experts) + " experts, " +
         format_count(p.active) + " active";
  else
    s += ", dense";
  s += ", " + std::to_string(m.num_layers) + " layers, ";
  if (m.attention == input::AttentionKind::mla)
    s += "MLA " + std::to_string(m.num_heads) + " heads";
  else
    s += "GQA " + std::to_string(m.num_heads) + "/" + std::to_string(m.num_kv_heads) + " heads";
  s += ", " + std::to_string(m.max_context) + " context";
  return s;
}

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string tflops(double flops_per_s) {
  char buf[32];
  if (flops_per_s < 1e12) std::snprintf(buf, sizeof buf, "%.3g GFLOP/s", flops_per_s / 1e9);
  else std::snprintf(buf, sizeof buf, "%.0f TFLOP/s", flops_per_s / 1e12);
  return buf;
}

// The profile's headline peak: bf16's, else the first dtype it has (a CPU's fp32).
std::string headline_peak(const input::GpuProfile& g) {
  using input::Dtype;
  for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::tf32, Dtype::fp8})
    if (g.peak(d) > 0) return tflops(g.peak(d)) + " " + input::dtype_name(d);
  return "no peak";
}

}  // namespace

std::string describe(const input::CheckedDocument& doc) {
  using namespace input;
  switch (doc.kind) {
    case SpecKind::model: return "model, " + describe_model(std::get<ModelSpec>(doc.spec));
    case SpecKind::gpu: {
      const auto& g = std::get<GpuProfile>(doc.spec);
      std::string clock;
      for (const auto& [dtype, rate] : g.power_limited)
        if (rate.gemm_flops_per_s > 0)
          clock += std::string(clock.empty() ? "" : ", ") + input::dtype_name(dtype) + " GEMMs at most " +
                   tflops(rate.gemm_flops_per_s) + " at the power limit";
      if (g.sustained_tensor_fraction() < 1)
        clock += std::string(clock.empty() ? "tensor work" : "; other tensor work") + " sustained at " +
                 std::to_string(std::lround(g.sustained_clock_mhz)) + " of " +
                 std::to_string(std::lround(g.benchmark_clock_mhz)) + " MHz";
      if (!clock.empty()) clock = " (" + clock + ")";
      return "gpu " + g.name + ", " + headline_peak(g) + clock + ", " + gib(g.memory_bytes) + " at " +
             format_bytes(g.memory_bandwidth_bytes_per_s) + "/s, " + g.provenance.kind;
    }
    case SpecKind::cluster: {
      const auto& c = std::get<ClusterSpec>(doc.spec);
      return "cluster " + c.name + ", " + std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) + " " +
             c.gpu.name + " = " + std::to_string(c.total_gpus()) + " GPUs";
    }
    case SpecKind::workload: {
      const auto& w = std::get<WorkloadSpec>(doc.spec);
      return std::string("workload, ") + algorithm_name(w.algorithm) + " " + std::to_string(w.prompts_per_step) +
             " prompts x " + std::to_string(w.samples_per_prompt) + " samples, context " +
             std::to_string(w.max_context_tokens);
    }
    case SpecKind::policy: {
      const auto& p = std::get<PolicySpec>(doc.spec);
      return std::string("policy, ") + (p.placement == Placement::colocated ? "colocated" : "disaggregated") +
             ", dispatch " + std::string(dispatch_name(p.dispatch));
    }
    case SpecKind::scenario: {
      const auto& s = std::get<ScenarioSpec>(doc.spec);
      const auto& t = s.policy.train;
      const auto& r = s.policy.rollout;
      return "scenario " + s.name + ": " + s.model.name + " on " + std::to_string(s.cluster.nodes) + " x " +
             std::to_string(s.cluster.gpus_per_node) + " " + s.cluster.gpu.name + ", " + algorithm_name(s.workload.algorithm) +
             " " + std::to_string(s.workload.prompts_per_step) + "x" + std::to_string(s.workload.samples_per_prompt) +
             ", rollout tp" + std::to_string(r.tp) + (r.pp > 1 ? " pp" + std::to_string(r.pp) : "") + ", train tp" +
             std::to_string(t.tp) + " pp" + std::to_string(t.pp) + " dp" + std::to_string(t.dp) +
             (t.cp > 1 ? " cp" + std::to_string(t.cp) : "");
    }
    case SpecKind::stage: {
      const auto& st = std::get<StageSpec>(doc.spec);
      static const char* kinds[] = {"train", "inference", "collective", "rollout"};
      return std::string("stage, ") + kinds[static_cast<int>(st.kind)] + " on " + std::to_string(st.cluster.total_gpus()) +
             " " + st.cluster.gpu.name + " GPUs";
    }
  }
  return "?";
}

std::optional<input::CheckedDocument> check_preset(std::string_view kind, std::string_view name) {
  input::Diagnostics diag;
  auto doc = input::check_document(name, input::kind_from_name(kind), {}, diag);
  if (!diag.empty()) std::cerr << input::format_all(diag);
  return doc;
}

std::string model_table(int64_t context) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-12s %9s %9s %9s %6s %6s %8s %10s %14s\n", "model", "family", "params",
                "active", "non-emb", "layers", "hidden", "heads", "KV/token", "GFLOP/token");
  out += line;
  for (const auto& p : input::presets()) {
    if (p.kind != "model") continue;
    auto doc = check_preset("model", p.name);
    if (!doc) continue;
    const auto& m = std::get<input::ModelSpec>(doc->spec);
    const auto c = model::count_params(m);
    const std::string heads = m.attention == input::AttentionKind::mla
                                  ? "MLA " + std::to_string(m.num_heads)
                                  : std::to_string(m.num_heads) + "/" + std::to_string(m.num_kv_heads);
    std::snprintf(line, sizeof line, "%-14s %-12s %8.2fB %8.2fB %8.2fB %6lld %6lld %8s %10s %14.2f\n",
                  std::string(p.name).c_str(), m.family.c_str(), c.total / 1e9, c.active / 1e9,
                  c.non_embedding() / 1e9, static_cast<long long>(m.num_layers), static_cast<long long>(m.hidden_size),
                  heads.c_str(), format_bytes(static_cast<double>(model::kv_bytes_per_token(m))).c_str(),
                  model::forward_flops_per_token(m, context) / 1e9);
    out += line;
  }
  return out;
}

}  // namespace arlsim::app
