// Sizing the ring slots never runs dataset code in the training process: the two stories that
// made it matter (a lazily opened file shared through fork, a crash in sample 0), with the
// default options, and the tensor-table limits checked at construction.
#include "crash_test_support.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace test_slot_probe {

using namespace mploader;
using crash_testing::fresh_dir;
using testing_datasets::FaultyDataset;

namespace {

constexpr int64_t kRowValues = 64;  // int32 values per row: every value is the row's index

std::string write_rows_file(int64_t rows) {
  const std::string path = fresh_dir() + "/rows.bin";
  std::ofstream out(path, std::ios::binary);
  std::vector<int32_t> row(kRowValues);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), static_cast<int32_t>(r));
    out.write(reinterpret_cast<const char*>(row.data()), sizeof(int32_t) * kRowValues);
  }
  return path;
}

// Opens its file on the first get(), as dataset.h advises, and reads with lseek + read: the
// file offset lives in the open file description, which fork shares. A descriptor opened in
// the main process before the workers fork is one offset for all of them.
class LazyFileDataset : public Dataset {
 public:
  LazyFileDataset(std::string path, size_t rows) : path_(std::move(path)), rows_(rows) {}
  ~LazyFileDataset() override {
    if (fd_ >= 0) close(fd_);
  }
  size_t size() const override { return rows_; }
  Sample get(int64_t index) override {
    if (fd_ < 0) fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("open " + path_ + ": " + strerror(errno));
    at::Tensor row = at::empty({kRowValues}, at::kInt);
    const size_t bytes = sizeof(int32_t) * kRowValues;
    lseek(fd_, static_cast<off_t>(index * static_cast<int64_t>(bytes)), SEEK_SET);
    size_t done = 0;
    while (done < bytes) {
      const ssize_t got = read(fd_, static_cast<char*>(row.data_ptr()) + done, bytes - done);
      if (got <= 0) throw std::runtime_error("short read in " + path_);
      done += static_cast<size_t>(got);
    }
    return {{"row", row}, {"index", at::scalar_tensor(index, at::kLong)}};
  }
  bool opened() const { return fd_ >= 0; }

 private:
  std::string path_;
  size_t rows_;
  int fd_ = -1;
};

// Counts the get() calls made in the process that built it (the training process).
class ParentCallCounter : public testing_datasets::CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    if (getpid() == creator_) ++calls_in_creator_;
    return CountingDataset::get(index);
  }
  int calls_in_creator() const { return calls_in_creator_; }

 private:
  pid_t creator_ = getpid();
  int calls_in_creator_ = 0;
};

// A sample of `tensors` tensors named `prefix`<i>, each of `dims` dimensions of size 1.
class WideDataset : public Dataset {
 public:
  WideDataset(size_t tensors, size_t dims, std::string prefix)
      : tensors_(tensors), dims_(dims), prefix_(std::move(prefix)) {}
  size_t size() const override { return 8; }
  Sample get(int64_t index) override {
    Sample s;
    for (size_t t = 0; t < tensors_; ++t) {
      s.set(prefix_ + std::to_string(t),
            at::full(std::vector<int64_t>(dims_, 1), static_cast<double>(index), at::kFloat));
    }
    return s;
  }

 private:
  size_t tensors_;
  size_t dims_;
  std::string prefix_;
};

// Each sample waits until two have been asked for, across processes (a count in memory shared
// by fork): samples that meet, as PyTorch's worker-seed tests' datasets do. A lone reader never
// gets past the first; it gives up after 2 minutes with an exception, so that a probe that
// waits for it fails the test instead of hanging it.
class MeetingDataset : public Dataset {
 public:
  MeetingDataset()
      : arrived_(static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>),
                                                     PROT_READ | PROT_WRITE,
                                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0))) {
    new (arrived_) std::atomic<int>(0);
  }
  ~MeetingDataset() override { munmap(arrived_, sizeof(std::atomic<int>)); }
  size_t size() const override { return 8; }
  Sample get(int64_t index) override {
    const int me = arrived_->fetch_add(1) + 1;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (arrived_->load() < 2 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (arrived_->load() < 2) throw std::runtime_error("no other reader came in 2 minutes");
    return {{"index", at::scalar_tensor(index, at::kLong)}, {"arrival", at::scalar_tensor(me)}};
  }

 private:
  std::atomic<int>* arrived_;
};

LoaderOptions two_workers() {
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 16;
  o.shuffle = true;
  o.crash_dir = fresh_dir();
  return o;  // no max_batch_bytes: the slots are sized by the probe
}

}  // namespace

TEST_CASE("probe: the slot-size probe runs no dataset code in the training process",
          "[probe][process]") {
  auto data = std::make_shared<ParentCallCounter>(100);
  Loader loader(data, two_workers());
  size_t samples = 0;
  for (Batch& b : loader) samples += static_cast<size_t>(b["label"].size(0));
  CHECK(samples == 100);
  CHECK(data->calls_in_creator() == 0);
}

TEST_CASE("probe: a lazily opened file is opened in each worker, and every row is right",
          "[probe][process]") {
  const int64_t rows = 4000;
  auto data = std::make_shared<LazyFileDataset>(write_rows_file(rows), rows);
  LoaderOptions o = two_workers();
  o.persistent_workers = true;  // the same worker processes, and descriptors, all run long
  Loader loader(data, o);
  CHECK_FALSE(data->opened());  // the training process never opened it
  for (int epoch = 0; epoch < 3; ++epoch) {
    int64_t wrong = 0, seen = 0;
    for (Batch& b : loader) {
      const at::Tensor index = b["index"];
      const at::Tensor expected = index.to(at::kInt).unsqueeze(1).expand({-1, kRowValues});
      wrong += b["row"].ne(expected).any(1).sum().item<int64_t>();
      seen += index.size(0);
    }
    CHECK(seen == rows);
    CHECK(wrong == 0);
  }
  CHECK_FALSE(data->opened());
}

TEST_CASE("probe: a segfault in sample 0 is a diagnosed WorkerCrashed from the constructor",
          "[probe][crash][process]") {
  LoaderOptions o = two_workers();
  auto data = std::make_shared<FaultyDataset>(100, 0, FaultyDataset::Fault::kSegv);
  try {
    Loader loader(data, o);
    FAIL("the constructor returned");
  } catch (const WorkerCrashed& e) {
    CHECK(e.cause() == DeathCause::kSegfault);
    CHECK(e.signal() == SIGSEGV);
    CHECK(crash_testing::contains(e.in_flight_indices(), 0));
    CHECK_THAT(std::string(e.what()), Catch::Contains("size the ring slots") &&
                                          Catch::Contains("Dataset::get(0)") &&
                                          Catch::Contains("Remedy:"));
    REQUIRE_FALSE(e.report_path().empty());
    std::ifstream in(e.report_path());
    const auto report = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(report.is_object());
    CHECK(report["cause"] == "segfault");
    CHECK(report["crash_record"]["sample_index"] == 0);
    CHECK(crash_testing::process_gone(e.pid()));
  }
}

TEST_CASE("probe: Dataset::get(0) throwing is a WorkerError naming sample 0",
          "[probe][process]") {
  auto data = std::make_shared<FaultyDataset>(100, 0, FaultyDataset::Fault::kThrow);
  try {
    Loader loader(data, two_workers());
    FAIL("the constructor returned");
  } catch (const WorkerError& e) {
    CHECK(e.sample_index() == 0);
    CHECK(e.original_message() == "cannot decode sample 0");
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::get(0)") &&
                                          Catch::Contains("sizing the ring slots"));
  }
}

TEST_CASE("probe: a hang in sample 0 ends in a TimeoutError when a timeout is set",
          "[probe][crash][process]") {
  LoaderOptions o = two_workers();
  o.timeout = std::chrono::milliseconds(500);
  auto data = std::make_shared<FaultyDataset>(100, 0, FaultyDataset::Fault::kHang);
  CHECK_THROWS_AS(Loader(data, o), TimeoutError);
}

TEST_CASE("probe: samples that wait for each other start the loader once the probe gives up",
          "[probe][process]") {
  LoaderOptions o = two_workers();
  o.batch_size = 1;
  o.shuffle = false;
  auto data = std::make_shared<MeetingDataset>();
  Loader loader(data, o);  // before the bound on the probe, this never returned
  std::vector<int64_t> seen;
  for (Batch& b : loader) seen.push_back(b["index"].item<int64_t>());
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("probe: 40 tensors of 127-character names and 16 dimensions load",
          "[probe][limits][process]") {
  auto data = std::make_shared<WideDataset>(40, 15, std::string(124, 'n'));
  LoaderOptions o = two_workers();
  o.batch_size = 4;
  Loader loader(data, o);
  size_t batches = 0;
  for (Batch& b : loader) {
    CHECK(b[std::string(124, 'n') + "39"].dim() == 16);
    ++batches;
  }
  CHECK(batches == 2);
}

TEST_CASE("probe: the tensor-table limits fail at construction, naming the limit and the fix",
          "[probe][limits][process]") {
  struct Case {
    size_t tensors, dims;
    size_t name;
    const char* says;
  };
  const Case cases[] = {{65, 1, 4, "at most 64 tensors"},
                        {1, 16, 4, "at most 16 are supported"},
                        {1, 1, 128, "at most 127 are supported"}};
  for (const Case& c : cases) {
    auto data = std::make_shared<WideDataset>(c.tensors, c.dims, std::string(c.name - 1, 'n'));
    try {
      Loader loader(data, two_workers());
      FAIL("the constructor returned for " << c.says);
    } catch (const WorkerError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(c.says) && Catch::Contains("Fix:") &&
                                            Catch::Contains("tensor table"));
    }
  }
}

}  // namespace test_slot_probe
