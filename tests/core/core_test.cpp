#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/core/activity.h"
#include "sim/core/assert.h"
#include "sim/core/event_queue.h"
#include "sim/core/int_map.h"
#include "sim/core/sort.h"
#include "sim/core/resource.h"

using namespace arlsim;
using namespace arlsim::core;

namespace {

// Records (time, payload) of every event it receives.
struct Recorder : EventHandler {
  Simulation* sim = nullptr;
  std::vector<std::pair<int64_t, uint64_t>> seen;
  void on_event(uint64_t payload) override { seen.emplace_back(sim->now().ns(), payload); }
};

SimTime ns(int64_t v) { return SimTime::from_ns(v); }

}  // namespace

TEST_CASE("event queue: ordered by time, then phase, then scheduling order") {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.at(ns(20), 0, &r, 1);
  sim.at(ns(10), 5, &r, 2);
  sim.at(ns(10), 1, &r, 3);
  sim.at(ns(10), 1, &r, 4);  // same time and phase as 3: after it
  sim.at(ns(10), 0, &r, 5);
  CHECK(sim.run() == 5);
  const std::vector<std::pair<int64_t, uint64_t>> expected{{10, 5}, {10, 3}, {10, 4}, {10, 2}, {20, 1}};
  CHECK(r.seen == expected);
  CHECK(sim.now() == ns(20));
}

TEST_CASE("event queue: run stops at the horizon and scheduling in the past is a bug") {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.at(ns(5), 0, &r, 1);
  sim.at(ns(50), 0, &r, 2);
  CHECK(sim.run(ns(10)) == 1);
  CHECK(sim.pending() == 1);
  CHECK_THROWS_AS(sim.at(ns(1), 0, &r, 3), InternalError);
}

TEST_CASE("event queue: a timer set again moves its one event, in scheduling order with the others") {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  const auto a = sim.add_timer(), b = sim.add_timer();
  CHECK_FALSE(sim.timer_pending(a));
  sim.set_timer(a, ns(30), 0, &r, 1);
  sim.at(ns(10), 0, &r, 2);
  sim.set_timer(a, ns(10), 0, &r, 3);   // replaces 1, and is scheduled after 2
  sim.set_timer(b, ns(5), 0, &r, 4);
  sim.set_timer(b, ns(20), 0, &r, 5);   // moved later
  sim.at(ns(20), 1, &r, 6);
  sim.at(ns(20), 0, &r, 7);             // same time and phase as 5, scheduled after it
  CHECK(sim.timer_pending(a));
  CHECK(sim.pending() == 5);
  CHECK(sim.run() == 5);
  const std::vector<std::pair<int64_t, uint64_t>> expected{{10, 2}, {10, 3}, {20, 5}, {20, 7}, {20, 6}};
  CHECK(r.seen == expected);
  CHECK_FALSE(sim.timer_pending(a));
  CHECK_FALSE(sim.timer_pending(b));
  CHECK_THROWS_AS(sim.set_timer(a, ns(1), 0, &r, 8), InternalError);
}

TEST_CASE("event queue: many timers and events come out in (time, phase, order)") {
  // Against a plain list sorted by the same key: timers set several times keep only their last.
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  std::vector<Simulation::TimerId> timers;
  for (int i = 0; i < 50; ++i) timers.push_back(sim.add_timer());
  struct Expected {
    int64_t time, phase, order;
    uint64_t payload;
  };
  std::vector<Expected> last(timers.size(), {-1, 0, 0, 0});
  std::vector<Expected> plain;
  uint64_t state = 12345;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int64_t k = 0; k < 2000; ++k) {
    const auto time = static_cast<int64_t>(next() % 100), phase = static_cast<int64_t>(next() % 3);
    const auto payload = static_cast<uint64_t>(k);
    if (next() % 2) {
      const size_t t = next() % timers.size();
      sim.set_timer(timers[t], ns(time), static_cast<int32_t>(phase), &r, payload);
      last[t] = {time, phase, k, payload};
    } else {
      sim.at(ns(time), static_cast<int32_t>(phase), &r, payload);
      plain.push_back({time, phase, k, payload});
    }
  }
  for (const auto& e : last)
    if (e.time >= 0) plain.push_back(e);
  std::sort(plain.begin(), plain.end(), [](const Expected& a, const Expected& b) {
    return std::tie(a.time, a.phase, a.order) < std::tie(b.time, b.phase, b.order);
  });
  sim.run();
  std::vector<std::pair<int64_t, uint64_t>> expected;
  for (const auto& e : plain) expected.emplace_back(e.time, e.payload);
  CHECK(r.seen == expected);
}

namespace {

// What an event schedules when it runs, from its payload alone: 0-2 events at delays of 0-40 ns
// (a third of them at once, in order after those already due now) in phases 0-2.
std::vector<std::tuple<int64_t, int32_t>> spawned(uint64_t payload) {
  uint64_t h = payload * 0x9E3779B97F4A7C15ull + 1;
  h ^= h >> 31;
  std::vector<std::tuple<int64_t, int32_t>> out;
  const int count = payload < 20000 ? static_cast<int>(h % 3) : 0;
  for (int i = 0; i < count; ++i) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t delay = (h >> 20) % 3 == 0 ? 0 : static_cast<int64_t>((h >> 33) % 40);
    out.emplace_back(delay, static_cast<int32_t>((h >> 40) % 3));
  }
  return out;
}

struct Spawner : EventHandler {
  Simulation* sim = nullptr;
  uint64_t next_payload = 0;
  std::vector<std::pair<int64_t, uint64_t>> seen;
  void on_event(uint64_t payload) override {
    seen.emplace_back(sim->now().ns(), payload);
    for (const auto& [delay, phase] : spawned(payload)) sim->after(ns(delay), phase, this, next_payload++);
  }
};

}  // namespace

TEST_CASE("event queue: events scheduled as others run, in order and not, come out in (time, phase, order)") {
  // Long in-order runs (thousands of arrivals at one time, as a rollout's first turns) beside
  // events out of order, against a sorted set holding the same events.
  Simulation sim;
  Spawner s;
  s.sim = &sim;
  using Key = std::tuple<int64_t, int32_t, uint64_t, uint64_t>;  // time, phase, order, payload
  std::set<Key> pending;
  uint64_t order = 0, payload = 0;
  for (int i = 0; i < 6000; ++i) {  // the initial burst: every arrival at time 0 (or 5), in order
    const int64_t t = i < 5000 ? 0 : 5;
    sim.at(ns(t), 1, &s, s.next_payload++);
    pending.insert({t, 1, order++, payload++});
  }
  std::vector<std::pair<int64_t, uint64_t>> expected;
  while (!pending.empty()) {
    const Key k = *pending.begin();
    pending.erase(pending.begin());
    const auto [time, phase, o, p] = k;
    expected.emplace_back(time, p);
    for (const auto& [delay, ph] : spawned(p)) pending.insert({time + delay, ph, order++, payload++});
  }
  sim.run();
  CHECK(expected.size() > 20000);
  CHECK(s.seen == expected);
}

namespace {

// Takes its unit when granted and gives it back `hold` later.
struct User : EventHandler {
  Simulation* sim = nullptr;
  CountedPool* pool = nullptr;
  SimTime hold;
  int64_t granted_at = -1;
  Lease lease;
  void on_event(uint64_t payload) override {
    if (payload == 1) {  // the hold is over
      lease.release();
      return;
    }
    granted_at = sim->now().ns();
    lease = pool->take_lease();
    sim->after(hold, 0, this, 1);
  }
};

}  // namespace

TEST_CASE("counted pool: grants in order, queues when full, and accounts busy time") {
  Simulation sim;
  CountedPool pool(sim, {"sandboxes", 1, 1, SimTime::zero(), false});
  User a, b;
  a.sim = b.sim = &sim;
  a.pool = b.pool = &pool;
  a.hold = b.hold = ns(100);
  pool.request(&a, 0);
  pool.request(&b, 0);
  sim.run();
  CHECK(a.granted_at == 0);
  CHECK(b.granted_at == 100);  // waited for a's release
  CHECK(pool.stats().busy_unit_seconds == doctest::Approx(200e-9));
  CHECK(pool.stats().peak_in_use == 1);
}

TEST_CASE("counted pool: elastic units start after a cold start and are given back when idle") {
  Simulation sim;
  CountedPool pool(sim, {"sandboxes", 0, 2, ns(30), true});
  Recorder r;
  r.sim = &sim;
  pool.request(&r, 7);
  pool.request(&r, 8);
  pool.request(&r, 9);  // only two units may exist: waits for a release
  sim.run();
  CHECK(r.seen == std::vector<std::pair<int64_t, uint64_t>>{{30, 7}, {30, 8}});
  CHECK(pool.stats().cold_starts == 2);
  Lease first = pool.take_lease();
  Lease second = pool.take_lease();
  first.release();  // hands the unit to the third request
  sim.run();
  CHECK(r.seen.back() == std::pair<int64_t, uint64_t>{30, 9});
  Lease third = pool.take_lease();
  second.release();
  third.release();
  CHECK(pool.provisioned() == 0);  // scaled in
}

TEST_CASE("counted pool: a pool that grants at once calls its grantee from the release, with no event") {
  Simulation sim;
  CountedPool::Options o{"sandboxes", 1, 1, SimTime::zero(), false};
  o.grant_at_once = true;
  CountedPool pool(sim, o);
  User a, b;
  a.sim = b.sim = &sim;
  a.pool = b.pool = &pool;
  a.hold = b.hold = ns(100);
  pool.request(&a, 0);
  CHECK(a.granted_at == 0);  // a free unit: granted inside request()
  pool.request(&b, 0);
  CHECK(b.granted_at == -1);  // waits
  CHECK(sim.pending() == 1);  // a's hold only
  sim.run();
  CHECK(b.granted_at == 100);  // at a's release, in a's event
  CHECK(sim.events_run() == 2);  // the two holds' ends; no grant events
  CHECK(pool.stats().busy_unit_seconds == doctest::Approx(200e-9));
  CHECK(pool.stats().grants == 2);
}

TEST_CASE("activity: successors start when all their predecessors are done") {
  Simulation sim;
  Activity a(sim, "a", ns(10)), b(sim, "b", ns(30)), c(sim, "c", ns(5));
  a.precedes(c);
  b.precedes(c);
  Recorder done;
  done.sim = &sim;
  c.on_complete(&done, 42);
  c.submit();
  a.submit();
  b.submit();
  sim.run();
  CHECK(c.start_time() == ns(30));
  CHECK(c.end_time() == ns(35));
  CHECK(c.state() == Activity::State::done);
  CHECK(done.seen == std::vector<std::pair<int64_t, uint64_t>>{{35, 42}});
}

TEST_CASE("int map: inserts, finds and erases like a map, through growth and collisions") {
  // Against std::map, with keys in a small range (many hit the same runs) and in a stride (the
  // trajectories one engine gets under round-robin routing).
  IntMap<int64_t> m;
  std::map<int64_t, int64_t> expected;
  uint64_t state = 7;
  auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 33; };
  for (int i = 0; i < 20000; ++i) {
    const auto r = next();
    const int64_t key = (r & 1) ? static_cast<int64_t>(r % 300) : static_cast<int64_t>(r % 300) * 500;
    switch (next() % 3) {
      case 0:
        m[key] = i;
        expected[key] = i;
        break;
      case 1:
        m.erase(key);
        expected.erase(key);
        break;
      default: {
        const int64_t* v = m.find(key);
        const auto it = expected.find(key);
        REQUIRE((v != nullptr) == (it != expected.end()));
        if (v) CHECK(*v == it->second);
      }
    }
    REQUIRE(m.size() == expected.size());
  }
  for (const auto& [key, value] : expected) {
    REQUIRE(m.find(key) != nullptr);
    CHECK(*m.find(key) == value);
  }
  CHECK(m.find(123457) == nullptr);
}

TEST_CASE("sort: doubles in std::sort's order, negatives, repeats and zeros included") {
  uint64_t state = 11;
  auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 11; };
  for (const size_t n : {size_t{10}, size_t{40000}}) {
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) {
      const auto r = next();
      v.push_back(r % 7 == 0 ? 0.0 : r % 5 == 0 ? static_cast<double>(r % 13) : (static_cast<double>(r % 2000001) - 1e6) * 1e-3);
    }
    std::vector<double> expected = v;
    std::sort(expected.begin(), expected.end());
    core::sort_ascending(v);
    CHECK(v == expected);
  }
  // Times of one magnitude (equal high bits) and a negative zero (left to std::sort).
  std::vector<double> times;
  for (size_t i = 0; i < 30000; ++i) times.push_back(100 + static_cast<double>(next() % 1000) * 1e-3);
  std::vector<double> with_negative_zero = times;
  with_negative_zero[5] = -0.0;
  for (auto* v : {&times, &with_negative_zero}) {
    std::vector<double> expected = *v;
    std::sort(expected.begin(), expected.end());
    core::sort_ascending(*v);
    CHECK(*v == expected);
  }
}

TEST_CASE("clock: times past its range are refused, not wrapped around") {
  CHECK(SimTime::from_seconds(9.1e9).seconds() == doctest::Approx(9.1e9));
  CHECK_THROWS_AS(SimTime::from_seconds(9.3e9), SimTimeOutOfRange);
  CHECK_THROWS_AS(SimTime::from_seconds(-1e10), SimTimeOutOfRange);
  // A NaN is a fault of the model, not an input's: reported as an internal error.
  CHECK_THROWS_AS(SimTime::from_seconds(std::numeric_limits<double>::quiet_NaN()), std::logic_error);
  const SimTime near_end = SimTime::from_seconds(9e9);
  CHECK_THROWS_AS(near_end + near_end, SimTimeOutOfRange);
  SimTime t = near_end;
  CHECK_THROWS_AS(t += near_end, SimTimeOutOfRange);
  CHECK_THROWS_AS(SimTime::zero() - near_end - near_end, SimTimeOutOfRange);
  CHECK((near_end + SimTime::from_seconds(1)).seconds() == doctest::Approx(9e9 + 1));
}
