// remote/: the shards a reader reads next, downloaded into the shard cache on a thread of
// their own while the reader reads the current one.
//
// The thread downloads the wanted shards in order, one at a time, and holds each one's lease
// until the reader takes it. Shards held or being downloaded stay within a bound in bytes: a
// shard that would pass it waits until the reader takes one. The cache's locks make the
// reader and the thread agree: a reader that needs the shard being downloaded waits on its
// lock file, then leases the finished copy.
//
// Belongs to the process that made it (its thread does not survive a fork). want(), take()
// and release_all() may be called from any one thread while the download thread runs.
#pragma once

#include "remote/shard_cache.h"

#include <mploader/remote/remote.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace mploader::remote::detail {

// A shard to fetch: its URL and what its download must match.
struct PrefetchItem {
  std::string url;
  ExpectedObject expect;
};

class ShardPrefetcher {
 public:
  // `bound_bytes` > 0: the most bytes of shards held for the reader or being downloaded.
  ShardPrefetcher(CacheConfig cache, RemoteOptions options, int64_t bound_bytes);
  // Cancels the download in flight (its partial file is removed) and waits for the thread.
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // The shards the reader reads from now on, in order; replaces the list given before. Those
  // it opened already are not fetched again; held shards no longer listed are let go (they
  // stay in the cache, evictable).
  void want(std::vector<PrefetchItem> upcoming);
  // The reader opens `url`: its lease when it was fetched ahead (no longer held here), else
  // null, and the reader acquires it from the cache itself (waiting for a download in flight
  // to finish). Either way it is not fetched again while it stays listed.
  std::unique_ptr<CachedShard> take(const std::string& url);
  // Lets go of every held shard: the reader needs their room in the cache.
  void release_all();

  // Downloads this prefetcher made, and their bytes (for the stats and the tests).
  int64_t downloads() const { return downloads_.load(std::memory_order_relaxed); }
  int64_t downloaded_bytes() const { return downloaded_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Held {  // a shard fetched ahead, until the reader takes it
    std::unique_ptr<CachedShard> lease;
    int64_t bytes = 0;
  };

  void run();
  bool listed(const std::string& url) const;  // REQUIRES(mutex_)
  // The first wanted shard neither held nor done, if it fits the bound; else null.
  const PrefetchItem* next_to_fetch() const;  // REQUIRES(mutex_)
  std::unique_ptr<CachedShard> fetch(const PrefetchItem& item);  // on the thread, unlocked
  void remember(const PrefetchItem& item, std::unique_ptr<CachedShard> lease);
  // Removes a held shard, its bytes with it; returns its lease.  REQUIRES(mutex_)
  std::unique_ptr<CachedShard> let_go(std::map<std::string, Held>::iterator it);

  const RemoteOptions options_;
  const int64_t bound_bytes_;
  ShardCache cache_;                                       // used on the thread only
  std::map<std::string, std::unique_ptr<Transport>> transports_;  // by scheme; thread only
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> downloads_{0};
  std::atomic<int64_t> downloaded_bytes_{0};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<PrefetchItem> wanted_;                              // GUARDED_BY(mutex_)
  std::map<std::string, Held> held_;  // by URL                  GUARDED_BY(mutex_)
  int64_t held_bytes_ = 0;            // of held_, together      GUARDED_BY(mutex_)
  // Not fetched while listed: opened by the reader, or failed (its own try reports why).
  std::set<std::string> done_;    // GUARDED_BY(mutex_)
  std::thread thread_;            // last: started once everything above exists
};

}  // namespace mploader::remote::detail
