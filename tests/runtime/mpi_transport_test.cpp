// The process-per-device backend over MPI (app/task_farm.h as the transport), run by
// mpi_transport_test.sh under `mpirun -n 3`: broadcast and all-gather carry what they should,
// and a fake device per process gives every process the whole activity's figures. Rank 0
// prints the result; the exit status is the number of failed checks.
#include <cmath>
#include <cstdio>
#include <string>

#include "app/farm_transport.h"
#include "tests/runtime/fake_device.h"

using namespace arlsim;
using runtime::Kernel;

int main() {
  app::TaskFarm farm;
  app::FarmTransport t(farm);
  int failed = 0;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) {
      ++failed;
      std::fprintf(stderr, "rank %d: FAIL %s\n", farm.rank(), what.c_str());
    }
  };
  expect(t.size() == 3, "3 processes (run under mpirun -n 3)");

  std::string id = t.rank() == 0 ? std::string("unique id \0 with a zero", 23) : std::string();
  t.broadcast(id, 0);
  expect(id == std::string("unique id \0 with a zero", 23), "broadcast from rank 0");
  std::string none = t.rank() == 2 ? "" : "ignored";
  t.broadcast(none, 2);
  expect(none.empty(), "broadcast of nothing");
  const auto all = t.all_gather(std::string(static_cast<size_t>(t.rank()), 'x'));
  expect(all.size() == 3 && all[0].empty() && all[1] == "x" && all[2] == "xx", "all-gather of unequal sizes");

  runtime::Program p;
  const int32_t pair = p.group({1, 2});
  Kernel g;
  g.kind = Kernel::Kind::gemm;
  g.m = 512, g.n = 512, g.k = 512;
  p.on(0).push_back(g);
  Kernel c;
  c.kind = Kernel::Kind::copy;
  c.bytes = 1 << 20;
  p.on(1).push_back(c);
  Kernel ag;
  ag.kind = Kernel::Kind::collective;
  ag.op = model::CollectiveOp::all_gather;
  ag.bytes = 4096;
  ag.group = pair;
  p.on(1).push_back(ag);
  p.on(2).push_back(ag);
  testing::Log log;
  runtime::RankBackend backend(std::make_unique<testing::FakeOps>(t.rank(), log), t, 60);
  const runtime::RunStats s = backend.run(p, "mpi activity");
  expect(s.device_seconds.size() == 3, "every device's time on every process");
  const double d1 = testing::link_s(1 << 20) + testing::link_s(4096);
  expect(std::abs(s.seconds - std::max(testing::gemm_s(g), d1)) < 1e-12, "the slowest device's time");
  expect(s.bytes_verified == 1 << 20, "bytes verified by device 1, known to all");
  expect(std::abs(s.kernels.collective - 2 * testing::link_s(4096)) < 1e-12, "collective time of both members");
  expect(log.joins.size() == 1, "one communicator joined per process");

  const auto failures = t.all_gather(std::to_string(failed));
  int total = 0;
  for (const auto& f : failures) total += std::stoi(f);
  if (t.rank() == 0) std::printf("%s: %d failed check(s) over %d processes\n", total ? "FAIL" : "ok", total, t.size());
  return total;
}
