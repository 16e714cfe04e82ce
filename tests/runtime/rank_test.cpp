// The process-per-device backend (runtime/rank.h) with a fake device whose "measurements" follow
// known curves and whose copies move and check real bytes, over processes played by threads:
// which kernels each process runs, communicators made collectively, the seeds of gathered chunks
// agreeing between sender and receivers, and every process ending with the whole activity.
#include <doctest/doctest.h>

#include <barrier>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "runtime/pattern.h"
#include "runtime/rank.h"
#include "tests/runtime/fake_device.h"

using namespace arlsim;
using runtime::Kernel;
using namespace arlsim::testing;

namespace {

// Processes as threads: a barrier and one slot per rank.
struct Shared {
  explicit Shared(int n) : step(n), slots(static_cast<size_t>(n)) {}
  std::barrier<> step;
  std::vector<std::string> slots;
};

class ThreadTransport final : public runtime::Transport {
 public:
  ThreadTransport(Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(s_.slots.size()); }
  int local_rank() const override { return rank_; }
  void broadcast(std::string& bytes, int root) override {
    if (rank_ == root) s_.slots[static_cast<size_t>(root)] = bytes;
    s_.step.arrive_and_wait();
    bytes = s_.slots[static_cast<size_t>(root)];
    s_.step.arrive_and_wait();
  }
  std::vector<std::string> all_gather(const std::string& mine) override {
    s_.slots[static_cast<size_t>(rank_)] = mine;
    s_.step.arrive_and_wait();
    auto all = s_.slots;
    s_.step.arrive_and_wait();
    return all;
  }

 private:
  Shared& s_;
  int rank_;
};

Kernel gemm(int64_t m, int64_t n, int64_t k) {
  Kernel g;
  g.kind = Kernel::Kind::gemm;
  g.m = m, g.n = n, g.k = k;
  return g;
}
Kernel copy(double bytes) {
  Kernel c;
  c.kind = Kernel::Kind::copy;
  c.bytes = bytes;
  return c;
}
Kernel gather(double bytes, int32_t group) {
  Kernel c;
  c.kind = Kernel::Kind::collective;
  c.op = model::CollectiveOp::all_gather;
  c.bytes = bytes;
  c.group = group;
  return c;
}

// Runs `body(backend, rank)` on `n` thread-processes and returns each one's results.
template <typename Body>
auto on_processes(int n, Log& log, Body body) {
  Shared shared(n);
  std::vector<decltype(body(std::declval<runtime::RankBackend&>(), 0))> results(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ThreadTransport t(shared, r);
      runtime::RankBackend b(std::make_unique<FakeOps>(r, log), t, 60);
      results[static_cast<size_t>(r)] = body(b, r);
    });
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace

TEST_CASE("each process runs its own device's kernels and every process gets the whole activity") {
  runtime::Program p;
  const int32_t pair = p.group({0, 1});
  p.on(0).push_back(gemm(256, 512, 1024));
  p.on(0).push_back(gather(1 << 16, pair));
  p.on(1).push_back(copy(1 << 20));
  p.on(1).push_back(gather(1 << 16, pair));
  // device 2 has nothing in this activity
  Log log;
  const auto stats = on_processes(3, log, [&](runtime::RankBackend& b, int) { return b.run(p, "test activity"); });
  const double d0 = gemm_s(gemm(256, 512, 1024)) + link_s(1 << 16);
  const double d1 = link_s(1 << 20) + link_s(1 << 16);
  for (const auto& s : stats) {
    REQUIRE(s.device_seconds.size() == 2);
    CHECK(s.device_seconds[0].first == 0);
    CHECK(s.device_seconds[0].second == doctest::Approx(d0));
    CHECK(s.device_seconds[1].first == 1);
    CHECK(s.device_seconds[1].second == doctest::Approx(d1));
    CHECK(s.seconds == doctest::Approx(std::max(d0, d1)));
    CHECK(s.kernels.gemm == doctest::Approx(gemm_s(gemm(256, 512, 1024))));
    CHECK(s.kernels.collective == doctest::Approx(2 * link_s(1 << 16)));
    CHECK(s.bytes_verified == doctest::Approx(1 << 20));
    CHECK(s.checksum_failures == 0);
    // Each device's kernels, in its program's order.
    REQUIRE(s.kernel_seconds.size() == 2);
    CHECK(s.kernel_seconds[0].first == 0);
    CHECK(s.kernel_seconds[0].second ==
          std::vector<double>{gemm_s(gemm(256, 512, 1024)), link_s(1 << 16)});
    CHECK(s.kernel_seconds[1].second == std::vector<double>{link_s(1 << 20), link_s(1 << 16)});
  }
  // Every process joined the one group, members with their rank and the outsider with -1.
  std::sort(log.joins.begin(), log.joins.end());
  CHECK(log.joins == std::vector<std::string>{"0: 0,1, -> 0", "1: 0,1, -> 1", "2: 0,1, -> -1"});
}

TEST_CASE("communicators are made once per group, and gathered chunks' seeds agree between sender and receivers") {
  runtime::Program p;
  const int32_t all = p.group({0, 1, 2});
  const int32_t tail = p.group({1, 2});
  for (int64_t d = 0; d < 3; ++d) {
    p.on(d).push_back(gather(4096, all));
    if (d > 0) p.on(d).push_back(gather(4096, tail));
    p.on(d).push_back(gather(4096, all));
  }
  Log log;
  on_processes(3, log, [&](runtime::RankBackend& b, int) {
    b.run(p, "first");
    return b.run(p, "second");  // the same groups: no new communicator
  });
  CHECK(log.joins.size() == 6);  // two groups, three processes each
  // Each gather: the seed a member sent for its chunk is the one every other member expects.
  std::map<uint64_t, int> seen;
  for (const auto& [device, seeds] : log.gathers)
    for (uint64_t s : seeds) ++seen[s];
  for (const auto& [device, seed] : log.sent) {
    // sent by `device`, expected by each member of its gather (the group of 3 or of 2)
    CHECK(seen[seed] >= 2);
  }
  // 3 processes x 4 collectives on {0,1,2} + 2 x 2 on {1,2}: as many distinct chunks as sends.
  CHECK(log.sent.size() == 16);
  std::set<uint64_t> distinct;
  for (const auto& [device, seed] : log.sent) distinct.insert(seed);
  CHECK(distinct.size() == 16);
  CHECK(seen.size() == 16);  // nothing expected that nobody sent
}

TEST_CASE("a corrupted copy counts as a failure on every process") {
  runtime::Program p;
  p.on(0).push_back(copy(4096));
  p.on(1).push_back(copy(4096));
  Log log;
  const auto stats = on_processes(2, log, [&](runtime::RankBackend& b, int rank) {
    if (rank == 1) b.ops().corrupt_next_copy();
    return b.run(p, "copies");
  });
  for (const auto& s : stats) {
    CHECK(s.checksum_failures == 1);
    CHECK(s.bytes_verified == doctest::Approx(8192));
  }
}

TEST_CASE("a collective of a group the device is not in is refused") {
  runtime::Program p;
  const int32_t g = p.group({1});
  p.on(0).push_back(gather(64, g));
  Log log;
  runtime::LocalTransport alone;
  runtime::RankBackend b(std::make_unique<FakeOps>(0, log), alone, 60);
  CHECK_THROWS_AS(b.run(p, "bad"), std::runtime_error);
}

TEST_CASE("a device's result survives the transport, and a damaged one is refused") {
  runtime::DeviceResult r;
  r.seconds = 1.25;
  r.kernels.gemm = 0.5;
  r.kernels.wait = 0.25;
  r.bytes_verified = 4096;
  r.checksum_failures = 2;
  r.busy = {{0.0, 0.5, 2}, {0.75, 1.25, 1}};
  r.kernel_seconds = {0.5, 0.25, 0.5};
  const std::string bytes = runtime::encode(7, r);
  const auto [device, back] = runtime::decode(bytes);
  CHECK(device == 7);
  CHECK(back.seconds == 1.25);
  CHECK(back.kernels.gemm == 0.5);
  CHECK(back.kernels.wait == 0.25);
  CHECK(back.bytes_verified == 4096);
  CHECK(back.checksum_failures == 2);
  REQUIRE(back.busy.size() == 2);
  CHECK(back.busy[1].start == 0.75);
  CHECK(back.busy[1].end == 1.25);
  CHECK(back.busy[0].phase == 2);
  CHECK(back.kernel_seconds == std::vector<double>{0.5, 0.25, 0.5});
  CHECK_THROWS_AS(runtime::decode(bytes.substr(0, bytes.size() - 1)), std::runtime_error);
  CHECK_THROWS_AS(runtime::decode(bytes + "x"), std::runtime_error);
}

TEST_CASE("collective buffers: split by rank, rounded up to whole chunks") {
  const auto ar = runtime::collective_size(model::CollectiveOp::all_reduce, 10, 4);
  CHECK(ar.elements == 4);
  CHECK(ar.chunk == 1);
  const auto ag = runtime::collective_size(model::CollectiveOp::all_gather, 4096, 3);
  CHECK(ag.elements == 1026);
  CHECK(ag.chunk == 342);
  const auto bc = runtime::collective_size(model::CollectiveOp::broadcast, 4096, 3);
  CHECK(bc.elements == 1024);
  CHECK(bc.chunk == 1024);
  CHECK(runtime::buffer_floats(0) == 1);
}

TEST_CASE("pattern: the same values on every side, different per seed") {
  CHECK(runtime::pattern_value(5, 1) == runtime::pattern_value(5, 1));
  CHECK(runtime::pattern_value(5, 1) != runtime::pattern_value(5, 2));
  CHECK(runtime::pattern_value(5, 1) != runtime::pattern_value(6, 1));
  for (uint64_t i = 0; i < 1000; ++i) {
    const float v = runtime::pattern_value(i, 99);
    CHECK((v >= 0.0f && v < 1.0f));
  }
}

TEST_CASE("busy spans: touching work of one phase joins, a gap or another phase starts a new span") {
  std::vector<runtime::BusySpan> spans;
  runtime::add_busy(spans, 0, 1, 1);
  runtime::add_busy(spans, 1, 2, 1);    // touches, same phase: joined
  runtime::add_busy(spans, 2, 3, 2);    // another phase
  runtime::add_busy(spans, 3.5, 4, 2);  // after a wait
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].end == 2);
  CHECK(spans[1].start == 2);
  CHECK(spans[2].start == 3.5);
}
