// `arlsim calibrate`: measures a device with microbenchmarks and writes the profile the cost model
// reads; `arlsim calibrate compare A B` puts two profiles side by side.

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "app/commands.h"
#include "app/farm_transport.h"
#include "app/mpi_fabric.h"
#include "app/options.h"
#include "app/task_farm.h"
#include "calib/cpu/cpu_device.h"
#include "calib/cuda/cuda_device.h"
#include "calib/harness/harness.h"
#include "sim/input/check.h"
#include "sim/model/compute.h"
#include "sim/parse/units.h"

namespace arlsim::app {
namespace po = boost::program_options;

namespace {

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

// "[#####.....]  45%  about 12 s left" on one terminal line, redrawn.
void draw_progress(double fraction, double elapsed) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  char left[64] = "";
  if (fraction > 0.02 && fraction < 1) std::snprintf(left, sizeof left, "  about %.0f s left", elapsed / fraction * (1 - fraction));
  static bool finished = false;  // the bar ends its line once
  if (finished) return;
  std::fprintf(stderr, "\r[%s] %3.0f%%%s          ", bar.c_str(), 100 * fraction, left);
  if (fraction >= 1) {
    std::fprintf(stderr, "\n");
    finished = true;
  }
}

std::optional<input::GpuProfile> load_profile(const std::string& path) {
  input::Diagnostics diag;
  auto doc = input::check_document(path, input::SpecKind::gpu, {}, diag);
  std::cerr << input::format_all(diag);
  if (!doc) return std::nullopt;
  return std::get<input::GpuProfile>(doc->spec);
}

std::string number(double v, const char* unit) {
  char buf[64];
  if (v <= 0) return "-";
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

std::string ratio(double a, double b) {
  if (a <= 0 || b <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", b / a);
  return buf;
}

int compare(const std::string& a_path, const std::string& b_path) {
  const auto a = load_profile(a_path), b = load_profile(b_path);
  if (!a || !b) return kExitBadInput;
  std::printf("%-34s %18s %18s %8s\n", "", a->name.c_str(), b->name.c_str(), "B / A");
  auto row = [](const std::string& what, double x, double y, const char* unit, double scale) {
    std::printf("%-34s %18s %18s %8s\n", what.c_str(), number(x / scale, unit).c_str(), number(y / scale, unit).c_str(),
                ratio(x, y).c_str());
  };
  std::printf("peaks and rates\n");
  std::set<input::Dtype> dtypes;
  for (const auto& [dt, f] : a->peak_flops_per_s) dtypes.insert(dt);
  for (const auto& [dt, f] : b->peak_flops_per_s) dtypes.insert(dt);
  for (auto dt : dtypes) row("  peak " + std::string(input::dtype_name(dt)), a->peak(dt), b->peak(dt), "TFLOP/s", 1e12);
  row("  memory bandwidth (nominal)", a->memory_bandwidth_bytes_per_s, b->memory_bandwidth_bytes_per_s, "GB/s", 1e9);
  row("  memory-bound efficiency", a->memory_bound_efficiency, b->memory_bound_efficiency, "", 1);
  row("  host link (achieved)", a->host_link.achieved(), b->host_link.achieved(), "GB/s", 1e9);
  row("  kernel launch overhead", a->kernel_launch_overhead.seconds(), b->kernel_launch_overhead.seconds(), "us", 1e-6);
  row("  graph-replayed kernel", a->graph_kernel_overhead.seconds(), b->graph_kernel_overhead.seconds(), "us", 1e-6);
  row("  host copy overhead", a->host_copy_overhead.seconds(), b->host_copy_overhead.seconds(), "us", 1e-6);
  row("  GEMM kernel's fixed time", a->gemm_kernel_overhead.seconds(), b->gemm_kernel_overhead.seconds(), "us", 1e-6);
  // The share of the measured tensor rates dense work sustains (1: as measured).
  row("  clock share (no power_limited)", a->sustained_tensor_fraction(), b->sustained_tensor_fraction(), "", 1);
  for (auto dt : dtypes) {
    const auto pa = a->power_limited_rate(dt), pb = b->power_limited_rate(dt);
    if (pa.gemm_flops_per_s > 0 || pb.gemm_flops_per_s > 0)
      row("  " + std::string(input::dtype_name(dt)) + " GEMM, power-limited", pa.gemm_flops_per_s, pb.gemm_flops_per_s,
          "TFLOP/s", 1e12);
    if (pa.attention_flops_per_s > 0 || pb.attention_flops_per_s > 0)
      row("  " + std::string(input::dtype_name(dt)) + " attention, power-limited", pa.attention_flops_per_s,
          pb.attention_flops_per_s, "TFLOP/s", 1e12);
  }
  row("  memory capacity", a->memory_bytes, b->memory_bytes, "GiB", 1024.0 * 1024 * 1024);
  // GEMMs: each profile's cost model at the points either profile measured, in a dtype both have.
  // The dtype models train and serve in first (bf16; fp32 for a CPU's profile).
  std::optional<input::Dtype> common;
  for (auto dt : {input::Dtype::bf16, input::Dtype::fp16, input::Dtype::fp32, input::Dtype::tf32, input::Dtype::fp8,
                  input::Dtype::int8})
    if (a->peak(dt) > 0 && b->peak(dt) > 0) {
      common = dt;
      break;
    }
  // Both profiles' compute models must be complete for the dtype (a profile measured without
  // attention, say, is not).
  const bool comparable = common && model::missing_compute_data(*a, *common).empty() &&
                          model::missing_compute_data(*b, *common).empty();
  // The GEMM sections: the first dtype both profiles have a peak for, and every dtype either
  // measured a grid of its own in (fp16, fp8).
  std::vector<input::Dtype> gemm_dtypes;
  if (common) gemm_dtypes.push_back(*common);
  for (auto dt : dtypes)
    if ((a->gemm_by_dtype.count(dt) || b->gemm_by_dtype.count(dt)) && (!common || dt != *common))
      gemm_dtypes.push_back(dt);
  bool any_points = false;
  for (auto dt : gemm_dtypes) {
    std::set<std::tuple<int64_t, int64_t, int64_t>> points;
    for (const auto* p : {&*a, &*b})
      for (const auto& g : p->gemm_points(dt)) points.insert({g.m, g.n, g.k});
    if (points.empty()) continue;
    any_points = true;
    const std::string name = input::dtype_name(dt);
    const std::string missing_a = model::missing_compute_data(*a, dt), missing_b = model::missing_compute_data(*b, dt);
    if (!missing_a.empty() || !missing_b.empty()) {
      std::printf("GEMM %s: not compared: %s lacks %s\n", name.c_str(), missing_a.empty() ? b->name.c_str() : a->name.c_str(),
                  (missing_a.empty() ? missing_b : missing_a).c_str());
      continue;
    }
    std::printf("GEMM %s, achieved (grid points of either; * outside that profile's grid: its analytic model)\n",
                name.c_str());
    const model::ComputeModel ca(*a, dt), cb(*b, dt);
    for (const auto& [m, n, k] : points) {
      const double fa = 2.0 * static_cast<double>(m * n) * static_cast<double>(k);
      const double ta = ca.gemm(m, n, k).seconds, tb = cb.gemm(m, n, k).seconds;
      const std::string shape = "  " + std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k);
      std::printf("%-34s %17s%s %17s%s %8s\n", shape.c_str(), number(fa / ta / 1e12, "TFLOP/s").c_str(),
                  ca.in_gemm_grid(m, n, k) ? " " : "*", number(fa / tb / 1e12, "TFLOP/s").c_str(),
                  cb.in_gemm_grid(m, n, k) ? " " : "*", ratio(fa / ta, fa / tb).c_str());
    }
  }
  if (!common && !any_points && (!a->gemm_efficiency.empty() || !b->gemm_efficiency.empty()))
    std::printf("GEMM: the profiles share no dtype with a peak; not compared\n");
  // Decode attention: one layer's kernel at each batch size either profile measured, over a KV
  // cache of 4,096 tokens of 8 KV heads of 128 per sequence (bf16), as each cost model prices it.
  std::set<int64_t> batches;
  for (const auto* p : {&*a, &*b})
    for (const auto& x : p->decode_attention) batches.insert(x.batch);
  if (comparable && !batches.empty()) {
    std::printf("decode attention, achieved (one layer, 4,096 cached tokens of 8 x 128 per sequence; * outside that "
                "profile's table: the memory-bound rate)\n");
    const model::ComputeModel ca(*a, *common), cb(*b, *common);
    for (int64_t batch : batches) {
      const double bytes = 2.0 * static_cast<double>(batch) * 4096 * 8 * 128 * 2;
      const double ta = ca.decode_attention(bytes, 1, batch).seconds, tb = cb.decode_attention(bytes, 1, batch).seconds;
      const std::string name = "  batch " + std::to_string(batch);
      std::printf("%-34s %17s%s %17s%s %8s\n", name.c_str(), number(bytes / ta / 1e9, "GB/s").c_str(),
                  ca.in_decode_table(batch) ? " " : "*", number(bytes / tb / 1e9, "GB/s").c_str(),
                  cb.in_decode_table(batch) ? " " : "*", ratio(bytes / ta, bytes / tb).c_str());
    }
  }
  // Memory-bound kernels: one kernel at each size either profile measured, as each cost model
  // prices it (its launch apart).
  std::set<int64_t> sizes;
  for (const auto* p : {&*a, &*b})
    for (const auto& x : p->memory_by_size) sizes.insert(x.bytes);
  if (comparable && !sizes.empty()) {
    std::printf("memory-bound kernels by size, achieved (* no table in that profile: the streaming rate)\n");
    const model::ComputeModel ca(*a, *common), cb(*b, *common);
    for (int64_t bytes : sizes) {
      const double ra = ca.memory_rate_at(static_cast<double>(bytes)), rb = cb.memory_rate_at(static_cast<double>(bytes));
      const std::string name = "  " + number(static_cast<double>(bytes) / (1 << 20), "MiB");
      std::printf("%-34s %17s%s %17s%s %8s\n", name.c_str(), number(ra / 1e9, "GB/s").c_str(),
                  a->memory_by_size.empty() ? "*" : " ", number(rb / 1e9, "GB/s").c_str(),
                  b->memory_by_size.empty() ? "*" : " ", ratio(ra, rb).c_str());
    }
  }
  {
    // Each kind's kernel, streaming: what prices a norm, an add, an activation (work priced as a
    // whole, so no size's table but the kind's streaming point).
    const auto& kinds = input::kMeasuredKinds;
    const auto measured = [](const input::GpuProfile& p, input::ElementwiseKind k) {
      return !p.memory_by_kernel[static_cast<int>(k)].empty();
    };
    if (comparable && std::any_of(std::begin(kinds), std::end(kinds),
                                  [&](const auto& k) { return measured(*a, k.kind) || measured(*b, k.kind); })) {
      std::printf("memory-bound kernels by kind, streaming (* not measured in that profile: the memory-bound rate)\n");
      const model::ComputeModel ca(*a, *common), cb(*b, *common);
      const double bytes = 1e9;
      for (const auto& [name, kind] : kinds) {
        const double ra = bytes / ca.memory_bound(bytes, 0, kind).seconds, rb = bytes / cb.memory_bound(bytes, 0, kind).seconds;
        std::printf("%-34s %17s%s %17s%s %8s\n", ("  " + std::string(name)).c_str(), number(ra / 1e9, "GB/s").c_str(),
                    measured(*a, kind) ? " " : "*", number(rb / 1e9, "GB/s").c_str(), measured(*b, kind) ? " " : "*",
                    ratio(ra, rb).c_str());
      }
    }
  }
  if (!a->collectives.empty() || !b->collectives.empty()) {
    std::printf("collectives (bus bandwidth)\n");
    std::map<std::string, std::pair<double, double>> rows;
    const auto key = [](const input::CollectivePoint& c) {
      return c.op + " " + c.scope + " " + c.algorithm + " x" + std::to_string(c.ranks) +
             (c.scope == "inter_node" ? " over " + std::to_string(c.nodes) + " nodes" : "");
    };
    for (const auto& c : a->collectives) rows[key(c)].first = c.bus_bandwidth_bytes_per_s;
    for (const auto& c : b->collectives) rows[key(c)].second = c.bus_bandwidth_bytes_per_s;
    for (const auto& [name, v] : rows) row("  " + name, v.first, v.second, "GB/s", 1e9);
  }
  return kExitOk;
}

}  // namespace

int run_calibrate(const Args& args) {
  if (!args.empty() && args.front() == "compare") {
    if (args.size() != 3) {
      std::cerr << "usage: arlsim calibrate compare A.json B.json\n";
      return kExitBadInput;
    }
    return compare(args[1], args[2]);
  }
  std::string backend, ops_text, out, name, nic_text;
  int64_t ranks = 0;
  po::options_description opts(
      "arlsim calibrate --backend cpu [--quick] [--ops LIST] [--ranks N] [--nic RATE] --out PROFILE.json\n"
      "mpirun -n N arlsim calibrate --backend cpu [same options]\n"
      "arlsim calibrate compare A.json B.json\n\n"
      "Measures the device with microbenchmarks (a sweep of each table, warm-ups, 3 repeats, medians) and\n"
      "writes a device profile that `arlsim check` accepts and every command reads where a GPU profile\n"
      "goes (e.g. --set /cluster/gpu=PROFILE.json). Under mpirun, with as many processes on each of\n"
      "several machines, the collectives are also measured among all the processes (inter-node points);\n"
      "rank 0 measures its device and writes the profile. `compare` prints two profiles side by side.\n\nOptions");
  opts.add_options()("help,h", "this text")("backend", po::value(&backend), "cpu (one core of this machine) or cuda (the first GPU; NCCL over the node's GPUs)")(
      "quick", "fewer points per table (the CPU's in well under a minute)")(
      "ops", po::value(&ops_text), ("what to measure, comma-separated: " + calib::op_list() + " (default: all)").c_str())(
      "ranks", po::value(&ranks), "the largest collective group (2, 4, ... up to it; default 2 threads on a CPU)")(
      "nic", po::value(&nic_text),
      "under mpirun: each process's NIC rate, one way (\"400 Gbps\"): the profile's NIC efficiency is the "
      "inter-node all-reduce's bus bandwidth over the NICs of a node's processes")(
      "name", po::value(&name), "the profile's name (default: from the file name)")(
      "out", po::value(&out), "the profile to write");
  po::variables_map vm;
  if (int status = parse_options(args, opts, std::nullopt, vm); status >= 0) return status;
  if (backend.empty() || out.empty()) {
    std::cerr << "arlsim calibrate: --backend and --out are required\n" << opts;
    return kExitBadInput;
  }
  calib::NicInfo nic;
  if (!nic_text.empty()) {
    const auto q = parse::parse_quantity(nic_text, parse::Dimension::bytes_per_s);
    if (!q.error.empty() || !(q.value > 0) || !std::isfinite(q.value)) {
      std::cerr << "arlsim calibrate: --nic: " << (q.error.empty() ? "must be a rate above 0" : q.error) << "\n";
      return kExitBadInput;
    }
    nic.bandwidth = q.value;
  }
  // Under mpirun the processes measure collectives among themselves, across their machines; rank 0
  // measures its device too and writes the profile.
  TaskFarm farm;
  const bool root = farm.rank() == 0;
  if (!farm.distributed() && !nic_text.empty()) {
    std::cerr << "arlsim calibrate: --nic: the NIC's efficiency comes from collectives across machines, measured "
                 "under mpirun (mpirun -n N arlsim calibrate ...)\n";
    return kExitBadInput;
  }
  if (root) {
    // Checked before measuring: a sweep takes minutes, and its profile must have somewhere to go.
    const std::filesystem::path target(out);
    const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    std::string why;
    if (std::filesystem::is_directory(target, ec) || (!out.empty() && out.back() == '/'))
      why = "it is a folder; give a file name";
    else if (!std::filesystem::is_directory(dir, ec))
      why = "no such folder " + dir.string();
    else if (access(dir.c_str(), W_OK) != 0)
      why = "its folder is not writable";
    else if (std::filesystem::exists(target, ec) && access(target.c_str(), W_OK) != 0)
      why = "the file is not writable";
    if (!why.empty()) {
      const std::string message = "arlsim calibrate: --out: cannot write " + out + ": " + why;
      if (farm.distributed()) farm.abort(message, kExitBadInput);
      std::cerr << message << "\n";
      return kExitBadInput;
    }
  }
  std::vector<calib::Op> ops;
  if (ops_text.empty()) {
    for (const auto& o : calib::all_ops()) ops.push_back(o.op);
  } else {
    std::stringstream in(ops_text);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto op = calib::find_op(item);
      if (!op) {
        std::cerr << "arlsim calibrate: --ops: unknown measurement \"" << item << "\"; valid: " << calib::op_list() << "\n";
        return kExitBadInput;
      }
      ops.push_back(*op);
    }
  }
  if (backend != "cpu" && backend != "cuda") {
    std::cerr << "arlsim calibrate: --backend: unknown backend \"" << backend << "\"; valid: cpu, cuda\n";
    return kExitBadInput;
  }
  auto has = [&](calib::Op o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  // Under mpirun every process decides alike what it can (the same arguments, the same gathered
  // machine names); what only rank 0 finds (its device) stops them all.
  int64_t nodes = 1;
  if (farm.distributed()) {
    std::string why;
    if (!has(calib::Op::collective) && !has(calib::Op::p2p))
      why = "--ops has neither collective nor p2p: under mpirun the processes measure collectives among themselves";
    else if (nodes = count_machines(farm, why); nodes == 1)
      why = "all " + std::to_string(farm.size()) + " processes run on one machine: start them on several "
            "(mpirun --host A,B ...), or give each machine's processes their own ARLSIM_NODE_NAME";
    if (!why.empty()) {
      if (root) std::cerr << "arlsim calibrate: " << why << "\n";
      return kExitBadInput;
    }
  }
  const auto fail = [&](const std::string& message) {
    if (farm.distributed()) farm.abort("arlsim calibrate: " + message, kExitBadInput);
    std::cerr << "arlsim calibrate: " << message << "\n";
    return kExitBadInput;
  };
  // The device: rank 0's (every process's GPU is its own in the fabric below).
  std::unique_ptr<calib::Device> device;
  calib::Plan plan;
  if (root) {
    if (backend == "cpu") {
      device = calib::make_cpu_device();
    } else {
#ifdef ARLSIM_HAVE_CUDA_BACKEND
      std::string problem;
      device = calib::make_cuda_device(problem);
      if (!device) return fail("--backend cuda: " + problem);
#else
      return fail("--backend cuda is not part of this build (no CUDA toolkit at configure time); only \"cpu\" is");
#endif
    }
    const calib::DeviceInfo info = device->info();
    // A profile needs a peak rate and a memory bandwidth: measured, or known to the backend.
    if (!has(calib::Op::gemm) && info.peak_flops <= 0)
      return fail("--ops must include gemm: the " + backend + " backend knows no nominal peak, and a profile needs one");
    if (!has(calib::Op::memory) && info.memory_bandwidth <= 0)
      return fail("--ops must include memory: the " + backend +
                  " backend knows no nominal memory bandwidth, and a profile needs one");
    if (vm.count("ranks") && info.max_ranks < 2)
      return fail("--ranks: this machine has " + std::to_string(info.max_ranks) + " " + backend +
                  " device(s), so no collective group to measure (leave --ranks out)");
    if (vm.count("ranks") && (ranks < 2 || ranks > info.max_ranks))
      return fail("--ranks must be between 2 and " + std::to_string(info.max_ranks) + " for backend " + backend +
                  ", not " + std::to_string(ranks));
    if (ranks > info.cores && info.cores > 0)
      std::cerr << "note: " << ranks << " ranks on " << info.cores
                << " hardware threads: ranks beyond them share cores (the profile's notes say so)\n";
    plan = calib::make_plan(info, ops, vm.count("quick") > 0, ranks);
  }
  FarmTransport exchange(farm);  // outlives the fabric, which bootstraps over it
  std::unique_ptr<calib::Fabric> fabric;
  if (farm.distributed()) {
    // Rank 0's plan of the fabric's runs for every process: each call must be the same on all.
    std::string text = std::to_string(plan.warmups) + " " + std::to_string(plan.repeats) + " " +
                       std::to_string(plan.collective_in_place ? 1 : 0);
    for (double b : plan.collective_bytes) text += " " + std::to_string(static_cast<int64_t>(b));
    farm.broadcast(text, 0);
    std::istringstream in(text);
    int in_place = 1;
    in >> plan.warmups >> plan.repeats >> in_place;
    plan.collective_in_place = in_place != 0;
    plan.ops = ops;
    plan.collective_bytes.clear();
    for (double b = 0; in >> b;) plan.collective_bytes.push_back(b);
    std::string why;
    if (backend == "cpu") {
      fabric = make_mpi_fabric(farm, nodes, why);
    } else {
#ifdef ARLSIM_HAVE_CUDA_BACKEND
      fabric = calib::make_cuda_fabric(exchange, nodes, why);
#else
      why = "no CUDA backend in this build";
#endif
    }
    // Whether every process has its fabric: one that does not stops them all, saying why.
    if (const std::string failed = calib::first_failure(exchange, fabric ? std::string() : why); !failed.empty()) {
      if (root) std::cerr << "arlsim calibrate: " << failed << "\n";
      return kExitBadInput;
    }
  }
  calib::Results results;
  if (root) {
    std::cerr << "calibrating " << device->info().name << " (backend " << backend << (plan.quick ? ", quick" : "") << ")\n";
    const bool terminal = isatty(fileno(stderr)) != 0;
    results = calib::measure(*device, plan, terminal ? calib::Progress(draw_progress) : calib::Progress());
  }
  if (fabric) {
    // The others wait for rank 0's sweep (its GPU collectives need the other GPUs to run no
    // kernels; Open MPI yields the core while a process waits), then all measure the
    // collectives among them.
    std::string go;
    farm.broadcast(go, 0);
    if (root)
      std::cerr << "collectives among " << fabric->ranks() << " processes on " << fabric->nodes() << " machines through "
                << fabric->link() << "\n";
    calib::measure_fabric(*fabric, plan, results);
    results.nic = nic;
  }
  if (!root) return kExitOk;
  for (const auto& e : results.excluded) std::cerr << "excluded (failed its check): " << e << "\n";
  std::string command = "arlsim calibrate";
  for (const auto& a : args) command += " " + a;
  if (name.empty()) {
    name = out.substr(out.find_last_of('/') == std::string::npos ? 0 : out.find_last_of('/') + 1);
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.resize(name.size() - 5);
  }
  const std::string text = calib::profile_json(results, {name, command, today()});
  // What is written must be a profile the rest of arlsim reads: checked before it replaces anything.
  std::string unusable;
  const auto check = [&](const std::string& written) {
    input::Diagnostics diag;
    if (input::check_document(written, input::SpecKind::gpu, {}, diag)) return std::string();
    unusable = input::format_all(diag);
    return std::string("the measurements make no usable profile");
  };
  if (const std::string problem = calib::write_atomically(out, text, check); !problem.empty()) {
    std::cerr << "arlsim calibrate: " << problem << (unusable.empty() ? "" : ":\n" + unusable) << "\n";
    return kExitBadInput;
  }
  const auto profile = load_profile(out);
  if (!profile) return kExitInternal;
  std::printf("wrote %s in %.1f s: peak %s %s, memory %s, launch %s, %zu GEMM points, %zu memory points, %zu excluded\n",
              out.c_str(), results.seconds, results.info.gemm_dtype.c_str(),
              number(profile->peak(results.info.gemm_dtype == "fp32" ? input::Dtype::fp32 : input::Dtype::bf16) / 1e9, "GFLOP/s").c_str(),
              number(profile->memory_bandwidth_bytes_per_s / 1e9, "GB/s").c_str(),
              number(profile->kernel_launch_overhead.seconds() * 1e6, "us").c_str(), results.gemm.size(),
              results.memory.size(), results.excluded.size());
  return kExitOk;
}

}  // namespace arlsim::app
