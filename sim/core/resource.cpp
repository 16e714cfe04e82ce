#include "sim/core/resource.h"

#include <algorithm>

#include "sim/core/assert.h"

namespace arlsim::core {

namespace {
constexpr int32_t kGrantPhase = 0;
}

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = o.pool_;
    o.pool_ = nullptr;
  }
  return *this;
}

void Lease::release() {
  if (pool_) {
    CountedPool* p = pool_;
    pool_ = nullptr;
    p->give_back();
  }
}

CountedPool::CountedPool(Simulation& sim, Options options) : sim_(sim), options_(std::move(options)) {
  ARLSIM_ASSERT(options_.min_units >= 0 && options_.max_units >= options_.min_units);
  provisioned_ = options_.min_units;
  stats_.peak_provisioned = provisioned_;
  last_account_ = sim_.now();
}

void CountedPool::account() {
  const double dt = (sim_.now() - last_account_).seconds();
  stats_.busy_unit_seconds += dt * static_cast<double>(in_use_);
  stats_.provisioned_unit_seconds += dt * static_cast<double>(provisioned_ + starting_);
  last_account_ = sim_.now();
}

const PoolStats& CountedPool::stats() {
  account();
  return stats_;
}

void CountedPool::grant(EventHandler* grantee, uint64_t payload) {
  account();
  ++in_use_;
  ++ready_leases_;
  ++stats_.grants;
  stats_.peak_in_use = std::max(stats_.peak_in_use, in_use_);
  // The next grant goes to the front waiter: a long queue's waiters are cold by their turn.
  if (!waiters_.empty()) waiters_.front().first->prefetch(waiters_.front().second);
  if (options_.grant_at_once) grantee->on_event(payload);
  else sim_.at(sim_.now(), kGrantPhase, grantee, payload);
}

void CountedPool::request(EventHandler* grantee, uint64_t payload) {
  if (in_use_ < provisioned_ && waiters_.empty()) {
    grant(grantee, payload);
    return;
  }
  waiters_.emplace_back(grantee, payload);
  if (provisioned_ + starting_ < options_.max_units &&
      static_cast<int64_t>(waiters_.size()) > starting_) {
    account();
    ++starting_;
    ++stats_.cold_starts;
    sim_.after(options_.cold_start, kGrantPhase, this, 0);
  }
}

bool CountedPool::try_acquire(Lease& out) {
  if (in_use_ >= provisioned_ || !waiters_.empty()) return false;
  account();
  ++in_use_;
  ++stats_.grants;
  stats_.peak_in_use = std::max(stats_.peak_in_use, in_use_);
  out = Lease(this);
  return true;
}

Lease CountedPool::take_lease() {
  ARLSIM_ASSERT(ready_leases_ > 0);
  --ready_leases_;
  return Lease(this);
}

void CountedPool::on_event(uint64_t) {
  account();
  --starting_;
  ++provisioned_;
  stats_.peak_provisioned = std::max(stats_.peak_provisioned, provisioned_);
  if (!waiters_.empty()) {
    auto [g, p] = waiters_.front();
    waiters_.pop_front();
    grant(g, p);
  } else if (options_.elastic && provisioned_ > options_.min_units) {
    --provisioned_;
  }
}

void CountedPool::give_back() {
  account();
  --in_use_;
  if (!waiters_.empty()) {
    auto [g, p] = waiters_.front();
    waiters_.pop_front();
    grant(g, p);
  } else if (options_.elastic && provisioned_ > options_.min_units) {
    --provisioned_;  // scale in: the idle unit is given back
  }
}

}  // namespace arlsim::core
