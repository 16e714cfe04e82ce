#include "sim/rl/dispatch.h"

#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "tests/model/model_fixtures.h"

using namespace arlsim;
using rl::DispatchSample;
using rl::TensorRole;

namespace {

// A cluster's achieved rates, read from its profile (not pinned: a recalibration changes them).
double nvlink(const input::ClusterSpec& c) { return c.gpu_link.achieved(); }
double nic(const input::ClusterSpec& c) { return c.nic_bandwidth_bytes_per_s * c.gpu.nic_efficiency; }
double host(const input::ClusterSpec& c) { return c.gpu.host_link.achieved(); }

rl::DispatchOptions options(input::DispatchMode mode, double controller_bytes_per_s) {
  rl::DispatchOptions o;
  o.mode = mode;
  o.controller_bandwidth_bytes_per_s = controller_bytes_per_s;
  return o;
}

double data_bytes_per_token(const std::vector<rl::DispatchTensor>& tensors) {
  double b = 0;
  for (const auto& t : tensors)
    if (t.role == TensorRole::data) b += t.bytes_per_token;
  return b;
}

}  // namespace

TEST_CASE("dispatch: the tensor table") {
  // ids, attention mask, positions, responses, response mask: int64; old log-probs, token rewards: fp32.
  const auto base = rl::dispatch_tensors(false, false);
  CHECK(data_bytes_per_token(base) == 5 * 8 + 4 + 4);
  CHECK(data_bytes_per_token(rl::dispatch_tensors(true, false)) == 5 * 8 + 4 + 4 + 4);
  CHECK(data_bytes_per_token(rl::dispatch_tensors(true, true)) == 5 * 8 + 4 + 4 + 4 + 4);
  int inputs = 0, outputs = 0;
  for (const auto& t : base) {
    inputs += t.role == TensorRole::advantage_input;
    outputs += t.role == TensorRole::advantage_output;
    if (t.role == TensorRole::advantage_input) CHECK(t.bytes_per_token == 0);
  }
  CHECK(inputs == 1);
  CHECK(outputs == 2);
}

TEST_CASE("dispatch: centralized is gather / C + CPU + scatter / C when the controller link is the bottleneck") {
  const auto cluster = test::preset_cluster("dgx-h100", 2);
  // Token ids (8 B per token), a score (4 B per sample), advantages (4 B per token or per sample).
  const std::vector<rl::DispatchTensor> tensors{{"ids", 8, 0, TensorRole::data},
                                                {"score", 0, 4, TensorRole::advantage_input},
                                                {"adv", 4, 4, TensorRole::advantage_output}};
  const std::vector<DispatchSample> samples{{1000, 0, 8}, {2000, 9, 1}, {500, 3, 3}};
  const double c = 1e6;
  auto o = options(input::DispatchMode::centralized, c);
  o.advantage_seconds_per_token = 1e-6;
  const auto r = rl::simulate_dispatch(cluster, samples, tensors, o);
  // The three gathers share the controller's link and nothing slower, so it stays busy until the
  // last ends: the phase takes its bytes / C. Likewise the scatter.
  const double tokens = 3500;
  const double gather = 8 * tokens + 3 * 4;
  const double scatter = (8 + 4) * tokens;
  CHECK(r.seconds == doctest::Approx(gather / c + 1e-6 * tokens + scatter / c));
  CHECK(r.cpu_seconds == doctest::Approx(1e-6 * tokens));
  CHECK(r.controller_bytes == doctest::Approx(gather + scatter));
  CHECK(r.bytes_moved == doctest::Approx(gather + scatter));
  CHECK(r.cross_node_bytes == 0);
  CHECK(r.flows == 6);  // producers 0, 9, 3 to the controller; the controller to 8, 1, 3
}

TEST_CASE("dispatch: decentralized inside a node uses NVLink only") {
  const auto cluster = test::preset_cluster("dgx-h100", 1);
  const auto tensors = rl::dispatch_tensors(true, false);
  const double per_token = data_bytes_per_token(tensors);  // 52
  // GPUs 0 and 1 both send to 4 (they share the NVSwitch's link into 4); 2 sends twice as much
  // to 5 alone; 6 keeps its own sample.
  const std::vector<DispatchSample> samples{{1000, 0, 4}, {1000, 1, 4}, {2000, 2, 5}, {300, 6, 6}};
  const auto r = rl::simulate_dispatch(cluster, samples, tensors, options(input::DispatchMode::decentralized, 3.125e9));
  CHECK(r.cross_node_bytes == 0);
  // Both pairs of NVLink flows end together: 2 x 1000 x 52 B at the full link rate.
  CHECK(r.seconds == doctest::Approx(2 * 1000 * per_token / nvlink(cluster)));
  // Scores (4 B) go to the controller and advantages (4 B) come back, for every sample.
  CHECK(r.controller_bytes == doctest::Approx(4 * 4 + 4 * 4));
  CHECK(r.bytes_moved == doctest::Approx(4000 * per_token + 32));
  CHECK(r.flows == 3 + 4 + 3);
}

TEST_CASE("dispatch: decentralized between nodes goes through the NICs") {
  const auto cluster = test::preset_cluster("dgx-h100", 2);
  const auto tensors = rl::dispatch_tensors(true, false);
  const double per_token = data_bytes_per_token(tensors);
  const auto r = rl::simulate_dispatch(cluster, {{1000, 0, 8}}, tensors, options(input::DispatchMode::decentralized, 3.125e9));
  CHECK(r.seconds == doctest::Approx(1000 * per_token / nic(cluster)));
  CHECK(r.cross_node_bytes == doctest::Approx(1000 * per_token));
}

TEST_CASE("dispatch: transfer dock writes to the producer's node and reads from there") {
  const auto cluster = test::preset_cluster("dgx-h100", 2);
  const auto tensors = rl::dispatch_tensors(true, false);
  const double per_token = data_bytes_per_token(tensors);
  // Node 0 -> node 1, node 1 -> node 0, and one sample that stays on node 0.
  const std::vector<DispatchSample> samples{{1000, 0, 8}, {2000, 9, 1}, {500, 3, 5}};
  auto o = options(input::DispatchMode::transfer_dock, 3.125e9);
  o.metadata_bytes_per_message = 64;
  const auto r = rl::simulate_dispatch(cluster, samples, tensors, o);
  // Only the bytes whose producer and consumer nodes differ cross between nodes.
  CHECK(r.cross_node_bytes == doctest::Approx((1000 + 2000) * per_token));
  // Each sample: the score and a "written" message up, the advantage and a "ready" message down.
  CHECK(r.controller_bytes == doctest::Approx(3 * (4 + 64 + 4 + 64)));
  CHECK(r.bytes_moved == doctest::Approx(2 * 3500 * per_token + 3 * (4 + 64 + 4 + 64)));
  // The largest write (GPU 9 into node 1's memory over its host link) and then the largest read
  // (node 1's memory to GPU 1 through node 1's NIC on rail 1, behind the host-NIC link) bound
  // each phase. Only the controller's 68-byte messages share links with the reads, for a few
  // nanoseconds, hence the looser tolerance.
  CHECK(r.seconds == doctest::Approx(2 * 2000 * per_token / host(cluster)).epsilon(1e-4));
  CHECK(r.flows == 3 + 3 + 3 + 3);
}

TEST_CASE("dispatch: the same inputs give the same result") {
  const auto cluster = test::preset_cluster("dgx-h100", 2);
  const auto tensors = rl::dispatch_tensors(true, true);
  std::vector<DispatchSample> samples;
  for (int64_t i = 0; i < 64; ++i) samples.push_back({1000 + 37 * i, (i * 5) % 16, (i * 3 + 1) % 16});
  for (const auto mode : {input::DispatchMode::centralized, input::DispatchMode::decentralized,
                          input::DispatchMode::transfer_dock}) {
    auto o = options(mode, 3.125e9);
    o.advantage_seconds_per_token = 2e-9;
    o.metadata_bytes_per_message = 128;
    const auto a = rl::simulate_dispatch(cluster, samples, tensors, o);
    const auto b = rl::simulate_dispatch(cluster, samples, tensors, o);
    CHECK(a.seconds == b.seconds);
    CHECK(a.bytes_moved == b.bytes_moved);
    CHECK(a.cross_node_bytes == b.cross_node_bytes);
    CHECK(a.controller_bytes == b.controller_bytes);
    CHECK(a.flows == b.flows);
    CHECK(a.seconds > 0);
  }
}

TEST_CASE("dispatch: inputs it cannot simulate are named") {
  auto cluster = test::preset_cluster("dgx-h100", 2);
  CHECK(rl::dispatch_problem(cluster, options(input::DispatchMode::decentralized, 3.125e9)).empty());
  CHECK(rl::dispatch_problem(cluster, options(input::DispatchMode::centralized, 0)) ==
        "the controller's link has no bandwidth");
  auto far = options(input::DispatchMode::centralized, 1e9);
  far.controller_node = 2;
  CHECK(rl::dispatch_problem(cluster, far) == "the controller's node 2 is outside the cluster's 2 nodes");
  cluster.gpu.host_link = {};
  CHECK(rl::dispatch_problem(cluster, options(input::DispatchMode::transfer_dock, 1e9)) ==
        "a transfer dock keeps its warehouses in host memory, and GPU profile h100-sxm has no host link bandwidth");
  // Without a controller bandwidth the controller's flows never end.
  const auto r = rl::simulate_dispatch(cluster, {{100, 0, 8}}, rl::dispatch_tensors(true, false),
                                       options(input::DispatchMode::centralized, 0));
  CHECK(r.seconds == std::numeric_limits<double>::infinity());
}

TEST_CASE("dispatch: a transport's calls, copies and fixed part add to each phase, by hand") {
  const auto cluster = test::preset_cluster("dgx-h100", 2);
  // Token ids (8 B per token), a score (4 B), per-token advantages (4 B) back from the controller.
  const std::vector<rl::DispatchTensor> tensors{{"ids", 8, 0, TensorRole::data},
                                                {"score", 0, 4, TensorRole::advantage_input},
                                                {"adv", 4, 4, TensorRole::advantage_output}};
  // Two producers, one consumer: the gather has two messages into the controller, the scatter one
  // (the consumer's two samples travel together).
  const std::vector<DispatchSample> samples{{1000, 0, 8}, {1000, 1, 8}};
  auto run = [&](const input::DispatchTransport& t) {
    auto o = options(input::DispatchMode::centralized, 1e9);
    o.transport = t;
    return rl::simulate_dispatch(cluster, samples, tensors, o).seconds;
  };
  input::DispatchTransport t;
  t.send_per_message_s = 1e-3;
  t.receive_per_message_s = 2e-3;
  t.copy_bytes_per_s = 1e6;
  t.per_phase_s = 5e-3;
  const double gather_each = 8 * 1000 + 4, scatter = 2 * (8 * 1000 + 4 * 1000);
  // Gather: its fixed part, the busier sender (one call and its copy), the controller's two gets.
  const double gather = t.per_phase_s + t.send_per_message_s + gather_each / t.copy_bytes_per_s + 2 * t.receive_per_message_s;
  // Scatter: its fixed part, the controller's one call and copy, the consumer's one get.
  const double out = t.per_phase_s + t.send_per_message_s + scatter / t.copy_bytes_per_s + t.receive_per_message_s;
  CHECK(run(t) - run({}) == test::near(gather + out));
  // The named transports: direct adds nothing, Ray's figures add the published per-call times.
  CHECK(run(*input::find_dispatch_transport("direct")) == test::near(run({})));
  const auto* ray = input::find_dispatch_transport("ray");
  REQUIRE(ray);
  CHECK(ray->send_per_message_s == doctest::Approx(1 / 5173.29));
  CHECK(run(*ray) > run({}));
  CHECK(input::find_dispatch_transport("grpc") == nullptr);
}
