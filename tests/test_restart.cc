// The restart policy: dead workers are replaced, their batches issued again, and every index
// still arrives exactly once.
#include "crash_test_support.h"

#include <catch2/catch.hpp>

#include <random>
#include <thread>

namespace test_restart {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// Each sample takes a little while, so that kills land in the middle of real work.
class SlowCountingDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return CountingDataset::get(index);
  }
};

}  // namespace

TEST_CASE("restart: 100 random kills across an epoch, every index exactly once",
          "[restart][process]") {
  constexpr int kKills = 100;
  auto o = crash_testing::crash_options(3, crash_testing::fresh_dir());
  o.batch_size = 8;
  o.max_restarts_per_epoch = kKills;
  const size_t n = 8 * 600;
  Loader loader(std::make_shared<SlowCountingDataset>(n), o);
  std::mt19937 random(1234);
  std::vector<int> seen(n, 0);
  int kills = 0;
  uint64_t batches = 0;
  while (auto b = loader.next()) {
    for (int64_t index : b->indices()) ++seen[static_cast<size_t>(index)];
    for (size_t i = 0; i < b->size(); ++i) {
      REQUIRE((*b)["label"][i].item<int64_t>() == b->indices()[i]);
    }
    ++batches;
    if (kills < kKills && random() % 5 == 0) {
      const auto pids = loader.worker_pids();
      kill(pids[random() % pids.size()], SIGKILL);
      ++kills;
      if (random() % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  CHECK(kills == kKills);
  CHECK(batches == 600);
  for (size_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
}

TEST_CASE("restart: past the limit the crash is raised", "[restart][process]") {
  auto o = crash_testing::crash_options(2, crash_testing::fresh_dir());
  o.max_restarts_per_epoch = 1;
  Loader loader(std::make_shared<CountingDataset>(400), o);
  REQUIRE(loader.next());
  kill(loader.worker_pids()[0], SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(loader.next());  // the first death is absorbed by a restart
  kill(loader.worker_pids()[1], SIGKILL);
  try {
    while (loader.next()) {
    }
    FAIL("expected WorkerCrashed");
  } catch (const WorkerCrashed& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("max_restarts_per_epoch = 1"));
  }
}

}  // namespace test_restart
