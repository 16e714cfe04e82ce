// The processes of an mpirun as calibration's fabric (calib::Fabric) on CPUs: MPI's own
// collectives (Open MPI's algorithms over its transports: shared memory within a machine, the
// network between machines) among all of them on float buffers, one process a device, every
// result checked at every process. A machine is a host name, or the
// ARLSIM_NODE_NAME a process is started with, for processes whose host names do not tell their
// machines apart (containers) or, in tests, to make processes on one machine count as several.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "app/task_farm.h"
#include "calib/harness/harness.h"

namespace arlsim::app {

// The machines the processes of the mpirun run on, every process calling it: 0, with `problem`
// saying why, when they do not run as many processes each.
int64_t count_machines(TaskFarm& farm, std::string& problem);

// MPI's collectives among the processes on `nodes` machines; null, with `problem` saying why,
// without MPI (not under mpirun, or a build without it).
std::unique_ptr<calib::Fabric> make_mpi_fabric(TaskFarm& farm, int64_t nodes, std::string& problem);

}  // namespace arlsim::app
