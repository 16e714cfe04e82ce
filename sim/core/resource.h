// Resources that activities acquire: a counted pool of interchangeable units (tool sandboxes,
// API slots) with elastic capacity, and an exclusive group (a set of GPUs one stage holds at a
// time). Acquisition is asynchronous — a grant arrives as an event when a unit is free (or as a
// call, for a pool that grants at once) — and ownership is a move-only Lease that gives the unit
// back when released or destroyed.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "sim/core/event_queue.h"

namespace arlsim::core {

class CountedPool;

class Lease {
 public:
  Lease() = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Lease(Lease&& o) noexcept : pool_(o.pool_) { o.pool_ = nullptr; }
  Lease& operator=(Lease&& o) noexcept;
  ~Lease() { release(); }
  bool held() const { return pool_ != nullptr; }
  void release();

 private:
  friend class CountedPool;
  explicit Lease(CountedPool* pool) : pool_(pool) {}
  CountedPool* pool_ = nullptr;
};

struct PoolStats {
  uint64_t grants = 0;
  double busy_unit_seconds = 0;       // integral of units held over time
  double provisioned_unit_seconds = 0;  // integral of units provisioned (busy or idle)
  int64_t peak_in_use = 0;
  int64_t peak_provisioned = 0;
  uint64_t cold_starts = 0;
};

// Units are granted first come, first served. When none is free and fewer than `max_units` are
// provisioned, one more is brought up after `cold_start`; with `elastic`, idle units beyond
// `min_units` are given back as soon as they free up.
class CountedPool : public EventHandler {
 public:
  struct Options {
    std::string name;
    int64_t min_units = 0;  // provisioned from the start
    int64_t max_units = 0;
    SimTime cold_start;
    bool elastic = false;
    // Grants call the grantee at once (from within request(), a release or a cold start's end)
    // instead of as an event at the same time: for a grantee that may be called from inside its
    // own handlers, a busy pool's every release then costs no event of its own.
    bool grant_at_once = false;
  };
  CountedPool(Simulation& sim, Options options);

  // Asks for one unit; `grantee` gets on_event(payload) when it is granted, and then takes the
  // Lease with take_lease().
  void request(EventHandler* grantee, uint64_t payload);
  // Takes a free unit at once when one is free and nobody waits (no event needed); else false.
  bool try_acquire(Lease& out);
  Lease take_lease();
  int64_t in_use() const { return in_use_; }
  int64_t provisioned() const { return provisioned_; }
  size_t waiting() const { return waiters_.size(); }
  const PoolStats& stats();  // accounts up to now
  const Options& options() const { return options_; }

  void on_event(uint64_t payload) override;  // a cold start finished

 private:
  friend class Lease;
  void give_back();
  void account();
  void grant(EventHandler* grantee, uint64_t payload);

  Simulation& sim_;
  Options options_;
  int64_t provisioned_ = 0;
  int64_t starting_ = 0;
  int64_t in_use_ = 0;
  int64_t ready_leases_ = 0;  // granted, not yet taken
  std::deque<std::pair<EventHandler*, uint64_t>> waiters_;
  PoolStats stats_;
  SimTime last_account_;
};

}  // namespace arlsim::core
