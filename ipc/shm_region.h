// ShmRegion: a shared-memory mapping whose pages are reserved up front, so that running out of
// space is an error at creation (ENOSPC) and never a SIGBUS on first touch later.
//
// The backing file is anonymous from the start (memfd) or unlinked before it is used (a
// directory's O_TMPFILE), so nothing is left behind however the processes end. Children get
// the mapping by fork inheritance. Not copyable; movable. Not thread-safe to move while in use.
#pragma once

#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mploader::ipc {

class ShmRegion {
 public:
  // `dir` empty: memfd_create (anonymous shmem, not limited by /dev/shm's size).
  // Otherwise a nameless file in `dir`. `label` shows up in /proc/<pid>/maps.
  static Result<ShmRegion> create(size_t bytes, const std::string& dir, const std::string& label);
  // Maps an existing shared-memory fd (for example one received over a socket).
  static Result<ShmRegion> adopt(UniqueFd fd, size_t bytes);

  ShmRegion() = default;
  ShmRegion(ShmRegion&& other) noexcept { *this = std::move(other); }
  ShmRegion& operator=(ShmRegion&& other) noexcept;
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;
  ~ShmRegion() { reset(); }

  void* base() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_.get(); }
  // Unmaps and closes. Safe to call twice.
  void reset();
  // Closes the fd but keeps the mapping (workers do not need the fd once mapped).
  void close_fd();
  // Maps the pages of [offset, offset + bytes) into this process now (they exist already:
  // create() reserves them; the first touch of each still zeroes it, which is what this costs).
  // The owner does this so that, in every other process mapping the region, its pages count
  // as shared, not private (smaps): a worker's private memory is then its own allocations and
  // copy-on-write copies alone, which is what the memory-growth warning watches.
  [[nodiscard]] Status map_pages(size_t offset, size_t bytes) const;

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  UniqueFd fd_;
};

// Free bytes of the filesystem holding `dir` (statvfs), or -1 when unknown.
int64_t free_bytes_of_dir(const std::string& dir);

}  // namespace mploader::ipc
