// Fuzzes the tar shard reader (shards/tar_reader.cc, libarchive underneath): any bytes as a
// shard, through a memfd's /proc/self/fd path as TarShards opens a file. The shard is scanned
// as the TarShards constructor does (headers only), then read member by member as a worker
// does. Refusing is fine (OptionError from the scan, mploader::Error naming the tar from the
// reader); a crash, UB, another exception, or a runaway allocation is not.
#include "shards/tar_reader.h"

#include <mploader/errors.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace detail = mploader::shards::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.tar", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    detail::scan_shard(path);
  } catch (const mploader::OptionError&) {
  }
  try {
    detail::TarReader reader(path);
    detail::RawSample sample;
    while (reader.next(&sample)) {
      for (const detail::Member& m : sample.members) {
        std::string key, ext;
        if (!detail::split_member_name(m.name, key, ext) || ext != m.ext) std::abort();
      }
    }
  } catch (const mploader::Error&) {
  }
  close(fd);
  return 0;
}
