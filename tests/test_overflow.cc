// Batches that travel in one-off overflow segments: oversized batches are warned about once
// per loader.
#include "test_datasets.h"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// Redirects stderr (where mploader logs) into a memfd while it lives.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = dup(2);
    capture_ = memfd_create("stderr", 0);
    REQUIRE((saved_ >= 0 && capture_ >= 0 && dup2(capture_, 2) == 2));
  }
  ~StderrCapture() { restore(); }
  // Stops capturing and returns what was written.
  std::string text() {
    restore();
    std::string text;
    char buf[4096];
    ssize_t n;
    for (off_t at = 0; (n = pread(capture_, buf, sizeof buf, at)) > 0; at += n) {
      text.append(buf, static_cast<size_t>(n));
    }
    return text;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  int saved_ = -1;
  int capture_ = -1;
};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

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
