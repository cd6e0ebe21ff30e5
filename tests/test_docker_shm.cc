// Docker's default /dev/shm, end to end: a 64 MiB tmpfs stands in for it, as `shm_dir`, and
// the user's own dataset writes large files into it as well. The story, told on stdout in the
// order a user meets it (docs/crash-reports.md, "Docker's 64 MiB /dev/shm"):
//  1. rings larger than the tmpfs: refused when the Loader is built, with the sizes and the
//     fix, never a SIGBUS later;
//  2. rings that fit, next to a dataset that fills the tmpfs with its own files: the worker
//     dies of SIGBUS in the dataset's file, the death is classified shm_full with the remedy,
//     and the ring, reserved when it was made, never faulted;
//  3. the remedy applied (the dataset's files on a larger tmpfs): every index arrives.
// And a death on the same small tmpfs that is no shortage of room: a token file the workers
// map is truncated mid-epoch; the report names the file, not --shm-size.
// ATen before Catch: libtorch defines a CHECK of its own, which must not replace Catch's.
#include <ATen/ATen.h>
#include <mploader/mploader.h>

#include "crash_test_support.h"
#include "mapped_file_dataset.h"
#include "tmpfs_mount.h"
#include "stderr_capture.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

namespace test_docker_shm {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Each sample decodes into a 4 MiB scratch file of its own under `scratch_dir` (a shared
// file, as a dataset that hands decoded data between processes might), written through a
// memory map, and returns 64 KiB of it. The files stay: the tmpfs fills.
class ScratchFileDataset : public mploader::Dataset {
 public:
  ScratchFileDataset(size_t n, std::string scratch_dir) : n_(n), dir_(std::move(scratch_dir)) {}
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    const std::string path = dir_ + "/decoded-" + std::to_string(index) + "-" +
                             std::to_string(getpid());
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 4 * kMiB) != 0) throw std::runtime_error("scratch " + path);
    void* map = mmap(nullptr, 4 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) throw std::runtime_error("mmap " + path);
    std::memset(map, static_cast<int>(index & 0x7f), 4 * kMiB);  // SIGBUS once the tmpfs is full
    at::Tensor pixels = at::from_blob(map, {64 * 1024}, at::kByte).clone();
    munmap(map, 4 * kMiB);
    return {{"pixels", pixels}, {"index", at::full({1}, index, at::kLong)}};
  }

 private:
  size_t n_;
  std::string dir_;
};

mploader::LoaderOptions options_on(const std::string& shm_dir, int64_t batch_size) {
  mploader::LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = batch_size;
  o.prefetch_factor = 2;
  o.shm_dir = shm_dir;
  o.crash_dir = crash_testing::fresh_dir();  // removed at exit, wherever the test runs from
  return o;
}

// A dataset whose samples are `bytes` large: the rings' slots are sized to its batches.
class LargeSampleDataset : public mploader::Dataset {
 public:
  explicit LargeSampleDataset(int64_t bytes) : bytes_(bytes) {}
  size_t size() const override { return 64; }
  mploader::Sample get(int64_t index) override {
    return {{"pixels", at::full({bytes_}, index & 0x7f, at::kByte)}};
  }

 private:
  int64_t bytes_;
};

TEST_CASE("docker shm: on a 64 MiB /dev/shm the rings never die of SIGBUS, the dataset's own "
          "files do, and the report says shm_full and what to change",
          "[crash][process][root]") {
  TmpfsMount shm("64m");
  if (!shm.ok()) {
    WARN("skipped: " << shm.why_not());
    return;
  }
  std::cout << "== a 64 MiB tmpfs at " << shm.path() << " stands in for Docker's /dev/shm\n";

  // 1. Rings that cannot fit: 2 workers x 2 slots of a 16 x 3 MiB batch.
  try {
    mploader::Loader loader(std::make_shared<LargeSampleDataset>(3 * kMiB),
                            options_on(shm.path(), 16));
    FAIL("the loader was built with rings larger than the tmpfs");
  } catch (const mploader::ShmError& e) {
    std::cout << "-- 1. rings larger than the tmpfs, at construction:\n" << e.what() << "\n";
    CHECK(e.bytes_needed() > static_cast<uint64_t>(64 * kMiB));
    CHECK(e.bytes_free() <= static_cast<uint64_t>(64 * kMiB));
    CHECK_THAT(e.what(), Catch::Contains("--shm-size"));
  }

  // 2. Rings that fit, beside a dataset that fills the tmpfs with its own files.
  std::string report_path;
  {
    testing_datasets::StderrCapture quiet;  // the death is also logged; the story prints it
    mploader::Loader loader(std::make_shared<ScratchFileDataset>(64, shm.path()),
                            options_on(shm.path(), 4));
    try {
      while (loader.next()) {
      }
      FAIL("the dataset's files fit in the tmpfs");
    } catch (const mploader::WorkerCrashed& e) {
      std::cout << "-- 2. the dataset's own files fill it:\n" << e.what() << "\n";
      CHECK(e.cause() == mploader::DeathCause::kShmFull);
      CHECK(e.signal() == SIGBUS);
      CHECK_THAT(e.what(), Catch::Contains("--shm-size") && Catch::Contains("0 B"));
      report_path = e.report_path();
    }
  }
  REQUIRE(!report_path.empty());
  std::ifstream in(report_path);
  const nlohmann::json report = nlohmann::json::parse(in);
  CHECK(report["cause"] == "shm_full");
  const std::string mapping = report["crash_record"]["mapping"].get<std::string>();
  CHECK_THAT(mapping, Catch::Contains(shm.path() + "/decoded-"));  // the dataset's, no ring
  CHECK_THAT(mapping, !Catch::Contains(shm.path() + "/mploader-"));  // a ring's file

  // 3. The remedy: the dataset's scratch files on a larger tmpfs; the rings stay where they were.
  for (const auto& entry : std::filesystem::directory_iterator(shm.path())) {
    std::filesystem::remove(entry.path());  // what the dead run's dataset left
  }
  TmpfsMount larger("512m");
  REQUIRE(larger.ok());
  mploader::Loader loader(std::make_shared<ScratchFileDataset>(64, larger.path()),
                          options_on(shm.path(), 4));
  std::multiset<int64_t> seen;
  while (auto batch = loader.next()) {
    const at::Tensor index = (*batch)["index"];
    for (int64_t r = 0; r < index.size(0); ++r) seen.insert(index[r][0].item<int64_t>());
  }
  CHECK(seen.size() == 64);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 64);
  std::cout << "-- 3. the dataset's files on a 512 MiB tmpfs, the rings still on the 64 MiB "
               "one: all "
            << seen.size() << " samples arrived once each\n";
}

TEST_CASE("docker shm: a token file truncated mid-epoch on a 64 MiB /dev/shm is file_truncated, "
          "not shm_full, though its mapping is larger than the free space",
          "[crash][process][root]") {
  TmpfsMount shm("64m");
  if (!shm.ok()) {
    WARN("skipped: " << shm.why_not());
    return;
  }
  // 22 MB of another job's file and a 40 MB token file: 3 MiB left. Cut to 10 MiB, the token
  // file leaves about 33 MiB free, less than its 40 MB mapping but far from full.
  const std::string tokens = shm.path() + "/tokens.bin";
  testing_datasets::write_file(shm.path() + "/other-job.bin", 22'000'000);
  testing_datasets::write_file(tokens, 40'000'000);
  auto data = std::make_shared<testing_datasets::MappedFileDataset>(tokens, 256, 4096);
  std::string report_path;
  {
    testing_datasets::StderrCapture quiet;
    mploader::Loader loader(data, options_on(shm.path(), 8));
    try {
      REQUIRE(loader.next());
      REQUIRE(truncate(tokens.c_str(), 10 * kMiB) == 0);
      while (loader.next()) {
      }
      FAIL("no worker read past the truncated file's end");
    } catch (const mploader::WorkerCrashed& e) {
      std::cout << "-- the token file truncated under the workers:\n" << e.what() << "\n";
      CHECK(e.cause() == mploader::DeathCause::kFileTruncated);
      CHECK(e.signal() == SIGBUS);
      CHECK_THAT(e.what(), Catch::Contains("'" + tokens + "'") &&
                               Catch::Contains("holds 10.0 MiB (10485760 bytes) now") &&
                               Catch::Contains("it accessed offset") &&
                               !Catch::Contains("no page left to give"));
      report_path = e.report_path();
    }
  }
  REQUIRE(!report_path.empty());
  std::ifstream in(report_path);
  const nlohmann::json report = nlohmann::json::parse(in);
  CHECK(report["cause"] == "file_truncated");
  const nlohmann::json& record = report["crash_record"];
  CHECK(record["mapping_file_size_bytes"] == 10 * kMiB);
  // The case the free space alone got wrong: less room than the mapping, yet plenty.
  CHECK(record["mapping_fs_free_bytes"].get<int64_t>() > 30 * kMiB);
  CHECK(record["mapping_fs_free_bytes"].get<int64_t>() < 40'000'000);
}

}  // namespace

}  // namespace test_docker_shm
