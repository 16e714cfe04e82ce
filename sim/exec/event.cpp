#include "sim/exec/event.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/core/assert.h"
#include "sim/core/event_queue.h"
#include "sim/model/topology.h"

namespace arlsim::exec {

namespace {

// At one time: flows progress, then every completion frees its devices, then ready activities
// start (lowest id first), so that no completion's successors start before another completion at
// the same time has freed its devices.
constexpr int32_t kPhaseNetwork = 0;
constexpr int32_t kPhaseDone = 1;
constexpr int32_t kPhaseStart = 2;

class EventRun : public core::EventHandler {
 public:
  explicit EventRun(const graph::StepGraph& g) : g_(g), records_(g.activities.size()) {
    const size_t n = g.activities.size();
    waiting_on_.resize(n);
    successors_.resize(n);
    flows_left_.resize(n, 0);
    for (const auto& a : g.activities) {
      records_[static_cast<size_t>(a.id)] = unplaced_record(a);
      waiting_on_[static_cast<size_t>(a.id)] = static_cast<int32_t>(a.after.size());
      for (graph::ActivityId d : a.after) successors_[static_cast<size_t>(d)].push_back(a.id);
      for (const auto& t : a.transfers)
        for (size_t l : t.links) ARLSIM_ASSERT(l < g.link_capacities.size());
      if (a.after.empty()) ready_.insert(a.id);
    }
    network_timer_ = queue_.add_timer();
  }

  std::vector<ActivityRecord> run() {
    start_ready();
    while (!queue_.empty()) {
      const core::Event e = queue_.pop();
      ARLSIM_ASSERT(e.time >= now_);
      now_ = e.time;
      e.handler->on_event(e.payload);
    }
    for (size_t i = 0; i < records_.size(); ++i) ARLSIM_ASSERT(finished_[i]);  // the graph is acyclic
    return std::move(records_);
  }

  void on_event(uint64_t payload) override {
    if (payload == kNetworkEvent) {
      network_progress();
      return;
    }
    if (payload == kStartEvent) {
      start_pending_ = false;
      start_ready();
      return;
    }
    finish(static_cast<graph::ActivityId>(payload));
  }

 private:
  static constexpr uint64_t kNetworkEvent = ~uint64_t{0};
  static constexpr uint64_t kStartEvent = ~uint64_t{0} - 1;

  struct LiveFlow {
    graph::ActivityId activity;
    const std::vector<size_t>* links;
    double left_bytes;
    double rate = 0;
  };

  const graph::Activity& activity(graph::ActivityId id) const { return g_.activities[static_cast<size_t>(id)]; }

  bool devices_free(const graph::Activity& a) const {
    for (const auto& want : a.holds)
      for (const auto& [id, held] : held_)
        if (held.overlaps(want)) return false;
    return true;
  }

  // Starts every ready activity whose devices are free, lowest id first.
  void start_ready() {
    advance_flows();  // flows in flight moved bytes at their old rates until now
    bool network_changed = false;
    for (auto it = ready_.begin(); it != ready_.end();) {
      const auto& a = activity(*it);
      if (!devices_free(a)) {
        ++it;
        continue;
      }
      for (const auto& h : a.holds) held_.emplace_back(a.id, h);
      records_[static_cast<size_t>(a.id)].start_s = now_.seconds();
      bool moves = false;
      for (const auto& t : a.transfers)
        if (t.bytes > 0) {
          flows_.push_back({a.id, &t.links, t.bytes});
          ++flows_left_[static_cast<size_t>(a.id)];
          moves = true;
        }
      if (moves) network_changed = true;
      else queue_.push(now_ + SimTime::from_seconds(a.seconds), kPhaseDone, this, static_cast<uint64_t>(a.id));
      it = ready_.erase(it);
    }
    if (network_changed) reshare();
  }

  // Advances every live flow to now, drops the finished ones (their activities then wait out their
  // fixed `seconds`), and shares the links again.
  void network_progress() {
    advance_flows();
    for (auto it = flows_.begin(); it != flows_.end();) {
      // Finished: nothing left, up to the rounding of times to whole nanoseconds.
      if (it->left_bytes <= std::max(1e-6, it->rate * 2e-9)) {
        const graph::ActivityId a = it->activity;
        it = flows_.erase(it);
        if (--flows_left_[static_cast<size_t>(a)] == 0)
          queue_.push(now_ + SimTime::from_seconds(activity(a).seconds), kPhaseDone, this, static_cast<uint64_t>(a));
      } else {
        ++it;
      }
    }
    reshare();
  }

  // The bytes each live flow moved since the last sharing, at its rate.
  void advance_flows() {
    const double dt = (now_ - last_share_).seconds();
    for (auto& f : flows_) f.left_bytes -= f.rate * dt;
    last_share_ = now_;
  }

  void reshare() {
    if (flows_.empty()) return;
    std::vector<model::Flow> flows;
    flows.reserve(flows_.size());
    for (const auto& f : flows_) flows.push_back({*f.links, 0});
    const std::vector<double> rates = model::max_min_fair_rates(flows, g_.link_capacities);
    double next = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < flows_.size(); ++i) {
      flows_[i].rate = rates[i];
      if (rates[i] > 0) next = std::min(next, flows_[i].left_bytes / rates[i]);
    }
    // A flow over a link without capacity never finishes: the run would never end.
    ARLSIM_ASSERT(std::isfinite(next));
    queue_.set_timer(network_timer_, now_ + SimTime::from_ns(static_cast<int64_t>(std::ceil(std::max(0.0, next) * 1e9))),
                     kPhaseNetwork, this, kNetworkEvent);
  }

  void finish(graph::ActivityId id) {
    const auto i = static_cast<size_t>(id);
    records_[i].end_s = now_.seconds();
    finished_[i] = true;
    held_.erase(std::remove_if(held_.begin(), held_.end(), [&](const auto& h) { return h.first == id; }), held_.end());
    for (graph::ActivityId s : successors_[i])
      if (--waiting_on_[static_cast<size_t>(s)] == 0) ready_.insert(s);
    if (!start_pending_) {
      start_pending_ = true;
      queue_.push(now_, kPhaseStart, this, kStartEvent);
    }
  }

  const graph::StepGraph& g_;
  std::vector<ActivityRecord> records_;
  std::vector<int32_t> waiting_on_;
  std::vector<std::vector<graph::ActivityId>> successors_;
  std::vector<int32_t> flows_left_;
  std::vector<bool> finished_ = std::vector<bool>(g_.activities.size(), false);
  std::set<graph::ActivityId> ready_;
  std::vector<std::pair<graph::ActivityId, graph::DeviceRange>> held_;
  std::vector<LiveFlow> flows_;
  core::EventQueue queue_;
  core::EventQueue::TimerId network_timer_ = 0;
  SimTime now_ = SimTime::zero();
  SimTime last_share_ = SimTime::zero();
  bool start_pending_ = false;  // a start event is queued at now_
};

}  // namespace

std::vector<ActivityRecord> run_events(const graph::StepGraph& g) {
  EventRun run(g);
  return run.run();
}

}  // namespace arlsim::exec
