#include "sim/rl/routing.h"

#include <algorithm>

namespace arlsim::rl {

namespace {

int64_t least_loaded(const std::vector<EngineLoad>& engines) {
  // Fewest requests in flight (the least-outstanding-requests rule of serving routers), then the
  // fewest tokens waiting for prefill, then the lowest index: deterministic.
  int64_t best = 0;
  for (size_t e = 1; e < engines.size(); ++e) {
    const auto& a = engines[e];
    const auto& b = engines[static_cast<size_t>(best)];
    if (a.requests < b.requests || (a.requests == b.requests && a.pending_prefill_tokens < b.pending_prefill_tokens))
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

int64_t least_loaded_engine(const std::vector<EngineLoad>& engines) { return least_loaded(engines); }

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
