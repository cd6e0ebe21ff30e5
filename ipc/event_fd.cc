#include "ipc/event_fd.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace mploader::ipc {

Result<EventFd> EventFd::create() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return last_error("eventfd");
  EventFd e;
  e.fd_ = fd;
  return e;
}

EventFd& EventFd::operator=(EventFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

// Runs in signal context too: write(2) only.
void EventFd::notify() const {
  uint64_t one = 1;
  ssize_t rc;
  do {
    rc = write(fd_, &one, sizeof one);
  } while (rc < 0 && errno == EINTR);
  // EAGAIN means the counter is saturated: the reader is already due to wake.
}

void EventFd::drain() const {
  uint64_t value;
  ssize_t rc;
  do {
    rc = read(fd_, &value, sizeof value);
  } while (rc < 0 && errno == EINTR);
}

bool EventFd::wait(int timeout_ms) const {
  pollfd p{fd_, POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

void EventFd::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace mploader::ipc
