// mploader::tune(): a real sweep over a small dataset, the time budget, bad TuneOptions, and
// the rule it shares with mploader-bench (bench/recommend.cc).
#include <catch2/catch.hpp>

#include "bench/recommend.h"

#include <mploader/mploader.h>
#include <mploader/tune.h>

#include <ATen/ATen.h>

#include <chrono>
#include <thread>

namespace test_tune {

namespace {

// Each sample waits 1 ms, as on a read, so that workers have something to overlap.
class WaitingDataset : public mploader::Dataset {
 public:
  explicit WaitingDataset(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return {{"x", at::full({4}, static_cast<double>(index), at::kFloat)}};
  }

 private:
  size_t n_;
};

std::function<std::shared_ptr<mploader::Dataset>()> waiting(size_t n) {
  return [n] { return std::make_shared<WaitingDataset>(n); };
}

mploader::LoaderOptions base_options() {
  mploader::LoaderOptions o;
  o.batch_size = 8;
  o.seed = 7;
  o.drop_last = true;
  return o;
}

}  // namespace

TEST_CASE("tune: every point measured, the recommendation is the bench's on the same rows",
          "[tune][process]") {
  mploader::TuneOptions t;
  t.workers = {0, 1, 2};
  t.batches_per_point = 6;
  const mploader::TuneResult r = mploader::tune(waiting(40), base_options(), t);
  REQUIRE(r.table.size() == 3);
  for (size_t i = 0; i < r.table.size(); ++i) {
    CHECK(r.table[i].workers == t.workers[i]);
    CHECK(r.table[i].batches == 5);
    CHECK(r.table[i].samples_per_s > 0);
    CHECK((r.table[i].workers == 0) == (r.table[i].utilisation < 0));
  }
  CHECK(r.skipped.empty());
  REQUIRE(r.choices.size() == 1);
  // The same rows through the bench's recommend() give the same choice and reason.
  std::vector<bench::RunResult> rows;
  for (const mploader::TunePoint& p : r.table) {
    bench::RunResult row;
    row.config.loader = "mploader";
    row.config.workload = "waiting";
    row.config.workers = p.workers;
    row.config.batch_size = p.batch_size;
    row.config.prefetch = p.prefetch;
    row.samples_per_s = p.samples_per_s;
    row.utilisation = p.utilisation;
    row.busy_ms_per_batch = p.busy_ms_per_batch;
    row.wait_p50_ms = p.wait_p50_ms;
    row.on_cpu = p.on_cpu;
    rows.push_back(row);
  }
  const auto recs = bench::recommend(rows, {r.cpu_budget.cpus, r.cpu_budget.source});
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].workers == r.recommendation.workers);
  CHECK(recs[0].bound == r.recommendation.bound);
  CHECK(recs[0].reason == r.recommendation.reason);
  // The options to build the Loader with: the base's, with the choice applied.
  CHECK(r.options.num_workers == r.recommendation.workers);
  CHECK(r.options.batch_size == 8);
  CHECK(r.options.seed == 7);
  CHECK_THAT(r.summary(), Catch::Contains("recommended: num_workers=" +
                                          std::to_string(r.recommendation.workers)));
}

TEST_CASE("tune: the time budget leaves points out, but the first always runs",
          "[tune][process]") {
  mploader::TuneOptions t;
  t.workers = {0, 1, 2};
  t.batches_per_point = 3;
  t.time_budget = std::chrono::milliseconds(0);
  const mploader::TuneResult r = mploader::tune(waiting(40), base_options(), t);
  REQUIRE(r.table.size() == 1);
  const std::vector<std::string> left_out{"workers=1 prefetch=2 batch=8",
                                          "workers=2 prefetch=2 batch=8"};
  CHECK(r.skipped == left_out);
  CHECK(r.choices.empty());
  CHECK(r.recommendation.workers == 0);
  CHECK_THAT(r.recommendation.reason, Catch::Contains("TuneOptions::time_budget"));
  CHECK_THAT(r.summary(), Catch::Contains("not measured (time budget): 2 points"));
}

TEST_CASE("tune: bad TuneOptions and a dataset smaller than a batch are named",
          "[tune]") {
  const auto refused = [](mploader::TuneOptions t, const std::string& text, size_t n = 40) {
    CHECK_THROWS_WITH(mploader::tune(waiting(n), base_options(), t), Catch::Contains(text));
  };
  mploader::TuneOptions t;
  t.workers = {};
  refused(t, "TuneOptions::workers is empty");
  t.workers = {0, -1};
  refused(t, "TuneOptions::workers holds -1. Give values >= 0");
  t.workers = {0};
  t.prefetch = {0};
  refused(t, "TuneOptions::prefetch holds 0. Give values >= 1");
  t.prefetch = {};
  t.batches_per_point = 1;
  refused(t, "TuneOptions::batches_per_point is 1. Give 2 or more");
  t.batches_per_point = 2;
  refused(t, "fewer samples than a batch", 5);
}

TEST_CASE("tune: the rule needs two points of one batch size and prefetch", "[tune]") {
  mploader::TunePoint a;
  a.workers = 1;
  a.batch_size = 8;
  a.prefetch = 2;
  a.samples_per_s = 100;
  CHECK_THROWS_WITH(mploader::choose_num_workers({a}), Catch::Contains("1 point(s)"));
  mploader::TunePoint b = a;
  b.workers = 2;
  b.prefetch = 4;
  CHECK_THROWS_WITH(mploader::choose_num_workers({a, b}),
                    Catch::Contains("mix batch sizes or prefetch values"));
  b.prefetch = 2;
  b.samples_per_s = 150;
  const mploader::TuneChoice c = mploader::choose_num_workers({a, b}, {1, "a test"});
  CHECK(c.workers == 1);  // 2 workers are over the budget of 1 CPU
  CHECK_THAT(c.budget_note, Catch::Contains("2 workers measured 50 % more samples/s than 1") &&
                                Catch::Contains("may use 1 CPU (a test)"));
}

}  // namespace test_tune
