#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "sim/model/topology.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

TEST_CASE("topology: max-min fair share on three flows over two links") {
  // Link 0 carries 10, link 1 carries 4. Flow a uses link 0, flow b both, flow c link 1.
  // Link 1 is the bottleneck: b and c get 2 each; a then takes the 8 left on link 0.
  const std::vector<double> capacity{10, 4};
  const std::vector<model::Flow> flows{{{0}, 0}, {{0, 1}, 0}, {{1}, 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  CHECK(rates[0] == test::near(8));
  CHECK(rates[1] == test::near(2));
  CHECK(rates[2] == test::near(2));
}

TEST_CASE("topology: a flow's demand caps it and frees capacity for the others") {
  const std::vector<double> capacity{10};
  const std::vector<model::Flow> flows{{{0}, 1}, {{0}, 0}, {{0}, 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  CHECK(rates[0] == test::near(1));
  CHECK(rates[1] == test::near(4.5));
  CHECK(rates[2] == test::near(4.5));
}

TEST_CASE("topology: paths go over NVSwitch inside a node and over NICs between nodes") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const model::Topology t(c);
  CHECK(t.gpu_count() == 16);
  const auto inside = t.path(0, 3);
  REQUIRE(inside.size() == 2);
  CHECK(t.link(inside[0]).name == "gpu0->node0.nvswitch");
  CHECK(t.link(inside[1]).name == "node0.nvswitch->gpu3");
  CHECK(t.bottleneck(0, 3) == test::near(c.gpu_link.achieved()));
  const auto across = t.path(1, 9);
  REQUIRE(across.size() == 4);
  CHECK(t.link(across[0]).name == "gpu1->node0.nic1");
  CHECK(t.link(across[3]).name == "node1.nic1->gpu9");
  CHECK(t.bottleneck(1, 9) == test::near(c.nic_bandwidth_bytes_per_s * c.gpu.nic_efficiency));
}

TEST_CASE("topology: concurrent flows into one NIC share it") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const model::Topology t(c);
  std::vector<double> capacity;
  for (size_t i = 0; i < t.link_count(); ++i) capacity.push_back(t.link(i).capacity_bytes_per_s);
  // GPUs 0 and 1 both send to GPU 9: they meet on node1.nic1 -> gpu9.
  const std::vector<model::Flow> flows{{t.path(0, 9), 0}, {t.path(1, 9), 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  const double nic = c.nic_bandwidth_bytes_per_s * c.gpu.nic_efficiency;
  CHECK(rates[0] == test::near(nic / 2));
  CHECK(rates[1] == test::near(nic / 2));
}

TEST_CASE("topology: two flows on one link, the shorter ends at 2 b1 / C, then the longer speeds up") {
  // Both get C / 2 until the first has sent b1: t1 = b1 / (C / 2). The second has b2 - b1 left
  // and the whole link: t2 = t1 + (b2 - b1) / C = (b1 + b2) / C.
  const double c = 10, b1 = 20, b2 = 50;
  const std::vector<model::Flow> flows{{{0}, 0}, {{0}, 0}};
  const auto done = model::flow_completion_seconds(flows, {b1, b2}, {c});
  CHECK(done[0] == test::near(2 * b1 / c));
  CHECK(done[1] == test::near((b1 + b2) / c));
}

TEST_CASE("topology: flows without links, without bytes, or over a dead link") {
  const std::vector<model::Flow> flows{{{}, 4}, {{}, 0}, {{0}, 0}, {{1}, 0}};
  const auto done = model::flow_completion_seconds(flows, {8, 8, 0, 8}, {10, 0});
  CHECK(done[0] == test::near(2));  // bytes / demand
  CHECK(done[1] == 0);                   // within one device: not modelled
  CHECK(done[2] == 0);                   // nothing to send
  CHECK(done[3] == std::numeric_limits<double>::infinity());
}

TEST_CASE("topology: a flow freed by another's completion takes the rest of the shared link") {
  // Link 0 (capacity 4) carries a and b; link 1 (capacity 10) carries b and c. Rates 2, 2, 8
  // until a (4 bytes) ends at 2 s; then b gets 4 on link 0 and c 6 on link 1.
  const std::vector<model::Flow> flows{{{0}, 0}, {{0, 1}, 0}, {{1}, 0}};
  const auto done = model::flow_completion_seconds(flows, {4, 12, 40}, {4, 10});
  CHECK(done[0] == test::near(2));
  CHECK(done[1] == test::near(2 + (12 - 4) / 4.0));  // 4 s
  // c: 16 bytes by 2 s, 12 more at 6/s until 4 s, then 12 left at 10/s.
  CHECK(done[2] == test::near(4 + (40 - 16 - 12) / 10.0));
}

TEST_CASE("topology: holding the rates for a fraction of the flows can only make them later") {
  // Four flows of 1, 2, 3 and 4 bytes on one link of 1 byte/s. Exact: each gets 1/4 until the
  // first ends at 4, then 1/3 (the second ends at 7), 1/2 (9), 1 (10).
  const std::vector<model::Flow> flows(4, model::Flow{{0}, 0});
  const std::vector<double> bytes{1, 2, 3, 4};
  const auto exact = model::flow_completion_seconds(flows, bytes, {1});
  const std::vector<double> exact_expected{4, 7, 9, 10};
  for (size_t i = 0; i < 4; ++i) CHECK(exact[i] == test::near(exact_expected[i]));
  // Re-sharing after half the flows: the rates stay at 1/4 until the second ends at 8; then
  // 1/2 each for the 1 and 2 bytes left (10), and 1 for the last byte (11).
  const auto held = model::flow_completion_seconds(flows, bytes, {1}, 0.5);
  const std::vector<double> held_expected{4, 8, 10, 11};
  for (size_t i = 0; i < 4; ++i) CHECK(held[i] == test::near(held_expected[i]));
}

TEST_CASE("topology: host memory and controller endpoints") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const model::Topology t(c, model::ControllerLink{0, 3.125e9});
  const auto names = [&](const std::vector<size_t>& p) {
    std::vector<std::string> out;
    for (size_t id : p) out.push_back(t.link(id).name);
    return out;
  };
  using model::Endpoint;
  CHECK(names(t.route(Endpoint::gpu(1), Endpoint::host(0))) == std::vector<std::string>{"gpu1->node0.host"});
  CHECK(names(t.route(Endpoint::host(0), Endpoint::gpu(1))) == std::vector<std::string>{"node0.host->gpu1"});
  // Another node's GPU is read through the NIC of its rail.
  CHECK(names(t.route(Endpoint::host(0), Endpoint::gpu(9))) ==
        std::vector<std::string>{"node0.host->node0.nic1", "node0.nic1->leaf0", "leaf0->node1.nic1", "node1.nic1->gpu9"});
  CHECK(names(t.route(Endpoint::gpu(10), Endpoint::host(0))) ==
        std::vector<std::string>{"gpu10->node1.nic2", "node1.nic2->leaf0", "leaf0->node0.nic2", "node0.nic2->node0.host"});
  CHECK(names(t.route(Endpoint::gpu(9), Endpoint::controller())) ==
        std::vector<std::string>{"gpu9->node1.nic1", "node1.nic1->leaf0", "leaf0->controller"});
  CHECK(names(t.route(Endpoint::controller(), Endpoint::gpu(2))) ==
        std::vector<std::string>{"controller->leaf0", "leaf0->node0.nic2", "node0.nic2->gpu2"});
  CHECK(t.node_of(Endpoint::gpu(9)) == 1);
  CHECK(t.node_of(Endpoint::controller()) == 0);
  const auto host = t.route(Endpoint::gpu(1), Endpoint::host(0));
  CHECK(t.link(host[0]).capacity_bytes_per_s == test::near(c.gpu.host_link.achieved()));
  // GPU paths are the same as without the extra endpoints.
  CHECK(names(t.path(0, 3)) == std::vector<std::string>{"gpu0->node0.nvswitch", "node0.nvswitch->gpu3"});
  CHECK(t.capacities().size() == t.link_count());
}

TEST_CASE("topology: closed-form routes are the breadth-first search's on every kind of fat tree") {
  // One leaf, several leaves (with a partial last one), fewer NICs than GPUs, a controller on a
  // leaf of its own: every GPU and controller pair.
  struct Shape {
    int64_t nodes, nodes_per_leaf, nics_per_node;
  };
  for (const Shape sh : {Shape{2, 0, 8}, Shape{5, 2, 8}, Shape{4, 1, 2}, Shape{3, 2, 1}}) {
    auto c = test::preset_cluster("dgx-h100", sh.nodes);
    c.nodes_per_leaf = sh.nodes_per_leaf;
    if (sh.nodes_per_leaf > 0) c.topology = input::NetworkTopology::fat_tree;
    c.nics_per_node = sh.nics_per_node;
    const model::Topology t(c, model::ControllerLink{sh.nodes - 1, 3.125e9});
    using model::Endpoint;
    std::vector<Endpoint> ends{Endpoint::controller()};
    for (int64_t g = 0; g < t.gpu_count(); ++g) ends.push_back(Endpoint::gpu(g));
    size_t checked = 0;
    for (const auto& a : ends)
      for (const auto& b : ends) {
        if (a == b) continue;
        CHECK(t.route(a, b) == t.searched_route(a, b));
        ++checked;
      }
    CHECK(checked == ends.size() * (ends.size() - 1));
  }
}
