// Centralized vs decentralized dispatch on EARL's testbed (arXiv 2510.05943): 16 nodes x 8 H100
// SXM with 200 Gb/s between nodes, a single controller reached over TCP at 25 Gb/s, Qwen2.5-72B
// with rollout at TP4 (32 workers) feeding a TP8 x DP16 training layout. For each context the
// paper reports a per-worker payload; this program turns it into samples per worker with the
// dispatch table, simulates the three modes and prints the latency ratios next to the paper's.
// docs/validation.md explains the assumptions and the differences.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "sim/rl/dispatch.h"
#include "sim/input/check.h"
#include "sim/input/policy.h"
#include "sim/parse/units.h"

using namespace arlsim;

namespace {

// The testbed and the layouts, as the paper states them.
constexpr int64_t kNodes = 16;
constexpr int64_t kRolloutTp = 4;
constexpr int64_t kTrainTp = 8;
constexpr int64_t kTrainDp = 16;
constexpr const char* kNicBandwidth = "200 Gbps";
constexpr const char* kControllerBandwidth = "25 Gbps";

// Per-worker payloads the paper reports, and its measured ratios (0: not reported).
struct PaperPoint {
  int64_t context = 0;
  const char* payload = "";
  double ratio = 0;
};
constexpr PaperPoint kPaper[] = {{8192, "46 MiB", 9.7}, {16384, "93 MiB", 0}, {32768, "187 MiB", 11.2}};

double quantity(const char* text, input::Dimension dim) {
  const auto q = input::parse_quantity(text, dim);
  if (!q.error.empty()) std::fprintf(stderr, "%s: %s\n", text, q.error.c_str());
  return q.value;
}

std::optional<input::ClusterSpec> load_cluster(const std::vector<std::string>& extra) {
  std::vector<std::string> overrides{"/nodes=" + std::to_string(kNodes), std::string("/network/nic_bandwidth=") + kNicBandwidth};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  input::Diagnostics diag;
  const auto doc = input::check_document("dgx-h100", input::SpecKind::cluster, overrides, diag);
  if (!doc) {
    std::fprintf(stderr, "%s", input::format_all(diag).c_str());
    return std::nullopt;
  }
  return std::get<input::ClusterSpec>(doc->spec);
}

// What a worker sends per sample in the gather: its data rows and the score.
double gathered_bytes_per_sample(const std::vector<rl::DispatchTensor>& tensors, int64_t tokens) {
  double b = 0;
  for (const auto& t : tensors)
    if (t.role != rl::TensorRole::advantage_output) b += t.bytes_per_token * static_cast<double>(tokens) + t.bytes_per_sample;
  return b;
}

enum class Mapping { aligned, spread };

// Worker w's samples, every one padded to the context. Aligned: the training ranks take
// contiguous chunks of the batch, so each rank's samples come from the two workers on its own
// node. Spread: sample j goes to rank j mod DP (a shuffled or length-balanced batch).
std::vector<rl::DispatchSample> make_samples(int64_t per_worker, int64_t context, Mapping m) {
  const int64_t workers = kNodes * 8 / kRolloutTp;
  const int64_t total = workers * per_worker;
  std::vector<rl::DispatchSample> out;
  for (int64_t j = 0; j < total; ++j) {
    const int64_t worker = j / per_worker;
    const int64_t rank = m == Mapping::aligned ? j * kTrainDp / total : j % kTrainDp;
    out.push_back({context, worker * kRolloutTp, rank * kTrainTp});
  }
  return out;
}

double dispatch_seconds(const input::ClusterSpec& c, const std::vector<rl::DispatchSample>& samples,
                        const std::vector<rl::DispatchTensor>& tensors, input::DispatchMode mode,
                        const input::DispatchTransport& transport = {}) {
  rl::DispatchOptions o;
  o.mode = mode;
  o.transport = transport;
  o.controller_bandwidth_bytes_per_s = quantity(kControllerBandwidth, input::Dimension::bytes_per_s);
  return rl::simulate_dispatch(c, samples, tensors, o).seconds;
}

std::string ratio_text(double r) {
  if (r <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", r);
  return buf;
}

void print_testbed(const input::ClusterSpec& c, const std::vector<rl::DispatchTensor>& tensors) {
  std::printf("EARL testbed as modelled: %lld nodes x 8 H100 SXM, NIC %s per GPU, controller %s, no CPU time\n\n",
              static_cast<long long>(kNodes), kNicBandwidth, kControllerBandwidth);
  std::printf("%-7s %-9s %-8s %-9s %-12s %-11s %-7s %-11s %-7s %-11s %-6s\n", "context", "payload", "samples",
              "modelled", "centralized", "dec-aligned", "ratio", "dec-spread", "ratio", "dock-spread", "paper");
  for (const auto& p : kPaper) {
    const double per_sample = gathered_bytes_per_sample(tensors, p.context);
    const auto per_worker = static_cast<int64_t>(std::llround(quantity(p.payload, input::Dimension::bytes) / per_sample));
    const auto aligned = make_samples(per_worker, p.context, Mapping::aligned);
    const auto spread = make_samples(per_worker, p.context, Mapping::spread);
    const double central = dispatch_seconds(c, spread, tensors, input::DispatchMode::centralized);
    const double dec_aligned = dispatch_seconds(c, aligned, tensors, input::DispatchMode::decentralized);
    const double dec_spread = dispatch_seconds(c, spread, tensors, input::DispatchMode::decentralized);
    const double dock = dispatch_seconds(c, spread, tensors, input::DispatchMode::transfer_dock);
    std::printf("%-7lld %-9s %-8lld %-9.1f %-12.3f %-11.5f %-7s %-11.5f %-7s %-11.5f %-6s\n",
                static_cast<long long>(p.context), p.payload, static_cast<long long>(per_worker),
                per_sample * static_cast<double>(per_worker) / (1 << 20), central, dec_aligned,
                ratio_text(central / dec_aligned).c_str(), dec_spread, ratio_text(central / dec_spread).c_str(), dock,
                ratio_text(p.ratio).c_str());
  }
}

// What-if: every node reaches the others over one TCP NIC of the controller's speed, with the
// transfers going through a transport's software (none: only the links).
void print_tcp_what_if(const input::ClusterSpec& c, const std::vector<rl::DispatchTensor>& tensors,
                       const input::DispatchTransport& transport) {
  std::printf("\nWhat-if: one %s NIC per node for all traffic (spread mapping), transport \"%s\"\n\n", kControllerBandwidth,
              transport.name.c_str());
  std::printf("%-7s %-12s %-11s %-7s %-6s\n", "context", "centralized", "dec-spread", "ratio", "paper");
  for (const auto& p : kPaper) {
    const double per_sample = gathered_bytes_per_sample(tensors, p.context);
    const auto per_worker = static_cast<int64_t>(std::llround(quantity(p.payload, input::Dimension::bytes) / per_sample));
    const auto spread = make_samples(per_worker, p.context, Mapping::spread);
    const double central = dispatch_seconds(c, spread, tensors, input::DispatchMode::centralized, transport);
    const double dec = dispatch_seconds(c, spread, tensors, input::DispatchMode::decentralized, transport);
    std::printf("%-7lld %-12.3f %-11.4f %-7s %-6s\n", static_cast<long long>(p.context), central, dec,
                ratio_text(central / dec).c_str(), ratio_text(p.ratio).c_str());
  }
}

}  // namespace

int main() {
  // REINFORCE with a reference model and no critic, as in the paper's Connect-Four runs.
  const auto tensors = rl::dispatch_tensors(true, false);
  const auto testbed = load_cluster({});
  const auto tcp = load_cluster({std::string("/network/nic_bandwidth=") + kControllerBandwidth, "/network/nics_per_node=1"});
  if (!testbed || !tcp) return 1;
  print_testbed(*testbed, tensors);
  print_tcp_what_if(*tcp, tensors, *input::find_dispatch_transport("direct"));
  print_tcp_what_if(*tcp, tensors, *input::find_dispatch_transport("ray"));
  std::printf("\nseconds per dispatch; payload = what one worker sends to the controller; samples = per worker,\n"
              "each padded to the context; modelled = the payload those samples make, in MiB\n");
  return 0;
}
