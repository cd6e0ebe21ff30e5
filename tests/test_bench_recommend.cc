// The bench's num_workers recommendation rule (bench/recommend.h) on made-up measurement rows.
#include <catch2/catch.hpp>

#include "bench/recommend.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace test_bench_recommend {

namespace {

bench::RunResult row(int64_t workers, double rate, double util = -1, double busy_ms = -1,
                     const std::string& loader = "mploader") {
  bench::RunResult r;
  r.config.loader = loader;
  r.config.workload = "jpeg";
  r.config.workers = workers;
  r.config.batch_size = 64;
  r.config.prefetch = 2;
  r.samples_per_s = rate;
  r.utilisation = util;
  r.busy_ms_per_batch = busy_ms;
  r.wait_p50_ms = 1.0;
  return r;
}

}  // namespace

TEST_CASE("recommend: smallest workers within 5 % of the best, CPU-bound when busy and not "
          "slowed", "[recommend]") {
  const auto recs = bench::recommend(
      {row(1, 100, 0.98, 10), row(2, 196, 0.97, 10.2), row(4, 380, 0.95, 10.5),
       row(8, 390, 0.5, 10.5)});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 4);  // 380 >= 0.95 x 390
  CHECK(recs[0].best_workers == 8);
  CHECK(recs[0].bound == "CPU-bound");
}

TEST_CASE("recommend: the 5 % rule's edges: exactly 95 % of the best is within, less is not",
          "[recommend]") {
  const auto workers_for = [](std::vector<bench::RunResult> rows) {
    const auto recs = bench::recommend(rows);
    REQUIRE(recs.size() == 1);
    return recs[0].workers;
  };
  CHECK(workers_for({row(1, 95, 0.9, 10), row(2, 100, 0.9, 10)}) == 1);     // exactly 95 %
  CHECK(workers_for({row(1, 94.99, 0.9, 10), row(2, 100, 0.9, 10)}) == 2);  // just below
  CHECK(workers_for({row(1, 190, 0.9, 10), row(2, 200, 0.9, 10)}) == 1);
  CHECK(workers_for({row(1, 189.9, 0.9, 10), row(2, 200, 0.9, 10)}) == 2);
  // The best itself when it has the fewest workers; the fewest of several within 5 %.
  CHECK(workers_for({row(1, 100, 0.9, 10), row(2, 96, 0.9, 10)}) == 1);
  CHECK(workers_for({row(4, 99, 0.9, 10), row(1, 96, 0.9, 10), row(2, 100, 0.9, 10)}) == 1);
  // Within 5 % of the best, not of the next count: 1 is within 5 % of 2, 2 of 4, 1 not of 4.
  CHECK(workers_for({row(1, 95, 0.9, 10), row(2, 99, 0.9, 10), row(4, 103, 0.9, 10)}) == 2);
  // The order the rows came in changes nothing.
  CHECK(workers_for({row(2, 100, 0.9, 10), row(1, 95, 0.9, 10)}) == 1);
}

TEST_CASE("recommend: a slow training step (20 ms) is loop-bound at either count, and one "
          "worker is chosen when it measures within 5 % of two", "[recommend]") {
  // Rates of 4-sample batches behind a 20 ms step: about 190 samples/s whatever the count,
  // the workers idle and the loop barely waiting. Which count measures faster is noise.
  const auto slow_loop = [](double one, double two) {
    bench::RunResult a = row(1, one, 0.05, 1), b = row(2, two, 0.025, 1);
    a.config.batch_size = b.config.batch_size = 4;
    a.wait_p50_ms = b.wait_p50_ms = 0.05;
    const auto recs = bench::recommend({a, b});
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].bound == "loop-bound");
    CHECK_THAT(recs[0].reason, Catch::Contains("the training loop sets the pace"));
    return recs[0].workers;
  };
  CHECK(slow_loop(190, 193) == 1);
  CHECK(slow_loop(193, 190) == 1);
  CHECK(slow_loop(179, 193) == 2);  // a loaded machine measured 7 % apart: the rule says 2
}

TEST_CASE("recommend: memory-bound when each worker needs 1.3x the busy time it did with fewer",
          "[recommend]") {
  const auto recs =
      bench::recommend({row(1, 100, 0.98, 10), row(2, 150, 0.95, 13.5), row(4, 152, 0.9, 26)});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 2);
  CHECK(recs[0].bound == "memory-bound");
}

TEST_CASE("recommend: loop-bound when idle workers keep a slow loop fed", "[recommend]") {
  // 64 samples at 100 samples/s: 640 ms per batch, of which the loop waits 1 ms.
  const auto recs = bench::recommend({row(1, 100, 0.01, 1), row(2, 101, 0.005, 1)});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 1);
  CHECK(recs[0].bound == "loop-bound");
  CHECK_THAT(recs[0].reason, Catch::Contains("of its 640.00 ms per batch"));
}

TEST_CASE("recommend: IPC-bound when workers are mostly idle", "[recommend]") {
  // 64 samples at 64,000 samples/s: 1 ms per batch, all of it waiting.
  const auto recs = bench::recommend({row(1, 64000, 0.4, 1), row(2, 64600, 0.2, 1)});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 1);
  CHECK(recs[0].bound == "IPC-bound");
}

TEST_CASE("recommend: 0 workers when the main process is as fast, no reason without counters",
          "[recommend]") {
  auto recs = bench::recommend({row(0, 500), row(2, 510, 0.3, 1)});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 0);
  CHECK(recs[0].bound == "main-loop bound");
  recs = bench::recommend({row(1, 100, -1, -1, "libtorch"), row(2, 200, -1, -1, "libtorch")});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 2);
  CHECK(recs[0].bound.empty());
  CHECK(bench::recommend({row(2, 100)}).empty());  // one worker count: nothing to choose
}

TEST_CASE("scaling efficiency: throughput at cores workers over cores x one worker's",
          "[recommend]") {
  std::ostringstream out;
  bench::print_scaling(out, {row(1, 100), row(4, 360)}, 4);
  CHECK(out.str().find("0.90") != std::string::npos);
}

TEST_CASE("recommend: never more workers than the CPU budget, and says what was faster",
          "[recommend]") {
  // Inside a quota of 1 CPU the bench's own loop may still measure 2 workers ahead: in
  // training that CPU time would come from the loop.
  const auto recs = bench::recommend({row(1, 100, 0.98, 10), row(2, 140, 0.97, 10.2)},
                                     {1, "the cgroup CPU quota of 1.00 CPUs (/q)"});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == 1);
  CHECK(recs[0].best_workers == 1);
  CHECK_THAT(recs[0].budget_note,
             Catch::Contains("2 workers measured 40 % more samples/s than 1") &&
                 Catch::Contains("may use 1 CPU (the cgroup CPU quota"));
  // Without a budget, or within it, nothing changes.
  CHECK(bench::recommend({row(1, 100, 0.98, 10), row(2, 140, 0.97, 10.2)})[0].workers == 2);
  const auto roomy =
      bench::recommend({row(1, 100, 0.98, 10), row(2, 140, 0.97, 10.2)}, {8, "its affinity mask"});
  CHECK(roomy[0].workers == 2);
  CHECK(roomy[0].budget_note.empty());
}

TEST_CASE("recommend: workers waiting on I/O may outnumber the CPU budget, computing ones not",
          "[recommend]") {
  const bench::CpuLimit two{2, "its affinity mask"};
  // On a CPU for a tenth of their busy time: 8 workers use under one CPU, and are fastest.
  std::vector<bench::RunResult> waiting = {row(1, 100, 0.99, 10), row(2, 198, 0.99, 10),
                                           row(4, 390, 0.98, 10), row(8, 760, 0.97, 10)};
  for (bench::RunResult& r : waiting) r.on_cpu = 0.1;
  const auto io = bench::recommend(waiting, two);
  REQUIRE(io.size() == 1);
  CHECK(io[0].workers == 8);
  CHECK(io[0].bound == "I/O-bound");
  CHECK(io[0].budget_note.empty());
  // The same rates from workers on a CPU all their busy time: held to the budget, and said.
  std::vector<bench::RunResult> computing = waiting;
  for (bench::RunResult& r : computing) r.on_cpu = 0.95;
  const auto cpu = bench::recommend(computing, two);
  CHECK(cpu[0].workers == 2);
  CHECK(cpu[0].bound == "CPU-bound");
  CHECK_THAT(cpu[0].budget_note, Catch::Contains("8 workers measured"));
  // Waiting, but 8 of them would need more than half the budget's CPU time (4 would not).
  std::vector<bench::RunResult> heavy = waiting;
  for (bench::RunResult& r : heavy) r.on_cpu = 0.2;
  CHECK(bench::recommend(heavy, two)[0].workers == 4);
  // Compute-bound workers crowded 4 to a CPU look off the CPU too, but use the whole budget.
  std::vector<bench::RunResult> crowded = computing;
  crowded[2].on_cpu = 0.5;
  crowded[3].on_cpu = 0.25;
  CHECK(bench::recommend(crowded, two)[0].workers == 2);
}

TEST_CASE("recommend: --json gives each recommendation as a record of its own", "[recommend]") {
  const auto recs = bench::recommend({row(1, 100, 0.98, 10), row(2, 140, 0.97, 10.2)},
                                     {1, "the cgroup CPU quota of 1.00 CPUs (/q)"});
  REQUIRE(recs.size() == 1);
  const std::string line =
      bench::json_recommendation(recs[0], {1, "the cgroup CPU quota of 1.00 CPUs (/q)"});
  CHECK(line.find('\n') == std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  CHECK(j.at("record") == "recommendation");
  CHECK(j.at("loader") == "mploader");
  CHECK(j.at("workload") == "jpeg");
  CHECK(j.at("batch_size") == 64);
  CHECK(j.at("prefetch") == 2);
  CHECK(j.at("workers") == 1);
  CHECK(j.at("samples_per_s") == 100.0);
  CHECK(j.at("best_workers") == 1);
  CHECK(j.at("bound") == "CPU-bound");
  CHECK_THAT(j.at("reason").get<std::string>(), Catch::Contains("workers busy 98 %"));
  CHECK_THAT(j.at("budget_note").get<std::string>(), Catch::Contains("2 workers measured"));
  CHECK(j.at("cpu_budget") == 1);
  CHECK(j.at("cpu_budget_source") == "the cgroup CPU quota of 1.00 CPUs (/q)");
}

}  // namespace test_bench_recommend
