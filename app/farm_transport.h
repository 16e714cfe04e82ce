// The processes of an mpirun (app/task_farm.h) as the runtime's transport (runtime/backend.h) and
// calibration's exchange (calib/harness/harness.h): NCCL's bootstrap, the gathered figures of
// `validate --backend cuda` and each GPU fabric's times and checks travel over it.
#pragma once

#include <string>
#include <vector>

#include "app/task_farm.h"
#include "calib/harness/harness.h"
#include "runtime/backend.h"

namespace arlsim::app {

class FarmTransport final : public runtime::Transport, public calib::Exchange {
 public:
  explicit FarmTransport(TaskFarm& farm) : farm_(farm) {}
  int rank() const override { return farm_.rank(); }
  int size() const override { return farm_.size(); }
  int local_rank() const override { return farm_.local_rank(); }
  void broadcast(std::string& bytes, int root) override { farm_.broadcast(bytes, root); }
  std::vector<std::string> all_gather(const std::string& mine) override { return farm_.all_gather(mine); }
  [[noreturn]] void abort(const std::string& message) override { farm_.abort(message, 2); }

 private:
  TaskFarm& farm_;
};

}  // namespace arlsim::app
