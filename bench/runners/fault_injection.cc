// Real faults for --inject-fault: each one fails the way a buggy dataset would, so the kernel,
// not the bench, decides how the worker dies.
#include "bench/runners/fault_injection.h"

#include <mploader/worker_info.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>

namespace bench {

namespace {

// Says, before it happens, which fault this worker is about to suffer (one write(2), so the line
// is whole even if the process dies right after).
void announce(const FaultSpec& spec, int64_t index) {
  const std::string line = "mploader-bench: worker " + std::to_string(spec.worker) + " (pid " +
                           std::to_string(getpid()) + "): injecting " + spec.kind +
                           " in Dataset::get(" + std::to_string(index) + "), batch " +
                           std::to_string(index / spec.batch_size) + "\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, line.data(), line.size());
}

// The faults are undefined behaviour on purpose: UBSan (MPLOADER_SANITIZE) would report them
// and exit instead of letting them fault. noinline keeps each one a frame of its own in reports.
#define MPLOADER_BENCH_FAULT __attribute__((noinline, no_sanitize("undefined")))

MPLOADER_BENCH_FAULT void segfault() {
  volatile int* volatile address = nullptr;  // volatile: the compiler must really store there
  *address = 42;
}

// A write to the second page of a shared mapping of a one-page tmpfs file: SIGBUS (BUS_ADRERR),
// as when a shared-memory file is shorter than its mapping or its filesystem is full.
// A shared file in --shm-dir (default /dev/shm) written page by page. On a small tmpfs (1 GiB
// free or less) the file is made larger than the free space, so the write that finds no page
// dies of SIGBUS: a real full /dev/shm, as in a container with --shm-size=64m. With more room
// than that, filling it would take too long; the write goes past the end of a one-page file
// instead (also SIGBUS, BUS_ADRERR, diagnosed as a short file rather than a full tmpfs).
MPLOADER_BENCH_FAULT void bus_error(const std::string& shm_dir) {
  const std::string dir = shm_dir.empty() ? "/dev/shm" : shm_dir;
  std::string path = dir + "/mploader-bench-bus-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    throw std::runtime_error("--inject-fault bus: cannot create a file in " + dir + ": " +
                             std::strerror(errno));
  }
  unlink(path.c_str());  // the mapping keeps it; nothing is left behind after the crash
  struct statvfs st {};
  const uint64_t free_bytes =
      fstatvfs(fd, &st) == 0 ? static_cast<uint64_t>(st.f_bavail) * st.f_frsize : 0;
  const long page = sysconf(_SC_PAGESIZE);
  const bool fill = free_bytes <= (uint64_t{1} << 30);
  const uint64_t file_bytes = fill ? free_bytes + (16 << 20) : static_cast<uint64_t>(page);
  const uint64_t map_bytes = fill ? file_bytes : 2 * static_cast<uint64_t>(page);
  void* map = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(file_bytes)) == 0) {
    map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int error = errno;
  close(fd);
  if (map == MAP_FAILED) {
    throw std::runtime_error("--inject-fault bus: cannot map a file in " + dir + ": " +
                             std::strerror(error));
  }
  auto* bytes = static_cast<volatile char*>(map);
  for (uint64_t at = fill ? 0 : static_cast<uint64_t>(page); at < map_bytes;
       at += static_cast<uint64_t>(page)) {
    bytes[at] = 1;
  }
}

// Both operands volatile: GCC turns 1 / x into compares, with no division left to trap.
MPLOADER_BENCH_FAULT void divide_by_zero() {
  volatile int dividend = 1;
  volatile int divisor = 0;
  volatile int quotient = dividend / divisor;
  (void)quotient;
}

// Takes memory 64 MiB at a time and touches every page, until the kernel stops it: an OOM kill
// under a memory limit, or std::bad_alloc when an address-space limit makes malloc fail.
MPLOADER_BENCH_FAULT void exhaust_memory() {
  constexpr size_t kChunk = size_t{64} << 20;
  const long page = sysconf(_SC_PAGESIZE);
  for (;;) {
    auto* chunk = static_cast<volatile char*>(std::malloc(kChunk));  // never freed, on purpose
    if (chunk == nullptr) throw std::bad_alloc();
    for (size_t i = 0; i < kChunk; i += static_cast<size_t>(page)) chunk[i] = 1;
  }
}

[[noreturn]] MPLOADER_BENCH_FAULT void hang() {
  for (;;) pause();
}

void fire(const FaultSpec& spec, int64_t index) {
  announce(spec, index);
  const std::string& k = spec.kind;
  if (k == "segv") segfault();
  else if (k == "bus") bus_error(spec.shm_dir);
  else if (k == "fpe") divide_by_zero();
  else if (k == "abort") std::abort();
  else if (k == "oom") exhaust_memory();
  else if (k == "kill") raise(SIGKILL);
  else if (k == "exit") _exit(3);
  else if (k == "hang") hang();
  else if (k == "exception") {
    throw std::runtime_error("mploader-bench: --inject-fault exception: Dataset::get(" +
                             std::to_string(index) + ") in worker " +
                             std::to_string(spec.worker) + " failed on purpose");
  }
  throw std::logic_error("--inject-fault " + k + " did not fire in Dataset::get(" +
                         std::to_string(index) + ")");
}

class FaultInjectingDataset : public mploader::Dataset {
 public:
  FaultInjectingDataset(std::shared_ptr<mploader::Dataset> inner, FaultSpec spec)
      : inner_(std::move(inner)), spec_(std::move(spec)) {
    // Shared with every worker forked later, replacements included: the fault fires once.
    void* page = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      throw std::runtime_error(std::string("--inject-fault: mmap: ") + std::strerror(errno));
    }
    fired_ = new (page) std::atomic<int>(0);
  }
  ~FaultInjectingDataset() override { munmap(fired_, sizeof(std::atomic<int>)); }

  size_t size() const override { return inner_->size(); }

  mploader::Sample get(int64_t index) override {
    if (index % spec_.batch_size == 0 && index / spec_.batch_size >= spec_.at_batch) {
      const std::optional<mploader::WorkerInfo> me = mploader::worker_info();
      if (me && me->id == spec_.worker && fired_->exchange(1) == 0) fire(spec_, index);
    }
    return inner_->get(index);
  }

 private:
  std::shared_ptr<mploader::Dataset> inner_;
  FaultSpec spec_;
  std::atomic<int>* fired_ = nullptr;
};

}  // namespace

std::shared_ptr<mploader::Dataset> inject_fault(std::shared_ptr<mploader::Dataset> inner,
                                                const FaultSpec& spec) {
  return std::make_shared<FaultInjectingDataset>(std::move(inner), spec);
}

}  // namespace bench
