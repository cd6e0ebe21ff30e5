// Descriptor limits in words: when a call fails with EMFILE (this process's RLIMIT_NOFILE) or
// ENFILE (the whole system's), the message must name the limit, its numbers and the fix, not
// just "Too many open files". SysError::describe() appends this to such errors.
#pragma once

#include <cstdint>
#include <string>

namespace mploader::ipc {

struct FdLimit {
  int64_t soft = -1;  // -1: unlimited or unknown
  int64_t hard = -1;
};
FdLimit fd_limit();

// The sentence to add to an `error` from a descriptor-creating call: for EMFILE the soft and
// hard RLIMIT_NOFILE and how to raise them, for ENFILE the system-wide fs.file-max; "" for
// any other error. Needs no descriptor of its own (it is called when none is left).
std::string fd_limit_advice(int error);

}  // namespace mploader::ipc
