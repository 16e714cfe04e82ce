// The discrete-event core: a queue ordered by (time, phase, sequence) and the loop that runs it.
//
// Same-time events run in a fixed, tested order — first by phase (a small integer the caller
// picks: e.g. completions before new decisions), then by the order they were scheduled — so runs
// are bit-for-bit reproducible (SimGrid and SST-core do the same; Vidur's silent fallback to
// creation order is the bug this avoids). The loop checks that time never goes backwards.
// Handlers are objects implementing EventHandler; an event carries one 64-bit payload, so the hot
// path allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/assert.h"
#include "sim/core/time.h"

namespace arlsim::core {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(uint64_t payload) = 0;
  // A hint that on_event(payload) comes soon (the event is next in line): a handler whose state
  // is too large for the cache may start loading what that event will read, so that the miss
  // overlaps the work in between. It must change nothing.
  virtual void prefetch(uint64_t /*payload*/) const {}
};

struct Event {
  SimTime time;
  uint64_t order = 0;  // phase in the top 16 bits, the scheduling sequence below: one comparison
  EventHandler* handler = nullptr;
  uint64_t payload = 0;

  int32_t phase() const { return static_cast<int32_t>(order >> kSequenceBits); }
  uint64_t sequence() const { return order & ((uint64_t{1} << kSequenceBits) - 1); }
  static constexpr int kSequenceBits = 48;
};

// Min-heap on (time, phase, sequence), with timers beside it.
//
// A timer is an event slot that holds at most one pending event: setting it again replaces the
// event it held, as an engine whose iteration is cut short moves its completion earlier. Plain
// events would leave the replaced one behind, to be popped and ignored; a timer moves its entry
// in a second, indexed heap instead. Both heaps draw on one sequence counter, so events run in
// the same order whichever way they were scheduled.
class EventQueue {
 public:
  using TimerId = int32_t;

  void push(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload);
  bool empty() const { return heap_.empty() && timer_heap_.empty(); }
  size_t size() const { return heap_.size() + timer_heap_.size(); }
  const Event& top() const {
    return timer_first() ? timer_events_[static_cast<size_t>(timer_heap_.front().id)] : heap_.front();
  }
  Event pop();
  void reserve(size_t n) { heap_.reserve(n); }

  TimerId add_timer();
  // Schedules the timer's event, replacing the one it had pending.
  void set_timer(TimerId id, SimTime time, int32_t phase, EventHandler* handler, uint64_t payload);
  bool timer_pending(TimerId id) const {
    ARLSIM_ASSERT(id >= 0 && static_cast<size_t>(id) < position_.size());
    return position_[static_cast<size_t>(id)] >= 0;
  }

 private:
  static bool before(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  }
  uint64_t next_order(int32_t phase);
  bool timer_first() const {
    return !timer_heap_.empty() &&
           (heap_.empty() || before(timer_events_[static_cast<size_t>(timer_heap_.front().id)], heap_.front()));
  }
  // The indexed heap of pending timers: each entry knows its timer, each timer its position. Its
  // entries hold only what orders them, the events wait by timer in timer_events_; four children
  // a node: engines' timers are set and popped at almost every event, and a shallower heap of
  // smaller entries moves less.
  struct PendingTimer {
    SimTime time;
    uint64_t order = 0;
    TimerId id = 0;
    bool operator<(const PendingTimer& o) const { return time != o.time ? time < o.time : order < o.order; }
  };
  static constexpr size_t kArity = 4;
  // Puts a timer's entry at position i and restores the heap order (the entry made here, from
  // scalars: a small struct passed in memory is stored piecewise and loaded whole, which stalls).
  void timer_place(size_t i, SimTime time, uint64_t order, TimerId id);
  void timer_move(size_t to, const PendingTimer& t) {
    position_[static_cast<size_t>(t.id)] = static_cast<int32_t>(to);
    timer_heap_[to] = t;
  }

  std::vector<Event> heap_;
  std::vector<int32_t> position_;  // per timer: in timer_heap_; -1: nothing pending
  std::vector<Event> timer_events_;  // per timer: its pending event
  std::vector<PendingTimer> timer_heap_;
  uint64_t next_sequence_ = 0;
};

class Simulation {
 public:
  SimTime now() const { return now_; }
  // Schedules at an absolute time, which must not be in the past.
  void at(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload = 0);
  void after(SimTime delay, int32_t phase, EventHandler* handler, uint64_t payload = 0) {
    at(now_ + delay, phase, handler, payload);
  }
  // Timers (see EventQueue): an event that setting again moves rather than duplicates.
  using TimerId = EventQueue::TimerId;
  TimerId add_timer() { return queue_.add_timer(); }
  void set_timer(TimerId id, SimTime time, int32_t phase, EventHandler* handler, uint64_t payload = 0);
  bool timer_pending(TimerId id) const { return queue_.timer_pending(id); }
  // Runs events until the queue is empty or the next one is after `until`; returns how many ran.
  uint64_t run(SimTime until = SimTime::max());
  uint64_t events_run() const { return events_run_; }
  // Ends run() after the event being handled; the events still queued stay unrun.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }
  size_t pending() const { return queue_.size(); }

 private:
  EventQueue queue_;
  SimTime now_;
  uint64_t events_run_ = 0;
  bool stopped_ = false;
};

}  // namespace arlsim::core
