#include "sim/core/event_queue.h"

#include <algorithm>

#include "sim/core/assert.h"

namespace arlsim::core {

void EventQueue::push(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  // Phases are small non-negative integers; 2^48 events would take years to schedule.
  ARLSIM_ASSERT(phase >= 0 && phase < (1 << 15) && next_sequence_ < (uint64_t{1} << Event::kSequenceBits));
  const uint64_t order = (static_cast<uint64_t>(phase) << Event::kSequenceBits) | next_sequence_++;
  heap_.push_back({time, order, handler, payload});
  std::push_heap(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
}

Event EventQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

void Simulation::at(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  ARLSIM_ASSERT(time >= now_);
  ARLSIM_ASSERT(handler != nullptr);
  queue_.push(time, phase, handler, payload);
}

uint64_t Simulation::run(SimTime until) {
  uint64_t ran = 0;
  while (!stopped_ && !queue_.empty() && queue_.top().time <= until) {
    const Event e = queue_.pop();
    ARLSIM_ASSERT(e.time >= now_);  // time never goes backwards
    now_ = e.time;
    e.handler->on_event(e.payload);
    ++ran;
  }
  events_run_ += ran;
  return ran;
}

}  // namespace arlsim::core
