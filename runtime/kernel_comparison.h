// What `arlsim validate` compares: a prediction against a measurement, and every kernel a run
// executed as its device timed it beside the cost model's price of it alone, by stage, kind of
// kernel and shape (kernels.csv).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/backend.h"
#include "runtime/program.h"
#include "sim/graph/stage.h"
#include "sim/input/scenario.h"
#include "sim/model/cost_model.h"

namespace arlsim::runtime {

struct Comparison {
  std::string name;
  double predicted_s = 0, measured_s = 0;
  // Signed, as a fraction of the measured value: (predicted - measured) / measured.
  double error() const { return measured_s > 0 ? (predicted_s - measured_s) / measured_s : 0.0; }
};

// The kernels of one stage of one kind (and, in the per-shape rows, one shape), as executed: how
// many ran, what they took, and what the cost model prices each of them at alone (predict_kernel).
// The difference between the stages' and these sums is the composition's: how the step graph, the
// engine's schedule and the host's work between kernels are modelled.
struct KernelComparison : Comparison {
  std::string stage, kind, shape;  // shape: "" in the per-kind rows
  int64_t count = 0;
};

// The cost model's time of one kernel of a program alone (the operation the kernel executes,
// model/cost_model.h): a GEMM, an attention pass (a backward one: forward and backward less the
// forward), a layer's decode attention, streaming work in its launches, a collective over its
// group (on nodes of `gpus_per_node`), a copy over the host link, a wait's own seconds.
double predict_kernel(const Kernel& k, const Program& p, const model::CostModel& cost, int64_t gpus_per_node);
// What names a kernel's shape in the per-shape rows ("8192 x 1024 x 1024"; a collective's with
// the size of its group in `p`).
std::string kernel_shape(const Kernel& k, const Program& p);
// Rows as CSV (stage,kind,shape,count,predicted_s,measured_s,error).
std::string kernels_csv(const std::vector<KernelComparison>& rows);

// Every kernel of the runs added to it, measured and priced alone, summed by stage, kind and shape;
// the engines' kernels (the rollout's) priced in the serving dtype, as the inference model prices
// them, the others in the training dtype.
class KernelTally {
 public:
  explicit KernelTally(const input::ScenarioSpec& s);
  // One run of `p`: each device's kernel times (RunStats::kernel_seconds), counted under the stage
  // `stage_of` gives its device. A device that reports another number of times than its program
  // has kernels is a backend's fault (std::runtime_error).
  void add(const Program& p, const RunStats& r, const std::function<graph::Stage(int64_t device)>& stage_of);
  std::vector<KernelComparison> by_kind() const;   // per stage and kind, in stage order
  std::vector<KernelComparison> by_shape() const;  // per stage, kind and shape, largest |difference| first

 private:
  const input::ScenarioSpec& s_;
  model::AnalyticCostModel training_, serving_;
  std::map<std::tuple<graph::Stage, Kernel::Kind, std::string>, KernelComparison> shapes_;
};

}  // namespace arlsim::runtime
