// The harness's profile writer: measurements into the tables of a device profile (arlsim-gpu/1)
// and its atomic writing (harness.h, profile_json and write_atomically).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "calib/harness/harness.h"
#include "calib/harness/numbers.h"

namespace arlsim::calib {

namespace {

using Json = nlohmann::ordered_json;

Json table_summary(const std::vector<Stat>& stats, int repeats) {
  double worst = 0;
  std::vector<double> jitters;
  for (const auto& s : stats) {
    jitters.push_back(s.jitter);
    worst = std::max(worst, s.jitter);
  }
  const Stat j = stat_of(jitters);
  return Json{{"points", stats.size()}, {"repeats", repeats}, {"median_jitter", std::round(j.median * 1e4) / 1e4},
              {"max_jitter", std::round(worst * 1e4) / 1e4}};
}

double round4(double v) { return std::stod(fixed(v, 4)); }

// A GEMM table for one dtype: every k of a failed point leaves it, so that the rest stays a
// complete grid; the peak is the nominal one, else the best measured rate (and a note says so).
struct GemmGrid {
  double peak = 0;
  Json points = Json::array();
};
GemmGrid gemm_grid(const Plan& plan, const std::vector<GemmResult>& results, const std::string& dtype,
                   double nominal_peak, std::vector<std::string>& notes) {
  std::set<int64_t> ks(plan.gemm_k.begin(), plan.gemm_k.end());
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> rate;
  for (const auto& g : results) rate[{g.m, g.n, g.k}] = gemm_flops(g.m, g.n, g.k) / g.seconds.median;
  if (rate.empty()) {
    if (!plan.gemm_m.empty()) notes.push_back("no " + dtype + " GEMM has a valid measurement: the profile has no " + dtype + " grid");
    return {};
  }
  const std::string which = dtype + " ";
  for (int64_t m : plan.gemm_m)
    for (int64_t n : plan.gemm_n)
      for (int64_t k : plan.gemm_k)
        if (!rate.count({m, n, k}) && ks.erase(k))
          notes.push_back("k = " + std::to_string(k) + " left the " + which + "GEMM grid: " + std::to_string(m) + "x" +
                          std::to_string(n) + "x" + std::to_string(k) + " has no valid measurement");
  double best = 0;
  for (const auto& [key, v] : rate) best = std::max(best, v);
  GemmGrid g;
  g.peak = nominal_peak > 0 ? nominal_peak : best;
  if (nominal_peak <= 0 && best > 0) notes.push_back("peak " + dtype + ": the best measured GEMM rate (no nominal peak known)");
  for (int64_t m : plan.gemm_m)
    for (int64_t n : plan.gemm_n)
      for (int64_t k : ks)
        g.points.push_back({{"m", m}, {"n", n}, {"k", k}, {"efficiency", std::min(1.0, round4(rate.at({m, n, k}) / g.peak))}});
  return g;
}

}  // namespace

std::string profile_json(const Results& r, const ProfileHeader& h) {
  const DeviceInfo& info = r.info;
  std::vector<std::string> notes;
  const GemmGrid main_grid = gemm_grid(r.plan, r.gemm, info.gemm_dtype, info.peak_flops, notes);
  const double peak = main_grid.peak;
  std::map<std::string, GemmGrid> other_grids;
  for (const auto& dtype : r.plan.gemm_dtypes) {
    const auto found = r.gemm_by_dtype.find(dtype);
    const std::vector<GemmResult> none;
    const auto& results = found != r.gemm_by_dtype.end() ? found->second : none;
    double nominal = 0;
    for (const auto& [name, value] : info.other_gemm_dtypes)
      if (name == dtype) nominal = value;
    const GemmGrid g = gemm_grid(r.plan, results, dtype, nominal, notes);
    if (g.peak > 0 && !g.points.empty()) other_grids.emplace(dtype, g);
  }

  // Memory: the largest size measured stands for streaming (smaller ones fit in caches).
  double largest = 0;
  for (const auto& m : r.memory) largest = std::max(largest, m.bytes);
  std::vector<double> streaming;
  for (const auto& m : r.memory)
    if (m.bytes == largest) streaming.push_back(m.bytes / m.seconds.median);
  const double best_stream = streaming.empty() ? 0.0 : *std::max_element(streaming.begin(), streaming.end());
  const double bandwidth = info.memory_bandwidth > 0 ? info.memory_bandwidth : best_stream;
  if (info.memory_bandwidth <= 0 && best_stream > 0)
    notes.push_back("memory bandwidth: the best streaming kernel at " + std::to_string(static_cast<int64_t>(largest)) +
                    " bytes (no nominal bandwidth known)");
  // The host link: the rate between the smallest and the largest copy measured (one copy: its
  // own rate), else the nominal rate, else (a CPU, whose device memory is the host's) the
  // streaming rate; and what the smallest copy takes beyond its bytes at that rate, the fixed
  // time of every copy.
  double host = info.host_link_bandwidth > 0 ? info.host_link_bandwidth : best_stream;
  std::optional<double> copy_overhead;
  if (!r.host.empty()) {
    const auto by_bytes = [](const auto& a, const auto& b) { return a.first < b.first; };
    const auto& top = *std::max_element(r.host.begin(), r.host.end(), by_bytes);
    const auto& low = *std::min_element(r.host.begin(), r.host.end(), by_bytes);
    host = top.first / top.second.median;
    if (low.first < top.first && top.second.median > low.second.median) {
      host = (top.first - low.first) / (top.second.median - low.second.median);
      copy_overhead = std::max(0.0, low.second.median - low.first / host);
    }
  }
  int64_t widest = 0;
  for (const auto& c : r.collectives) widest = std::max(widest, c.ranks);
  if (info.cores > 0 && widest > info.cores)
    notes.push_back("collectives over " + std::to_string(widest) + " ranks on " + std::to_string(info.cores) +
                    " hardware threads: ranks beyond them share cores, so those figures include the scheduler's time slicing");

  // Inter-node collectives (measure_fabric): each op's largest size, in place where measured so;
  // the NIC's efficiency from the largest all-reduce when the NIC's rate was stated.
  std::set<model::CollectiveOp> inter_in_place;
  for (const auto& c : r.inter_node)
    if (c.in_place) inter_in_place.insert(c.op);
  const auto inter_fitted = [&](const CollectiveResult& c) { return c.in_place == (inter_in_place.count(c.op) > 0); };
  std::map<model::CollectiveOp, const CollectiveResult*> inter_largest;
  for (const auto& c : r.inter_node) {
    if (!inter_fitted(c)) continue;
    auto& top = inter_largest[c.op];
    if (!top || c.bytes > top->bytes) top = &c;
  }
  double nic_efficiency = 0;
  if (!r.inter_node.empty()) {
    const CollectiveResult& any = r.inter_node.front();
    const int64_t per_node = std::max<int64_t>(1, any.ranks / std::max<int64_t>(1, any.nodes));
    notes.push_back("inter-node collectives: " + std::to_string(any.ranks) + " processes on " + std::to_string(any.nodes) +
                    " machines through " + r.fabric);
    const auto ar = inter_largest.find(model::CollectiveOp::all_reduce);
    if (r.nic.bandwidth <= 0) {
      notes.push_back("no NIC rate stated (calibrate --nic): no NIC efficiency derived; a cluster's other multi-node groups "
                      "need efficiency/nic");
    } else if (ar != inter_largest.end()) {
      // The cost model's inter-node rate: the NICs the node's ranks use x their rate x the efficiency.
      const int64_t nics = r.nic.per_node > 0 ? std::min(r.nic.per_node, per_node) : per_node;
      const double e = ar->second->busbw() / (static_cast<double>(nics) * r.nic.bandwidth);
      nic_efficiency = std::min(1.0, round4(e));
      if (e > 1)
        notes.push_back("the inter-node all-reduce's bus bandwidth exceeds the stated NIC rate (x" + std::to_string(nics) +
                        "): NIC efficiency capped at 1");
    }
  }

  Json j;
  j["format"] = "arlsim-gpu/1";
  j["name"] = h.name;
  j["description"] = "measured by arlsim calibrate (backend " + info.backend + "): " + info.name;
  std::string note_text = "device: " + info.name + "; versions: " + info.versions + "; command: " + h.command;
  for (const auto& n : notes) note_text += "; " + n;
  for (const auto& e : r.excluded) note_text += "; excluded (failed its check): " + e;
  j["provenance"] = {{"kind", "measured"},
                     {"source", "arlsim calibrate --backend " + info.backend},
                     {"machine", info.machine},
                     {"driver", info.driver},
                     {"date", h.date},
                     {"notes", note_text}};
  j["peak"] = Json::object();
  if (peak > 0) j["peak"][info.gemm_dtype] = flops_text(peak);
  for (const auto& [dtype, g] : other_grids) j["peak"][dtype] = flops_text(g.peak);
  if (info.compute_units > 0) j["sm_count"] = info.compute_units;  // cores, on a CPU
  j["memory"] = Json::object();
  j["memory"]["capacity"] = bytes_text(info.memory_bytes);
  if (bandwidth > 0) j["memory"]["bandwidth"] = bandwidth_text(bandwidth);
  if (host > 0)
    j["host_link"] = {{"kind", info.host_link_kind.empty() ? "host-memory" : info.host_link_kind},
                      {"bandwidth", bandwidth_text(host)}};
  if (!r.collectives.empty())
    j["gpu_link"] = {{"kind", info.link_kind.empty() ? "shared-memory" : info.link_kind},
                     {"bandwidth", bandwidth_text(info.link_bandwidth > 0 ? info.link_bandwidth : bandwidth)}};
  if (r.launch) j["kernel_launch_overhead"] = micros_text(r.launch->median);
  if (r.graph_kernel) j["graph_kernel_overhead"] = micros_text(r.graph_kernel->median);
  if (copy_overhead) j["host_copy_overhead"] = micros_text(*copy_overhead);
  // What the held GEMM sustained bounds every GEMM of the measured type (at most its peak).
  if (r.held && peak > 0)
    j["power_limited"] = {{info.gemm_dtype, {{"gemm", flops_text(std::min(r.held->held_flops, peak))}}}};
  Json eff = Json::object();
  if (peak > 0 && !main_grid.points.empty()) eff["gemm"] = main_grid.points;
  for (const auto& [dtype, g] : other_grids) eff["gemm_by_dtype"][dtype] = g.points;
  if (info.gemm_tile_m > 0 && info.gemm_tile_n > 0) eff["gemm_tile"] = {{"m", info.gemm_tile_m}, {"n", info.gemm_tile_n}};
  if (peak > 0 && !r.attention.empty()) {
    Json points = Json::array();
    for (const auto& a : r.attention) {
      const double e = attention_flops(a.seq_len, a.head_dim, a.backward) / a.seconds.median / peak;
      points.push_back({{"seq_len", a.seq_len}, {"head_dim", a.head_dim}, {"causal", true}, {"pass", pass_name(a.backward)},
                        {"efficiency", std::min(1.0, round4(e))}});
    }
    eff["attention"] = points;
  }
  if (!r.decode.empty()) {
    Json rows = Json::array();
    for (int64_t b : r.plan.decode_batch) {
      const auto f = fit_decode(b, r.decode);
      if (!f) {
        if (std::any_of(r.decode.begin(), r.decode.end(), [&](const DecodeResult& x) { return x.batch == b; }))
          notes.push_back("decode attention at batch " + std::to_string(b) +
                          " left the table: its measurements do not give a positive bandwidth");
        continue;
      }
      rows.push_back({{"batch", b}, {"fixed", micros_text(f->fixed_s)}, {"bandwidth", bandwidth_text(f->bandwidth)}});
    }
    if (!rows.empty()) eff["decode_attention"] = rows;
  }
  if (bandwidth > 0 && !streaming.empty()) {
    std::vector<double> shares;
    for (double s : streaming) shares.push_back(s / bandwidth);
    eff["memory_bound"] = std::min(1.0, round4(stat_of(shares).median));
  }
  // By size, the median of the kernels' rates: the cost model takes it for a kernel of that size
  // where it beats the streaming rate (data a cache holds).
  std::map<double, std::vector<double>> rates_by_size;
  std::map<std::string, std::map<double, double>> by_kernel;  // each kernel's rate by size
  for (const auto& m : r.memory)
    if (m.seconds.median > 0) {
      rates_by_size[m.bytes].push_back(m.bytes / m.seconds.median);
      by_kernel[std::string(kernel_name(m.kernel))][m.bytes] = m.bytes / m.seconds.median;
    }
  if (rates_by_size.size() >= 2) {
    Json rows = Json::array();
    for (const auto& [bytes, rates] : rates_by_size)
      rows.push_back({{"bytes", static_cast<int64_t>(bytes)}, {"bandwidth", bandwidth_text(stat_of(rates).median)}});
    eff["memory_by_size"] = rows;
    // Each kernel's own rates by size: the cost model prices a norm, an add (the triad) or an
    // activation at its kind's, and work of no one kind at the medians above.
    Json kinds = Json::object();
    for (const auto& [name, rates] : by_kernel) {
      // A kernel whose largest size failed its check has no streaming point: left out, priced as
      // other work.
      if (!rates.count(largest)) continue;
      Json kind_rows = Json::array();
      for (const auto& [bytes, rate] : rates)
        kind_rows.push_back({{"bytes", static_cast<int64_t>(bytes)}, {"bandwidth", bandwidth_text(rate)}});
      kinds[name] = kind_rows;
    }
    if (!kinds.empty()) eff["memory_by_kernel"] = kinds;
  }
  if (nic_efficiency > 0) {
    eff["nic"] = nic_efficiency;
    j["nic"] = bandwidth_text(r.nic.bandwidth);
  }
  if (!eff.empty()) j["efficiency"] = eff;

  double fitted_base = 0, fitted_hop = 0;  // the ring's latency within a node, when measured
  if (!r.collectives.empty()) {
    // Each collective's bus bandwidth at the largest size measured, per group size: what the
    // cost model takes as the algorithm's rate within a node.
    std::map<std::pair<model::CollectiveOp, int64_t>, const CollectiveResult*> largest_of;
    // Per op and group size, the in-place runs when any passed their check (frameworks reduce
    // gradients and gather parameters in their own buffers, as the CPU runtime does), else the
    // out-of-place ones (all-to-all and send/recv always).
    std::set<std::pair<model::CollectiveOp, int64_t>> in_place_measured;
    for (const auto& c : r.collectives)
      if (c.in_place) in_place_measured.insert({c.op, c.ranks});
    const auto fitted = [&](const CollectiveResult& c) { return c.in_place == (in_place_measured.count({c.op, c.ranks}) > 0); };
    for (const auto& c : r.collectives) {
      if (!fitted(c)) continue;
      auto& top = largest_of[{c.op, c.ranks}];
      if (!top || c.bytes > top->bytes) top = &c;
    }
    Json points = Json::array();
    for (const auto& [key, c] : largest_of) {
      const bool direct = c->op == model::CollectiveOp::all_to_all || c->op == model::CollectiveOp::send_recv;
      points.push_back({{"op", model::collective_name(c->op)},
                        {"scope", "intra_node"},
                        {"algorithm", direct ? "direct" : "ring"},
                        {"ranks", c->ranks},
                        {"bus_bandwidth", bandwidth_text(c->busbw())}});
    }
    j["collectives"] = points;
    // Latency: the smallest all-reduce of each group size against its 2(n - 1) ring steps,
    // t = base + 2(n - 1) x hop, by least squares (one group size: no base, all of it in the hops).
    std::map<int64_t, const CollectiveResult*> smallest;
    for (const auto& c : r.collectives)
      if (c.op == model::CollectiveOp::all_reduce && fitted(c)) {
        auto& s0 = smallest[c.ranks];
        if (!s0 || c.bytes < s0->bytes) s0 = &c;
      }
    if (smallest.empty())  // no all-reduce: the smallest of anything, as one ring pass
      for (const auto& c : r.collectives) {
        if (!fitted(c)) continue;
        auto& s0 = smallest[c.ranks];
        if (!s0 || c.bytes < s0->bytes) s0 = &c;
      }
    // Each op's own ring steps, as the cost model counts them: 2(n - 1) for an all-reduce, one hop
    // for a send/recv, n - 1 otherwise.
    auto steps = [](const CollectiveResult& c) {
      if (c.op == model::CollectiveOp::all_reduce) return 2.0 * d(c.ranks - 1);
      if (c.op == model::CollectiveOp::send_recv) return 1.0;
      return d(c.ranks - 1);
    };
    std::vector<std::pair<double, double>> xy;  // (steps, seconds)
    for (const auto& [n, c] : smallest) xy.emplace_back(steps(*c), c->seconds.median);
    double& base = fitted_base;
    double& hop = fitted_hop;
    if (const auto line = least_squares(xy)) std::tie(hop, base) = *line;  // the group sizes give different step counts
    if (xy.size() < 2 || hop <= 0 || base < 0) {
      base = 0;
      double sum = 0;
      for (const auto& [x, y] : xy) sum += y / x;
      hop = sum / d(static_cast<int64_t>(xy.size()));
    }
    j["collective_protocols"] = Json::array({Json{{"algorithm", "ring"},
                                                  {"protocol", "Simple"},
                                                  {"base", micros_text(base)},
                                                  {"hop_intra_node", micros_text(hop)},
                                                  {"hop_inter_node", micros_text(hop)}}});
  }
  if (!inter_largest.empty()) {
    if (!j.contains("collectives")) j["collectives"] = Json::array();
    for (const auto& [op, c] : inter_largest) {
      const bool direct = op == model::CollectiveOp::all_to_all || op == model::CollectiveOp::send_recv;
      j["collectives"].push_back({{"op", model::collective_name(op)},
                                  {"scope", "inter_node"},
                                  {"algorithm", direct ? "direct" : "ring"},
                                  {"ranks", c->ranks},
                                  {"nodes", c->nodes},
                                  {"bus_bandwidth", bandwidth_text(c->busbw())}});
    }
    // The hop between nodes: the smallest all-reduce (else the smallest of anything) against the
    // cost model's ring over nodes, 2(n - 1) steps of which 2 x nodes cross between them (n - 1
    // and nodes - 1 for the other ops, one for a send/recv), the steps within a node at the hop
    // measured there. Without a measurement within a node, every step takes the same hop.
    const CollectiveResult* small = nullptr;
    for (const bool all_reduce_only : {true, false}) {
      for (const auto& c : r.inter_node)
        if (inter_fitted(c) && (!all_reduce_only || c.op == model::CollectiveOp::all_reduce) && (!small || c.bytes < small->bytes))
          small = &c;
      if (small) break;
    }
    const double n = d(small->ranks), nodes = d(small->nodes);
    const bool all_reduce = small->op == model::CollectiveOp::all_reduce, send_recv = small->op == model::CollectiveOp::send_recv;
    const double steps = all_reduce ? 2 * (n - 1) : send_recv ? 1.0 : n - 1;
    const double inter_steps = std::min(steps, all_reduce ? 2 * nodes : send_recv ? 1.0 : nodes - 1);
    const bool measured_within = j.contains("collective_protocols");
    double inter = (small->seconds.median - fitted_base - (steps - inter_steps) * fitted_hop) / inter_steps;
    if (!measured_within || inter <= 0) inter = small->seconds.median / steps;
    if (measured_within) {
      j["collective_protocols"][0]["hop_inter_node"] = micros_text(inter);
    } else {
      j["collective_protocols"] = Json::array({Json{{"algorithm", "ring"},
                                                    {"protocol", "Simple"},
                                                    {"base", micros_text(0)},
                                                    {"hop_intra_node", micros_text(inter)},
                                                    {"hop_inter_node", micros_text(inter)}}});
    }
  }

  // What the sweep was and how steady: per table its points, repeats and jitter, and the raw
  // medians of the tables the efficiencies condense (memory by kernel and size, launch).
  Json cal;
  cal["backend"] = info.backend;
  cal["device"] = info.name;
  cal["versions"] = info.versions;
  cal["command"] = h.command;
  cal["quick"] = r.plan.quick;
  cal["warmups"] = r.plan.warmups;
  cal["seconds"] = std::round(r.seconds * 100) / 100;
  Json tables = Json::object();
  if (!r.gemm.empty()) {
    std::vector<Stat> s;
    for (const auto& g : r.gemm) s.push_back(g.seconds);
    tables["gemm"] = table_summary(s, r.plan.repeats);
    tables["gemm"]["dtype"] = info.gemm_dtype;
  }
  for (const auto& [dtype, results] : r.gemm_by_dtype) {
    std::vector<Stat> s;
    for (const auto& g : results) s.push_back(g.seconds);
    tables["gemm_" + dtype] = table_summary(s, r.plan.repeats);
    tables["gemm_" + dtype]["dtype"] = dtype;
  }
  if (!r.attention.empty()) {
    std::vector<Stat> s;
    for (const auto& a : r.attention) s.push_back(a.seconds);
    tables["attention"] = table_summary(s, r.plan.repeats);
  }
  if (!r.decode.empty()) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& x : r.decode) {
      st.push_back(x.seconds);
      rows.push_back({{"batch", x.batch},
                      {"kv_len", x.kv_len},
                      {"bytes", x.kv_bytes},
                      {"time_us", round4(x.seconds.median * 1e6)},
                      {"bandwidth", bandwidth_text(x.kv_bytes / x.seconds.median)},
                      {"jitter", std::round(x.seconds.jitter * 1e4) / 1e4}});
    }
    Json fits = Json::array();
    for (int64_t b : r.plan.decode_batch)
      if (const auto f = fit_decode(b, r.decode))
        fits.push_back({{"batch", b}, {"worst_residual", round4(f->worst_residual)}});
    tables["decode_attention"] = table_summary(st, r.plan.repeats);
    tables["decode_attention"]["shape"] = {{"heads", r.plan.decode_heads},
                                           {"kv_heads", r.plan.decode_kv_heads},
                                           {"head_dim", r.plan.decode_head_dim},
                                           {"dtype", info.gemm_dtype}};
    tables["decode_attention"]["fits"] = fits;
    tables["decode_attention"]["rows"] = rows;
  }
  if (!r.memory.empty()) {
    std::vector<Stat> s;
    Json rows = Json::array();
    for (const auto& m : r.memory) {
      s.push_back(m.seconds);
      rows.push_back({{"kernel", kernel_name(m.kernel)},
                      {"bytes", m.bytes},
                      {"bandwidth", bandwidth_text(m.bytes / m.seconds.median)},
                      {"jitter", std::round(m.seconds.jitter * 1e4) / 1e4}});
    }
    tables["memory"] = table_summary(s, r.plan.repeats);
    tables["memory"]["rows"] = rows;
  }
  if (r.launch) {
    tables["launch"] = table_summary({*r.launch}, r.plan.repeats);
    tables["launch"]["per_sample"] = r.plan.launches_per_sample;
  }
  if (r.graph_kernel) {
    tables["graph"] = table_summary({*r.graph_kernel}, r.plan.repeats);
    tables["graph"]["kernels"] = r.plan.graph_kernels;
  }
  if (!r.host.empty()) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& [bytes, stat] : r.host) {
      st.push_back(stat);
      rows.push_back({{"bytes", bytes}, {"time", micros_text(stat.median)}, {"bandwidth", bandwidth_text(bytes / stat.median)}});
    }
    tables["host"] = table_summary(st, r.plan.repeats);
    tables["host"]["rows"] = rows;
  }
  // Each collective run: within a node, and across nodes (with the group's nodes and the fabric).
  const auto collective_table = [&](const std::vector<CollectiveResult>& runs, bool across) {
    std::vector<Stat> st;
    Json rows = Json::array();
    for (const auto& c : runs) {
      st.push_back(c.seconds);
      Json row = {{"op", model::collective_name(c.op)}, {"ranks", c.ranks}};
      if (across) row["nodes"] = c.nodes;
      row.update({{"bytes", c.bytes},
                  {"in_place", c.in_place},
                  {"time_us", round4(c.seconds.median * 1e6)},
                  {"algbw_gbps", round4(c.algbw() / 1e9)},
                  {"busbw_gbps", round4(c.busbw() / 1e9)},
                  {"jitter", std::round(c.seconds.jitter * 1e4) / 1e4}});
      rows.push_back(row);
    }
    Json table = table_summary(st, r.plan.repeats);
    if (across) table["fabric"] = r.fabric;
    table["rows"] = rows;
    return table;
  };
  if (r.held) {
    Json windows = Json::array();
    for (double f : r.held->window_flops) windows.push_back(round4(f / 1e12));
    tables["held_gemm"] = {{"m", r.held->mnk},
                           {"n", r.held->mnk},
                           {"k", r.held->mnk},
                           {"dtype", info.gemm_dtype},
                           {"window_s", r.held->window_s},
                           {"window_tflops", windows},
                           {"held_tflops", round4(r.held->held_flops / 1e12)}};
  }
  if (!r.collectives.empty()) tables["collective"] = collective_table(r.collectives, false);
  if (!r.inter_node.empty()) tables["collective_inter_node"] = collective_table(r.inter_node, true);
  cal["tables"] = tables;
  cal["excluded"] = r.excluded;
  j["calibration"] = cal;
  return j.dump(2) + "\n";
}

std::string output_path_problem(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return path + " is a folder; give a file name";
  if (!target.parent_path().empty() && !fs::is_directory(target.parent_path(), ec))
    return "no folder " + target.parent_path().string() + " to write " + path + " in";
  return "";
}

std::string write_atomically(const std::string& path, const std::string& text,
                             const std::function<std::string(const std::string& written)>& check) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // Named as the user gave it, not as the temporary file beside it.
  if (std::string problem = output_path_problem(path); !problem.empty()) return problem;
  fs::path tmp = target;
  tmp += ".partial." + std::to_string(::getpid());  // concurrent runs do not share it
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot write " + path;
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return "cannot write " + path;
    }
  }
  std::error_code ec;
  if (check)
    if (const std::string problem = check(tmp.string()); !problem.empty()) {
      fs::remove(tmp, ec);
      return problem;
    }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot write " + path;
  }
  return {};
}

}  // namespace arlsim::calib
