#include <doctest/doctest.h>

#include "sim/model/topology.h"
#include "tests/model/model_fixtures.h"

using namespace arlsim;

TEST_CASE("topology: max-min fair share on three flows over two links") {
  // Link 0 carries 10, link 1 carries 4. Flow a uses link 0, flow b both, flow c link 1.
  // Link 1 is the bottleneck: b and c get 2 each; a then takes the 8 left on link 0.
  const std::vector<double> capacity{10, 4};
  const std::vector<model::Flow> flows{{{0}, 0}, {{0, 1}, 0}, {{1}, 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  CHECK(rates[0] == doctest::Approx(8));
  CHECK(rates[1] == doctest::Approx(2));
  CHECK(rates[2] == doctest::Approx(2));
}

TEST_CASE("topology: a flow's demand caps it and frees capacity for the others") {
  const std::vector<double> capacity{10};
  const std::vector<model::Flow> flows{{{0}, 1}, {{0}, 0}, {{0}, 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  CHECK(rates[0] == doctest::Approx(1));
  CHECK(rates[1] == doctest::Approx(4.5));
  CHECK(rates[2] == doctest::Approx(4.5));
}

TEST_CASE("topology: paths go over NVSwitch inside a node and over NICs between nodes") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const model::Topology t(c);
  CHECK(t.gpu_count() == 16);
  const auto inside = t.path(0, 3);
  REQUIRE(inside.size() == 2);
  CHECK(t.link(inside[0]).name == "gpu0->node0.nvswitch");
  CHECK(t.link(inside[1]).name == "node0.nvswitch->gpu3");
  CHECK(t.bottleneck(0, 3) == doctest::Approx(450e9 * 0.82));
  const auto across = t.path(1, 9);
  REQUIRE(across.size() == 4);
  CHECK(t.link(across[0]).name == "gpu1->node0.nic1");
  CHECK(t.link(across[3]).name == "node1.nic1->gpu9");
  CHECK(t.bottleneck(1, 9) == doctest::Approx(50e9 * 0.94));
}

TEST_CASE("topology: concurrent flows into one NIC share it") {
  const auto c = test::preset_cluster("dgx-h100", 2);
  const model::Topology t(c);
  std::vector<double> capacity;
  for (size_t i = 0; i < t.link_count(); ++i) capacity.push_back(t.link(i).capacity_bytes_per_s);
  // GPUs 0 and 1 both send to GPU 9: they meet on node1.nic1 -> gpu9.
  const std::vector<model::Flow> flows{{t.path(0, 9), 0}, {t.path(1, 9), 0}};
  const auto rates = model::max_min_fair_rates(flows, capacity);
  CHECK(rates[0] == doctest::Approx(50e9 * 0.94 / 2));
  CHECK(rates[1] == doctest::Approx(50e9 * 0.94 / 2));
}
