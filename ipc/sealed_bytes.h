// SealedBytes: bytes written once into a sealed memfd and mapped read-only.
//
// For a payload as large as a dataset (a pickled Python one) that every spawned worker reads:
// one copy in shared memory, made once in the main process and charged once to its memory
// cgroup, that each worker maps instead of reading into memory of its own. The pages are freed
// with the last descriptor or mapping. Not copyable; shared through std::shared_ptr.
#pragma once

#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <cstdint>
#include <memory>
#include <string_view>

namespace mploader::ipc {

class SealedBytes {
 public:
  // A memfd (close-on-exec; `label` shows in /proc/<pid>/maps) holding `bytes`, sealed
  // against any change, and mapped.
  static Result<std::shared_ptr<const SealedBytes>> create(std::string_view bytes,
                                                          const char* label);
  // Takes a sealed memfd written elsewhere (a Python payload pickled straight into one) and
  // maps it, keeping the descriptor for handing on. One that can still change is refused
  // (EPROTO).
  static Result<std::shared_ptr<const SealedBytes>> adopt(UniqueFd fd);
  // Maps a descriptor made by create() in another process, which says it holds `bytes`. The
  // descriptor is closed once mapped: the mapping keeps the pages. A descriptor of another
  // size, or one whose size can still change, is refused (EPROTO).
  static Result<std::shared_ptr<const SealedBytes>> map(UniqueFd fd, uint64_t bytes);

  SealedBytes(const SealedBytes&) = delete;
  SealedBytes& operator=(const SealedBytes&) = delete;
  ~SealedBytes();

  std::string_view view() const { return {static_cast<const char*>(data_), size_}; }
  // The descriptor for handing to a new process; -1 when mapped by map().
  int fd() const { return fd_.get(); }

 private:
  SealedBytes(UniqueFd fd, const void* data, size_t size)
      : fd_(std::move(fd)), data_(data), size_(size) {}

  UniqueFd fd_;
  const void* data_;
  size_t size_;
};

}  // namespace mploader::ipc
