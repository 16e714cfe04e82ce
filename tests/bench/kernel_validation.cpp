// The cost model's GEMM pricing against measured kernel times (tests/bench/validation/kernels.json:
// the projection GEMMs of transformer layers from Vidur's public H100 and A100 profiles). Prints
// one markdown table row per measurement with the model's time and the signed error, then the
// median and worst |error| per GPU and regime (compute-bound: 512 tokens and more; weight-read-
// bound: 32 and fewer). Kernel durations exclude launch gaps, so the model's time is taken without
// its launch overhead. A program that prints numbers, not a test.
// Usage: kernel_validation [tests/bench/validation/kernels.json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/input/check.h"
#include "sim/model/compute.h"

using namespace arlsim;

namespace {

std::optional<input::GpuProfile> load_gpu(const std::string& name) {
  input::Diagnostics diag;
  const auto doc = input::check_document(name, input::SpecKind::gpu, {}, diag);
  if (!doc) {
    std::fprintf(stderr, "%s", input::format_all(diag).c_str());
    return std::nullopt;
  }
  return std::get<input::GpuProfile>(doc->spec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "tests/bench/validation/kernels.json";
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read it\n", path.c_str());
    return 2;
  }
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
    return 2;
  }
  std::map<std::string, model::ComputeModel> models;
  std::map<std::string, double> launch_s;
  std::map<std::string, std::vector<double>> errors;  // by "gpu, regime"
  std::printf("| row | m x n x k | measured ms | predicted ms | error | TFLOP/s measured |\n|---|---|---|---|---|---|\n");
  for (const auto& r : data.at("rows")) {
    const std::string gpu = r.at("gpu").get<std::string>();
    if (!models.count(gpu)) {
      const auto g = load_gpu(gpu);
      if (!g) return 2;
      models.emplace(gpu, model::ComputeModel(*g, input::Dtype::bf16));  // fp16 runs at the bf16 rate
      launch_s[gpu] = g->kernel_launch_overhead.seconds();
    }
    const auto m = r.at("m").get<int64_t>(), n = r.at("n").get<int64_t>(), k = r.at("k").get<int64_t>();
    const double measured = r.at("measured_ms").get<double>() / 1e3;
    const double predicted = models.at(gpu).gemm(m, n, k).seconds - launch_s[gpu];
    const double error = (predicted - measured) / measured;
    const double tflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / measured / 1e12;
    std::printf("| %s | %lld x %lld x %lld | %.4g | %.4g | %+.1f%% | %.0f |\n", r.at("id").get<std::string>().c_str(),
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), measured * 1e3,
                predicted * 1e3, 100 * error, tflops);
    const char* regime = m >= 512 ? "compute-bound (m >= 512)" : m <= 32 ? "weight reads (m <= 32)" : "between (m = 128)";
    errors[gpu + ", " + regime].push_back(error);
  }
  std::printf("\n| GPU, regime | rows | median |error| | worst | median signed |\n|---|---|---|---|---|\n");
  for (const auto& [key, es] : errors) {
    std::vector<double> abs;
    for (double e : es) abs.push_back(std::fabs(e));
    std::printf("| %s | %zu | %.1f%% | %.1f%% | %+.1f%% |\n", key.c_str(), es.size(), 100 * median(abs),
                100 * *std::max_element(abs.begin(), abs.end()), 100 * median(es));
  }
  return 0;
}
