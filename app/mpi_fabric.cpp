#include "app/mpi_fabric.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <limits>
#include <optional>
#include <vector>

#ifdef ARLSIM_WITH_MPI_FARM
#include <mpi.h>
#endif

namespace arlsim::app {

namespace {

std::string node_name() {
  if (const char* name = std::getenv("ARLSIM_NODE_NAME"); name && *name) return name;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

}  // namespace

#ifdef ARLSIM_WITH_MPI_FARM

namespace {

// Rank r's element i: small integers, so that every sum is exact in float.
float value(int64_t rank, size_t i) { return static_cast<float>(rank + 1 + static_cast<int64_t>(i % 5)); }

class MpiFabric final : public calib::Fabric {
 public:
  MpiFabric(int rank, int size, int64_t nodes) : rank_(rank), size_(size), nodes_(nodes) {}
  int64_t ranks() const override { return size_; }
  int64_t nodes() const override { return nodes_; }
  std::string link() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<size_t>(std::max(0, length)));
    if (const auto end = text.find_first_of(",\n"); end != std::string::npos) text.resize(end);
    return "MPI collectives (" + text + ")";
  }
  std::string problem() const override { return problem_; }

  std::optional<double> collective(model::CollectiveOp op, double bytes, double* used, bool in_place) override {
    using Op = model::CollectiveOp;
    const auto n = static_cast<int64_t>(size_);
    // Floats per buffer: the whole buffer as nccl-tests counts it, split evenly where it is split.
    auto floats = static_cast<int64_t>(std::ceil(std::max(bytes, 4.0) / 4.0));
    const bool split = op == Op::all_gather || op == Op::reduce_scatter || op == Op::all_to_all;
    if (split) floats = (floats + n - 1) / n * n;
    *used = 4.0 * static_cast<double>(floats);
    const auto total = static_cast<size_t>(floats);
    const size_t chunk = split ? total / static_cast<size_t>(n) : total;
    if (chunk > static_cast<size_t>(std::numeric_limits<int>::max())) {
      problem_ = "a buffer of " + std::to_string(chunk) + " floats is more than one MPI call moves";
      return std::nullopt;
    }
    std::vector<float> in, out;
    // The inputs, as each op takes them (in place: in the output buffer, where NCCL puts them).
    const auto fill = [&] {
      switch (op) {
        case Op::all_reduce:
        case Op::reduce_scatter:
          (in_place ? out : in).resize(total);
          for (size_t i = 0; i < total; ++i) (in_place ? out : in)[i] = value(rank_, i);
          if (!in_place) out.assign(op == Op::all_reduce ? total : chunk, 0.0f);
          break;
        case Op::all_gather:
          out.assign(total, 0.0f);
          if (!in_place) in.resize(chunk);
          for (size_t i = 0; i < chunk; ++i)
            (in_place ? out[static_cast<size_t>(rank_) * chunk + i] : in[i]) = value(rank_, static_cast<size_t>(rank_) * chunk + i);
          break;
        case Op::all_to_all:
        case Op::send_recv:
          in.resize(total);
          out.assign(total, 0.0f);
          for (size_t i = 0; i < total; ++i) in[i] = value(rank_, i);
          break;
        case Op::broadcast:
          out.assign(total, 0.0f);
          if (rank_ == 0)
            for (size_t i = 0; i < total; ++i) out[i] = value(0, i);
          break;
      }
    };
    const int count = static_cast<int>(chunk);
    const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
    const auto run = [&] {
      switch (op) {
        case Op::all_reduce:
          MPI_Allreduce(in_place ? MPI_IN_PLACE : in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          break;
        case Op::all_gather:
          MPI_Allgather(in_place ? MPI_IN_PLACE : in.data(), count, MPI_FLOAT, out.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
          break;
        case Op::reduce_scatter:
          MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          break;
        case Op::all_to_all:
          MPI_Alltoall(in.data(), count, MPI_FLOAT, out.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
          break;
        case Op::broadcast:
          MPI_Bcast(out.data(), count, MPI_FLOAT, 0, MPI_COMM_WORLD);
          break;
        case Op::send_recv:
          // nccl-tests' sendrecv: each rank sends to the next and receives from the previous.
          MPI_Sendrecv(in.data(), count, MPI_FLOAT, next, 0, out.data(), count, MPI_FLOAT, previous, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE);
          break;
      }
    };
    // As nccl-tests: many operations back to back after a barrier, timed together, the mean taken
    // (in place they keep working on what the last one left); then one on fresh inputs, checked.
    fill();
    const int iterations = bytes <= (1 << 20) ? 20 : 5;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int it = 0; it < iterations; ++it) run();
    double took = (MPI_Wtime() - start) / iterations;
    fill();
    run();
    // Every rank checks what it received against what the others sent.
    const double ranks_sum = static_cast<double>(n * (n + 1) / 2);
    size_t bad = total;
    const auto expect = [&](size_t i, float want) {
      if (bad == total && out[i] != want) bad = i;
    };
    switch (op) {
      case Op::all_reduce:
        for (size_t i = 0; i < total; ++i)
          expect(i, static_cast<float>(ranks_sum + static_cast<double>(n) * static_cast<double>(i % 5)));
        break;
      case Op::reduce_scatter:
        for (size_t j = 0; j < chunk; ++j) {
          const size_t i = static_cast<size_t>(rank_) * chunk + j;
          expect(j, static_cast<float>(ranks_sum + static_cast<double>(n) * static_cast<double>(i % 5)));
        }
        break;
      case Op::all_gather:
        for (size_t i = 0; i < total; ++i) expect(i, value(static_cast<int64_t>(i / chunk), i));
        break;
      case Op::all_to_all:
        // Block s of this rank's output is block `rank` of rank s's input.
        for (size_t i = 0; i < total; ++i)
          expect(i, value(static_cast<int64_t>(i / chunk), static_cast<size_t>(rank_) * chunk + i % chunk));
        break;
      case Op::broadcast:
        for (size_t i = 0; i < total; ++i) expect(i, value(0, i));
        break;
      case Op::send_recv:
        for (size_t i = 0; i < total; ++i) expect(i, value(previous, i));
        break;
    }
    // The slowest rank's time, and whether any rank's check failed (the lowest such rank).
    MPI_Allreduce(MPI_IN_PLACE, &took, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int failed = bad < total ? rank_ : size_;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (failed < size_) {
      problem_ = "rank " + std::to_string(failed) + " received wrong data";
      return std::nullopt;
    }
    return took;
  }

 private:
  int rank_, size_;
  int64_t nodes_;
  std::string problem_;
};

}  // namespace

std::unique_ptr<calib::Fabric> make_mpi_fabric(TaskFarm& farm, int64_t nodes, std::string& problem) {
  if (!farm.distributed()) {
    problem = "not started by mpirun with other processes";
    return nullptr;
  }
  return std::make_unique<MpiFabric>(farm.rank(), farm.size(), nodes);
}

#else

std::unique_ptr<calib::Fabric> make_mpi_fabric(TaskFarm&, int64_t, std::string& problem) {
  problem = "this build has no MPI (Open MPI was not found at configure time)";
  return nullptr;
}

#endif

int64_t count_machines(TaskFarm& farm, std::string& problem) {
  // Each process's machine name, gathered; as many processes on each.
  std::map<std::string, int64_t> per_node;
  for (const auto& name : farm.all_gather(node_name())) ++per_node[name];
  const int64_t first = per_node.begin()->second;
  for (const auto& [name, count] : per_node)
    if (count != first) {
      problem = "the machines run different numbers of processes (" + per_node.begin()->first + ": " +
                std::to_string(first) + ", " + name + ": " + std::to_string(count) + "); start as many on each";
      return 0;
    }
  return static_cast<int64_t>(per_node.size());
}

}  // namespace arlsim::app
