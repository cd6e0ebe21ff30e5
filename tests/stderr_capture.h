// Captures what the process writes to stderr (where mploader logs) for a test to read.
#pragma once

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace testing_datasets {

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

}  // namespace testing_datasets
