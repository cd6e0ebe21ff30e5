// mploader::remote's service to the core's datasets: files named by URL (TokenStream's) read
// through the shard cache (core/remote_files.h). Installed at static initialisation; the
// target's link option (--undefined=mploader_remote_files_anchor) pulls this file into every
// program that links mploader::remote, though nothing calls it by name.
#include "core/remote_files.h"
#include "remote/shard_cache.h"
#include "remote/shard_prefetcher.h"

#include <mploader/remote/remote.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace mploader::remote::detail {
namespace {

class CachedFile : public mploader::detail::RemoteFile {
 public:
  explicit CachedFile(std::unique_ptr<CachedShard> shard) : shard_(std::move(shard)) {}
  const std::string& path() const override { return shard_->path(); }

 private:
  std::unique_ptr<CachedShard> shard_;
};

class CachedFileAccess : public mploader::detail::RemoteFileAccess {
 public:
  int64_t size_of(const std::string& url, const std::string& cache_dir) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return object_size(transport(url, cache_dir), url);
  }

  std::unique_ptr<mploader::detail::RemoteFile> open(const std::string& url, int64_t bytes,
                                                     const std::string& cache_dir) override {
    std::lock_guard<std::mutex> lock(mutex_);
    adopt_process();  // before looking at the prefetchers: a parent's are not this process's
    if (auto it = prefetchers_.find(cache_dir); it != prefetchers_.end()) {
      if (auto lease = it->second->take(url)) {
        return std::make_unique<CachedFile>(std::move(lease));
      }
    }
    const RemoteOptions& o = options(cache_dir);
    auto& cache = caches_[cache_dir];
    if (!cache) cache = std::make_unique<ShardCache>(resolve_cache_config(o));
    return std::make_unique<CachedFile>(
        cache->acquire(url, ExpectedObject{bytes, "", ""}, transport(url, cache_dir), o));
  }

  void prefetch(const std::vector<std::pair<std::string, int64_t>>& files,
                const std::string& cache_dir) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const RemoteOptions& o = options(cache_dir);
    if (o.prefetch_bytes <= 0) return;
    auto it = prefetchers_.find(cache_dir);
    if (it == prefetchers_.end()) {
      // Made before it is recorded: a cache folder that cannot be made throws here, and
      // leaves no empty entry for open() to use.
      auto made = std::make_unique<ShardPrefetcher>(resolve_cache_config(o), o, o.prefetch_bytes);
      it = prefetchers_.emplace(cache_dir, std::move(made)).first;
    }
    std::vector<PrefetchItem> items;
    for (const auto& [url, bytes] : files) items.push_back({url, ExpectedObject{bytes, "", ""}});
    it->second->want(std::move(items));
  }

 private:
  // After a fork, the parent's connections and threads are not this process's: start afresh
  // (a prefetcher's thread stayed in the parent, so its copy is left, not destroyed).
  void adopt_process() {
    if (owner_ == ::getpid()) return;
    owner_ = ::getpid();
    for (auto& [dir, p] : prefetchers_) (void)p.release();
    prefetchers_.clear();
    transports_.clear();
    caches_.clear();
  }
  const RemoteOptions& options(const std::string& cache_dir) {
    adopt_process();
    RemoteOptions& o = options_[cache_dir];
    o.cache_dir = cache_dir;  // the rest from the environment (AWS_*, MPLOADER_CACHE_*)
    return o;
  }
  // One per scheme and store: the endpoint, region and profile come from the environment
  // when the transport is made, so a process whose variables change gets a new one.
  Transport& transport(const std::string& url, const std::string& cache_dir) {
    const RemoteOptions& o = options(cache_dir);
    std::string key = url.substr(0, url.find("://")) + "|" + cache_dir;
    for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION",
                             "AWS_DEFAULT_REGION", "AWS_PROFILE"}) {
      const char* value = std::getenv(name);
      key += std::string("|") + (value != nullptr ? value : "");
    }
    std::unique_ptr<Transport>& t = transports_[key];
    if (!t) t = make_transport(url, o);
    return *t;
  }

  std::mutex mutex_;  // TokenStream may be read from several threads (libtorch's loader)
  pid_t owner_ = ::getpid();
  std::map<std::string, RemoteOptions> options_;                     // by cache folder
  std::map<std::string, std::unique_ptr<Transport>> transports_;  // by scheme, folder, store
  std::map<std::string, std::unique_ptr<ShardCache>> caches_;        // by cache folder
  std::map<std::string, std::unique_ptr<ShardPrefetcher>> prefetchers_;  // by cache folder
};

}  // namespace
}  // namespace mploader::remote::detail

// The anchor the link option names; installing the access is what this file is for.
extern "C" {
int mploader_remote_files_anchor =
    (mploader::detail::set_remote_file_access(new mploader::remote::detail::CachedFileAccess),
     1);
}
