// remote/: the shard cache one machine shares. Every process that names one folder uses the
// same copies: the first to want a shard downloads it while the others wait on its lock file.
//
// Files in the folder, for the shard whose key is K (a hash of its URL and its name):
//   K          the shard, complete and checked; a reader holds a shared flock on it (its
//              lease) for as long as it reads, and eviction takes an exclusive one, so a
//              shard in use is never evicted, and a crashed reader's lease dies with it.
//   K.lock     its download lock (an exclusive flock while one process downloads it)
//   K.part     a download in progress, at its full size from the start (space reserved);
//              renamed to K only once its size and checksum are right.
//   .mploader-cache.lock   held while the space is counted, evicted and reserved.
#pragma once

#include "ipc/unique_fd.h"
#include "remote/download.h"

#include <mploader/remote/remote.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace mploader::remote::detail {

// The cache cannot hold a shard (no room, a lock or a rename refused): what() says why and
// what to do.
class CacheError : public Error {
 public:
  using Error::Error;
};

// Where the cache is and how big it may get, with the environment's defaults applied.
struct CacheConfig {
  std::string dir;
  int64_t limit_bytes = 0;  // 0: only the file system's free space
};

// Resolves cache_dir / cache_limit_bytes from the options, then MPLOADER_CACHE_DIR and
// MPLOADER_CACHE_LIMIT; throws OptionError naming the variable for a limit it cannot read.
CacheConfig resolve_cache_config(const RemoteOptions& options);

// "20G", "512M", "1.5T", "123" (bytes) as bytes; -1 when it is none of these.
int64_t parse_byte_size(const std::string& text);

// One shard held in the cache: its file, and the lease that keeps it there until destroyed.
class CachedShard {
 public:
  // `lease`: a descriptor of the file holding a shared flock; closing it ends the lease.
  CachedShard(std::string path, ipc::UniqueFd lease)
      : path_(std::move(path)), lease_(std::move(lease)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ipc::UniqueFd lease_;
};

class ShardCache {
 public:
  // Creates the folder when it is missing; throws OptionError naming it when that fails.
  explicit ShardCache(CacheConfig config);

  // The cached copy of `url`, downloaded first (through `transport`) unless it is there.
  // Throws TransportError for a failed download, and CacheError naming the folder,
  // the limit and what holds the space when no room can be made.
  std::unique_ptr<CachedShard> acquire(const std::string& url, const ExpectedObject& expect,
                                       Transport& transport, const RemoteOptions& options);
  // Downloads this process made, and bytes they brought (for the stats and the tests).
  int64_t downloads() const { return downloads_; }
  int64_t downloaded_bytes() const { return downloaded_bytes_; }
  const CacheConfig& config() const { return config_; }
  // The file name a URL is cached under: a hash of the URL and of what the manifest says of
  // it (size, checksum, version), so that a shard rewritten under the same URL is a new file,
  // never the old copy.
  static std::string key_of(const std::string& url, const ExpectedObject& expect);

 private:
  std::unique_ptr<CachedShard> try_lease(const std::string& path) const;
  std::unique_ptr<CachedShard> download(const std::string& url, const ExpectedObject& expect,
                                        Transport& transport, const RemoteOptions& options);
  ipc::UniqueFd reserve(const std::string& part, int64_t bytes);  // the .part, reserved

  CacheConfig config_;
  // Objects the store said are not there or may not be read (404, 401, 403), with the error:
  // asked once by this cache, so that every batch over a missing object does not make a
  // request of its own.
  std::map<std::string, std::pair<std::string, int>> refused_;
  int64_t downloads_ = 0;
  int64_t downloaded_bytes_ = 0;
};

}  // namespace mploader::remote::detail
