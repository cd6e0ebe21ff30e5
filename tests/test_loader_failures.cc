// What reaches the training loop when dataset code fails: exceptions with the worker and the
// sample, crashed workers with the signal and the in-flight indices, timeouts, oversized
// batches. No case may hang or leave a process behind.
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <signal.h>

namespace test_loader_failures {

using namespace mploader;
using testing_datasets::CountingDataset;
using testing_datasets::FaultyDataset;
using Fault = FaultyDataset::Fault;

namespace {

LoaderOptions options(int64_t workers, int64_t batch) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = batch;
  o.crash_dir = "/tmp/mploader-test-crashes";  // keep reports out of the build tree
  return o;
}

bool process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_CASE("failures: a dataset exception reaches the loop typed, and the epoch goes on",
          "[failures][process]") {
  Loader loader(std::make_shared<FaultyDataset>(100, 37, Fault::kThrow), options(2, 10));
  std::vector<uint64_t> delivered;
  int errors = 0;
  for (;;) {
    try {
      auto b = loader.next();
      if (!b) break;
      delivered.push_back(b->sequence());
    } catch (const WorkerError& e) {
      ++errors;
      CHECK(e.sample_index() == 37);
      CHECK(e.worker_id() >= 0);
      CHECK(e.original_message() == "cannot decode sample 37");
      CHECK(e.exception_type() == "std::runtime_error");
      CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset::get(37)") &&
                                            Catch::Contains("batch 3 of epoch 0"));
    }
  }
  CHECK(errors == 1);
  CHECK(delivered == std::vector<uint64_t>{0, 1, 2, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("failures: the same exception with num_workers 0", "[failures]") {
  Loader loader(std::make_shared<FaultyDataset>(100, 5, Fault::kThrow), options(0, 10));
  try {
    loader.next();
    FAIL("expected WorkerError");
  } catch (const WorkerError& e) {
    CHECK(e.sample_index() == 5);
    CHECK(e.worker_id() == -1);
    CHECK(e.exception_type() == "std::runtime_error");  // as a worker names it
    CHECK(e.original_message() == "cannot decode sample 5");
  }
}

namespace {

// Sample 3 fails as a Python __getitem__ does through the Python package: a ForeignError
// that carries the Python type's name.
class ForeignFailure : public CountingDataset {
 public:
  ForeignFailure() : CountingDataset(8) {}
  Sample get(int64_t index) override {
    if (index == 3) {
      throw ForeignError("mymodule.BadSample", "Traceback (most recent call last):\n  ...");
    }
    return CountingDataset::get(index);
  }
};

}  // namespace

TEST_CASE("failures: an exception of another language keeps that language's type name",
          "[failures][process]") {
  for (int64_t workers : {0, 2}) {
    Loader loader(std::make_shared<ForeignFailure>(), options(workers, 4));
    try {
      while (loader.next()) {
      }
      FAIL("expected WorkerError");
    } catch (const WorkerError& e) {
      CHECK(e.sample_index() == 3);
      CHECK(e.exception_type() == "mymodule.BadSample");
      CHECK_THAT(e.original_message(), Catch::StartsWith("Traceback (most recent call last)"));
    }
  }
}

TEST_CASE("failures: a worker killed by a signal is reported with its in-flight indices",
          "[failures][process]") {
  std::vector<int> pids;
  {
    auto o = options(2, 10);
    Loader loader(std::make_shared<FaultyDataset>(100, 42, Fault::kSignal, SIGKILL), o);
    pids = loader.worker_pids();
    try {
      while (loader.next()) {
      }
      FAIL("expected WorkerCrashed");
    } catch (const WorkerCrashed& e) {
      CHECK(e.signal() == SIGKILL);
      CHECK(e.cause() == DeathCause::kKilled);
      const auto& in_flight = e.in_flight_indices();
      CHECK(std::find(in_flight.begin(), in_flight.end(), 42) != in_flight.end());
      CHECK_THAT(std::string(e.what()), Catch::Contains("SIGKILL") &&
                                            Catch::Contains("Dataset::get(42)") &&
                                            Catch::Contains("OOM"));
    }
    CHECK_THROWS_AS(loader.next(), WorkerCrashed);  // the loader stays failed, never hangs
  }
  for (int pid : pids) CHECK(process_gone(pid));
}

TEST_CASE("failures: a worker that exits is reported with its exit code", "[failures][process]") {
  Loader loader(std::make_shared<FaultyDataset>(100, 3, Fault::kExit), options(1, 10));
  try {
    loader.next();
    FAIL("expected WorkerCrashed");
  } catch (const WorkerCrashed& e) {
    CHECK(e.signal() == 0);
    CHECK(e.exit_code() == 3);
  }
}

TEST_CASE("failures: a worker killed from outside while the loop waits", "[failures][process]") {
  Loader loader(std::make_shared<FaultyDataset>(100, 15, Fault::kSleep), options(1, 10));
  REQUIRE(loader.next());  // batch 0; batch 1 (index 15) now sleeps in the worker
  kill(loader.worker_pids()[0], SIGTERM);
  CHECK_THROWS_AS(loader.next(), WorkerCrashed);
}

TEST_CASE("failures: no batch within timeout names the worker and the sample",
          "[failures][process]") {
  auto o = options(1, 10);
  o.timeout = std::chrono::milliseconds(300);
  o.crash_dir = "/tmp/mploader-test-crashes";
  // Sample 12 never returns: only the timeout ends the wait, however busy the machine.
  Loader loader(std::make_shared<FaultyDataset>(100, 12, Fault::kHang), o);
  REQUIRE(loader.next());
  try {
    loader.next();
    FAIL("expected TimeoutError");
  } catch (const TimeoutError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("300 ms") &&
                                          Catch::Contains("Dataset::get(12)") &&
                                          Catch::Contains("worker 0"));
  }
}

TEST_CASE("failures: an oversized batch without overflow names both sizes",
          "[failures][process]") {
  auto o = options(1, 256);  // 256 x (16 + 8) bytes: more than one 4 KiB page
  o.max_batch_bytes = 1024;
  o.allow_overflow = false;
  Loader loader(std::make_shared<CountingDataset>(512), o);
  try {
    loader.next();
    FAIL("expected BatchTooLarge");
  } catch (const BatchTooLarge& e) {
    CHECK(e.slot_bytes() == 4096);  // slots are whole pages
    CHECK(e.batch_bytes() > 4096);
    CHECK_THAT(std::string(e.what()), Catch::Contains("max_batch_bytes") &&
                                          Catch::Contains("allow_overflow"));
  }
}

TEST_CASE("failures: samples that cannot be stacked name the tensor and both shapes",
          "[failures][process]") {
  for (int64_t workers : {0, 2}) {
    CAPTURE(workers);
    // Worker batches stream sample by sample; in-process batches are collated whole: the
    // message is the same.
    Loader loader(std::make_shared<testing_datasets::VarLenDataset>(40), options(workers, 4));
    try {
      loader.next();
      FAIL("expected WorkerError");
    } catch (const WorkerError& e) {
      CHECK(e.exception_type() == "mploader::SampleError");
      CHECK(e.sample_index() == 1);
      CHECK_THAT(e.original_message(),
                 Catch::Contains("cannot stack 'tokens': sample 1 has shape [2] but sample 0 "
                                 "has [1]") && Catch::Contains("pad_collate"));
    }
  }
}

namespace {

// Epoch 0's plan is invalid (index 99 of a 10-sample dataset, or an empty batch); later
// epochs are [[0, 1], [2, 3]].
class BadFirstEpochSampler : public BatchSampler {
 public:
  explicit BadFirstEpochSampler(bool empty_batch) : empty_batch_(empty_batch) {}
  std::vector<std::vector<int64_t>> batches(size_t, uint64_t epoch) override {
    if (epoch > 0) return {{0, 1}, {2, 3}};
    if (empty_batch_) return {{0, 1}, {}};
    return {{0, 1}, {2, 99}};
  }
  size_t max_batch_size() const override { return 2; }

 private:
  bool empty_batch_;
};

// What a loop that skips failed batches sees of one epoch: the batches' sequences and the
// errors' texts. Bounded, so that an error raised on every call fails the test, not hangs it.
std::pair<std::vector<uint64_t>, std::vector<std::string>> skip_errors(Loader& loader) {
  std::vector<uint64_t> sequences;
  std::vector<std::string> errors;
  for (int call = 0; call < 20; ++call) {
    try {
      auto b = loader.next();
      if (!b) break;
      sequences.push_back(b->sequence());
    } catch (const OptionError& e) {
      errors.push_back(e.option() + ": " + e.what());
    } catch (const Error& e) {
      errors.push_back(std::string("not an OptionError: ") + e.what());
    }
  }
  return {sequences, errors};
}

}  // namespace

TEST_CASE("failures: an invalid batch plan ends its epoch with one OptionError",
          "[failures][process]") {
  for (int64_t workers : {0, 1}) {
    for (bool empty_batch : {false, true}) {
      CAPTURE(workers, empty_batch);
      auto o = options(workers, 2);
      o.batch_sampler = std::make_shared<BadFirstEpochSampler>(empty_batch);
      Loader loader(std::make_shared<CountingDataset>(10), o);
      auto [sequences, errors] = skip_errors(loader);
      CHECK(sequences.empty());
      REQUIRE(errors.size() == 1);
      if (empty_batch) {
        CHECK_THAT(errors[0], Catch::StartsWith("batch_sampler: ") &&
                                  Catch::Contains("batch 1 with 0 indices"));
      } else {
        CHECK_THAT(errors[0], Catch::StartsWith("sampler: ") && Catch::Contains("index 99") &&
                                  Catch::Contains("10 samples"));
      }
      // The next epoch starts normally.
      std::tie(sequences, errors) = skip_errors(loader);
      CHECK(errors.empty());
      CHECK(sequences == std::vector<uint64_t>{0, 1});
      CHECK(loader.epoch() == 1);
    }
  }
}

TEST_CASE("failures: an invalid batch plan under range-for raises once and then the epoch is over",
          "[failures][process]") {
  for (int64_t workers : {0, 1}) {
    CAPTURE(workers);
    auto o = options(workers, 2);
    o.batch_sampler = std::make_shared<BadFirstEpochSampler>(false);
    Loader loader(std::make_shared<CountingDataset>(10), o);
    size_t seen = 0;
    CHECK_THROWS_AS([&] { for (Batch& b : loader) seen += b.size(); }(), OptionError);
    CHECK_FALSE(loader.next());  // epoch 0 ended with its error
    for (Batch& b : loader) seen += b.size();
    CHECK(seen == 4);
    CHECK(loader.epoch() == 1);
  }
}

namespace {

// Epoch 1's plan is invalid; epochs 0 and 2 are fine.
class BadSecondEpochSampler : public BatchSampler {
 public:
  std::vector<std::vector<int64_t>> batches(size_t, uint64_t epoch) override {
    if (epoch == 1) return {{0, 1}, {2, 99}};
    if (epoch == 2) return {{6, 7}};
    return {{0, 1}, {2, 3}, {4, 5}};
  }
  size_t max_batch_size() const override { return 2; }
};

}  // namespace

TEST_CASE("failures: an epoch refused in the middle of another abandons the old one",
          "[failures][process]") {
  for (int64_t workers : {0, 1}) {
    CAPTURE(workers);
    auto o = options(workers, 2);
    o.batch_sampler = std::make_shared<BadSecondEpochSampler>();
    Loader loader(std::make_shared<CountingDataset>(10), o);
    REQUIRE(loader.next()->sequence() == 0);  // epoch 0 runs, two batches left
    loader.set_epoch(1);
    CHECK_THROWS_AS(loader.begin(), OptionError);
    CHECK(loader.epoch() == 1);
    CHECK_FALSE(loader.next());  // epoch 1 ended with its error; nothing of epoch 0 comes
    auto b = loader.next();
    REQUIRE(b);
    CHECK(b->epoch() == 2);
    CHECK(b->indices() == std::vector<int64_t>{6, 7});
  }
}

namespace {

using Kind = testing_datasets::MismatchDataset::Kind;

// Runs one epoch of 16 samples in batches of 4 where sample 6 (row 2 of batch 1) cannot be
// collated; returns the one WorkerError's text and checks that the other batches arrive.
std::string collate_failure(int64_t workers, std::shared_ptr<Collator> collate, Kind kind) {
  auto o = options(workers, 4);
  o.collate = std::move(collate);
  Loader loader(std::make_shared<testing_datasets::MismatchDataset>(16, 6, kind), o);
  std::vector<uint64_t> delivered;
  std::string text = "no WorkerError";
  for (int call = 0; call < 10; ++call) {
    try {
      auto b = loader.next();
      if (!b) break;
      delivered.push_back(b->sequence());
    } catch (const WorkerError& e) {
      CHECK(e.sample_index() == 6);
      if (workers == 0) CHECK(e.worker_id() == -1);
      CHECK_THAT(std::string(e.what()), Catch::Contains(e.original_message()));
      text = e.original_message();
    }
  }
  CHECK(delivered == std::vector<uint64_t>{0, 2, 3});
  return text;
}

}  // namespace

TEST_CASE("failures: a sample that cannot be collated is named by its dataset index",
          "[failures][process]") {
  for (int64_t workers : {0, 2}) {
    for (bool stack : {true, false}) {  // streamed row by row, and collated whole
      CAPTURE(workers, stack);
      auto collator = [&] { return stack ? stack_collate() : pad_collate(); };
      if (stack) {
        CHECK_THAT(collate_failure(workers, collator(), Kind::kShape),
                   Catch::Contains("cannot stack 'x': sample 6 has shape [9] but sample 4 has "
                                   "[4]") && Catch::Contains("pad_collate"));
      }
      CHECK_THAT(collate_failure(workers, collator(), Kind::kKey),
                 Catch::Contains("sample 6") && Catch::Contains("sample 4") &&
                     Catch::Contains("only in sample 6: 'lbl'") &&
                     Catch::Contains("only in sample 4: 'label'"));
      CHECK_THAT(collate_failure(workers, collator(), Kind::kEmpty),
                 Catch::Contains("sample 6 has no tensors") && Catch::Contains("Dataset::get"));
    }
  }
}

TEST_CASE("failures: a dataset whose samples have no tensors is refused rather than batched empty",
          "[failures][process]") {
  for (int64_t workers : {0, 1}) {
    CAPTURE(workers);
    auto o = options(workers, 4);
    o.max_batch_bytes = 1 << 20;  // no probe in the constructor: the workers meet sample 0
    Loader loader(std::make_shared<testing_datasets::MismatchDataset>(8, -1, Kind::kEmpty), o);
    try {
      auto b = loader.next();
      FAIL("expected WorkerError, got a batch of " << (b ? b->tensors().size() : 0)
                                                   << " tensors");
    } catch (const WorkerError& e) {
      CHECK(e.sample_index() == 0);
      CHECK_THAT(e.original_message(), Catch::Contains("sample 0 has no tensors"));
    }
  }
  // With the probe that sizes the slots, the constructor says it.
  CHECK_THROWS_WITH(
      Loader(std::make_shared<testing_datasets::MismatchDataset>(8, -1, Kind::kEmpty),
             options(1, 4)),
      Catch::Contains("sample 0 has no tensors"));
}

TEST_CASE("failures: a sparse tensor is a WorkerError naming it and to_dense()",
          "[failures][process]") {
  for (int64_t workers : {0, 2}) {
    for (bool stack : {true, false}) {
      CAPTURE(workers, stack);
      const std::string text =
          collate_failure(workers, stack ? stack_collate() : pad_collate(), Kind::kSparse);
      CHECK_THAT(text, Catch::Contains("'x'") && Catch::Contains("sample 6") &&
                           Catch::Contains("sparse") && Catch::Contains("to_dense()"));
      CHECK_THAT(text, !Catch::Contains("Exception raised from"));  // no libtorch backtrace
    }
  }
}

}  // namespace test_loader_failures
