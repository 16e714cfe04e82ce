#include "sim/input/cluster.h"

#include "sim/parse/reader.h"

namespace arlsim::input {
namespace {

constexpr double kMaxBandwidth = 1e15;

void parse_network(ObjectReader& parent, ClusterSpec& c) {
  const Value* v = parent.field("network");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("network"), parent.diag());
  static const EnumName<NetworkTopology> topologies[] = {{"single-switch", NetworkTopology::single_switch},
                                                         {"fat-tree", NetworkTopology::fat_tree},
                                                         {"rail-optimized", NetworkTopology::rail_optimized}};
  r.read_enum("topology", c.topology, Presence::optional, topologies);
  r.read("oversubscription", c.oversubscription, Presence::optional, 1.0, 64.0);
  r.read("nodes_per_leaf", c.nodes_per_leaf, Presence::optional, 1, 1 << 16);
  r.read_quantity("controller_bandwidth", Dimension::bytes_per_s, c.controller_bandwidth_bytes_per_s, Presence::optional,
                  1e6, kMaxBandwidth);
  r.read_quantity("nic_bandwidth", Dimension::bytes_per_s, c.nic_bandwidth_bytes_per_s, Presence::optional, 1e6,
                  kMaxBandwidth);
  r.read("nics_per_node", c.nics_per_node, Presence::optional, 1, 576);
  r.reject("latency", "links are modelled by bandwidth alone; latency comes from the GPU profile's collective_protocols", "remove it");
  r.finish();
}

void parse_gpu_link(ObjectReader& parent, ClusterSpec& c) {
  const Value* v = parent.field("gpu_link");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("gpu_link"), parent.diag());
  // Within a node every GPU reaches every other through the NVSwitch (model::Topology); no other
  // fabric is modelled.
  if (r.read("topology", c.intra_node_topology, Presence::optional) && c.intra_node_topology != "nvswitch")
    r.error("topology", "only \"nvswitch\" is modelled within a node (every GPU one hop from every other), got " +
                            quote(c.intra_node_topology));
  r.read("kind", c.gpu_link.kind, Presence::optional);
  r.read_quantity("bandwidth", Dimension::bytes_per_s, c.gpu_link.bandwidth_bytes_per_s, Presence::optional, 1e6,
                  kMaxBandwidth);
  r.reject("latency", "links are modelled by bandwidth alone; latency comes from the GPU profile's collective_protocols", "remove it");
  r.finish();
}

void parse_pool(ObjectReader& r, PoolSpec& p) {
  static const EnumName<PoolKind> kinds[] = {
      {"sandbox", PoolKind::sandbox}, {"reward_server", PoolKind::reward_server}, {"api", PoolKind::api}};
  r.read("name", p.name, Presence::required);
  r.read_enum("kind", p.kind, Presence::required, kinds);
  r.reject("rate_limit_per_s", "a pool serves `count` calls at a time (up to `max_count`), with no rate limit",
           "bound the pool with count and max_count");
  if (p.kind == PoolKind::reward_server) {
    // A reward model runs as inference engines on the pool's GPUs; its time comes from them.
    const std::string why = "a reward_server pool is its GPUs running the reward model's engines";
    for (const char* key : {"count", "max_count", "cold_start", "latency", "price_usd_per_unit_hour"})
      r.reject(key, why, "give only \"gpus\"");
    r.read("gpus", p.gpus, Presence::optional, 0, 1 << 20);
    r.finish();
    if (p.gpus == 0 && r.is_object())
      r.error_here("a reward_server pool needs \"gpus\" (the GPUs its inference engines run on)");
    return;
  }
  r.read("count", p.count, Presence::required, 0, int64_t{1} << 24);
  p.max_count = p.count;
  if (p.kind == PoolKind::api) {
    // An API is a fixed number of concurrent calls: it neither grows nor starts units.
    r.reject("max_count", "an api pool is `count` concurrent calls and does not grow", "remove it");
    r.reject("cold_start", "an api pool is `count` concurrent calls and does not grow", "remove it");
  } else {
    r.read("max_count", p.max_count, Presence::optional, 0, int64_t{1} << 24);
    r.read_duration("cold_start", p.cold_start, Presence::optional, 0, 86400);
  }
  if (const Value* lat = r.field("latency")) parse_latency(*lat, r.pointer_of("latency"), r.diag(), p.latency);
  r.read("price_usd_per_unit_hour", p.price_usd_per_unit_hour, Presence::optional, 0, 1e4);
  r.reject("gpus", "only a reward_server pool runs on GPUs", "remove it, or make the pool \"kind\": \"reward_server\"");
  r.finish();
  if (p.max_count < p.count)
    r.error("max_count", "max_count (" + std::to_string(p.max_count) + ") is below count (" +
                             std::to_string(p.count) + ")");
}

void parse_pools(ObjectReader& parent, ClusterSpec& c) {
  parent.for_each_object("pools", [&](ObjectReader& r, size_t) {
    PoolSpec p;
    parse_pool(r, p);
    for (const auto& other : c.pools)
      if (!p.name.empty() && other.name == p.name) r.error("name", "duplicate pool name " + quote(p.name));
    c.pools.push_back(std::move(p));
  });
}

}  // namespace

bool parse_latency(const Value& v, const std::string& pointer, Diagnostics& diag, LatencyDist& out) {
  const size_t errors_before = diag.error_count();
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  static const EnumName<LatencyKind> kinds[] = {{"fixed", LatencyKind::fixed},
                                                {"exponential", LatencyKind::exponential},
                                                {"lognormal", LatencyKind::lognormal},
                                                {"uniform", LatencyKind::uniform}};
  LatencyDist d;
  r.read_enum("distribution", d.kind, Presence::required, kinds);
  // Each distribution takes its own parameters: mean (and sigma for log-normal), or min and max.
  const bool uniform = d.kind == LatencyKind::uniform, lognormal = d.kind == LatencyKind::lognormal;
  if (uniform) {
    r.reject("mean", "a uniform latency is set by min and max", "remove it");
    r.reject("sigma", "a uniform latency is set by min and max", "remove it");
    r.read_duration("min", d.min, Presence::required, 0, 86400);
    r.read_duration("max", d.max, Presence::required, 0, 86400);
  } else {
    r.read_duration("mean", d.mean, Presence::required, 0, 86400);
    if (lognormal) r.read("sigma", d.sigma, Presence::required, 0, 10);
    else r.reject("sigma", "only a lognormal latency has a sigma", "remove it");
    r.reject("min", "only a uniform latency has bounds", "remove it");
    r.reject("max", "only a uniform latency has bounds", "remove it");
  }
  r.finish();
  if (uniform && d.max < d.min) r.error("max", "max is below min");
  if (uniform) d.mean = SimTime::from_ns((d.min.ns() + d.max.ns()) / 2);
  out = d;
  return diag.error_count() == errors_before;
}

bool parse_cluster(const Value& v, const std::string& pointer, Diagnostics& diag, ClusterSpec& out) {
  const size_t errors_before = diag.error_count();
  ClusterSpec c;
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  r.read("name", c.name, Presence::optional);
  r.read("description", c.description, Presence::optional);
  bool gpu_ok = false;
  if (const Value* g = r.field("gpu", Presence::required)) gpu_ok = parse_gpu_profile(*g, r.pointer_of("gpu"), diag, c.gpu);
  r.read("nodes", c.nodes, Presence::optional, 1, kMaxNodes);
  // Up to an NVLink domain's GPUs: a GB200 NVL72 rack is one node, an NVL576 domain at most.
  r.read("gpus_per_node", c.gpus_per_node, Presence::required, 1, 576);
  if (r.read("gpus_per_host", c.gpus_per_host, Presence::optional, 1, 576) && c.gpus_per_node % c.gpus_per_host != 0)
    r.error("gpus_per_host", "a node's " + std::to_string(c.gpus_per_node) + " GPUs are not whole hosts of " +
                                 std::to_string(c.gpus_per_host));
  c.gpu_link = c.gpu.gpu_link;
  c.nic_bandwidth_bytes_per_s = c.gpu.nic_bandwidth_bytes_per_s;
  parse_gpu_link(r, c);
  parse_network(r, c);
  parse_pools(r, c);
  c.price_usd_per_gpu_hour = c.gpu.price_usd_per_gpu_hour;
  r.read("price_usd_per_gpu_hour", c.price_usd_per_gpu_hour, Presence::optional, 0, kMaxPriceUsdPerGpuHour);
  r.read_quantity("host_memory", Dimension::bytes, c.host_memory_bytes, Presence::optional, 1 << 30, 1e15);
  r.finish();
  if (c.nics_per_node == 0) c.nics_per_node = c.gpus_per_node;
  if (c.controller_bandwidth_bytes_per_s <= 0) c.controller_bandwidth_bytes_per_s = c.nic_bandwidth_bytes_per_s;
  if (gpu_ok && c.nodes > 1 && c.nic_bandwidth_bytes_per_s <= 0)
    r.error_here("a cluster of " + std::to_string(c.nodes) +
                     " nodes needs a NIC bandwidth: set /network/nic_bandwidth here or \"nic\" in the GPU profile");
  out = std::move(c);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
