// What a file's stat says about its identity and version, in one place for every layer that
// checks whether a file it scanned is still the same.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <utility>

namespace mploader::detail {

// The modification time in nanoseconds since the epoch: with the size, what tells that a
// file was rewritten since it was scanned.
inline int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// (device, inode): the same file or folder under two spellings or through a link has one.
using FileKey = std::pair<dev_t, ino_t>;
inline FileKey file_key(const struct stat& st) { return {st.st_dev, st.st_ino}; }

}  // namespace mploader::detail
