// Errors as values for ipc/ and worker/: every failing syscall is reported with its name and
// errno, and the caller decides what it means to the user.
#pragma once

#include "ipc/fd_limit.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace mploader::ipc {

struct SysError {
  std::string syscall;  // the call that failed, e.g. "posix_fallocate"
  int error = 0;        // errno (or the returned code for calls that return it)
  std::string detail;   // what we were doing, e.g. "reserving 96 MiB in /dev/shm"

  std::string describe() const {
    std::string s = syscall + ": " + std::strerror(error);
    if (!detail.empty()) s += " (" + detail + ")";
    // Out of descriptors: say which limit, its numbers and the fix, wherever it happened.
    const std::string advice = fd_limit_advice(error);
    if (!advice.empty()) s += "; " + advice;
    return s;
  }
};

inline SysError last_error(std::string syscall, std::string detail = {}) {
  return SysError{std::move(syscall), errno, std::move(detail)};
}

// A value or the SysError that prevented it. Deliberately tiny: no exceptions cross ipc/.
// [[nodiscard]]: a failure dropped on the floor is a bug that shows up far away; a caller that
// really has nothing to do about one says why and casts the result to void.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(SysError error) : v_(std::move(error)) {}
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  T take() { return std::move(std::get<T>(v_)); }
  const SysError& error() const { return std::get<SysError>(v_); }

 private:
  std::variant<T, SysError> v_;
};

// For calls that return nothing on success.
struct Ok {};
using Status = Result<Ok>;

}  // namespace mploader::ipc
