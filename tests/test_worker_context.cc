// Worker context: worker_info(), deterministic seeds, worker_init, persistent workers.
#include "crash_test_support.h"

#include <c10/core/InferenceMode.h>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <set>

namespace test_worker_context {

using namespace mploader;

namespace {

// Each sample reports the worker that loaded it, its seed, and a draw from libtorch's
// default generator (what random augmentation would use).
class WhoAmIDataset : public Dataset {
 public:
  size_t size() const override { return 64; }
  Sample get(int64_t) override {
    auto info = worker_info();
    return {{"worker", at::scalar_tensor(info ? int64_t{info->id} : int64_t{-1}, at::kLong)},
            {"pid", at::scalar_tensor(int64_t{getpid()}, at::kLong)},
            {"seed",
             at::scalar_tensor(static_cast<int64_t>(info ? info->seed >> 1 : 0), at::kLong)},
            {"rank", at::scalar_tensor(info ? info->rank : int64_t{-1}, at::kLong)},
            {"draw", at::rand({1}, at::kDouble)}};
  }
};

struct EpochView {
  std::set<int64_t> workers, pids, seeds;
  std::vector<double> draws;
};

EpochView run_epoch(Loader& loader) {
  EpochView v;
  for (Batch& b : loader) {
    for (int64_t i = 0; i < static_cast<int64_t>(b.size()); ++i) {
      v.workers.insert(b["worker"][i].item<int64_t>());
      v.pids.insert(b["pid"][i].item<int64_t>());
      v.seeds.insert(b["seed"][i].item<int64_t>());
      v.draws.push_back(b["draw"][i][0].item<double>());
      CHECK(b["rank"][i].item<int64_t>() == 3);
    }
  }
  return v;
}

LoaderOptions context_options(bool persistent) {
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  o.seed = 77;
  o.rank = 3;
  o.world_size = 4;
  o.persistent_workers = persistent;
  return o;
}

}  // namespace

TEST_CASE("context: worker_info names the worker, and seeds differ by worker and epoch",
          "[context][process]") {
  Loader loader(std::make_shared<WhoAmIDataset>(), context_options(true));
  CHECK_FALSE(worker_info().has_value());  // the main process is no worker
  EpochView e0 = run_epoch(loader);
  EpochView e1 = run_epoch(loader);
  CHECK(e0.workers == std::set<int64_t>{0, 1});
  CHECK(e0.seeds.size() == 2);  // one seed per worker
  for (int64_t s : e0.seeds) CHECK(e1.seeds.count(s) == 0);  // a new seed each epoch
  CHECK(e0.pids == e1.pids);  // persistent: the same processes
  std::set<double> distinct(e0.draws.begin(), e0.draws.end());
  CHECK(distinct.size() == e0.draws.size());  // no two workers replay the same randoms
}

TEST_CASE("context: the same seed gives the same per-worker seeds in another run",
          "[context][process]") {
  std::set<int64_t> first, second;
  {
    Loader loader(std::make_shared<WhoAmIDataset>(), context_options(false));
    first = run_epoch(loader).seeds;
  }
  {
    Loader loader(std::make_shared<WhoAmIDataset>(), context_options(false));
    second = run_epoch(loader).seeds;
  }
  CHECK(first == second);
  std::set<int64_t> expected;
  for (int w = 0; w < 2; ++w) expected.insert(static_cast<int64_t>(worker_seed(77, 0, w) >> 1));
  CHECK(first == expected);
}

TEST_CASE("context: without persistent_workers each epoch has fresh workers",
          "[context][process]") {
  Loader loader(std::make_shared<WhoAmIDataset>(), context_options(false));
  const auto first_pids = loader.worker_pids();
  EpochView e0 = run_epoch(loader);
  CHECK(loader.worker_pids().empty());  // stopped at the end of the epoch
  for (int pid : first_pids) CHECK(crash_testing::process_gone(pid));
  EpochView e1 = run_epoch(loader);
  for (int64_t pid : e1.pids) CHECK(e0.pids.count(pid) == 0);
  CHECK(e1.workers == std::set<int64_t>{0, 1});
}

namespace {

// Opens its file in worker_init, as an HDF5 or database handle must be: one descriptor per
// worker, never one inherited across fork.
class PerWorkerFileDataset : public Dataset {
 public:
  explicit PerWorkerFileDataset(std::string path) : path_(std::move(path)) {}
  size_t size() const override { return 40; }
  void open_in_worker() {
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path_);
  }
  Sample get(int64_t index) override {
    if (fd_ < 0) throw std::runtime_error("get() before worker_init opened the file");
    char byte = 0;
    if (pread(fd_, &byte, 1, index) != 1) throw std::runtime_error("short read");
    return {{"byte", at::scalar_tensor(int64_t{byte}, at::kLong)},
            {"fd", at::scalar_tensor(int64_t{fd_}, at::kLong)},
            {"pid", at::scalar_tensor(int64_t{getpid()}, at::kLong)}};
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

TEST_CASE("context: worker_init opens a file handle in each worker", "[context][process]") {
  const std::string path = crash_testing::fresh_dir() + "/data.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 40; ++i) out.put(static_cast<char>('A' + i % 26));
  }
  auto data = std::make_shared<PerWorkerFileDataset>(path);
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 5;
  o.max_batch_bytes = 1 << 16;  // no probe: the main process never opens the file
  o.worker_init = [data](const WorkerInfo& info) {
    REQUIRE(info.num_workers == 2);
    data->open_in_worker();
  };
  Loader loader(data, o);
  std::map<int64_t, std::set<int64_t>> fds_by_pid;
  for (Batch& b : loader) {
    for (int64_t i = 0; i < static_cast<int64_t>(b.size()); ++i) {
      CHECK(b["byte"][i].item<int64_t>() == 'A' + b.indices()[i] % 26);
      fds_by_pid[b["pid"][i].item<int64_t>()].insert(b["fd"][i].item<int64_t>());
    }
  }
  CHECK(fds_by_pid.size() == 2);
  for (const auto& [pid, fds] : fds_by_pid) CHECK(fds.size() == 1);
}

TEST_CASE("context: a worker_init that throws is reported as such", "[context][process]") {
  LoaderOptions o = crash_testing::crash_options(2, crash_testing::fresh_dir());
  o.worker_init = [](const WorkerInfo& info) {
    if (info.id == 1) throw std::runtime_error("database unreachable");
  };
  auto out = crash_testing::run_until_crash(
      std::make_shared<testing_datasets::CountingDataset>(100), o);
  REQUIRE(out.threw);
  CHECK(out.summary.worker_id == 1);
  CHECK_THAT(out.message, Catch::Contains("worker_init threw std::runtime_error: database "
                                          "unreachable"));
}

namespace {

// Each sample says whether Dataset::get ran under c10::InferenceMode.
class ModeDataset : public Dataset {
 public:
  size_t size() const override { return 8; }
  Sample get(int64_t) override {
    const int64_t inference = c10::InferenceMode::is_enabled();
    return {{"inference", at::scalar_tensor(inference, at::kLong)}};
  }
};

}  // namespace

TEST_CASE("context: workers run get() under InferenceMode, num_workers 0 in the caller's mode",
          "[context][process]") {
  for (int64_t workers : {0, 2}) {
    CAPTURE(workers);
    LoaderOptions o;
    o.num_workers = workers;
    o.batch_size = 4;
    Loader loader(std::make_shared<ModeDataset>(), o);
    for (Batch& b : loader) {
      CHECK(b["inference"].sum().item<int64_t>() == (workers > 0 ? 4 : 0));
    }
  }
}

}  // namespace test_worker_context
