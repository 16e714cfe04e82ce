// The event executor of a step graph: activities run on the event engine (core::EventQueue) when
// the activities they wait for are done AND the devices they hold are free — a block of devices
// is an exclusive resource, so activities of different stages and steps that need the same GPUs
// run one after another — and their network transfers share links max-min fairly with every
// other transfer in flight (a fluid model: rates are re-shared whenever a transfer starts or a
// flow finishes; model::max_min_fair_rates). Ready activities start in id order, so runs are
// deterministic. Times are SimTime (integer nanoseconds); records carry them in seconds, as the
// analytic executor's do.
#pragma once

#include <vector>

#include "sim/exec/analytic.h"
#include "sim/graph/step_graph.h"

namespace arlsim::exec {

// Runs the whole graph (a later activity may start before an earlier one ends, so the graph is
// built first); one record per activity, in id order.
std::vector<ActivityRecord> run_events(const graph::StepGraph& g);

}  // namespace arlsim::exec
