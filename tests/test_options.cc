// Every option a user can get wrong fails at construction with an error that names it.
#include "test_datasets.h"
#include "tmpfs_mount.h"

#include <catch2/catch.hpp>

namespace test_options {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// Constructs a loader and returns the OptionError's option and message ("" if none thrown).
std::pair<std::string, std::string> option_error(LoaderOptions o) {
  try {
    Loader loader(std::make_shared<CountingDataset>(100), o);
  } catch (const OptionError& e) {
    return {e.option(), e.what()};
  }
  return {"", ""};
}

LoaderOptions base_options() {
  LoaderOptions o;
  o.batch_size = 8;
  o.num_workers = 1;
  return o;
}

}  // namespace

TEST_CASE("options: negative num_workers", "[options]") {
  auto o = base_options();
  o.num_workers = -2;  // -1 is mploader::kAuto
  auto [option, message] = option_error(o);
  CHECK(option == "num_workers");
  CHECK_THAT(message, Catch::Contains("got -2") && Catch::Contains("mploader::kAuto"));
}

TEST_CASE("options: batch_size 0", "[options]") {
  auto o = base_options();
  o.batch_size = 0;
  auto [option, message] = option_error(o);
  CHECK(option == "batch_size");
  CHECK_THAT(message, Catch::Contains("at least 1, got 0"));
}

TEST_CASE("options: prefetch_factor 0 and too large", "[options]") {
  auto o = base_options();
  o.prefetch_factor = 0;
  CHECK(option_error(o).first == "prefetch_factor");
  o.prefetch_factor = 1000;
  auto [option, message] = option_error(o);
  CHECK(option == "prefetch_factor");
  CHECK_THAT(message, Catch::Contains("got 1000"));
}

TEST_CASE("options: negative max_restarts_per_epoch", "[options]") {
  auto o = base_options();
  o.max_restarts_per_epoch = -1;
  auto [option, message] = option_error(o);
  CHECK(option == "max_restarts_per_epoch");
  CHECK_THAT(message, Catch::Contains("got -1") && Catch::Contains("2 is a good value"));
}

TEST_CASE("options: negative timeout", "[options]") {
  auto o = base_options();
  o.timeout = std::chrono::milliseconds(-5);
  CHECK(option_error(o).first == "timeout");
}

TEST_CASE("options: missing shm_dir and a file as shm_dir", "[options]") {
  auto o = base_options();
  o.shm_dir = "/nonexistent/mploader-shm";
  auto [option, message] = option_error(o);
  CHECK(option == "shm_dir");
  CHECK_THAT(message, Catch::Contains("/nonexistent/mploader-shm") &&
                          Catch::Contains("does not exist"));
  o.shm_dir = "/etc/hostname";
  CHECK_THAT(option_error(o).second, Catch::Contains("not a directory"));
}

TEST_CASE("options: a null dataset", "[options]") {
  CHECK_THROWS_AS(Loader(nullptr, base_options()), OptionError);
}

TEST_CASE("options: a full shm_dir fails at construction with both sizes", "[options][root]") {
  TmpfsMount mount("1M");
  if (!mount.ok()) {
    WARN("skipped: " << mount.why_not());
    return;
  }
  auto o = base_options();
  o.num_workers = 2;
  o.shm_dir = mount.path();
  o.max_batch_bytes = 4 << 20;  // 3 slots of 4 MiB per worker cannot fit in 1 MiB
  try {
    Loader loader(std::make_shared<CountingDataset>(100), o);
    FAIL("expected ShmError");
  } catch (const ShmError& e) {
    CHECK(e.bytes_needed() > (8u << 20));
    CHECK(e.bytes_free() <= (1u << 20));
    CHECK_THAT(std::string(e.what()), Catch::Contains(mount.path()) &&
                                          Catch::Contains("--shm-size") &&
                                          Catch::Contains("prefetch_factor"));
  }
}

TEST_CASE("options: a batch sampler returning bad indices is named", "[options]") {
  struct BadSampler : BatchSampler {
    std::vector<std::vector<int64_t>> batches(size_t, uint64_t) override { return {{0, 500}}; }
    size_t max_batch_size() const override { return 2; }
  };
  auto o = base_options();
  o.num_workers = 0;
  o.batch_sampler = std::make_shared<BadSampler>();
  Loader loader(std::make_shared<CountingDataset>(100), o);
  try {
    loader.next();
    FAIL("expected OptionError");
  } catch (const OptionError& e) {
    CHECK(e.option() == "sampler");
    CHECK_THAT(std::string(e.what()), Catch::Contains("index 500") && Catch::Contains("100"));
  }
}

}  // namespace test_options
