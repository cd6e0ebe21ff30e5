// Loader::stats(): worker busy time, the caller's wait and head-of-line stall, checked against
// datasets whose per-sample time is known (lower bounds only: sleeps can overrun, never
// undershoot).
#include <catch2/catch.hpp>

#include <mploader/mploader.h>

#include "machine_load.h"
#include "stderr_capture.h"

#include <ATen/ATen.h>

#include <time.h>

#include <chrono>
#include <thread>

namespace test_stats {

namespace {

// Sleeps `sleep` per sample, or `slow_sleep` when loaded in worker `slow_worker`.
class SleepyDataset : public mploader::Dataset {
 public:
  SleepyDataset(size_t n, std::chrono::milliseconds sleep, int slow_worker = -1,
                std::chrono::milliseconds slow_sleep = std::chrono::milliseconds(0))
      : n_(n), sleep_(sleep), slow_worker_(slow_worker), slow_sleep_(slow_sleep) {}
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    const auto info = mploader::worker_info();
    std::this_thread::sleep_for(info && info->id == slow_worker_ ? slow_sleep_ : sleep_);
    return {{"x", at::full({4}, static_cast<double>(index), at::kFloat)}};
  }

 private:
  size_t n_;
  std::chrono::milliseconds sleep_;
  int slow_worker_;
  std::chrono::milliseconds slow_sleep_;
};

mploader::LoaderOptions options(int64_t workers, int64_t batch_size) {
  mploader::LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = batch_size;
  o.in_order = true;
  o.persistent_workers = true;
  return o;
}

constexpr uint64_t kMs = 1000 * 1000;

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// Computes for `cpu` of CPU time per sample: busy on a CPU, as a decoder would be.
class SpinningDataset : public mploader::Dataset {
 public:
  SpinningDataset(size_t n, std::chrono::milliseconds cpu) : n_(n), cpu_(cpu) {}
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    const uint64_t until = thread_cpu_ns() + static_cast<uint64_t>(cpu_.count()) * kMs;
    volatile uint64_t sink = 0;
    while (thread_cpu_ns() < until) sink = sink + 1;
    return {{"x", at::full({4}, static_cast<double>(index), at::kFloat)}};
  }

 private:
  size_t n_;
  std::chrono::milliseconds cpu_;
};

// The whole epoch's counters; REQUIREs that there is exactly one, and finished.
mploader::EpochStats only_epoch(const mploader::LoaderStats& s) {
  REQUIRE(s.epochs.size() == 1);
  REQUIRE(s.epochs[0].finished);
  INFO(s.epochs[0].summary);
  return s.epochs[0];
}

}  // namespace

TEST_CASE("stats: worker busy time covers the time Dataset::get takes", "[stats]") {
  auto data = std::make_shared<SleepyDataset>(32, std::chrono::milliseconds(5));
  mploader::Loader loader(data, options(2, 4));
  int64_t batches = 0;
  for (mploader::Batch& b : loader) batches += b.size() > 0 ? 1 : 0;
  REQUIRE(batches == 8);
  const mploader::LoaderStats s = loader.stats();
  REQUIRE(s.workers.size() == 2);
  REQUIRE(s.batches == 8);
  uint64_t worker_batches = 0;
  for (const mploader::WorkerStats& w : s.workers) {
    CHECK(w.busy_ns >= w.batches * 4 * 5 * kMs);  // 4 samples x 5 ms per batch
    worker_batches += w.batches;
  }
  CHECK(worker_batches == 8);
  // 32 samples x 5 ms over 2 workers: the loop must have waited at least a quarter of that.
  CHECK(s.wait_ns >= 32 * 5 * kMs / 2 / 4);
}

TEST_CASE("stats: a slow worker 0 in order stalls the loop while worker 1's batch is ready",
          "[stats]") {
  auto data = std::make_shared<SleepyDataset>(8, std::chrono::milliseconds(0), 0,
                                              std::chrono::milliseconds(60));
  mploader::Loader loader(data, options(2, 1));
  for (mploader::Batch& b : loader) CHECK(b.size() == 1);
  const mploader::LoaderStats s = loader.stats();
  // Batch 0 goes to worker 0 (60 ms), batch 1 to worker 1 (done at once): the loop waits for
  // batch 0 with batch 1 ready, tens of milliseconds at least.
  CHECK(s.head_of_line_ns >= 20 * kMs);
  CHECK(s.head_of_line_ns <= s.wait_ns);
}

TEST_CASE("stats: fast workers that are never awaited out of turn show no head-of-line stall",
          "[stats]") {
  auto data = std::make_shared<SleepyDataset>(8, std::chrono::milliseconds(0));
  mploader::Loader loader(data, options(1, 1));
  for (mploader::Batch& b : loader) CHECK(b.size() == 1);
  const mploader::LoaderStats s = loader.stats();
  CHECK(s.head_of_line_ns == 0);  // one worker: no later batch can be ready before the due one
  CHECK(s.batches == 8);
}

TEST_CASE("stats: workers that sleep in get() are busy reading, off the CPU, and named as I/O",
          "[stats]") {
  // 2 workers x 5 ms per sample, over a second: the epoch's line is logged at info level.
  auto data = std::make_shared<SleepyDataset>(480, std::chrono::milliseconds(5));
  testing_datasets::StderrCapture captured;
  mploader::LoaderStats s;
  {
    mploader::Loader loader(data, options(2, 4));
    for (mploader::Batch& b : loader) CHECK(b.size() == 4);
    s = loader.stats();
  }
  const std::string log = captured.text();
  for (const mploader::WorkerStats& w : s.workers) {
    // The stages split the busy time exactly; sleeping is reading, and takes no CPU.
    CHECK(w.stages.total_ns() == w.busy_ns);
    CHECK(w.stages.read_ns >= w.batches * 4 * 5 * kMs);
    CHECK(w.stages.decode_ns == 0);
    CHECK(w.stages.transform_ns == 0);
    CHECK(w.stages.write_ns > 0);
    CHECK(w.cpu_ns < w.busy_ns / 4);
  }
  const mploader::EpochStats e = only_epoch(s);
  CHECK(e.batches == 120);
  CHECK(e.workers_running == 2);
  CHECK(e.wall_ns >= 480 * 5 * kMs / 2);
  CHECK(e.wait_ns > e.wall_ns / 2);
  CHECK(e.busy_ns == e.stages.total_ns());
  CHECK(e.bottleneck == mploader::Bottleneck::kWorkersIo);
  CHECK(e.summary.find("raise num_workers to 4") != std::string::npos);
  INFO(log);
  CHECK(log.find("[info] " + e.summary) != std::string::npos);
}

TEST_CASE("stats: a worker computing in get() is named as the bottleneck, with the CPU budget",
          "[stats]") {
  const machine_load::CpuPressure pressure;
  auto data = std::make_shared<SpinningDataset>(40, std::chrono::milliseconds(4));
  mploader::Loader loader(data, options(1, 2));
  for (mploader::Batch& b : loader) CHECK(b.size() == 2);
  const mploader::LoaderStats s = loader.stats();
  REQUIRE(s.workers.size() == 1);
  const mploader::WorkerStats& w = s.workers[0];
  // Sampled every 20 ms of work and when the worker goes idle, which it may not have done yet:
  // it trails by up to that and the last task, never more.
  CHECK(w.cpu_ns + 30 * kMs >= 40 * 4 * kMs);
  const mploader::EpochStats e = only_epoch(s);
  CHECK(e.cpu_budget >= 1);
  // A computing worker that other programs keep off the CPUs is on one for little of its busy
  // time, as a worker waiting on reads is: there the counters cannot tell them apart.
  const std::string busy = pressure.busy_reason();
  if (e.bottleneck != mploader::Bottleneck::kWorkersCompute && !busy.empty()) {
    WARN("skipped: " << busy << "; the computing worker was not named (" << e.summary << ")");
    return;
  }
  CHECK(e.bottleneck == mploader::Bottleneck::kWorkersCompute);
  CHECK(e.summary.find("CPU") != std::string::npos);
}

TEST_CASE("stats: a slow training loop is named as the pace-setter, and each epoch is listed",
          "[stats]") {
  auto data = std::make_shared<SleepyDataset>(24, std::chrono::milliseconds(0));
  mploader::Loader loader(data, options(2, 4));
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (mploader::Batch& b : loader) {
      CHECK(b.size() == 4);
      // 80 ms: the wait for the workers' first batch (tens of ms on a loaded machine, more
      // under sanitizers) stays a small share of the epoch, which the loop's steps set.
      std::this_thread::sleep_for(std::chrono::milliseconds(80));
    }
  }
  const mploader::LoaderStats s = loader.stats();
  REQUIRE(s.epochs.size() == 2);
  for (uint64_t k = 0; k < 2; ++k) {
    const mploader::EpochStats& e = s.epochs[k];
    INFO(e.summary);
    CHECK(e.epoch == k);
    CHECK(e.finished);
    CHECK(e.batches == 6);
    CHECK(e.wall_ns >= 6 * 80 * kMs);
    CHECK(e.bottleneck == mploader::Bottleneck::kLoop);
    CHECK(e.summary.find("the training loop set the pace") != std::string::npos);
  }
}

TEST_CASE("stats: an epoch left before its end is listed unfinished, the running one last",
          "[stats]") {
  auto data = std::make_shared<SleepyDataset>(16, std::chrono::milliseconds(0));
  mploader::Loader loader(data, options(1, 4));
  auto it = loader.begin();
  REQUIRE(it != loader.end());
  mploader::LoaderStats s = loader.stats();
  REQUIRE(s.epochs.size() == 1);
  CHECK_FALSE(s.epochs[0].finished);
  CHECK(s.epochs[0].batches == 1);
  for (mploader::Batch& b : loader) CHECK(b.size() == 4);  // a new epoch abandons the first
  s = loader.stats();
  REQUIRE(s.epochs.size() == 2);
  CHECK_FALSE(s.epochs[0].finished);
  CHECK(s.epochs[1].finished);
  CHECK(s.epochs[1].batches == 4);
}

}  // namespace test_stats
