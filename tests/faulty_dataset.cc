// The faults of FaultyDataset that really crash: each one is what dataset code does by
// mistake, so the worker dies the way it would in a user's job.
#include "test_datasets.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace testing_datasets {
namespace {

// Volatile globals and noipa: the compiler may neither see the null pointer or the zero nor
// specialise the functions for them, so the faults happen at run time, in frames that show up
// by name in crash reports.
volatile int g_zero = 0;
int* volatile g_null = nullptr;

// UBSan would stop these two before the hardware faults; they exist to fault.
__attribute__((noipa, no_sanitize("undefined"))) void write_through_null() { *g_null = 42; }

__attribute__((noipa, no_sanitize("undefined"))) int divide(int a) { return a / g_zero; }

// A shared mapping two pages long over a one-page file: the second page has no backing, so
// writing it raises SIGBUS (BUS_ADRERR), as a full tmpfs does.
__attribute__((noipa)) void write_past_shared_file(const std::string& dir) {
  std::string path = dir + "/mploader-test-bus-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) return;
  unlink(name.data());
  const long page = sysconf(_SC_PAGESIZE);
  if (ftruncate(fd, page) != 0) return;
  void* m = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return;
  static_cast<volatile char*>(m)[page + 1] = 1;
}

// A shared file of 64 MiB on a tmpfs that holds less: writing its pages in turn raises SIGBUS
// (BUS_ADRERR) at the first page the tmpfs cannot provide, which is what a full /dev/shm does.
__attribute__((noipa)) void fill_shared_file(const std::string& dir) {
  const std::string path = dir + "/mploader-test-fill";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const size_t bytes = 64 << 20;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) return;
  auto* m = static_cast<volatile char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (m == MAP_FAILED) return;
  const long page = sysconf(_SC_PAGESIZE);
  for (size_t at = 0; at < bytes; at += static_cast<size_t>(page)) m[at] = 1;
}

__attribute__((noipa)) void allocate_without_bound() {
  std::ofstream("/proc/self/oom_score_adj") << 1000;  // be the one the OOM killer picks
  std::vector<char*> blocks;
  for (;;) {
    char* block = static_cast<char*>(std::malloc(64 << 20));
    if (block == nullptr) continue;
    std::memset(block, 1, 64 << 20);
    blocks.push_back(block);
  }
}

}  // namespace

void FaultyDataset::misbehave() {
  switch (fault_) {
    case Fault::kHang:
      for (;;) pause();
    case Fault::kSegv:
      write_through_null();
      break;
    case Fault::kFpe:
      std::exit(divide(1));
    case Fault::kAbort:
      std::abort();
    case Fault::kBusFile:
      write_past_shared_file(path_);
      break;
    case Fault::kBusFull:
      fill_shared_file(path_);
      break;
    case Fault::kAllocate:
      allocate_without_bound();
      break;
    default:
      break;
  }
}

}  // namespace testing_datasets
