#include "tools/soak/inject.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace bench::soak {
namespace {

// 2 % of this process's RSS: past the soak's 1 % limit whatever the RSS.
size_t two_percent_of_rss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024 / 50;
  }
  return size_t{8} << 20;
}

}  // namespace

const std::vector<std::string>& injection_names() {
  static const std::vector<std::string> names{"fd",  "thread",     "child",          "shm",
                                              "rss", "lost-batch", "duplicate-batch"};
  return names;
}

Injector::~Injector() {
  for (int fd : fds_) close(fd);
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
  }
  if (child_ > 0) {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

void Injector::plant() {
  switch (what_) {
    case Injection::kFd:
      fds_.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
      break;
    case Injection::kThread:  // waits on a condition variable: a thread, no descriptor
      thread_ = std::thread([this] {
        std::unique_lock<std::mutex> lock(mutex_);
        stop_.wait(lock, [this] { return stopping_; });
      });
      break;
    case Injection::kChild:
      child_ = fork();
      if (child_ == 0) {
        pause();
        _exit(0);
      }
      break;
    case Injection::kShm: {
      const int fd = memfd_create("soak-injected", MFD_CLOEXEC);
      mapping_bytes_ = 1 << 16;
      if (fd < 0 || ftruncate(fd, static_cast<off_t>(mapping_bytes_)) != 0) {
        throw std::runtime_error("--inject shm: memfd_create failed");
      }
      mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);  // the mapping alone keeps it
      if (mapping_ == MAP_FAILED) mapping_ = nullptr;
      break;
    }
    case Injection::kRss:
      ballast_.resize(two_percent_of_rss());
      std::memset(ballast_.data(), 1, ballast_.size());  // touched, so resident
      break;
    default:
      break;
  }
}

int Injector::times_recorded(int64_t batch) const {
  if (batch != 0) return 1;
  if (what_ == Injection::kLostBatch) return 0;
  return what_ == Injection::kDuplicateBatch ? 2 : 1;
}

}  // namespace bench::soak
