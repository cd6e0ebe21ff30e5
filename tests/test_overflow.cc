// Batches that travel in one-off overflow segments: a loop that keeps a view of every batch
// must not run the process out of memory mappings (vm.max_map_count), and oversized batches
// are warned about once per loader.
#include "stderr_capture.h"
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace test_overflow {

using namespace mploader;
using testing_datasets::CountingDataset;
using testing_datasets::StderrCapture;

namespace {

// Far below the default vm.max_map_count (65,530): copying past the threshold must keep the
// mappings that kept batches cost under this.
constexpr int64_t kExtraMapsBound = 2000;

int64_t mappings_of_this_process() {
  std::ifstream maps("/proc/self/maps");
  int64_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

LoaderOptions one_sample_batches() {
  LoaderOptions o;
  o.num_workers = 1;
  o.batch_size = 1;
  return o;
}

}  // namespace

TEST_CASE("overflow: label views kept from 100000 batches arrive and the mappings stay bounded",
          "[overflow][process]") {
  constexpr int64_t kBatches = 100000;
  StderrCapture log;
  Loader loader(std::make_shared<CountingDataset>(kBatches), one_sample_batches());
  const int64_t baseline = mappings_of_this_process();
  std::vector<at::Tensor> kept;  // views, not clones: each keeps its batch's memory alive
  kept.reserve(kBatches);
  int64_t most_maps = baseline;
  for (Batch& b : loader) {
    kept.push_back(b["label"]);
    if (kept.size() % 1000 == 0) {
      most_maps = std::max(most_maps, mappings_of_this_process());
      INFO("kept " << kept.size() << " batches; mappings " << baseline << " -> " << most_maps);
      REQUIRE(most_maps - baseline < kExtraMapsBound);
    }
  }
  const std::string logged = log.text();
  REQUIRE(static_cast<int64_t>(kept.size()) == kBatches);
  for (int64_t i = 0; i < kBatches; ++i) REQUIRE(kept[i].item<int64_t>() == i);
  UNSCOPED_INFO("mappings: " << baseline << " before, at most " << most_maps << " while "
                             << kBatches << " label views were kept");
  INFO(logged);
  CHECK(occurrences(logged, "vm.max_map_count") == 1);  // warned once, with the limit
  CHECK(occurrences(logged, ".clone()") >= 1);
}

TEST_CASE("overflow: copied batches keep their values while the worker reuses its slots and "
          "cost no mapping",
          "[overflow][process]") {
  constexpr int64_t kKept = 1700, kFrom = 1200, kBatches = 3200;
  Loader loader(std::make_shared<CountingDataset>(kBatches), one_sample_batches());
  auto first = loader.next();  // workers up and the first slot mapped: a fair baseline
  REQUIRE(first);
  first.reset();
  const int64_t baseline = mappings_of_this_process();
  std::vector<at::Tensor> kept;
  for (int64_t i = 1; i < kKept; ++i) kept.push_back((*loader.next())["label"]);
  // Past the threshold the last of these were copied; drop the rest, which gives the slots
  // back, so the worker writes the remaining batches over and over into the same slots.
  kept.erase(kept.begin(), kept.begin() + (kFrom - 1));
  int64_t later = kKept;
  while (auto b = loader.next()) REQUIRE((*b)["label"].item<int64_t>() == later++);
  REQUIRE(later == kBatches);
  for (int64_t i = 0; i < kKept - kFrom; ++i) REQUIRE(kept[i].item<int64_t>() == kFrom + i);
  const int64_t extra = mappings_of_this_process() - baseline;
  INFO(kKept - kFrom << " label views kept, " << extra << " more mappings than before");
  CHECK(extra < 100);
}

TEST_CASE("overflow: a process near its mapping limit still receives kept batches by copying them",
          "[overflow][process]") {
  constexpr int64_t kBatches = 400, kHeadroom = 256;
  std::ifstream limit_file("/proc/sys/vm/max_map_count");
  int64_t limit = 0;
  REQUIRE(limit_file >> limit);
  Loader loader(std::make_shared<CountingDataset>(kBatches), one_sample_batches());
  std::vector<at::Tensor> kept;
  kept.reserve(kBatches);  // no heap growth of the test's own at the limit
  kept.push_back((*loader.next())["label"]);
  // One-page mappings with alternating protections, so that the kernel cannot merge them, until
  // only kHeadroom mappings are left: mapping every kept batch would use them up.
  std::vector<void*> fillers;
  fillers.reserve(static_cast<size_t>(limit));
  const long page = sysconf(_SC_PAGESIZE);
  for (int64_t i = mappings_of_this_process(); i < limit - kHeadroom; ++i) {
    void* p = mmap(nullptr, page, i % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) break;
    fillers.push_back(p);
  }
  StderrCapture log;
  std::string error;
  try {
    while (auto b = loader.next()) kept.push_back((*b)["label"]);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const std::string logged = log.text();
  for (void* p : fillers) munmap(p, page);
  INFO(fillers.size() << " filler mappings; " << error << logged);
  REQUIRE(error.empty());
  REQUIRE(static_cast<int64_t>(kept.size()) == kBatches);
  for (int64_t i = 0; i < kBatches; ++i) REQUIRE(kept[i].item<int64_t>() == i);
  CHECK(occurrences(logged, "vm.max_map_count") == 1);
}

TEST_CASE("overflow: batches larger than a slot are warned about once per loader with both sizes",
          "[overflow][process]") {
  for (int loader_number = 0; loader_number < 2; ++loader_number) {
    CAPTURE(loader_number);
    LoaderOptions o;
    o.num_workers = 1;
    o.batch_size = 256;         // 256 x (16 + 8) = 6,144 bytes
    o.max_batch_bytes = 1024;   // a slot is one 4,096-byte page
    StderrCapture log;
    {
      Loader loader(std::make_shared<CountingDataset>(2048), o);
      for (int epoch = 0; epoch < 2; ++epoch) {  // fresh workers each epoch: still one warning
        int64_t samples = 0;
        for (Batch& b : loader) samples += static_cast<int64_t>(b.size());
        REQUIRE(samples == 2048);
      }
    }
    const std::string logged = log.text();
    INFO(logged);
    CHECK(occurrences(logged, "larger than a ring slot") == 1);
    CHECK(occurrences(logged, "6144 bytes") == 1);
    CHECK(occurrences(logged, "4096 bytes") == 1);
    CHECK(occurrences(logged, "max_batch_bytes") >= 1);
  }
}

}  // namespace test_overflow
