// The run table printed for people: exact text for the sample run (the figures are those checked
// in summary_test.cpp), what changes without a price, OOMs or steps, and the width limit.
#include <doctest/doctest.h>

#include <sstream>

#include "sim/report/summary.h"
#include "sim/report/table.h"
#include "sim/report/text.h"
#include "tests/report/fixture.h"

using namespace arlsim;
using namespace arlsim::report;

TEST_CASE("run table of the sample run") {
  // The band line's figures come from the embedded validation record: built here from it.
  const auto r = testing::sample_run();
  const TotalBand band = total_time_band(r, run_stats(r));
  const std::string band_line = "                -" + format_fixed(100 * (1 - band.low_s / 30), 0) + "% to +" +
                                format_fixed(100 * (band.high_s / 30 - 1), 0) +
                                "% (validation bands of 95% of stage time)\n";
  CHECK(run_table(r) ==
        "demo: 16 GPUs, 3 steps\n"
        "\n"
        "step time (s)           mean         p50         p90         p99         max\n"
        "                      10.000      10.000      12.000      12.000      12.000\n"
        "\n"
        "stage                total (s)  per step (s)     share\n"
        "  rollout               18.500         6.167     61.7%\n"
        "  reward                 1.500         0.500      5.0%\n"
        "  old_logprob            3.000         1.000     10.0%\n"
        "  ref_logprob            1.500         0.500      5.0%\n"
        "  dispatch               0.750         0.250      2.5%\n"
        "  train                  4.000         1.333     13.3%\n"
        "  weight_sync            0.750         0.250      2.5%\n"
        "\n"
        "throughput      2000.0 tokens/s\n"
        "total time      30.000 s (0:00:30)\n" +
            band_line +
            "GPU-hours       0.133\n"
            "cost            $0.33 at $2.50 per GPU-hour\n"
            "OOM             1 event; first: step 2, stage train, rank 3: needs 92.50 GiB of 80.00 GiB\n"
            "                (GiB: activations 40.25, weights 30.00, optimizer 22.25)\n");
}

TEST_CASE("run table without a price or OOMs, and over long runs") {
  rl::RunResult r = testing::sample_run();
  r.price_usd_per_gpu_hour = 0;
  r.oom_events.clear();
  r.total_time_s = 3 * 3600 + 25 * 60 + 7.4;
  const std::string t = run_table(r);
  CHECK(t.find("\ncost            unknown (no price per GPU-hour)\n") != std::string::npos);
  CHECK(t.find("\nOOM             none\n") != std::string::npos);
  CHECK(t.find("\ntotal time      12307.400 s (3:25:07)\n") != std::string::npos);
}

TEST_CASE("run table of an empty run has totals only") {
  rl::RunResult r;
  r.scenario = "empty";
  CHECK(run_table(r) ==
        "empty: 0 GPUs, 0 steps\n"
        "\n"
        "throughput      0.0 tokens/s\n"
        "total time      0.000 s (0:00:00)\n"
        "GPU-hours       0.000\n"
        "cost            unknown (no price per GPU-hour)\n"
        "OOM             none\n");
}

TEST_CASE("run table lines fit in 100 columns, and more than three contributors are cut") {
  rl::RunResult r = testing::sample_run();
  r.oom_events[0].contributors_gib.emplace_back("logits", 1.5);
  const std::string t = run_table(r);
  CHECK(t.find("(GiB: activations 40.25, weights 30.00, optimizer 22.25, ...)\n") != std::string::npos);
  std::istringstream lines(t);
  for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
}
