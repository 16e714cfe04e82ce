// Routing policies: which engine serves a trajectory's next turn. Policies are registered by
// name with a one-line description (`arlsim list policies`); an unknown name is an error that
// lists the valid ones.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/input/policy.h"

namespace arlsim::rl {

// What a policy may look at: read-only load of each engine and the request's facts.
struct EngineLoad {
  int64_t requests = 0;            // running + waiting
  int64_t outstanding_tokens = 0;  // tokens still to prefill or generate
};

struct RouteRequest {
  int64_t trajectory = 0;
  int turn = 0;
  int64_t previous_engine = -1;   // the engine of its previous turn, -1 for the first
  int64_t predicted_tokens = 0;   // from the previous step's trajectories of the same prompt; 0 unknown
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual int64_t route(const RouteRequest& r, const std::vector<EngineLoad>& engines) = 0;
  // Whether route() reads the loads for this request (they cost a pass over the engines).
  virtual bool uses_load(const RouteRequest&) const { return true; }
};

struct RoutingInfo {
  std::string_view name;
  std::string_view description;
};

const std::vector<RoutingInfo>& routing_policies();
// The tool-scheduling policies and dispatch modes (RoutingInfo's shape: a name and what it does).
const std::vector<RoutingInfo>& tool_policies();
const std::vector<RoutingInfo>& dispatch_modes();
std::string_view routing_name(input::Routing r);
// nullptr for an unknown name.
std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name);

}  // namespace arlsim::rl
