// Routing policies: which engine serves a trajectory's next turn. Their names and descriptions are
// registered in input::routing_policies() (`arlsim list policies`); this module makes them.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/indexed_min.h"
#include "sim/input/policy.h"

namespace arlsim::rl {

// What a policy may look at: what a router in front of real engines knows of each — its requests
// in flight and the prompt and context tokens they still have to prefill — and the request's
// facts. Not how many tokens a request will generate: nobody knows that until it stops.
struct EngineLoad {
  int64_t requests = 0;                // running + waiting
  int64_t pending_prefill_tokens = 0;  // prompt and context tokens not yet prefilled

  // Lighter: fewer requests in flight (the least-outstanding-requests rule of serving routers),
  // then fewer tokens waiting for prefill.
  auto operator<=>(const EngineLoad&) const = default;
};

// Every engine's load, and the least-loaded engine (the lowest index among equals) at O(1); the
// caller sets the loads of the engines that changed.
using EngineLoads = core::IndexedMin<EngineLoad>;

struct RouteRequest {
  int64_t trajectory = 0;
  int turn = 0;
  int64_t previous_engine = -1;   // the engine of its previous turn, -1 for the first
  int64_t predicted_tokens = 0;   // from the previous step's trajectories of the same prompt; 0 unknown
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual int64_t route(const RouteRequest& r, const EngineLoads& engines) = 0;
  // Whether route() reads the loads for this request (the caller brings them up to date first).
  virtual bool uses_load(const RouteRequest&) const { return true; }
  // Whether route() reads the request's predicted_tokens (the caller looks the prediction up only
  // then: a million trajectories' predictions are a cache miss a turn).
  virtual bool uses_prediction(const RouteRequest&) const { return false; }
  // A request placed without route(): a turn that goes back to the engine holding its KV.
  virtual void placed(const RouteRequest&, int64_t /*engine*/, const EngineLoads& /*engines*/) {}
};

// The routing policy the registry (input::routing_policies()) names.
std::unique_ptr<RoutingPolicy> make_routing_policy(input::Routing r);

}  // namespace arlsim::rl
