// EventFd: a counter the kernel can wait on. One side notify()s after publishing to a ring; the
// other side poll()s the fd (together with worker pidfds) and drain()s it before re-reading
// the ring, so a wake-up is never lost. Inherited across fork.
#pragma once

#include "ipc/status.h"

namespace mploader::ipc {

class EventFd {
 public:
  static Result<EventFd> create();

  EventFd() = default;
  EventFd(EventFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  EventFd& operator=(EventFd&& other) noexcept;
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  ~EventFd() { reset(); }

  int fd() const { return fd_; }
  // Adds one to the counter, waking a poller. Async-signal-safe.
  void notify() const;
  // Resets the counter to zero without blocking.
  void drain() const;
  // Waits until notified or `timeout_ms` passes (-1: forever). False on timeout.
  bool wait(int timeout_ms) const;
  void reset();

 private:
  int fd_ = -1;
};

}  // namespace mploader::ipc
