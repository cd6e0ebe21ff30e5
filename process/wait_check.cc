#include "process/wait_check.h"

#include <mploader/embedding.h>

#include <atomic>

namespace mploader {
namespace {

std::atomic<void (*)()> g_wait_check{nullptr};

}  // namespace

void set_wait_check(void (*check)()) { g_wait_check.store(check, std::memory_order_release); }

namespace detail {

void check_while_waiting() {
  if (void (*check)() = g_wait_check.load(std::memory_order_acquire)) check();
}

int wait_slice_ms(int timeout_ms) {
  if (g_wait_check.load(std::memory_order_acquire) == nullptr) return timeout_ms;
  return timeout_ms < 0 || timeout_ms > kWaitCheckMs ? kWaitCheckMs : timeout_ms;
}

}  // namespace detail
}  // namespace mploader
