#include "sim/core/activity.h"

#include "sim/core/assert.h"

namespace arlsim::core {

namespace {
constexpr int32_t kCompletionPhase = 0;
constexpr uint64_t kFinished = 0;
constexpr uint64_t kPredecessorDone = 1;
}  // namespace

void Activity::precedes(Activity& next) {
  ARLSIM_ASSERT(state_ != State::done && next.state_ == State::waiting);
  successors_.push_back(&next);
  ++next.pending_;
}

void Activity::submit() {
  ARLSIM_ASSERT(!submitted_);
  submitted_ = true;
  if (pending_ == 0) start();
}

void Activity::start() {
  state_ = State::running;
  start_ = sim_.now();
  sim_.after(duration_, kCompletionPhase, this, kFinished);
}

void Activity::on_event(uint64_t payload) {
  if (payload == kPredecessorDone) {
    ARLSIM_ASSERT(pending_ > 0);
    if (--pending_ == 0 && submitted_) start();
    return;
  }
  state_ = State::done;
  end_ = sim_.now();
  for (Activity* s : successors_) sim_.at(sim_.now(), kCompletionPhase, s, kPredecessorDone);
  if (hook_) sim_.at(sim_.now(), kCompletionPhase, hook_, hook_payload_);
}

}  // namespace arlsim::core
