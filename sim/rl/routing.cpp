#include "sim/rl/routing.h"

#include <algorithm>

namespace arlsim::rl {

namespace {

int64_t least_loaded(const std::vector<EngineLoad>& engines) {
  // Fewest outstanding tokens, then fewest requests, then the lowest index: deterministic.
  int64_t best = 0;
  for (size_t e = 1; e < engines.size(); ++e) {
    const auto& a = engines[e];
    const auto& b = engines[static_cast<size_t>(best)];
    if (a.outstanding_tokens < b.outstanding_tokens ||
        (a.outstanding_tokens == b.outstanding_tokens && a.requests < b.requests))
      best = static_cast<int64_t>(e);
  }
  return best;
}

class RoundRobin final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest&, const std::vector<EngineLoad>& engines) override {
    return next_++ % static_cast<int64_t>(engines.size());
  }
  bool uses_load(const RouteRequest&) const override { return false; }

 private:
  int64_t next_ = 0;
};

class LeastLoaded final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest&, const std::vector<EngineLoad>& engines) override { return least_loaded(engines); }
};

class Sticky final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest& r, const std::vector<EngineLoad>& engines) override {
    return r.previous_engine >= 0 ? r.previous_engine : least_loaded(engines);
  }
  bool uses_load(const RouteRequest& r) const override { return r.previous_engine < 0; }
};

// HistoPipe-like: a trajectory's first turn goes where the predicted work (its predicted length
// added to each engine's predicted backlog) finishes earliest — longest trajectories are routed
// first by the caller — and later turns stick to it.
class LengthAware final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest& r, const std::vector<EngineLoad>& engines) override {
    if (r.previous_engine >= 0) return r.previous_engine;
    if (predicted_.size() != engines.size()) predicted_.assign(engines.size(), 0);
    if (r.predicted_tokens <= 0) return least_loaded(engines);
    const auto best = std::min_element(predicted_.begin(), predicted_.end()) - predicted_.begin();
    predicted_[static_cast<size_t>(best)] += r.predicted_tokens;
    return best;
  }
  bool uses_load(const RouteRequest& r) const override { return r.previous_engine < 0 && r.predicted_tokens <= 0; }

 private:
  std::vector<int64_t> predicted_;
};

}  // namespace

const std::vector<RoutingInfo>& routing_policies() {
  static const std::vector<RoutingInfo> all{
      {"round-robin", "each request to the next engine in turn"},
      {"least-loaded", "each request to the engine with the fewest outstanding tokens"},
      {"sticky", "a trajectory's first turn to the least-loaded engine, its later turns to the same one"},
      {"length-aware", "longest predicted trajectories first, balanced by predicted tokens, then sticky (HistoPipe)"},
  };
  return all;
}

const std::vector<RoutingInfo>& tool_policies() {
  static const std::vector<RoutingInfo> all{
      {"static", "a trajectory binds one sandbox from its first tool call to its end"},
      {"pooled", "each action takes a unit from an elastic pool only for its own duration (ARL-Tangram)"},
  };
  return all;
}

const std::vector<RoutingInfo>& dispatch_modes() {
  static const std::vector<RoutingInfo> all{
      {"centralized", "a single controller gathers every tensor, computes advantages, scatters them"},
      {"decentralized", "each tensor goes straight from its producer to its consumer (EARL)"},
      {"transfer-dock", "per-node warehouses and a metadata controller (MindSpeed RL)"},
  };
  return all;
}

std::string_view routing_name(input::Routing r) {
  switch (r) {
    case input::Routing::round_robin: return "round-robin";
    case input::Routing::least_loaded: return "least-loaded";
    case input::Routing::sticky: return "sticky";
    case input::Routing::length_aware: return "length-aware";
  }
  return "least-loaded";
}

std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name) {
  if (name == "round-robin") return std::make_unique<RoundRobin>();
  if (name == "least-loaded") return std::make_unique<LeastLoaded>();
  if (name == "sticky") return std::make_unique<Sticky>();
  if (name == "length-aware") return std::make_unique<LengthAware>();
  return nullptr;
}

}  // namespace arlsim::rl
