// Loader::stats(): worker busy time, the caller's wait and head-of-line stall, checked against
// datasets whose per-sample time is known (lower bounds only: sleeps can overrun, never
// undershoot).
#include <catch2/catch.hpp>

#include <mploader/mploader.h>

#include <ATen/ATen.h>

#include <chrono>
#include <thread>

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
