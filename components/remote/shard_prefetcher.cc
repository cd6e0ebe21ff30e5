// ShardPrefetcher (shard_prefetcher.h).
#include "remote/shard_prefetcher.h"

#include <algorithm>
#include <utility>

namespace mploader::remote::detail {
namespace {

// A transport whose reads stop at the next block of bytes once `stop` is set: a download
// being cancelled fails (not retried) and the cache removes its partial file.
class StoppableTransport : public Transport {
 public:
  StoppableTransport(std::unique_ptr<Transport> inner, const std::atomic<bool>& stop)
      : inner_(std::move(inner)), stop_(stop) {}
  void read(const ReadRequest& request, const std::function<void(const ObjectInfo&)>& on_info,
            const std::function<void(const char*, size_t)>& on_bytes) override {
    inner_->read(request, on_info, [&](const char* data, size_t n) {
      // relaxed: the flag carries no data; the destructor joins the thread afterwards.
      if (stop_.load(std::memory_order_relaxed)) {
        throw TransportError("GET " + request.url + ": prefetch cancelled", false, 0);
      }
      on_bytes(data, n);
    });
  }

 private:
  std::unique_ptr<Transport> inner_;
  const std::atomic<bool>& stop_;
};

}  // namespace

ShardPrefetcher::ShardPrefetcher(CacheConfig cache, RemoteOptions options, int64_t bound_bytes)
    : options_(std::move(options)), bound_bytes_(bound_bytes), cache_(std::move(cache)),
      thread_([this] { run(); }) {}

ShardPrefetcher::~ShardPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
  }
  changed_.notify_all();
  thread_.join();
}

bool ShardPrefetcher::listed(const std::string& url) const {
  return std::any_of(wanted_.begin(), wanted_.end(),
                     [&](const PrefetchItem& w) { return w.url == url; });
}

void ShardPrefetcher::want(std::vector<PrefetchItem> upcoming) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_ = std::move(upcoming);
    for (auto it = held_.begin(); it != held_.end();) {
      const auto next = std::next(it);
      if (!listed(it->first)) let_go(it);
      it = next;
    }
    // A shard that leaves the list and comes back later (another range of it) is fetched anew.
    for (auto it = done_.begin(); it != done_.end();) {
      it = listed(*it) ? std::next(it) : done_.erase(it);
    }
  }
  changed_.notify_all();
}

std::unique_ptr<CachedShard> ShardPrefetcher::take(const std::string& url) {
  std::unique_ptr<CachedShard> lease;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.insert(url);
    auto it = held_.find(url);
    if (it == held_.end()) return nullptr;
    lease = let_go(it);
  }
  changed_.notify_all();  // room under the bound for the next one
  return lease;
}

void ShardPrefetcher::release_all() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.clear();
    held_bytes_ = 0;
  }
  changed_.notify_all();
}

const PrefetchItem* ShardPrefetcher::next_to_fetch() const {
  for (const PrefetchItem& item : wanted_) {
    if (held_.count(item.url) != 0 || done_.count(item.url) != 0) continue;
    // In read order: a shard that does not fit waits, and so do the ones after it.
    const int64_t bytes = std::max<int64_t>(item.expect.bytes, 0);
    return held_bytes_ + bytes <= bound_bytes_ ? &item : nullptr;
  }
  return nullptr;
}

void ShardPrefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_.load(std::memory_order_relaxed) || next_to_fetch(); });
    if (stop_.load(std::memory_order_relaxed)) return;
    const PrefetchItem item = *next_to_fetch();
    lock.unlock();
    std::unique_ptr<CachedShard> lease = fetch(item);
    lock.lock();
    if (lease) {
      remember(item, std::move(lease));
    } else {
      done_.insert(item.url);
    }
  }
}

std::unique_ptr<CachedShard> ShardPrefetcher::fetch(const PrefetchItem& item) {
  try {
    const std::string scheme = item.url.substr(0, item.url.find("://"));
    std::unique_ptr<Transport>& transport = transports_[scheme];
    if (!transport) {
      transport = std::make_unique<StoppableTransport>(make_transport(item.url, options_), stop_);
    }
    const int64_t before = cache_.downloaded_bytes();
    auto lease = cache_.acquire(item.url, item.expect, *transport, options_);
    if (cache_.downloaded_bytes() != before) {
      downloads_.fetch_add(1, std::memory_order_relaxed);
      downloaded_bytes_.fetch_add(cache_.downloaded_bytes() - before, std::memory_order_relaxed);
    }
    return lease;
  } catch (...) {
    // A shard that cannot be fetched ahead is left to the reader, whose own try says why.
    return nullptr;
  }
}

void ShardPrefetcher::remember(const PrefetchItem& item, std::unique_ptr<CachedShard> lease) {
  // Wanted no more, or opened by the reader meanwhile (it waited for this download): let go.
  if (!listed(item.url) || done_.count(item.url) != 0 || held_.count(item.url) != 0) return;
  const int64_t bytes = std::max<int64_t>(item.expect.bytes, 0);
  held_[item.url] = Held{std::move(lease), bytes};
  held_bytes_ += bytes;
}

std::unique_ptr<CachedShard> ShardPrefetcher::let_go(std::map<std::string, Held>::iterator it) {
  std::unique_ptr<CachedShard> lease = std::move(it->second.lease);
  held_bytes_ -= it->second.bytes;
  held_.erase(it);
  return lease;
}

}  // namespace mploader::remote::detail
