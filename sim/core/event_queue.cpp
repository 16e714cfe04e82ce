#include "sim/core/event_queue.h"

#include <algorithm>

#include "sim/core/assert.h"

namespace arlsim::core {

uint64_t EventQueue::next_order(int32_t phase) {
  // Phases are small non-negative integers; 2^48 events would take years to schedule.
  ARLSIM_ASSERT(phase >= 0 && phase < (1 << 15) && next_sequence_ < (uint64_t{1} << Event::kSequenceBits));
  return (static_cast<uint64_t>(phase) << Event::kSequenceBits) | next_sequence_++;
}

void EventQueue::push(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  heap_.push_back({time, next_order(phase), handler, payload});
  std::push_heap(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
}

Event EventQueue::pop() {
  if (timer_first()) {
    const PendingTimer first = timer_heap_.front();
    position_[static_cast<size_t>(first.id)] = -1;
    const PendingTimer last = timer_heap_.back();
    timer_heap_.pop_back();
    if (!timer_heap_.empty()) timer_place(0, last.time, last.order, last.id);
    return timer_events_[static_cast<size_t>(first.id)];
  }
  std::pop_heap(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

EventQueue::TimerId EventQueue::add_timer() {
  position_.push_back(-1);
  timer_events_.emplace_back();
  return static_cast<TimerId>(position_.size() - 1);
}

void EventQueue::set_timer(TimerId id, SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  ARLSIM_ASSERT(id >= 0 && static_cast<size_t>(id) < position_.size());
  const uint64_t order = next_order(phase);
  timer_events_[static_cast<size_t>(id)] = {time, order, handler, payload};
  int32_t& position = position_[static_cast<size_t>(id)];
  if (position < 0) {
    position = static_cast<int32_t>(timer_heap_.size());
    timer_heap_.emplace_back();
  }
  timer_place(static_cast<size_t>(position), time, order, id);
}

void EventQueue::timer_place(size_t i, SimTime time, uint64_t order, TimerId id) {
  const PendingTimer t{time, order, id};
  // A hole at i moves up past later parents, or else down past earlier children; t fills it.
  while (i > 0 && t < timer_heap_[(i - 1) / kArity]) {
    timer_move(i, timer_heap_[(i - 1) / kArity]);
    i = (i - 1) / kArity;
  }
  const size_t n = timer_heap_.size();
  for (;;) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    size_t least = first;
    for (size_t c = first + 1; c < std::min(first + kArity, n); ++c)
      if (timer_heap_[c] < timer_heap_[least]) least = c;
    if (!(timer_heap_[least] < t)) break;
    timer_move(i, timer_heap_[least]);
    i = least;
  }
  timer_move(i, t);
}

void Simulation::at(SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  ARLSIM_ASSERT(time >= now_);
  ARLSIM_ASSERT(handler != nullptr);
  queue_.push(time, phase, handler, payload);
}

void Simulation::set_timer(TimerId id, SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  ARLSIM_ASSERT(time >= now_);
  ARLSIM_ASSERT(handler != nullptr);
  queue_.set_timer(id, time, phase, handler, payload);
}

uint64_t Simulation::run(SimTime until) {
  uint64_t ran = 0;
  while (!stopped_ && !queue_.empty() && queue_.top().time <= until) {
    const Event e = queue_.pop();
    ARLSIM_ASSERT(e.time >= now_);  // time never goes backwards
    if (!queue_.empty()) queue_.top().handler->prefetch(queue_.top().payload);
    now_ = e.time;
    e.handler->on_event(e.payload);
    ++ran;
  }
  events_run_ += ran;
  return ran;
}

}  // namespace arlsim::core
