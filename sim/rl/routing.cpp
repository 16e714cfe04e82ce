#include "sim/rl/routing.h"

#include <algorithm>

namespace arlsim::rl {

namespace {

class RoundRobin final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest&, const EngineLoads& engines) override {
    return next_++ % static_cast<int64_t>(engines.size());
  }
  bool uses_load(const RouteRequest&) const override { return false; }

 private:
  int64_t next_ = 0;
};

class LeastLoaded final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest&, const EngineLoads& engines) override {
    return static_cast<int64_t>(engines.min_index());
  }
};

class Sticky final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest& r, const EngineLoads& engines) override {
    return r.previous_engine >= 0 ? r.previous_engine : static_cast<int64_t>(engines.min_index());
  }
  bool uses_load(const RouteRequest& r) const override { return r.previous_engine < 0; }
};

// HistoPipe-like: a trajectory's first turn goes where the predicted work (its predicted length
// added to each engine's predicted backlog) finishes earliest — longest trajectories are routed
// first by the caller — and later turns stick to it.
class LengthAware final : public RoutingPolicy {
 public:
  int64_t route(const RouteRequest& r, const EngineLoads& engines) override {
    if (r.previous_engine >= 0) return r.previous_engine;
    if (r.predicted_tokens <= 0) return static_cast<int64_t>(engines.min_index());
    sized(engines);
    const size_t best = predicted_.min_index();
    add(best, r.predicted_tokens);
    return static_cast<int64_t>(best);
  }
  bool uses_load(const RouteRequest& r) const override { return r.previous_engine < 0 && r.predicted_tokens <= 0; }
  bool uses_prediction(const RouteRequest& r) const override { return r.previous_engine < 0; }
  void placed(const RouteRequest& r, int64_t engine, const EngineLoads& engines) override {
    sized(engines);
    if (r.predicted_tokens > 0 && engine >= 0 && static_cast<size_t>(engine) < predicted_.size())
      add(static_cast<size_t>(engine), r.predicted_tokens);
  }

 private:
  void sized(const EngineLoads& engines) {
    if (predicted_.size() != engines.size()) predicted_.reset(engines.size(), 0);
  }
  void add(size_t engine, int64_t tokens) { predicted_.set(engine, predicted_[engine] + tokens); }
  core::IndexedMin<int64_t> predicted_;  // each engine's predicted backlog
};

}  // namespace

std::unique_ptr<RoutingPolicy> make_routing_policy(input::Routing r) {
  switch (r) {
    case input::Routing::round_robin: return std::make_unique<RoundRobin>();
    case input::Routing::least_loaded: return std::make_unique<LeastLoaded>();
    case input::Routing::sticky: return std::make_unique<Sticky>();
    case input::Routing::length_aware: return std::make_unique<LengthAware>();
  }
  ARLSIM_ASSERT(false && "every routing policy has a maker");
  return nullptr;
}

}  // namespace arlsim::rl
