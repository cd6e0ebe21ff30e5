// FileTransport: file:// URLs, so that shards on a slow network file system go through the
// shard cache like remote ones (RemoteOptions::cache_local_paths).
#include "ipc/unique_fd.h"
#include "remote/http_transport.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mploader::remote::detail {
namespace {

// Descriptors are opened per read: the cache asks once per shard, and no handle crosses a
// fork.
class FileTransport : public Transport {
 public:
  void read(const ReadRequest& request, const std::function<void(const ObjectInfo&)>& on_info,
            const std::function<void(const char*, size_t)>& on_bytes) override {
    const std::string path = request.url.substr(std::strlen("file://"));
    const ipc::UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file) {
      throw TransportError("cannot open \"" + path + "\" (" + std::strerror(errno) + "): it "
                           "was deleted, renamed or made unreadable after the dataset counted "
                           "its samples", errno == EINTR || errno == EIO, 0);
    }
    struct stat st {};
    ::fstat(file.get(), &st);
    ObjectInfo info;
    info.bytes = static_cast<int64_t>(st.st_size);
    info.etag = "\"" + std::to_string(st.st_mtim.tv_sec) + "." +
                std::to_string(st.st_mtim.tv_nsec) + "-" + std::to_string(st.st_size) + "\"";
    if (!request.if_match.empty() && request.if_match != info.etag) {
      throw TransportError("\"" + path + "\" changed while it was copied into the cache; "
                           "build the dataset again to count it anew", false, 412);
    }
    on_info(info);
    std::vector<char> buffer(size_t{1} << 20);
    const int64_t end = request.length >= 0 ? request.offset + request.length : INT64_MAX;
    for (int64_t at = request.offset; at < end;) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(
          static_cast<int64_t>(buffer.size()), end - at));
      const ssize_t n = ::pread(file.get(), buffer.data(), want, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw TransportError("reading \"" + path + "\" failed at byte " + std::to_string(at) +
                             " (" + std::strerror(errno) + ")", errno == EIO, 0);
      }
      if (n == 0) return;
      on_bytes(buffer.data(), static_cast<size_t>(n));
      at += n;
    }
  }
};

}  // namespace

std::unique_ptr<Transport> make_file_transport(const RemoteOptions&) {
  return std::make_unique<FileTransport>();
}

}  // namespace mploader::remote::detail
