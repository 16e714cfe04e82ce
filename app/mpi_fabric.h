// The processes of an mpirun as calibration's fabric (calib::Fabric) on CPUs: MPI's own
// collectives (Open MPI's algorithms over its transports: shared memory within a machine, the
// network between machines) among all of them on float buffers, one process a device, every
// result checked at every process. A machine is a host name (MPI's processor name), or the
// ARLSIM_NODE_NAME a process is started with, for processes whose host names do not tell their
// machines apart (containers) or, in tests, to make processes on one machine count as several.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/task_farm.h"
#include "calib/harness/harness.h"

namespace arlsim::app {

// The machines the processes of the mpirun run on, every process calling it: 0, with `problem`
// saying why, when they do not run as many processes each.
int64_t count_machines(TaskFarm& farm, std::string& problem);

// MPI's collectives among the processes on `nodes` machines; null, with `problem` saying why,
// without MPI (not under mpirun, or a build without it).
std::unique_ptr<calib::Fabric> make_mpi_fabric(TaskFarm& farm, int64_t nodes, std::string& problem);

// The processes of the mpirun as what a GPU fabric bootstraps over.
class FarmExchange final : public calib::Exchange {
 public:
  explicit FarmExchange(TaskFarm& farm) : farm_(farm) {}
  int rank() const override { return farm_.rank(); }
  int size() const override { return farm_.size(); }
  int local_rank() const override { return farm_.local_rank(); }
  void broadcast(std::string& bytes, int root) override { farm_.broadcast(bytes, root); }
  std::vector<std::string> all_gather(const std::string& mine) override { return farm_.all_gather(mine); }

 private:
  TaskFarm& farm_;
};

}  // namespace arlsim::app
