// Faults mploader-soak can plant in its own process (--inject), one epoch after --check-from,
// to show that each of its checks catches what it is there to catch: a leaked descriptor,
// thread, child process or shared-memory mapping, RSS growth, and a lost or duplicated batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bench::soak {

enum class Injection { kNone, kFd, kThread, kChild, kShm, kRss, kLostBatch, kDuplicateBatch };

// The names --inject takes, in the order of Injection (after kNone).
const std::vector<std::string>& injection_names();

// Plants the leaks of one Injection and undoes them when destroyed (the child is killed and
// reaped, the thread joined). Not thread-safe.
class Injector {
 public:
  explicit Injector(Injection what) : what_(what) {}
  ~Injector();
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

  // Leaks what the injection names (fd, thread, child, shm, rss); nothing for the batch faults.
  void plant();
  // For the batch faults: how many times the soak's ledger records `batch` (0, 2 or 1).
  int times_recorded(int64_t batch) const;

 private:
  Injection what_;
  std::vector<int> fds_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;  // under mutex_: the thread waits for it
  int child_ = -1;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::vector<char> ballast_;
};

}  // namespace bench::soak
