// Activity: a piece of work with a duration (compute, transfer, collective, tool call, wait),
// explicit states, successors that start when all their predecessors are done, and a completion
// hook. Stages of an RL step are DAGs of activities (SimGrid's S4U activities work the same way).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/event_queue.h"

namespace arlsim::core {

class Activity : public EventHandler {
 public:
  enum class State { waiting, running, done };

  Activity(Simulation& sim, std::string name, SimTime duration)
      : sim_(sim), name_(std::move(name)), duration_(duration) {}

  // `next` starts only after this activity (and its other predecessors) are done.
  void precedes(Activity& next);
  // Called (as an event) when this activity completes.
  void on_complete(EventHandler* hook, uint64_t payload = 0) {
    hook_ = hook;
    hook_payload_ = payload;
  }
  // Starts now if no predecessor is pending, else as soon as the last one completes.
  void submit();

  State state() const { return state_; }
  const std::string& name() const { return name_; }
  SimTime start_time() const { return start_; }
  SimTime end_time() const { return end_; }
  SimTime duration() const { return duration_; }

  void on_event(uint64_t payload) override;

 private:
  void start();

  Simulation& sim_;
  std::string name_;
  SimTime duration_;
  State state_ = State::waiting;
  bool submitted_ = false;
  int pending_ = 0;
  std::vector<Activity*> successors_;
  EventHandler* hook_ = nullptr;
  uint64_t hook_payload_ = 0;
  SimTime start_, end_;
};

}  // namespace arlsim::core
