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
    Timer& t = timers_[static_cast<size_t>(timer_heap_.front())];
    const Event e = t.event;
    t.position = -1;
    timer_heap_.front() = timer_heap_.back();
    timer_heap_.pop_back();
    if (!timer_heap_.empty()) {
      timers_[static_cast<size_t>(timer_heap_.front())].position = 0;
      timer_place(0);
    }
    return e;
  }
  std::pop_heap(heap_.begin(), heap_.end(), [](const Event& a, const Event& b) { return before(b, a); });
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

EventQueue::TimerId EventQueue::add_timer() {
  timers_.emplace_back();
  return static_cast<TimerId>(timers_.size() - 1);
}

void EventQueue::set_timer(TimerId id, SimTime time, int32_t phase, EventHandler* handler, uint64_t payload) {
  Timer& t = timers_[static_cast<size_t>(id)];
  t.event = {time, next_order(phase), handler, payload};
  if (t.position < 0) {
    t.position = static_cast<int32_t>(timer_heap_.size());
    timer_heap_.push_back(id);
  }
  timer_place(static_cast<size_t>(t.position));
}

void EventQueue::timer_swap(size_t i, size_t j) {
  std::swap(timer_heap_[i], timer_heap_[j]);
  timers_[static_cast<size_t>(timer_heap_[i])].position = static_cast<int32_t>(i);
  timers_[static_cast<size_t>(timer_heap_[j])].position = static_cast<int32_t>(j);
}

void EventQueue::timer_place(size_t i) {
  while (i > 0 && timer_before(i, (i - 1) / 2)) {
    timer_swap(i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  for (;;) {
    size_t least = i;
    for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < timer_heap_.size(); ++c)
      if (timer_before(c, least)) least = c;
    if (least == i) return;
    timer_swap(i, least);
    i = least;
  }
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
    now_ = e.time;
    e.handler->on_event(e.payload);
    ++ran;
  }
  events_run_ += ran;
  return ran;
}

}  // namespace arlsim::core
