// SampleSource: the raw samples of a set of tar shards, read in one process: the shards open
// now, each at its position, and the samples read ahead of the one asked for.
#pragma once

#include "remote/shard_cache.h"
#include "remote/shard_prefetcher.h"
#include "shards/tar_reader.h"

#include <mploader/errors.h>

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mploader::shards::detail {

/// A tar that changed, or went away, since the scan counted it: what() says what to do.
class ShardChanged : public Error {
 public:
  using Error::Error;
};

/// Contract: fetch(shard, k) returns sample k of the shard, reading each shard front to back
/// as long as the requests come in increasing order within the read-ahead window. At most
/// kMaxOpen tars are open at once (a shuffle buffer straddles two shards at their boundary).
/// A shard named by URL is read from the shard cache (remote/shard_cache.h), downloaded there
/// first unless another process did; the reader holds its lease while the tar is open.
/// Readers belong to the process that opened them: after a fork the child drops what it
/// inherited and opens its own. Errors are mploader::Error naming the tar (TarReader's);
/// a tar whose size, modification time or sample count differs from its scan, or that is
/// gone, is a ShardChanged. Size and modification time are checked on every fetch, not only
/// when the tar is opened.
/// Not thread-safe (TarShards holds the lock).
class SampleSource {
 public:
  static constexpr size_t kMaxOpen = 2;

  SampleSource(const std::vector<std::string>& paths, const std::vector<ShardScan>& scans,
               int64_t read_ahead, int64_t read_ahead_bytes,
               const remote::RemoteOptions& remote);
  ~SampleSource();

  /// Sample `sample` of shard `shard`. `keep`: leave it cached (a substitute for a bad sample,
  /// asked for again later); otherwise a cached copy is dropped once returned, since the
  /// Loader asks for each sample once.
  std::shared_ptr<const RawSample> fetch(size_t shard, int64_t sample, bool keep);
  /// Tars opened so far by this process (for the tests: a shuffle buffer's order within the
  /// read-ahead window opens each shard once).
  int64_t opens() const { return opens_; }
  /// Samples held read ahead now.
  size_t cached() const { return cache_.size(); }
  /// The shards this process reads from now on, in order: those named by URL (or local ones,
  /// with cache_local_paths) that it has not opened are downloaded into the shard cache in
  /// the background, within RemoteOptions::prefetch_bytes.
  void prefetch(const std::vector<size_t>& upcoming);
  /// Shards the background downloads brought, and their bytes (for the tests and the stats).
  int64_t prefetched() const { return prefetcher_ ? prefetcher_->downloads() : 0; }
  int64_t prefetched_bytes() const { return prefetcher_ ? prefetcher_->downloaded_bytes() : 0; }

 private:
  using Key = std::pair<size_t, int64_t>;  // shard, sample
  struct Cached {
    std::shared_ptr<const RawSample> sample;
    uint64_t serial;  // which entry of order_ is this one's
  };
  struct Open {
    size_t shard;
    std::unique_ptr<remote::detail::CachedShard> lease;  // a URL's: outlives the reader
    std::unique_ptr<TarReader> reader;
    uint64_t last_use;
  };

  void adopt_process();
  TarReader& reader_at_or_before(size_t shard, int64_t sample);
  Open open_checked(size_t shard);
  Open open_cached(size_t shard);  // a URL's shard, through the cache
  // What the cache holds `shard` under: its URL (file:// for a local tar) and what it must be.
  remote::detail::PrefetchItem cache_entry_of(size_t shard) const;
  std::unique_ptr<remote::detail::CachedShard> lease_of(const remote::detail::PrefetchItem& e);
  // Throws ShardChanged when the tar is gone or its size or modification time is not the
  // scan's.
  void check_unchanged(size_t shard) const;
  std::shared_ptr<const RawSample> read_up_to(TarReader& reader, size_t shard, int64_t sample,
                                              bool keep);
  void put(const Key& key, std::shared_ptr<const RawSample> sample);
  void evict();
  [[noreturn]] void changed(const TarReader& reader, size_t shard) const;

  const std::vector<std::string>& paths_;
  const std::vector<ShardScan>& scans_;
  int64_t read_ahead_;
  int64_t read_ahead_bytes_;
  pid_t owner_;
  uint64_t clock_ = 0;
  std::vector<Open> open_;
  std::map<Key, Cached> cache_;
  std::deque<std::pair<Key, uint64_t>> order_;  // oldest first; stale entries are skipped
  int64_t cached_bytes_ = 0;
  int64_t opens_ = 0;
  const remote::RemoteOptions& remote_;
  std::unique_ptr<remote::detail::ShardCache> shard_cache_;  // made at the first URL
  std::map<std::string, std::unique_ptr<remote::Transport>> transports_;  // by scheme
  std::unique_ptr<remote::detail::ShardPrefetcher> prefetcher_;  // made at the first prefetch
};

}  // namespace mploader::shards::detail
