// The io workload (bench/workloads/io_latency.h).
#include "bench/workloads/io_latency.h"

#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <mploader/registry.h>

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace bench {
namespace {

constexpr int64_t kImageSide = 32;

// The calling thread's timerfd, closed with the thread. Threads (the in-process loaders' fill
// pools) and forked workers must not share one: an expiry wakes one reader and the other
// blocks for good. A forked child's copy of the parent thread's names the parent's timer, so
// it opens its own on first use.
class ThreadTimer {
 public:
  ~ThreadTimer() {
    if (fd_ >= 0 && owner_ == getpid()) close(fd_);
  }
  int fd() {
    if (fd_ < 0 || owner_ != getpid()) {
      fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
      if (fd_ < 0) {
        throw std::runtime_error(std::string("io workload: timerfd_create failed: ") +
                                 std::strerror(errno));
      }
      owner_ = getpid();
    }
    return fd_;
  }

 private:
  int fd_ = -1;
  pid_t owner_ = 0;
};

int thread_timer() {
  thread_local ThreadTimer timer;
  return timer.fd();
}

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// On the thread's CPU clock, so that time spent waiting for a CPU does not count.
void spin_for(std::chrono::microseconds cpu) {
  if (cpu.count() <= 0) return;
  const int64_t until = thread_cpu_ns() + cpu.count() * 1000;
  while (thread_cpu_ns() < until) {
  }
}

}  // namespace

IoLatencyDataset::IoLatencyDataset(size_t size, std::chrono::microseconds latency,
                                   std::chrono::microseconds cpu)
    : size_(size), latency_(latency), cpu_(cpu) {}

void IoLatencyDataset::wait_for_read(int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= size_) {
    throw std::out_of_range("io: index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(size_) + ")");
  }
  if (latency_.count() <= 0) {
    spin_for(cpu_);
    return;
  }
  const int fd = thread_timer();
  itimerspec due{};
  due.it_value.tv_sec = latency_.count() / 1000000;
  due.it_value.tv_nsec = (latency_.count() % 1000000) * 1000;
  if (timerfd_settime(fd, 0, &due, nullptr) != 0) {
    throw std::runtime_error(std::string("io workload: timerfd_settime failed: ") +
                             std::strerror(errno));
  }
  uint64_t expirations = 0;
  while (read(fd, &expirations, sizeof expirations) < 0) {
    if (errno != EINTR) {
      throw std::runtime_error(std::string("io workload: read of its timerfd failed: ") +
                               std::strerror(errno));
    }
  }
  spin_for(cpu_);
}

mploader::Sample IoLatencyDataset::get(int64_t index) {
  wait_for_read(index);
  return mploader::Sample{
      {"image", at::full({3, kImageSide, kImageSide}, index % 256, at::kByte)},
      {"label", at::scalar_tensor(index % 10, at::kLong)},
  };
}

std::optional<mploader::SampleLayout> IoLatencyDataset::sample_layout() const {
  return mploader::SampleLayout{{"image", at::kByte, {3, kImageSide, kImageSide}},
                                {"label", at::kLong, {}}};
}

void IoLatencyDataset::write(int64_t index, mploader::SampleWriter& out) {
  wait_for_read(index);
  std::memset(out.bytes(0), static_cast<int>(index % 256), out.field(0).nbytes());
  *out.data<int64_t>(1) = index % 10;
}

std::optional<mploader::DatasetRecipe> IoLatencyDataset::recipe() const {
  return mploader::DatasetRecipe{"bench-io", std::to_string(size_) + " " +
                                                 std::to_string(latency_.count()) + " " +
                                                 std::to_string(cpu_.count())};
}

MPLOADER_REGISTER_DATASET("bench-io", [](const std::string& config) {
  std::istringstream in(config);
  size_t size = 0;
  int64_t latency_us = 0, cpu_us = 0;
  in >> size >> latency_us >> cpu_us;  // a recipe without the CPU time leaves it 0
  return std::make_shared<IoLatencyDataset>(size, std::chrono::microseconds(latency_us),
                                            std::chrono::microseconds(cpu_us));
});

}  // namespace bench
