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
