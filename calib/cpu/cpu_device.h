// The CPU backend of `arlsim calibrate`: one core as the device. fp32 GEMMs through Eigen,
// STREAM-style kernels over arrays, and the launch of a task on a worker thread. Ranks beyond the
// core count (for the collectives among threads a later backend adds) would share cores; the
// measurements here use one thread, so they do not depend on how many cores the machine has.
#pragma once

#include <memory>

#include "calib/harness/harness.h"

namespace arlsim::calib {

std::unique_ptr<Device> make_cpu_device();

}  // namespace arlsim::calib
