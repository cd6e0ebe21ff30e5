// FillPool: the calling thread and a fixed set of helper threads share out the rows of one
// batch at a time, for the in-process runner. Waiting threads spin briefly before they sleep,
// so that back-to-back batches do not pay a futex wake-up each: the in-process runner is meant
// as the ideal.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bench {

class FillPool {
 public:
  // `helpers` threads besides the caller; 0 runs everything in the caller.
  explicit FillPool(int64_t helpers);
  ~FillPool();
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  // Runs work(0) .. work(items - 1) on the caller and the helpers, returns when all are done;
  // rethrows the first exception a call threw. Call from one thread at a time.
  void run(int64_t items, const std::function<void(int64_t)>& work);

 private:
  void loop();
  bool await_generation(uint64_t seen);  // false once stopping
  void drain();

  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  std::vector<std::thread> threads_;
  // Written by run() before it bumps generation_; read by the threads after they see it.
  const std::function<void(int64_t)>* work_ = nullptr;
  int64_t items_ = 0;
  std::exception_ptr error_;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<size_t> finished_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace bench
