// Files named by URL for the core's own datasets (TokenStream). The core links no network
// library: mploader::remote (remote/remote_files.cc) installs the implementation when a
// program links it, and until then a URL is refused with the line that links it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mploader::detail {

// A local copy of a remote file, kept (not evicted) for as long as this object lives.
class RemoteFile {
 public:
  virtual ~RemoteFile() = default;
  virtual const std::string& path() const = 0;
};

class RemoteFileAccess {
 public:
  virtual ~RemoteFileAccess() = default;
  // The size in bytes of the object at `url`, asked of the store without downloading it.
  virtual int64_t size_of(const std::string& url, const std::string& cache_dir) = 0;
  // Its copy in the shard cache under `cache_dir` (empty: the default folder), downloaded
  // once per machine and checked to hold `bytes`.
  virtual std::unique_ptr<RemoteFile> open(const std::string& url, int64_t bytes,
                                           const std::string& cache_dir) = 0;
  // Starts downloading `files` (URL, bytes), in order, in the background of this process.
  virtual void prefetch(const std::vector<std::pair<std::string, int64_t>>& files,
                        const std::string& cache_dir) = 0;
};

// Installed once, at static initialisation, by mploader::remote; null without it.
void set_remote_file_access(RemoteFileAccess* access);
RemoteFileAccess* remote_file_access();

// True for "scheme://..." other than file:// (the same test as mploader::remote::is_url).
bool names_url(const std::string& name);

// remote_file_access(), or std::invalid_argument naming `url`, `who` and how to link it.
RemoteFileAccess& require_remote_file_access(const std::string& url, const std::string& who);

}  // namespace mploader::detail
