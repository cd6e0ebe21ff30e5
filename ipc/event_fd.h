// EventFd: a counter the kernel can wait on. One side notify()s after publishing to a ring; the
// other side poll()s the fd (together with worker pidfds) and drain()s it before re-reading
// the ring, so a wake-up is never lost. Inherited across fork.
#pragma once

#include "ipc/status.h"
#include "ipc/unique_fd.h"

namespace mploader::ipc {

// Movable, not copyable: its UniqueFd.
class EventFd {
 public:
  static Result<EventFd> create();

  int fd() const { return fd_.get(); }
  // Adds one to the counter, waking a poller. Async-signal-safe.
  void notify() const;
  // Resets the counter to zero without blocking.
  void drain() const;
  // Waits until notified or `timeout_ms` passes (-1: forever). False on timeout.
  bool wait(int timeout_ms) const;
  void reset() { fd_.reset(); }

 private:
  UniqueFd fd_;
};

}  // namespace mploader::ipc
