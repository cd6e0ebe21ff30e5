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
  e.fd_.reset(fd);
  return e;
}

// Runs in signal context too: write(2) only.
void EventFd::notify() const {
  uint64_t one = 1;
  ssize_t rc;
  do {
    rc = write(fd_.get(), &one, sizeof one);
  } while (rc < 0 && errno == EINTR);
  // EAGAIN means the counter is saturated: the reader is already due to wake.
}

void EventFd::drain() const {
  uint64_t value;
  ssize_t rc;
  do {
    rc = read(fd_.get(), &value, sizeof value);
  } while (rc < 0 && errno == EINTR);
}

bool EventFd::wait(int timeout_ms) const {
  pollfd p{fd_.get(), POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

}  // namespace mploader::ipc
