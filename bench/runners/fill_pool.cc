// FillPool: rows handed out through an atomic counter; spin-then-sleep hand-offs.
#include "bench/runners/fill_pool.h"

#include <chrono>

namespace bench {

namespace {

constexpr std::chrono::microseconds kSpin{200};

// Spins (yielding) until `ready()` or kSpin has passed; returns ready().
template <typename Ready>
bool spin_until(const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

FillPool::FillPool(int64_t helpers) {
  for (int64_t i = 0; i < helpers; ++i) threads_.emplace_back([this] { loop(); });
}

FillPool::~FillPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FillPool::run(int64_t items, const std::function<void(int64_t)>& work) {
  work_ = &work;
  items_ = items;
  next_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  drain();  // the calling thread takes rows too
  const auto all_done = [this] { return finished_.load() == threads_.size(); };
  std::unique_lock<std::mutex> lock(mu_);
  if (!all_done()) {
    lock.unlock();
    spin_until(all_done);
    lock.lock();
    done_cv_.wait(lock, all_done);
  }
  if (error_) std::rethrow_exception(error_);
}

bool FillPool::await_generation(uint64_t seen) {
  const auto ready = [&] { return stop_.load() || generation_.load() != seen; };
  if (!spin_until(ready)) {
    std::unique_lock<std::mutex> lock(mu_);
    start_cv_.wait(lock, ready);
  }
  return !stop_.load();
}

void FillPool::loop() {
  uint64_t seen = 0;
  while (await_generation(seen)) {
    seen = generation_.load(std::memory_order_acquire);
    drain();
    if (finished_.fetch_add(1) + 1 == threads_.size()) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void FillPool::drain() {
  try {
    for (int64_t i; (i = next_.fetch_add(1)) < items_;) (*work_)(i);
  } catch (...) {
    next_.store(items_);  // the others stop after their current row
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::current_exception();
  }
}

}  // namespace bench
