// `arlsim estimate STAGE.json`: one stage in isolation — a training iteration, an inference
// forward pass, or a collective — with time, throughput and memory per rank.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/estimate_rollout.h"
#include "app/options.h"
#include "sim/model/collective.h"
#include "sim/model/compute.h"
#include "sim/model/error_band.h"
#include "sim/model/inference.h"
#include "sim/model/train.h"
#include "sim/input/check.h"

namespace arlsim::app {
namespace po = boost::program_options;
using nlohmann::ordered_json;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

ordered_json memory_json(const model::MemoryBreakdown& m) {
  ordered_json j;
  for (const auto& [name, bytes] : m.items) j[name] = bytes / kGiB;
  j["total"] = m.total() / kGiB;
  j["capacity"] = m.capacity_bytes / kGiB;
  return j;
}

std::string memory_text(const model::MemoryBreakdown& m) {
  std::string out;
  char line[128];
  for (const auto& [name, bytes] : m.items) {
    std::snprintf(line, sizeof line, "  %-12s %9.2f GiB\n", name.c_str(), bytes / kGiB);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-12s %9.2f GiB of %.2f GiB usable: %s\n", "total", m.total() / kGiB,
                m.capacity_bytes / kGiB, m.fits() ? "fits" : "DOES NOT FIT");
  return out + line;
}

// "  (-1% to +20%: 80% of 44 published runs)": where the measured value fell, relative to the
// prediction, on the validation rows of the kind (" on h100-sxm" where the GPU's own rows make it).
std::string band_text(const std::optional<model::ErrorBand>& band, double seconds) {
  if (!band || seconds <= 0) return {};
  char text[192];
  std::snprintf(text, sizeof text, "  (%+.0f%% to %+.0f%%: 80%% of %d published runs%s%s)",
                100 * (band->time_low(seconds) / seconds - 1), 100 * (band->time_high(seconds) / seconds - 1), band->rows,
                band->gpu.empty() ? "" : " on ", band->gpu.c_str());
  return text;
}

// Prices with the profile's model and counts the GEMM shapes inside and outside its measured grid
// (a calibrated profile's table; outside it the analytic model answers), so that the estimate can
// say how much of it rests on measurements.
class GridCounter final : public model::CostModel {
 public:
  GridCounter(const input::ClusterSpec& c, input::Dtype dtype) : analytic_(c, dtype), compute_(c.gpu, dtype) {}
  model::OpCost cost(const model::Op& op) const override {
    if (const auto* g = std::get_if<model::GemmOp>(&op)) {
      ++gemms_;
      if (g->groups == 1 && compute_.in_gemm_grid(g->m, g->n, g->k)) ++inside_;
    }
    return analytic_.cost(op);
  }
  double peak_flops() const override { return analytic_.peak_flops(); }
  int64_t gemms() const { return gemms_; }
  int64_t inside() const { return inside_; }

 private:
  model::AnalyticCostModel analytic_;
  model::ComputeModel compute_;
  mutable int64_t gemms_ = 0, inside_ = 0;
};

int estimate_train(const input::StageSpec& s, const std::string& file, bool json) {
  model::TrainRequest r;
  r.layout = s.train.layout;
  r.seq_len = s.train.seq_len;
  r.global_batch = s.train.global_batch;
  r.dtype = s.dtype;
  r.moe_imbalance = s.train.moe_imbalance;
  r.unfused_attention = s.train.unfused_attention;
  r.usable_memory_fraction = s.usable_memory_fraction;
  if (const std::string problem = model::check_train_request(s.model, s.cluster, r); !problem.empty()) {
    std::cerr << file << ": /layout: " << problem << "\n";
    return kExitBadInput;
  }
  const GridCounter counter(s.cluster, r.dtype);
  const auto e = model::estimate_train(s.model, s.cluster, r, counter);
  const bool gridded = s.cluster.gpu.gemm_points(r.dtype).size() > 1;
  const auto& b = e.breakdown;
  const auto band = model::validation_band("training", s.cluster.gpu.name);
  if (json) {
    ordered_json j;
    j["kind"] = "train";
    j["iteration_s"] = e.iteration_s;
    if (band) {
      j["iteration_s_low"] = band->time_low(e.iteration_s);
      j["iteration_s_high"] = band->time_high(e.iteration_s);
    }
    j["tokens_per_s"] = e.tokens_per_s;
    if (band) {
      j["tokens_per_s_low"] = band->rate_low(e.tokens_per_s);
      j["tokens_per_s_high"] = band->rate_high(e.tokens_per_s);
    }
    j["model_tflops_per_gpu"] = e.model_tflops_per_gpu;
    j["mfu"] = e.mfu;
    if (band) {
      j["mfu_low"] = band->rate_low(e.mfu);
      j["mfu_high"] = band->rate_high(e.mfu);
    }
    j["micro_batches"] = e.micro_batches;
    if (gridded) j["gemms_in_measured_grid"] = {{"inside", counter.inside()}, {"priced", counter.gemms()}};
    j["memory_per_rank_gib"] = memory_json(e.memory);
    j["fits"] = e.memory.fits();
    j["breakdown_s"] = {{"forward_per_micro_batch", b.forward_s}, {"backward_per_micro_batch", b.backward_s},
                        {"pipeline", b.pipeline_s},         {"bubble_fraction", b.bubble_fraction},
                        {"tp_comm_per_micro_batch", b.tp_comm_s},
                        {"tp_comm_exposed_per_micro_batch", b.tp_comm_exposed_s},
                        {"cp_comm_exposed_per_micro_batch", b.cp_comm_exposed_s},
                        {"ep_comm_per_micro_batch", b.ep_comm_s}, {"pp_comm_per_micro_batch", b.pp_comm_s},
                        {"pp_comm_exposed_per_micro_batch", b.pp_comm_exposed_s},
                        {"dp_comm", b.dp_comm_s},           {"dp_comm_exposed", b.dp_comm_exposed_s},
                        {"optimizer", b.optimizer_s}};
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  const auto& l = r.layout;
  std::printf("train %s on %lld x %s: tp %lld pp %lld dp %lld cp %lld ep %lld, %lld micro-batches of %lld x %lld tokens\n",
              s.model.name.c_str(), static_cast<long long>(l.gpus()), s.cluster.gpu.name.c_str(),
              static_cast<long long>(l.tp), static_cast<long long>(l.pp), static_cast<long long>(l.dp),
              static_cast<long long>(l.cp), static_cast<long long>(l.ep), static_cast<long long>(e.micro_batches),
              static_cast<long long>(l.micro_batch), static_cast<long long>(r.seq_len));
  std::printf("  iteration    %9.3f s%s\n  tokens/s     %9.0f\n  TFLOP/s/GPU  %9.1f (model FLOPs)\n  MFU          %9.1f %%\n",
              e.iteration_s, band_text(band, e.iteration_s).c_str(), e.tokens_per_s, e.model_tflops_per_gpu, 100 * e.mfu);
  std::printf("  pipeline %.3f s (bubble %.1f %%), optimizer %.3f s\n", b.pipeline_s, 100 * b.bubble_fraction,
              b.optimizer_s);
  std::printf("  communication  exposed   hidden (s)\n");
  std::printf("    TP / micro-batch %9.4f %9.4f\n", b.tp_comm_exposed_s, b.tp_comm_s - b.tp_comm_exposed_s);
  std::printf("    DP / iteration   %9.4f %9.4f\n", b.dp_comm_exposed_s, std::max(0.0, b.dp_comm_s - b.dp_comm_exposed_s));
  if (gridded)
    std::printf("  GEMMs          %lld of %lld priced inside the profile's measured grid, the rest by the analytic model\n",
                static_cast<long long>(counter.inside()), static_cast<long long>(counter.gemms()));
  std::printf("memory per rank\n%s", memory_text(e.memory).c_str());
  return kExitOk;
}

int estimate_inference(const input::StageSpec& s, const std::string& file, bool json) {
  const auto& in = s.inference;
  if (s.model.num_heads % in.tp != 0 || s.model.num_layers % in.pp != 0 ||
      (in.ep > 1 && (!s.model.has_moe || s.model.moe.num_experts % in.ep != 0))) {
    std::cerr << file << ": /layout: tp " << in.tp << " pp " << in.pp << " ep " << in.ep
              << " does not split the model's heads, layers or experts\n";
    return kExitBadInput;
  }
  const model::InferenceModel im(s.model, s.cluster, {in.tp, in.pp, in.ep});
  model::IterationBatch batch;
  if (in.prefill_tokens > 0) {
    for (int64_t i = 0; i < in.sequences; ++i) batch.prefill.push_back({in.prefill_tokens, in.context_tokens, true});
  } else {
    batch.decode_seqs = in.sequences;
    batch.decode_kv_tokens = in.sequences * in.context_tokens;
  }
  const auto cost = im.iteration(batch);
  const auto mem = model::inference_memory(
      s.model, s.cluster.gpu, {in.tp, in.pp, in.ep, in.gpu_memory_utilization, in.max_num_batched_tokens, in.max_num_seqs});
  const double tokens = static_cast<double>(in.sequences) * static_cast<double>(in.prefill_tokens > 0 ? in.prefill_tokens : 1);
  const double needed = static_cast<double>(in.sequences) * static_cast<double>(in.context_tokens + std::max<int64_t>(in.prefill_tokens, 1));
  if (json) {
    ordered_json j;
    j["kind"] = "inference";
    j["phase"] = in.prefill_tokens > 0 ? "prefill" : "decode";
    j["time_s"] = cost.seconds;
    j["tokens_per_s"] = tokens / cost.seconds;
    j["breakdown_s"] = {{"gemm", cost.gemm_s},           {"attention_prefill", cost.attention_prefill_s},
                        {"attention_decode", cost.attention_decode_s}, {"elementwise", cost.elementwise_s},
                        {"communication", cost.comm_s},  {"overhead", cost.overhead_s}};
    j["memory_per_gpu_gib"] = memory_json(mem.breakdown);
    j["kv_bytes_per_token_per_gpu"] = mem.kv_bytes_per_token_gpu;
    j["kv_capacity_tokens"] = mem.kv_capacity_tokens;
    j["fits"] = mem.kv_capacity_tokens >= needed;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("inference %s on tp %lld pp %lld (%s): %lld sequences, %s\n", s.model.name.c_str(),
              static_cast<long long>(in.tp), static_cast<long long>(in.pp), s.cluster.gpu.name.c_str(),
              static_cast<long long>(in.sequences),
              in.prefill_tokens > 0 ? ("prefill of " + std::to_string(in.prefill_tokens) + " tokens each").c_str()
                                    : ("one decode step at " + std::to_string(in.context_tokens) + " tokens of context").c_str());
  std::printf("  time         %9.3f ms\n  tokens/s     %9.0f\n  KV capacity  %9lld tokens per engine (%.0f needed)\n",
              1e3 * cost.seconds, tokens / cost.seconds, static_cast<long long>(mem.kv_capacity_tokens), needed);
  std::printf("memory per GPU\n%s", memory_text(mem.breakdown).c_str());
  return kExitOk;
}

int estimate_collective(const input::StageSpec& s, const std::string& file, bool json) {
  model::CollectiveOp op{};
  model::collective_from_name(s.collective.op, op);
  const model::CollectiveModel cm(s.cluster);
  model::CollectiveGroup g;
  g.ranks = s.collective.ranks;
  g.ranks_per_node = std::min(s.collective.ranks, s.cluster.gpus_per_node);
  if (g.ranks > s.cluster.total_gpus()) {
    std::cerr << file << ": /ranks: " << g.ranks << " ranks exceed the cluster's " << s.cluster.total_gpus() << " GPUs\n";
    return kExitBadInput;
  }
  const auto c = cm.cost(op, s.collective.bytes, g);
  const auto band = model::validation_band("collective", s.cluster.gpu.name);
  if (json) {
    ordered_json j;
    j["kind"] = "collective";
    j["op"] = s.collective.op;
    j["bytes"] = s.collective.bytes;
    j["ranks"] = g.ranks;
    j["nodes"] = g.nodes();
    j["time_s"] = c.seconds;
    if (band) {
      j["time_s_low"] = band->time_low(c.seconds);
      j["time_s_high"] = band->time_high(c.seconds);
    }
    j["algbw_gbps"] = c.algbw_bytes_per_s / 1e9;
    j["busbw_gbps"] = c.busbw_bytes_per_s / 1e9;
    if (band) {
      j["busbw_gbps_low"] = band->rate_low(c.busbw_bytes_per_s) / 1e9;
      j["busbw_gbps_high"] = band->rate_high(c.busbw_bytes_per_s) / 1e9;
    }
    j["algorithm"] = c.algorithm;
    j["protocol"] = c.protocol;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s of %.0f bytes over %lld ranks on %lld node(s) of %s\n", s.collective.op.c_str(), s.collective.bytes,
              static_cast<long long>(g.ranks), static_cast<long long>(g.nodes()), s.cluster.gpu.name.c_str());
  std::printf("  time       %10.1f us%s\n  algbw      %10.2f GB/s\n  busbw      %10.2f GB/s\n  algorithm  %10s\n"
              "  protocol   %10s\n",
              1e6 * c.seconds, band_text(band, c.seconds).c_str(), c.algbw_bytes_per_s / 1e9, c.busbw_bytes_per_s / 1e9,
              c.algorithm.c_str(),
              c.protocol.c_str());
  return kExitOk;
}

}  // namespace

int run_estimate(const Args& args) {
  std::string file;
  std::vector<std::string> overrides;
  po::options_description opts("arlsim estimate STAGE.json [options]\n\n"
                               "Estimates one stage in isolation: \"kind\": \"train\" (an iteration), \"inference\"\n"
                               "(one forward pass over a batch), \"collective\" or \"rollout\" (requests served by\n"
                               "inference engines). See docs/formats.md.\n\nOptions");
  std::string granularity = "skip";
  opts.add_options()("help,h", "this text")("json", "print the results as JSON")(
      "set", po::value(&overrides)->composing(), "override a field: /json/pointer=value (repeatable)")(
      "rollout-granularity", po::value(&granularity)->default_value("skip"),
      "rollout: \"skip\" jumps over decode iterations whose batch does not change; \"iteration\" simulates each");
  po::variables_map vm;
  if (int status = parse_options(args, opts, Positional{"file", 1, po::value(&file)}, vm); status >= 0)
    return status;
  if (file.empty()) {
    std::cerr << "arlsim estimate: no stage file\n" << opts;
    return kExitBadInput;
  }
  input::Diagnostics diag;
  auto doc = input::check_document(file, input::SpecKind::stage, overrides, diag);
  if (!doc) {
    // Another kind of document (a scenario, a model): say what estimate takes instead of why it
    // is not a stage.
    input::Diagnostics other_diag;
    if (auto other = input::check_document(file, std::nullopt, {}, other_diag); other && other->kind != input::SpecKind::stage) {
      const std::string kind(input::kind_name(other->kind));
      std::cerr << "arlsim estimate: " << file << " is a " << kind << "; estimate takes a stage (scenarios/stages/, `arlsim list stages`)"
                << (other->kind == input::SpecKind::scenario ? "; a scenario runs with `arlsim simulate`" : "") << "\n";
      return kExitBadInput;
    }
  }
  std::cerr << input::format_all(diag);
  if (!doc) return kExitBadInput;
  const auto& s = std::get<input::StageSpec>(doc->spec);
  std::string missing = s.kind == input::StageKind::collective ? model::missing_collective_data(s.cluster)
                                                              : model::missing_compute_data(s.cluster.gpu, s.dtype);
  if (missing.empty() && s.kind != input::StageKind::collective && s.cluster.total_gpus() > 1)
    missing = model::missing_collective_data(s.cluster);
  if (!missing.empty()) {
    std::cerr << file << ": the GPU profile " << s.cluster.gpu.name << " lacks " << missing
              << " needed for this estimate; calibrate it or add the figures\n";
    return kExitBadInput;
  }
  if (granularity != "skip" && granularity != "iteration") {
    std::cerr << "arlsim estimate: --rollout-granularity must be \"skip\" or \"iteration\", not \"" << granularity << "\"\n";
    return kExitBadInput;
  }
  const bool json = vm.count("json") > 0;
  switch (s.kind) {
    case input::StageKind::train: return estimate_train(s, file, json);
    case input::StageKind::inference: return estimate_inference(s, file, json);
    case input::StageKind::collective: return estimate_collective(s, file, json);
    case input::StageKind::rollout: return estimate_rollout(s, file, json, granularity == "iteration");
  }
  return kExitInternal;
}

}  // namespace arlsim::app
