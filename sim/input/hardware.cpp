#include "sim/input/hardware.h"

#include <algorithm>
#include <tuple>

#include "sim/parse/reader.h"

namespace arlsim::input {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
  }
  return "?";
}

GemmAxes gemm_axes(const std::vector<GemmPoint>& points) {
  GemmAxes a;
  for (const auto& p : points) {
    a.m.push_back(p.m);
    a.n.push_back(p.n);
    a.k.push_back(p.k);
  }
  for (auto* axis : {&a.m, &a.n, &a.k}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  return a;
}

double GpuProfile::peak(Dtype d) const {
  const auto it = peak_flops_per_s.find(d);
  return it == peak_flops_per_s.end() ? 0.0 : it->second;
}

namespace {

constexpr double kMaxFlops = 1e18;       // 1 EFLOP/s per GPU
constexpr double kMaxBandwidth = 1e15;   // 1 PB/s
constexpr double kMaxBytes = 1e15;

const EnumName<Dtype> kDtypeNames[] = {{"fp32", Dtype::fp32}, {"tf32", Dtype::tf32}, {"bf16", Dtype::bf16},
                                       {"fp16", Dtype::fp16}, {"fp8", Dtype::fp8},   {"int8", Dtype::int8}};

void parse_provenance(ObjectReader& parent, Provenance& p) {
  const Value* v = parent.field("provenance", Presence::required);
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("provenance"), parent.diag());
  static const EnumName<int> kinds[] = {{"datasheet", 0}, {"measured", 1}, {"derived", 2}};
  int kind = 0;
  if (r.read_enum("kind", kind, Presence::required, kinds)) p.kind = std::string(kinds[kind].name);
  r.read("source", p.source, Presence::required);
  r.read("machine", p.machine, Presence::optional);
  r.read("driver", p.driver, Presence::optional);
  r.read("date", p.date, Presence::optional);
  r.read("notes", p.notes, Presence::optional);
  r.finish();
}

void parse_peaks(ObjectReader& parent, GpuProfile& g) {
  const Value* v = parent.field("peak", Presence::required);
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("peak"), parent.diag());
  for (const auto& d : kDtypeNames) {
    double flops = 0;
    if (r.read_quantity(d.name, Dimension::flops_per_s, flops, Presence::optional, 1e9, kMaxFlops))
      g.peak_flops_per_s[d.value] = flops;
  }
  r.finish();
  if (r.is_object() && !r.has("bf16") && !r.has("fp16") && !r.has("fp32"))
    r.error_here("at least one of \"bf16\", \"fp16\" or \"fp32\" peaks is required");
}

// "power_limited": {"bf16": {"gemm": "668 TFLOP/s", "attention": "583 TFLOP/s"}}: each element
// type's sustained rates at the power limit, neither above that type's peak.
void parse_power_limited(ObjectReader& parent, GpuProfile& g) {
  const Value* v = parent.field("power_limited", Presence::optional);
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("power_limited"), parent.diag());
  for (const auto& d : kDtypeNames) {
    const Value* rates = r.field(d.name, Presence::optional);
    if (!rates) continue;
    ObjectReader t(*rates, r.pointer_of(d.name), r.diag());
    if (!t.is_object()) continue;
    const double peak = g.peak(d.value);
    if (peak <= 0) {
      r.error(d.name, "the profile has no " + std::string(d.name) + " peak for this rate to lie under",
              "add \"" + std::string(d.name) + "\" to \"peak\"");
      continue;
    }
    GpuProfile::PowerLimitedRate rate;
    t.read_quantity("gemm", Dimension::flops_per_s, rate.gemm_flops_per_s, Presence::optional, 1e9, peak);
    t.read_quantity("attention", Dimension::flops_per_s, rate.attention_flops_per_s, Presence::optional, 1e9, peak);
    t.finish();
    if (!t.has("gemm") && !t.has("attention")) t.error_here("give \"gemm\", \"attention\" or both");
    g.power_limited[d.value] = rate;
  }
  r.finish();
}

void parse_link(ObjectReader& parent, std::string_view key, Presence p, Link& link) {
  const Value* v = parent.field(key, p);
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of(key), parent.diag());
  r.read("kind", link.kind, Presence::optional);
  r.read_quantity("bandwidth", Dimension::bytes_per_s, link.bandwidth_bytes_per_s, Presence::required, 1e6,
                  kMaxBandwidth);
  r.read("efficiency", link.efficiency, Presence::optional, 1e-3, 1.0);
  r.reject("latency", "links are modelled by bandwidth alone; latency comes from the GPU profile's collective_protocols", "remove it");
  r.finish();
}

template <typename T, typename F>
void parse_array(ObjectReader& parent, std::string_view key, std::vector<T>& out, F&& read_one) {
  parent.for_each_object(key, [&](ObjectReader& r, size_t) {
    T item;
    read_one(r, item);
    r.finish();
    out.push_back(item);
  });
}

// A table's points must rise in `key` from one to the next; the first that does not is reported
// with the two values (and `unit`).
template <typename T, typename Key>
void require_rising(ObjectReader& r, std::string_view field, const std::vector<T>& points, Key key,
                    const std::string& what, const std::string& unit, const std::string& fix) {
  for (size_t i = 1; i < points.size(); ++i)
    if (key(points[i]) <= key(points[i - 1])) {
      r.error(field, what + " must rise from one point to the next (" + std::to_string(key(points[i - 1])) + " then " +
                         std::to_string(key(points[i])) + unit + ")",
              fix);
      return;
    }
}

// A table of rates by size (memory_by_size, each kind's in memory_by_kernel), sizes rising.
void parse_size_table(ObjectReader& r, std::string_view key, std::vector<MemorySizePoint>& table) {
  parse_array(r, key, table, [](ObjectReader& p, MemorySizePoint& pt) {
    p.read("bytes", pt.bytes, Presence::required, 1, int64_t{1} << 50);
    p.read_quantity("bandwidth", Dimension::bytes_per_s, pt.bandwidth_bytes_per_s, Presence::required, 1e6, kMaxBandwidth);
  });
  require_rising(r, key, table, [](const MemorySizePoint& p) { return p.bytes; }, "sizes", " bytes",
                 "list one point per size, smallest first");
}

void read_gemm_point(ObjectReader& p, GemmPoint& pt) {
  p.read("m", pt.m, Presence::required, 1, int64_t{1} << 40);
  p.read("n", pt.n, Presence::required, 1, int64_t{1} << 40);
  p.read("k", pt.k, Presence::required, 1, int64_t{1} << 40);
  p.read("efficiency", pt.efficiency, Presence::required, 1e-6, 1.0);
}

// A single point, or a complete grid (every combination of the points' m, n and k values).
void check_gemm_grid(ObjectReader& r, std::string_view key, const std::vector<GemmPoint>& given) {
  if (given.empty()) return;
  const GemmAxes axes = gemm_axes(given);
  const size_t cells = axes.cells();
  auto points = given;
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
  });
  const bool repeated = std::adjacent_find(points.begin(), points.end(), [](const auto& a, const auto& b) {
                          return a.m == b.m && a.n == b.n && a.k == b.k;
                        }) != points.end();
  if (repeated) r.error(key, "a shape is listed twice", "keep one point per (m, n, k)");
  else if (given.size() > 1 && cells != given.size())
    r.error(key, std::to_string(given.size()) + " points do not form a grid: their " + std::to_string(axes.m.size()) +
                     " m, " + std::to_string(axes.n.size()) + " n and " + std::to_string(axes.k.size()) +
                     " k values make " + std::to_string(cells) + " combinations",
            "give one point (the best shape) or every combination once");
}

void parse_efficiency(ObjectReader& parent, GpuProfile& g) {
  const Value* v = parent.field("efficiency");
  if (!v) return;
  ObjectReader r(*v, parent.pointer_of("efficiency"), parent.diag());
  parse_array(r, "gemm", g.gemm_efficiency, read_gemm_point);
  parse_array(r, "attention", g.attention_efficiency, [](ObjectReader& p, AttentionPoint& pt) {
    p.read("seq_len", pt.seq_len, Presence::required, 1, int64_t{1} << 30);
    p.read("head_dim", pt.head_dim, Presence::required, 1, 4096);
    p.read("causal", pt.causal, Presence::optional);
    static const EnumName<int> passes[] = {{"fwd", 0}, {"fwd_bwd", 1}};
    int pass = 0;
    if (p.read_enum("pass", pass, Presence::required, passes)) pt.pass = std::string(passes[pass].name);
    p.read("efficiency", pt.efficiency, Presence::required, 1e-6, 1.0);
  });
  parse_array(r, "decode_attention", g.decode_attention, [](ObjectReader& p, DecodeAttentionPoint& pt) {
    p.read("batch", pt.batch, Presence::required, 1, int64_t{1} << 24);
    p.read_duration("fixed", pt.fixed, Presence::required, 0, 1.0);
    p.read_quantity("bandwidth", Dimension::bytes_per_s, pt.bandwidth_bytes_per_s, Presence::required, 1e6, kMaxBandwidth);
  });
  require_rising(r, "decode_attention", g.decode_attention, [](const DecodeAttentionPoint& p) { return p.batch; },
                 "batch sizes", "", "list one point per batch size, smallest first");
  r.read("memory_bound", g.memory_bound_efficiency, Presence::optional, 1e-6, 1.0);
  parse_size_table(r, "memory_by_size", g.memory_by_size);
  if (const Value* kinds = r.field("memory_by_kernel")) {
    ObjectReader k(*kinds, r.pointer_of("memory_by_kernel"), r.diag());
    for (const auto& [name, kind] : kMeasuredKinds) {
      if (!k.has(name)) {
        k.accept({name});  // named among the valid keys all the same
        continue;
      }
      auto& table = g.memory_by_kernel[static_cast<int>(kind)];
      parse_size_table(k, name, table);
      if (table.empty())
        k.error(name, "no points", "give the kernel's rates by size, or remove the entry (the kind is then priced as other work)");
    }
    k.finish();
  }
  if (const Value* tile = r.field("gemm_tile")) {
    ObjectReader t(*tile, r.pointer_of("gemm_tile"), r.diag());
    t.read("m", g.gemm_tile_m, Presence::required, 1, 4096);
    t.read("n", g.gemm_tile_n, Presence::required, 1, 4096);
    t.finish();
  }
  r.read("gemm_k_overhead", g.gemm_k_overhead, Presence::optional, 0, 1e5);
  check_gemm_grid(r, "gemm", g.gemm_efficiency);
  if (const Value* by = r.field("gemm_by_dtype")) {
    // Grids measured in other element types than `gemm`'s, each against its own peak.
    ObjectReader t(*by, r.pointer_of("gemm_by_dtype"), r.diag());
    for (const auto& d : kDtypeNames) {
      if (!t.has(d.name)) continue;
      std::vector<GemmPoint> points;
      parse_array(t, d.name, points, read_gemm_point);
      if (points.empty()) {
        t.error(d.name, "no points", "give a grid of points, or remove the entry (the dtype then takes \"gemm\")");
        continue;
      }
      check_gemm_grid(t, d.name, points);
      g.gemm_by_dtype[d.value] = std::move(points);
      if (g.peak(d.value) <= 0)
        t.error(d.name, "the profile has no " + std::string(d.name) + " peak to measure its efficiency against",
                "add \"" + std::string(d.name) + "\" to \"peak\"");
    }
    t.finish();
  }
  r.read("nic", g.nic_efficiency, Presence::optional, 1e-3, 1.0);
  r.finish();
}

}  // namespace

const EnumName<Protocol> kProtocolNames[] = {{"LL", Protocol::ll}, {"LL128", Protocol::ll128}, {"Simple", Protocol::simple}};

const char* protocol_name(Protocol p) {
  for (const auto& n : kProtocolNames)
    if (n.value == p) return n.name.data();
  return "?";
}

namespace {

void read_factors(ObjectReader& r, std::string_view key, std::vector<double>& out) {
  const Value* v = r.field(key);
  if (!v) return;
  if (!v->is_array() || v->items().empty()) {
    r.error(key, "expected a non-empty array of factors, got " + v->describe());
    return;
  }
  for (size_t i = 0; i < v->items().size(); ++i) {
    const Value& item = v->items()[i];
    if (!item.is_number() || !(item.as_double() > 0) || item.as_double() > 1) {
      r.diag().error(item, pointer_append(r.pointer_of(key), i),
                     "expected a factor in (0, 1], got " + item.describe());
      continue;
    }
    out.push_back(item.as_double());
  }
}

void parse_collective_protocols(ObjectReader& parent, GpuProfile& g) {
  if (parent.field("collective_latency"))
    parent.error("collective_latency", "collective latency is given per algorithm and protocol",
                 "replace it with collective_protocols (docs/formats.md)");
  parse_array(parent, "collective_protocols", g.collective_protocols, [&](ObjectReader& p, CollectiveProtocol& c) {
    static const EnumName<int> algorithms[] = {{"ring", 0}, {"tree", 1}, {"nvls", 2}};
    int algorithm = 0;
    if (p.read_enum("algorithm", algorithm, Presence::required, algorithms))
      c.algorithm = std::string(algorithms[algorithm].name);
    p.read_enum("protocol", c.protocol, Presence::required, kProtocolNames);
    p.read_duration("base", c.base, Presence::required, 0, 1);
    p.read_duration("hop_intra_node", c.hop_intra_node, Presence::required, 0, 1);
    p.read_duration("hop_inter_node", c.hop_inter_node, Presence::required, 0, 1);
    p.read("bandwidth_share", c.bandwidth_share, Presence::optional, 1e-3, 1.0);
    const char* caps[] = {"max_bus_bandwidth_one_node", "max_bus_bandwidth_two_nodes", "max_bus_bandwidth_more_nodes"};
    for (int i = 0; i < 3; ++i)
      p.read_quantity(caps[i], Dimension::bytes_per_s, c.max_bus_bandwidth[i], Presence::optional, 1e6, kMaxBandwidth);
    p.read("multi_node_latency_factor", c.multi_node_latency_factor, Presence::optional, 1.0, 10.0);
    read_factors(p, "size_correction", c.size_correction);
    if (c.algorithm == "nvls" && c.protocol != Protocol::simple)
      p.error("protocol", "NVLS runs the Simple protocol only", "set \"protocol\": \"Simple\"");
  });
  if (!g.collective_protocols.empty() &&
      std::none_of(g.collective_protocols.begin(), g.collective_protocols.end(),
                   [](const CollectiveProtocol& c) { return c.algorithm == "ring" && c.protocol == Protocol::simple; }))
    parent.error("collective_protocols", "the ring algorithm's Simple protocol is missing: every collective falls back on it",
                 "add {\"algorithm\": \"ring\", \"protocol\": \"Simple\", ...}");
  for (size_t i = 0; i < g.collective_protocols.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (g.collective_protocols[i].algorithm == g.collective_protocols[j].algorithm &&
          g.collective_protocols[i].protocol == g.collective_protocols[j].protocol)
        parent.error("collective_protocols", "algorithm " + g.collective_protocols[i].algorithm + " with protocol " +
                                                 protocol_name(g.collective_protocols[i].protocol) + " is listed twice");
}

void parse_collectives(ObjectReader& parent, GpuProfile& g) {
  parse_array(parent, "collectives", g.collectives, [](ObjectReader& p, CollectivePoint& c) {
    static const EnumName<int> ops[] = {{"all_reduce", 0}, {"all_gather", 1}, {"reduce_scatter", 2},
                                        {"all_to_all", 3}, {"broadcast", 4},  {"send_recv", 5}};
    static const EnumName<int> scopes[] = {{"intra_node", 0}, {"inter_node", 1}};
    static const EnumName<int> algorithms[] = {{"ring", 0}, {"tree", 1}, {"nvls", 2}, {"direct", 3}};
    int op = 0, scope = 0, algorithm = 0;
    if (p.read_enum("op", op, Presence::required, ops)) c.op = std::string(ops[op].name);
    if (p.read_enum("scope", scope, Presence::required, scopes)) c.scope = std::string(scopes[scope].name);
    if (p.read_enum("algorithm", algorithm, Presence::required, algorithms))
      c.algorithm = std::string(algorithms[algorithm].name);
    if (c.scope == "inter_node") {
      // A measurement across machines (arlsim calibrate under mpirun): the group's shape is part of it.
      const bool ranks = p.read("ranks", c.ranks, Presence::required, 2, 1 << 20);
      const bool nodes = p.read("nodes", c.nodes, Presence::required, 2, 1 << 20);
      if (ranks && nodes && c.ranks % c.nodes != 0)
        p.error("ranks", std::to_string(c.ranks) + " ranks do not spread evenly over " + std::to_string(c.nodes) + " nodes",
                "give a multiple of nodes");
      if (c.algorithm == "nvls") p.error("algorithm", "nvls runs within a node", "use ring, tree or direct");
    } else {
      p.read("ranks", c.ranks, Presence::optional, 2, 1 << 20);
      if (p.field("nodes")) p.error("nodes", "an intra-node point runs on one node", "remove it, or make the point's scope inter_node");
    }
    p.read_quantity("bus_bandwidth", Dimension::bytes_per_s, c.bus_bandwidth_bytes_per_s, Presence::required, 1e6,
                    kMaxBandwidth);
    p.reject("latency", "a point's latency is not used; latency comes from the profile's collective_protocols", "remove it");
  });
}

}  // namespace

bool parse_gpu_profile(const Value& v, const std::string& pointer, Diagnostics& diag, GpuProfile& out) {
  const size_t errors_before = diag.error_count();
  GpuProfile g;
  ObjectReader r(v, pointer, diag);
  if (!r.is_object()) return false;
  r.accept({"format"});
  r.read("name", g.name, Presence::optional);
  r.read("description", g.description, Presence::optional);
  if (r.read("system", g.system, Presence::optional) && g.system.empty())
    r.error("system", "must not be empty: name the cluster preset or file of the machines the GPU comes in, or leave it out");
  parse_provenance(r, g.provenance);
  parse_peaks(r, g);
  r.read("sm_count", g.sm_count, Presence::optional, 1, 1 << 16);
  if (const Value* mem = r.field("memory", Presence::required)) {
    ObjectReader m(*mem, r.pointer_of("memory"), diag);
    m.read_quantity("capacity", Dimension::bytes, g.memory_bytes, Presence::required, 1 << 20, kMaxBytes);
    m.read_quantity("bandwidth", Dimension::bytes_per_s, g.memory_bandwidth_bytes_per_s, Presence::required, 1e6,
                    kMaxBandwidth);
    m.read_quantity("reserved", Dimension::bytes, g.reserved_memory_bytes, Presence::optional, 0, kMaxBytes);
    m.finish();
    if (g.memory_bytes > 0 && g.reserved_memory_bytes >= g.memory_bytes)
      m.error_between("reserved", "capacity", "reserved memory (" + format_bytes(g.reserved_memory_bytes) +
                              ") must be smaller than the capacity (" + format_bytes(g.memory_bytes) + ")");
  }
  parse_link(r, "gpu_link", Presence::optional, g.gpu_link);
  parse_link(r, "host_link", Presence::required, g.host_link);
  r.read_quantity("nic", Dimension::bytes_per_s, g.nic_bandwidth_bytes_per_s, Presence::optional, 1e6, kMaxBandwidth);
  r.read_duration("kernel_launch_overhead", g.kernel_launch_overhead, Presence::optional, 0, 1e-2);
  r.read_duration("graph_kernel_overhead", g.graph_kernel_overhead, Presence::optional, 0, 1e-2);
  r.read_duration("host_copy_overhead", g.host_copy_overhead, Presence::optional, 0, 1e-2);
  if (const Value* cpu = r.field("host_cpu", Presence::optional)) {
    ObjectReader h(*cpu, r.pointer_of("host_cpu"), diag);
    if (h.is_object()) {
      h.read("name", g.host_cpu, Presence::required);
      h.read("relative_time", g.host_cpu_relative_time, Presence::required, 0.05, 20.0);
      h.finish();
      if (h.field("name") && g.host_cpu.empty()) h.error("name", "must name the CPU, not be empty");
    }
  }
  if (const Value* pageable = r.field("host_pageable", Presence::optional)) {
    ObjectReader h(*pageable, r.pointer_of("host_pageable"), diag);
    if (h.is_object()) {
      h.read_quantity("out", Dimension::bytes_per_s, g.host_pageable_out_bytes_per_s, Presence::required, 1e6, kMaxBandwidth);
      h.read_quantity("in", Dimension::bytes_per_s, g.host_pageable_in_bytes_per_s, Presence::required, 1e6, kMaxBandwidth);
      h.finish();
    }
  }
  r.read_duration("gemm_kernel_overhead", g.gemm_kernel_overhead, Presence::optional, 0, 1e-2);
  r.read("price_usd_per_gpu_hour", g.price_usd_per_gpu_hour, Presence::optional, 0, kMaxPriceUsdPerGpuHour);
  if (const Value* clock = r.field("tensor_clock", Presence::optional)) {
    ObjectReader c(*clock, r.pointer_of("tensor_clock"), diag);
    if (c.is_object()) {
      c.read("benchmarks_mhz", g.benchmark_clock_mhz, Presence::required, 1, 1e4);
      c.read("sustained_mhz", g.sustained_clock_mhz, Presence::required, 1, 1e4);
      c.finish();
      if (g.benchmark_clock_mhz > 0 && g.sustained_clock_mhz > g.benchmark_clock_mhz)
        c.error_between("sustained_mhz", "benchmarks_mhz",
                        "the sustained clock (" + std::to_string(static_cast<int64_t>(g.sustained_clock_mhz)) +
                            " MHz) must not exceed the clock the benchmarks ran at (" +
                            std::to_string(static_cast<int64_t>(g.benchmark_clock_mhz)) + " MHz)");
    }
  }
  parse_power_limited(r, g);
  parse_efficiency(r, g);
  parse_collectives(r, g);
  parse_collective_protocols(r, g);
  // `arlsim calibrate`'s record of the sweep (backend, command, repeats and jitter per table, raw
  // medians): for people and `calibrate compare`, not read by the cost model.
  if (const Value* c = r.field("calibration"); c && !c->is_object())
    r.error("calibration", "expected the object `arlsim calibrate` writes, got " + c->describe());
  if (r.field("inference_step_overhead"))
    r.error("inference_step_overhead", "the host's work per engine iteration belongs to the engine, not the GPU",
            "set the workload engine's host_overhead_per_iteration and host_overhead_per_sequence");
  r.finish();
  out = std::move(g);
  return diag.error_count() == errors_before;
}

}  // namespace arlsim::input
