// UniqueFd: the one owner of a file descriptor. Every descriptor the library keeps (pidfds,
// sockets, memfds, eventfds) lives in one, so none is closed by hand, twice, or never.
// Code that only uses a descriptor takes the int (get()); code that takes ownership takes a
// UniqueFd by value.
//
// get(), release(), reset() and the destructor are async-signal-safe (they call close() at
// most), so a signal handler may hold one too.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace mploader::ipc {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives the descriptor up without closing it.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and takes `fd`. close() is not retried on EINTR: on
  // Linux the descriptor is gone either way, and a retry could close another thread's.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Sets or clears FD_CLOEXEC. False (errno set) when fcntl fails.
[[nodiscard]] inline bool set_cloexec(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC) == 0;
}

}  // namespace mploader::ipc
