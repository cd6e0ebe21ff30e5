// The memory-growth warning: MemoryTrend's rule on exact sample sequences, then real workers
// whose private memory grows (a per-sample cache; copy-on-write of a buffer inherited at fork)
// and one whose does not, with the warning's text, Loader::stats() and the crash report's
// memory section.
// ATen before Catch: libtorch defines a CHECK of its own, which must not replace Catch's.
#include <ATen/ATen.h>
#include <mploader/mploader.h>

#include "supervise/memory_trend.h"
#include "stderr_capture.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <thread>
#include <vector>

namespace {

using mploader::detail::MemorySplit;
using mploader::detail::MemoryTrend;
constexpr int64_t kMiB = int64_t{1} << 20;

// Feeds (private MiB, batches done) samples 500 ms apart; returns how many warnings came.
int feed(MemoryTrend& trend, const std::vector<std::pair<int64_t, uint64_t>>& samples,
         MemoryTrend::Clock::time_point& now) {
  int warnings = 0;
  for (const auto& [private_mib, tasks] : samples) {
    now += std::chrono::milliseconds(500);
    warnings += trend.add(MemorySplit{private_mib * kMiB, 100 * kMiB}, tasks, now) ? 1 : 0;
  }
  return warnings;
}

TEST_CASE("memory trend: steady growth warns once per epoch, a single step or warm-up never") {
  auto now = MemoryTrend::Clock::now();
  MemoryTrend trend;
  trend.new_process(now, 0);
  trend.new_epoch(0, now);
  // Warm-up: 300 MiB allocated before the second batch is not growth.
  CHECK(feed(trend, {{10, 0}, {200, 1}, {300, 2}, {300, 3}}, now) == 0);
  // One step of 200 MiB, then level: one rise, not a trend.
  CHECK(feed(trend, {{500, 4}, {500, 5}, {501, 6}, {499, 7}}, now) == 0);
  // 30 MiB more per sample: rises 2 and 3 cross both 64 MiB and a quarter of 300 MiB.
  CHECK(feed(trend, {{530, 8}, {560, 9}}, now) == 1);
  CHECK(trend.summary().growth_warned);
  CHECK(feed(trend, {{590, 10}, {620, 11}, {650, 12}}, now) == 0);  // once per epoch
  CHECK(trend.summary().private_start_bytes == 10 * kMiB);
  CHECK(trend.summary().private_peak_bytes == 650 * kMiB);
  CHECK(trend.summary().samples == 13);
  // A new epoch may warn again, once, when the growth goes on.
  trend.new_epoch(1, now);
  CHECK_FALSE(trend.summary().growth_warned);
  CHECK(feed(trend, {{680, 13}, {710, 14}, {740, 15}}, now) == 1);
  CHECK(trend.summary().epoch == 1);
  CHECK(trend.summary().private_start_bytes == 680 * kMiB);
}

TEST_CASE("memory trend: creeping growth adds up, and a replaced worker starts warm-up again") {
  auto now = MemoryTrend::Clock::now();
  MemoryTrend trend;
  trend.new_process(now, 40);  // the slot's counter runs on across processes
  trend.new_epoch(2, now);
  std::vector<std::pair<int64_t, uint64_t>> creep;
  for (uint64_t i = 0; i < 60; ++i) creep.emplace_back(100 + static_cast<int64_t>(i), 42 + i);
  // 1 MiB per sample: a rise every 4 samples; 64 MiB of growth after 64 samples, not 60.
  CHECK(feed(trend, creep, now) == 0);
  CHECK(feed(trend, {{164, 102}, {168, 103}}, now) == 1);
  // The series keeps at most 64 samples, evenly thinned, the latest last.
  const auto series = trend.series();
  CHECK(series.size() <= MemoryTrend::kMaxPoints + 1);
  CHECK(series.front().private_bytes == 100 * kMiB);
  CHECK(series.back().private_bytes == 168 * kMiB);
  CHECK(series.back().tasks == 63);
  // The replacement is a new process: its warm-up is new, and the epoch's warning stays given.
  trend.new_process(now, 200);
  CHECK(trend.summary().growth_warned);
  CHECK(feed(trend, {{10, 200}, {20, 201}, {30, 202}, {200, 203}, {300, 204}, {400, 205}}, now) ==
        0);
}

// Loads 1 MiB per sample and sleeps, so that the supervisor samples the growth as it happens.
// kCache keeps every sample's buffer; kCopyOnWrite writes the sample's MiB of a buffer the main
// process filled before the fork; kNone frees it.
enum class Growth { kNone, kCache, kCopyOnWrite };

class GrowingDataset : public mploader::Dataset {
 public:
  GrowingDataset(size_t n, Growth growth) : n_(n), growth_(growth) {
    if (growth_ == Growth::kCopyOnWrite) inherited_.assign(n * kMiB, 1);  // before the fork
  }
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    if (growth_ == Growth::kCopyOnWrite) {
      std::memset(inherited_.data() + index * kMiB, static_cast<int>(index & 0x7f), kMiB);
    } else {
      std::vector<char> buffer(kMiB, static_cast<char>(index));
      if (growth_ == Growth::kCache) cache_.push_back(std::move(buffer));
    }
    return {{"x", at::full({4}, static_cast<double>(index), at::kLong)}};
  }

 private:
  size_t n_;
  Growth growth_;
  std::vector<char> inherited_;
  std::vector<std::vector<char>> cache_;
};

mploader::LoaderOptions growth_options() {
  mploader::LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  o.persistent_workers = true;
  o.start_method = mploader::StartMethod::kFork;
  return o;
}

// Runs `epochs` epochs; returns what was logged and the stats at the end.
std::pair<std::string, mploader::LoaderStats> run(Growth growth, size_t n, int epochs) {
  testing_datasets::StderrCapture captured;
  mploader::Loader loader(std::make_shared<GrowingDataset>(n, growth), growth_options());
  for (int e = 0; e < epochs; ++e) {
    loader.set_epoch(static_cast<uint64_t>(e));
    while (loader.next()) {
    }
  }
  mploader::LoaderStats stats = loader.stats();
  return {captured.text(), stats};
}

// The warnings' (worker, epoch) pairs, each as often as it was logged.
std::map<std::pair<int, int>, int> warnings_in(const std::string& log) {
  std::map<std::pair<int, int>, int> seen;
  const std::regex warning(
      R"(worker (\d+) \(pid \d+\) keeps growing its private memory in epoch (\d+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), warning);
       it != std::sregex_iterator(); ++it) {
    ++seen[{std::stoi((*it)[1]), std::stoi((*it)[2])}];
  }
  return seen;
}

TEST_CASE("memory growth: a per-sample cache warns, with its numbers and remedies") {
  const auto [log, stats] = run(Growth::kCache, 400, 2);
  INFO(log);
  const auto warned = warnings_in(log);
  REQUIRE(!warned.empty());
  for (const auto& [who, times] : warned) CHECK(times == 1);  // once per worker per epoch
  CHECK(stats.memory_growth_warnings == warned.size());
  CHECK(log.find("Its shared memory stayed level") != std::string::npos);
  CHECK(log.find("a per-sample cache or a leak") != std::string::npos);
  CHECK(log.find("mploader::NpyArray") != std::string::npos);
  CHECK(log.find("worker_init") != std::string::npos);
  CHECK(log.find("with persistent_workers = true (as now) the growth carries over") !=
        std::string::npos);
  // Both workers grew by ~200 MiB per epoch; stats cover the last epoch.
  REQUIRE(stats.workers.size() == 2);
  for (const mploader::WorkerStats& w : stats.workers) {
    CHECK(w.memory.epoch == 1);
    CHECK(w.memory.samples >= 3);
    CHECK(w.memory.private_bytes - w.memory.private_start_bytes >= 64 * kMiB);
    CHECK(w.memory.private_peak_bytes >= w.memory.private_bytes);
  }
}

TEST_CASE("memory growth: writing to a buffer inherited at fork is named copy-on-write") {
  const auto [log, stats] = run(Growth::kCopyOnWrite, 400, 1);
  INFO(log);
  REQUIRE(!warnings_in(log).empty());
  CHECK(log.find("Its shared memory fell by") != std::string::npos);
  CHECK(log.find("(copy-on-write)") != std::string::npos);
  CHECK(log.find("persistent_workers = true (as now) makes the copies once per run") !=
        std::string::npos);
  for (const mploader::WorkerStats& w : stats.workers) {
    CHECK(w.memory.shared_bytes < w.memory.shared_start_bytes);
  }
}

TEST_CASE("memory growth: a dataset that frees what it loads raises no warning") {
  const auto [log, stats] = run(Growth::kNone, 400, 2);
  INFO(log);
  CHECK(warnings_in(log).empty());
  CHECK(stats.memory_growth_warnings == 0);
  for (const mploader::WorkerStats& w : stats.workers) {
    CHECK(w.memory.epoch == 1);
    CHECK(w.memory.samples >= 3);
    CHECK_FALSE(w.memory.growth_warned);
    CHECK(w.memory.private_peak_bytes - w.memory.private_start_bytes < 32 * kMiB);
  }
}

TEST_CASE("memory growth: a worker killed after growing leaves its memory over the epoch "
          "in the crash report") {
  const std::string crash_dir = "memory-growth-crashes";
  mploader::LoaderOptions o = growth_options();
  o.crash_dir = crash_dir;
  testing_datasets::StderrCapture captured;
  mploader::Loader loader(std::make_shared<GrowingDataset>(2000, Growth::kCache), o);
  // Take batches until the loader has warned about worker 0, then kill that worker.
  while (loader.stats().workers.at(0).memory.growth_warned == false) REQUIRE(loader.next());
  REQUIRE(kill(loader.worker_pids().at(0), SIGKILL) == 0);
  std::string report_path;
  try {
    while (loader.next()) {
    }
    FAIL("the loader went on without worker 0");
  } catch (const mploader::WorkerCrashed& e) {
    report_path = e.summary().report_path;
  }
  INFO(captured.text());
  REQUIRE(!report_path.empty());
  std::ifstream in(report_path);
  const nlohmann::json report = nlohmann::json::parse(in);
  const nlohmann::json& memory = report["details"]["memory"];
  CHECK(memory["growth_warned"] == true);
  CHECK(memory["epoch"] == 0);
  const nlohmann::json& series = memory["series"];
  REQUIRE(series.size() >= 3);
  CHECK(series.back()["private_bytes"].get<int64_t>() -
            series.front()["private_bytes"].get<int64_t>() >= 64 * kMiB);
  CHECK(series.back()["batches"].get<uint64_t>() > series.front()["batches"].get<uint64_t>());
  CHECK(memory["private_peak_bytes"].get<int64_t>() >= memory["private_bytes"].get<int64_t>());
  CHECK(report["evidence"].get<std::string>().find("it kept growing: the loader warned") !=
        std::string::npos);
}

}  // namespace
