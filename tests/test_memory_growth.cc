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

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

namespace test_memory_growth {

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

// Feeds (private MiB, shared MiB, batches done) samples 500 ms apart; returns the last warning.
std::optional<mploader::detail::MemoryGrowth> feed_split(
    MemoryTrend& trend, const std::vector<std::array<int64_t, 3>>& samples) {
  auto now = MemoryTrend::Clock::now();
  trend.new_process(now, 0);
  trend.new_epoch(0, now);
  std::optional<mploader::detail::MemoryGrowth> growth;
  for (const auto& [private_mib, shared_mib, tasks] : samples) {
    now += std::chrono::milliseconds(500);
    const MemorySplit split{private_mib * kMiB, shared_mib * kMiB};
    if (auto g = trend.add(split, static_cast<uint64_t>(tasks), now)) growth = g;
  }
  return growth;
}

std::string warning_for(const mploader::detail::MemoryGrowth& growth) {
  return mploader::detail::memory_growth_warning(0, 1234, growth, {}, -1, 2, true);
}

TEST_CASE("memory trend: copy-on-write is private growth that shared memory lost in the same "
          "intervals, and a large munmap before a leak is not") {
  // Each interval moves 30 MiB from shared to private: pages copied on write.
  MemoryTrend copying;
  const auto copied = feed_split(
      copying, {{100, 500, 0}, {100, 500, 2}, {130, 470, 3}, {160, 440, 4}, {190, 410, 5}});
  REQUIRE(copied);
  CHECK(copied->copied_bytes == 90 * kMiB);
  CHECK_THAT(warning_for(*copied), Catch::Contains("(copy-on-write)") &&
                                       Catch::Contains("Its shared memory fell by 90.0 MiB"));
  // 300 MiB of shared mapping unmapped (private barely moves), then 30 MiB leaked per interval:
  // shared fell by far more than private grew, yet none of the growth was a copy.
  MemoryTrend unmapping;
  const auto leaked = feed_split(unmapping, {{100, 500, 0}, {100, 500, 2}, {102, 200, 3},
                                             {132, 200, 4}, {162, 200, 5}, {192, 200, 6}});
  REQUIRE(leaked);
  CHECK(leaked->copied_bytes == 2 * kMiB);
  const std::string text = warning_for(*leaked);
  CHECK_THAT(text, !Catch::Contains("copy-on-write") &&
                       Catch::Contains("Its shared memory fell by 300.0 MiB") &&
                       Catch::Contains("without its private memory rising with it") &&
                       Catch::Contains("munmap") &&
                       Catch::Contains("a per-sample cache or a leak"));
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
// process filled before the fork; kNone frees it. kUnmapThenCache frees a 300 MiB buffer the
// main process filled before the fork (munmap: the worker's shared memory falls by that much)
// at its kUnmapAt-th sample, well after warm-up, and keeps every sample's buffer after that.
enum class Growth { kNone, kCache, kCopyOnWrite, kUnmapThenCache };
constexpr int kUnmapAt = 60;

class GrowingDataset : public mploader::Dataset {
 public:
  GrowingDataset(size_t n, Growth growth) : n_(n), growth_(growth) {
    // Before the fork.
    if (growth_ == Growth::kCopyOnWrite) inherited_.assign(n * kMiB, 1);
    if (growth_ == Growth::kUnmapThenCache) inherited_.assign(300 * kMiB, 1);
  }
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    if (growth_ == Growth::kUnmapThenCache && ++gets_ == kUnmapAt) {
      std::vector<char>().swap(inherited_);  // a malloc'ed 300 MiB is given back by munmap
    }
    if (growth_ == Growth::kCopyOnWrite) {
      std::memset(inherited_.data() + index * kMiB, static_cast<int>(index & 0x7f), kMiB);
    } else {
      std::vector<char> buffer(kMiB, static_cast<char>(index));
      const bool keep = growth_ == Growth::kCache ||
                        (growth_ == Growth::kUnmapThenCache && gets_ > kUnmapAt);
      if (keep) cache_.push_back(std::move(buffer));
    }
    return {{"x", at::full({4}, static_cast<double>(index), at::kLong)}};
  }

 private:
  size_t n_;
  Growth growth_;
  std::vector<char> inherited_;
  std::vector<std::vector<char>> cache_;
  int gets_ = 0;
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

TEST_CASE("memory growth: a leak that starts after a 300 MiB munmap is not named "
          "copy-on-write") {
  const auto [log, stats] = run(Growth::kUnmapThenCache, 600, 1);
  INFO(log);
  REQUIRE(!warnings_in(log).empty());
  CHECK(log.find("copy-on-write") == std::string::npos);
  CHECK(log.find("without its private memory rising with it") != std::string::npos);
  CHECK(log.find("a per-sample cache or a leak") != std::string::npos);
  for (const mploader::WorkerStats& w : stats.workers) {
    CHECK(w.memory.shared_start_bytes - w.memory.shared_bytes >= 250 * kMiB);  // it unmapped
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

}  // namespace test_memory_growth
